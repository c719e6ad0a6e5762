package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// The aggregated discovery document's ETag follows the served kinds: a
// client revalidating after a CRD is served gets the new document.
func TestAggregatedDiscoveryETagFollowsCRDs(t *testing.T) {
	ts := newTestServer(t)
	etag := func() (string, int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/apis", nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("ETag"), resp.StatusCode
	}
	before, code := etag()
	if code != http.StatusOK || before == "" {
		t.Fatalf("aggregated /apis: %d, ETag %q", code, before)
	}
	serveThings(t, ts)
	// Discovery lists the resource once its CRD is stored as Established,
	// a moment after (as kube-apiserver's discovery controller follows its
	// informer): a client revalidating then gets a new ETag.
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, _ := etag()
		if after != before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ETag stayed %s 10 s after a CRD's resource was served", after)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// / and /index.html list the served paths as kube-apiserver's index does,
// for any method: the health checks, the groups and their versions (a
// CRD's group once it is served).
func TestIndexListsServedPaths(t *testing.T) {
	ts := newTestServer(t)
	index := func(method, path string) map[string]bool {
		t.Helper()
		code, body, header := callFull(t, ts, method, path, "", "")
		if code != http.StatusOK || header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: %d %s %s", method, path, code, header.Get("Content-Type"), body)
		}
		var root metav1.RootPaths
		if err := json.Unmarshal([]byte(body), &root); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, body)
		}
		if !slices.IsSorted(root.Paths) {
			t.Errorf("%s %s: paths not sorted: %v", method, path, root.Paths)
		}
		listed := map[string]bool{}
		for _, p := range root.Paths {
			listed[p] = true
		}
		return listed
	}
	listed := index(http.MethodGet, "/")
	for _, p := range []string{"/api", "/api/v1", "/apis", "/apis/apiextensions.k8s.io", "/apis/apiextensions.k8s.io/v1",
		"/apis/resource.k8s.io/v1beta2", "/healthz", "/healthz/ping", "/livez/log", "/readyz/shutdown", "/openapi/v3", "/version"} {
		if !listed[p] {
			t.Errorf("/ does not list %s", p)
		}
	}
	if code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", gvCRD("a.example.com", "first")); code != http.StatusCreated {
		t.Fatalf("create a CRD: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !index(http.MethodPost, "/index.html")["/apis/a.example.com/v1"] {
		if time.Now().After(deadline) {
			t.Fatal("the index does not list the CRD's group version 10 s after its creation")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := call(t, ts, http.MethodGet, "/no-such-path", "", ""); code != http.StatusNotFound || body != "404 page not found\n" {
		t.Errorf("an unknown path: %d %q", code, body)
	}
}

// Requests kube-apiserver's handler chain answers in its own ways: a name
// no storage key can hold is a 400 from the store; a method no route
// knows on a custom resource's path is the resource's 405 (no verb), as
// is OPTIONS; a custom resource's path with a part too many is the
// object's NotFound; the OpenAPI documents and group discovery answer any
// method.
func TestRequestsAsKubeHandlerChain(t *testing.T) {
	ts := newTestServer(t)
	for _, c := range []struct{ method, name, want string }{
		{http.MethodGet, "..", `Name parameter invalid: "..": may not be '..'`},
		{http.MethodDelete, ".", `Name parameter invalid: ".": may not be '.'`},
		{http.MethodPatch, "a%25b", `Name parameter invalid: "a%b": may not contain '%'`},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+"/api/v1/namespaces/"+c.name, strings.NewReader(`{}`))
		if c.method == http.MethodDelete {
			req.Body, req.ContentLength = nil, 0
		}
		req.Header.Set("Content-Type", "application/merge-patch+json")
		req.URL.RawPath = "/api/v1/namespaces/" + c.name // as sent, not cleaned
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), strings.ReplaceAll(c.want, `"`, `\"`)) {
			t.Errorf("%s namespaces/%s: %d %s, want 400 %s", c.method, c.name, resp.StatusCode, body, c.want)
		}
	}
	if code, body := call(t, ts, http.MethodPut, "/api/v1/namespaces/..", "application/json", `{"metadata":{"name":".."}}`); code != http.StatusBadRequest || !strings.Contains(body, "may not be '..'") {
		t.Errorf("PUT namespaces/..: %d %s", code, body)
	}

	const things = "/apis/a.example.com/v1/namespaces/default/things"
	serveThings(t, ts)
	for _, method := range []string{"PROPFIND", http.MethodOptions} {
		code, body := call(t, ts, method, things, "", "")
		if code != http.StatusMethodNotAllowed || !strings.Contains(body, `"message":" is not supported on resources of kind \"things.a.example.com\""`) {
			t.Errorf("%s %s: %d %s", method, things, code, body)
		}
	}
	for _, p := range []string{"/api/v1/watch", "/api/v1/watch/", "/apis/a.example.com/v1/watch"} {
		if code, body := call(t, ts, http.MethodGet, p, "", ""); code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", p, code, body)
		}
	}
	for _, method := range []string{"PROPFIND", http.MethodPost, http.MethodDelete} {
		if code, body := call(t, ts, method, "/api/", "", ""); code != http.StatusMethodNotAllowed {
			t.Errorf("%s /api/: %d %s, want 405", method, code, body)
		}
	}
	if code, body := call(t, ts, http.MethodGet, things+"/x/y/z", "", ""); code != http.StatusNotFound || !strings.Contains(body, `things.a.example.com \"x\" not found`) {
		t.Errorf("GET %s/x/y/z: %d %s, want the object's NotFound", things, code, body)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/openapi/v2"}, {http.MethodHead, "/openapi/v3"}, {http.MethodPost, "/apis"}, {http.MethodPost, "/apis/apiextensions.k8s.io"},
	} {
		if code, body := call(t, ts, c.method, c.path, "", ""); code != http.StatusOK {
			t.Errorf("%s %s: %d %.200s, want 200", c.method, c.path, code, body)
		}
	}
}

