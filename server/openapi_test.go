package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kapi-dev/kapi/openapi"
	builtinopenapi "github.com/kapi-dev/kapi/openapi/builtin"
	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
)

// gvCRD is a CRD of group, kind Thing, whose spec has one field.
func gvCRD(group, field string) string {
	return fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"things.%[1]s"},
		"spec":{"group":"%[1]s","scope":"Namespaced","names":{"plural":"things","singular":"thing","kind":"Thing","listKind":"ThingList"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
			"properties":{"spec":{"type":"object","properties":{%q:{"type":"string"}}}}}}}]}}`, group, field)
}

// serveThings creates gvCRD("a.example.com", "first") and waits until its
// things are served and the CRD is Established (from when discovery and
// the OpenAPI documents list them).
func serveThings(t *testing.T, ts *httptest.Server) {
	t.Helper()
	if code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", gvCRD("a.example.com", "first")); code != http.StatusCreated {
		t.Fatalf("create a CRD: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := call(t, ts, http.MethodGet, "/apis/a.example.com/v1/things", "", "")
		_, body := call(t, ts, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.a.example.com", "", "")
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if code == http.StatusOK && json.Unmarshal([]byte(body), crd) == nil && apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the CRD's resource is not served after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// getDocument returns an OpenAPI v3 document's body and Last-Modified.
func getDocument(t *testing.T, url string) (string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", ""
	}
	return string(body), resp.Header.Get("Last-Modified")
}

// A change of one group's CRD builds that group version's OpenAPI document
// again, not the others: their Last-Modified stays.
func TestOpenAPIV3RebuildsOnlyTheChangedGroupVersion(t *testing.T) {
	ts := newTestServer(t)
	for _, group := range []string{"a.example.com", "b.example.com"} {
		if code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", gvCRD(group, "first")); code != http.StatusCreated {
			t.Fatalf("create the CRD of %s: %d %s", group, code, body)
		}
	}
	waitFor := func(group, field string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			doc, modified := getDocument(t, ts.URL+"/openapi/v3/apis/"+group+"/v1")
			if strings.Contains(doc, `"`+field+`"`) {
				return modified
			}
			if time.Now().After(deadline) {
				t.Fatalf("the document of %s/v1 has no field %q after 10 s: %.300s", group, field, doc)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	aBefore := waitFor("a.example.com", "first")
	bBefore := waitFor("b.example.com", "first")
	// Last-Modified counts whole seconds.
	time.Sleep(1100 * time.Millisecond)

	code, body := call(t, ts, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.b.example.com", "", "")
	if code != http.StatusOK {
		t.Fatalf("get the CRD of b.example.com: %d %s", code, body)
	}
	rv := body[strings.Index(body, `"resourceVersion":"`)+len(`"resourceVersion":"`):]
	rv = rv[:strings.Index(rv, `"`)]
	changed := strings.Replace(gvCRD("b.example.com", "second"), `"name":"things.b.example.com"`, `"name":"things.b.example.com","resourceVersion":"`+rv+`"`, 1)
	if code, body := call(t, ts, http.MethodPut, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.b.example.com", "application/json", changed); code != http.StatusOK {
		t.Fatalf("update the CRD of b.example.com: %d %s", code, body)
	}
	bAfter := waitFor("b.example.com", "second")
	aAfter := waitFor("a.example.com", "first")
	if bAfter == bBefore {
		t.Errorf("the changed group version's Last-Modified stayed %s", bAfter)
	}
	if aAfter != aBefore {
		t.Errorf("the untouched group version's document was built again: Last-Modified %s, before %s", aAfter, aBefore)
	}

	// A CRD write that leaves its spec alone (labels; the controller's
	// status writes) keeps the served resource and its documents.
	time.Sleep(1100 * time.Millisecond)
	if code, body := call(t, ts, http.MethodPatch, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.b.example.com", "application/merge-patch+json", `{"metadata":{"labels":{"touched":"yes"}}}`); code != http.StatusOK {
		t.Fatalf("label the CRD of b.example.com: %d %s", code, body)
	}
	time.Sleep(300 * time.Millisecond) // the controller's sync of the change
	if bLabelled := waitFor("b.example.com", "second"); bLabelled != bAfter {
		t.Errorf("a label on the CRD built its document again: Last-Modified %s, before %s", bLabelled, bAfter)
	}
}