// The aggregated discovery document is served in every media type kube's
// codecs have (its handler's restrictions allow the transformation for any
// of them), as kube-apiserver's aggregated discovery handler serves it: the
// Content-Type names the media type with the document's group, version and
// kind; compact JSON ends with a newline, a client that asks for pretty
// output (pretty=1, or a curl User-Agent) gets it indented.
func TestAggregatedDiscoveryMediaTypes(t *testing.T) {
	ts := newTestServer(t)
	const params = ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	scheme := runtime.NewScheme()
	if err := apidiscoveryv2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	for _, tc := range []struct {
		path, accept, userAgent, contentType string
		check                                func([]byte) bool
	}{
		{"/apis", "application/json" + params, "", "application/json" + params,
			func(b []byte) bool {
				return bytes.HasPrefix(b, []byte(`{"kind":"APIGroupDiscoveryList"`)) && bytes.HasSuffix(b, []byte("}\n"))
			}},
		{"/apis", "application/json;pretty=1" + params, "", "application/json" + params,
			func(b []byte) bool {
				return bytes.HasPrefix(b, []byte("{\n  \"kind\": ")) && bytes.HasSuffix(b, []byte("\n}"))
			}},
		{"/apis", "application/json" + params, "curl/8.5.0", "application/json" + params,
			func(b []byte) bool { return bytes.HasPrefix(b, []byte("{\n  \"kind\": ")) }},
		{"/apis", "application/yaml" + params, "", "application/yaml" + params,
			func(b []byte) bool { return bytes.HasPrefix(b, []byte("apiVersion: apidiscovery.k8s.io/v2\n")) }},
		{"/apis", "application/vnd.kubernetes.protobuf" + params, "", "application/vnd.kubernetes.protobuf" + params,
			func(b []byte) bool { return bytes.HasPrefix(b, []byte("k8s\x00")) }},
		{"/api", "application/vnd.kubernetes.protobuf" + params, "", "application/vnd.kubernetes.protobuf" + params,
			func(b []byte) bool { return bytes.HasPrefix(b, []byte("k8s\x00")) }},
		// The first acceptable media type wins, YAML here.
		{"/apis", "application/yaml" + params + ",application/json" + params, "", "application/yaml" + params,
			func(b []byte) bool { return bytes.HasPrefix(b, []byte("apiVersion: ")) }},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+tc.path, nil)
		req.Header.Set("Accept", tc.accept)
		if tc.userAgent != "" {
			req.Header.Set("User-Agent", tc.userAgent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType || resp.Header.Get("ETag") == "" || !tc.check(body) {
			t.Errorf("%s with %s: %d %q ETag %q %.80q", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("ETag"), body)
			continue
		}
		mediaType, _, _ := strings.Cut(tc.contentType, ";")
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		var list apidiscoveryv2.APIGroupDiscoveryList
		if _, _, err := info.Serializer.Decode(body, nil, &list); err != nil || list.Kind != "APIGroupDiscoveryList" || len(list.Items) == 0 {
			t.Errorf("%s with %s: %v %+v", tc.path, tc.accept, err, list)
		} else if tc.path == "/apis" && list.Items[0].Name != "admissionregistration.k8s.io" || tc.path == "/api" && list.Items[0].Name != "" {
			t.Errorf("%s with %s: first group %q", tc.path, tc.accept, list.Items[0].Name)
		}
	}
}