// The generated documents of the built-in kinds (openapi/builtin/docs, by
// `make generate`) hold every built-in resource kapi serves, in each of its
// versions, and its subresources: a kind added without generating them
// again fails here.
func TestBuiltinOpenAPIDocumentsCoverTheBuiltinKinds(t *testing.T) {
	reg := registry.New()
	builtin.Register(reg)
	var v2 struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(builtinopenapi.V2Document(), &v2); err != nil {
		t.Fatal(err)
	}
	for _, res := range reg.All() {
		for _, v := range res.Versions {
			gvPath := openapi.GroupVersionPath(res.Group, v)
			data, ok := builtinopenapi.V3Document(gvPath)
			var v3 struct {
				Paths map[string]any `json:"paths"`
			}
			if !ok || json.Unmarshal(data, &v3) != nil {
				t.Errorf("no v3 document for %s", gvPath)
				continue
			}
			base := "/" + gvPath + "/"
			if res.Namespaced {
				base += "namespaces/{namespace}/"
			}
			want := []string{base + res.Plural, base + res.Plural + "/{name}"}
			if res.StatusIn(v) {
				want = append(want, base+res.Plural+"/{name}/status")
			}
			if res.Finalize {
				want = append(want, base+res.Plural+"/{name}/finalize")
			}
			for _, p := range want {
				if v3.Paths[p] == nil {
					t.Errorf("the v3 document of %s lacks %s", gvPath, p)
				}
				if v2.Paths[p] == nil {
					t.Errorf("the v2 document lacks %s", p)
				}
			}
		}
	}
}

// As kube-apiserver's, the OpenAPI documents describe the discovery and
// version services too: the v3 index lists api, apis, each built-in
// group's apis/<group> and version, each served with its operation, and
// the v2 document holds their paths. A CRD's group has none (kube's CRD
// handler serves its discovery outside the documented services).
func TestOpenAPIDocumentsDescribeDiscovery(t *testing.T) {
	ts := newTestServer(t)
	serveThings(t, ts)
	index, _ := getDocument(t, ts.URL+"/openapi/v3")
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(index), &root); err != nil {
		t.Fatalf("/openapi/v3: %v\n%s", err, index)
	}
	if _, ok := root.Paths["apis/a.example.com"]; ok {
		t.Error("the v3 index lists a CRD's group")
	}
	for path, op := range map[string]string{"api": "getCoreAPIVersions", "apis": "getAPIVersions", "apis/apiextensions.k8s.io": "getApiextensionsAPIGroup",
		"apis/resource.k8s.io": "getResourceAPIGroup", "version": "getCodeVersion"} {
		entry, ok := root.Paths[path]
		if !ok {
			t.Errorf("the v3 index does not list %s", path)
			continue
		}
		doc, _ := getDocument(t, ts.URL+entry.ServerRelativeURL)
		if want := `"/` + path + `/":{"get":`; !strings.Contains(doc, want) || !strings.Contains(doc, `"operationId":"`+op+`"`) {
			t.Errorf("the v3 document of %s lacks GET /%s/ (%s):\n%.300s", path, path, op, doc)
		}
	}
	v2, _ := getDocument(t, ts.URL+"/openapi/v2")
	for _, p := range []string{"/api/", "/apis/", "/apis/admissionregistration.k8s.io/", "/version/"} {
		if !strings.Contains(v2, `"`+p+`":{"get":`) {
			t.Errorf("the v2 document lacks %s", p)
		}
	}
}
