package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	openapiclient "k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/handler3"
)

// kubectl explain reads the OpenAPI documents: built-in kinds carry their
// field docs, custom resources their schema, and a CRD's document follows
// its schema.
func TestOpenAPIExplain(t *testing.T) {
	t.Parallel()
	requireKubectl(t)
	k := startMemKapi(t)
	ctx := ctxT(t)

	out := k.mustKubectl(t, "explain", "validatingwebhookconfiguration.webhooks.failurePolicy")
	if !strings.Contains(out, "FailurePolicy defines how unrecognized errors") || !strings.Contains(out, "Ignore") {
		t.Errorf("explain of a built-in field:\n%s", out)
	}
	if out := k.mustKubectl(t, "explain", "deviceclass.spec.selectors.cel.expression"); !strings.Contains(out, "<string>") {
		t.Errorf("explain of a DeviceClass field:\n%s", out)
	}
	// A field of another type keeps its own description beside its
	// type's (the v3 documents wrap such references in allOf).
	if out := k.mustKubectl(t, "explain", "namespace.spec"); !strings.Contains(out, "Spec defines the behavior of the Namespace.") || !strings.Contains(out, "NamespaceSpec describes the attributes") {
		t.Errorf("explain of a field of another type:\n%s", out)
	}

	crd := newCRD("gizmos", "explain.example.com")
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settledCRD(ctx, t, k, crd.Name)
	docPath := "/openapi/v3/apis/explain.example.com/v1"
	before := k.do(t, "GET", docPath, nil)
	if before.Code != 200 {
		t.Fatalf("GET %s: %d", docPath, before.Code)
	}
	root := k.do(t, "GET", "/openapi/v3", nil)
	var paths struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(root.Body, &paths); err != nil || paths.Paths["apis/explain.example.com/v1"].URL == "" {
		t.Fatalf("/openapi/v3 does not list the CRD's group version: %s", root.Body)
	}
	hashBefore := paths.Paths["apis/explain.example.com/v1"].URL
	v2Before := k.do(t, "GET", "/openapi/v2", nil)
	if v2Before.Code != 200 || !strings.Contains(string(v2Before.Body), "com.example.explain.v1.Gizmo") {
		t.Fatalf("GET /openapi/v2: %d, without the CRD's definition", v2Before.Code)
	}
	// The documents answer a request that still holds with 304, as
	// kube-apiserver does (the v3 index has no ETag there:
	// TestOpenAPIV3IndexAsKube).
	for path, doc := range map[string]httpResult{"/openapi/v2": v2Before, docPath: before} {
		etag := doc.Header.Get("Etag")
		if etag == "" || doc.Header.Get("Last-Modified") == "" {
			t.Fatalf("GET %s: no Etag or Last-Modified: %v", path, doc.Header)
		}
		if again := k.do(t, "GET", path, nil, "If-None-Match: "+etag); again.Code != 304 || len(again.Body) != 0 {
			t.Errorf("GET %s with If-None-Match of its own ETag: %d with %d bytes, want 304 and none", path, again.Code, len(again.Body))
		}
	}

	// A new field in the schema shows in the document and in explain.
	waitFor(t, "the schema update", func() bool {
		cur, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		props := cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
		spec := props["spec"]
		if spec.Properties == nil {
			spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		spec.Type = "object"
		spec.Properties["colour"] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: "The gizmo's colour."}
		props["spec"] = spec
		_, err = k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil
	})
	waitFor(t, "the document to change", func() bool {
		return !strings.Contains(string(before.Body), "gizmo's colour") && strings.Contains(string(k.do(t, "GET", docPath, nil).Body), "gizmo's colour")
	})
	root = k.do(t, "GET", "/openapi/v3", nil)
	if err := json.Unmarshal(root.Body, &paths); err != nil || paths.Paths["apis/explain.example.com/v1"].URL == hashBefore {
		t.Errorf("the document's hash did not change: %s", paths.Paths["apis/explain.example.com/v1"].URL)
	}
	// The hashed URL is cached for good; the stale one redirects to it, as
	// kube-openapi's handler does.
	hashed := k.do(t, "GET", paths.Paths["apis/explain.example.com/v1"].URL, nil)
	if hashed.Code != 200 || hashed.Header.Get("Cache-Control") != "public, immutable" || hashed.Header.Get("Expires") == "" || hashed.Header.Get("Vary") != "Accept" {
		t.Errorf("GET the hashed URL: %d, Cache-Control %q, Expires %q, Vary %q", hashed.Code, hashed.Header.Get("Cache-Control"), hashed.Header.Get("Expires"), hashed.Header.Get("Vary"))
	}
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirects.Get(k.URL + hashBefore)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != paths.Paths["apis/explain.example.com/v1"].URL {
		t.Errorf("GET a stale hash: %d to %q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), paths.Paths["apis/explain.example.com/v1"].URL)
	}
	// The v2 document follows too; the old ETag no longer holds.
	v2After := k.do(t, "GET", "/openapi/v2", nil, "If-None-Match: "+v2Before.Header.Get("Etag"))
	if v2After.Code != 200 || !strings.Contains(string(v2After.Body), "gizmo's colour") {
		t.Errorf("GET /openapi/v2 after the schema change, with the old ETag: %d, new field shown: %v", v2After.Code, strings.Contains(string(v2After.Body), "gizmo's colour"))
	}
	waitFor(t, "kubectl explain to show the new field", func() bool {
		out, _, err := k.kubectl(t, "explain", "gizmos.spec.colour")
		return err == nil && strings.Contains(out, "The gizmo's colour.")
	})
}

// /openapi/v2 is served as protobuf too, which client-go's
// DiscoveryClient.OpenAPISchema asks for (and nothing else).
func TestOpenAPIV2Protobuf(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := newCRD("gizmos", "pb.example.com")
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settledCRD(ctx, t, k, crd.Name)
	doc, err := k.Client.Discovery().OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	builtin, custom := false, false
	for _, p := range doc.GetPaths().GetPath() {
		builtin = builtin || p.GetName() == "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
		custom = custom || strings.HasPrefix(p.GetName(), "/apis/pb.example.com/v1/")
	}
	if !builtin || !custom || doc.GetSwagger() != "2.0" {
		t.Errorf("the protobuf document (swagger %q, %d paths): the webhook configurations' path %v, the CRD's %v", doc.GetSwagger(), len(doc.GetPaths().GetPath()), builtin, custom)
	}
	r := k.do(t, "GET", "/openapi/v2", nil, "Accept: application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
	if ct := r.Header.Get("Content-Type"); r.Code != 200 || ct != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" || r.Header.Get("Vary") != "Accept" {
		t.Errorf("protobuf /openapi/v2: %d, Content-Type %q, Vary %q", r.Code, ct, r.Header.Get("Vary"))
	}
	// A media type neither JSON nor protobuf: a bare 406, as kube-openapi's
	// handlers answer.
	if r := k.do(t, "GET", "/openapi/v2", nil, "Accept: text/plain"); r.Code != 406 || len(r.Body) != 0 {
		t.Errorf("/openapi/v2 as text/plain: %d %q, want 406 without a body", r.Code, r.Body)
	}
}

// /openapi/v3's group versions are served as protobuf too, under the JSON
// document's hash, as client-go's OpenAPI v3 client can ask for them.
func TestOpenAPIV3Protobuf(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := newCRD("gizmos", "pb3.example.com")
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settledCRD(ctx, t, k, crd.Name)
	paths, err := k.Client.Discovery().OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, gvPath := range []string{"apis/pb3.example.com/v1", "apis/admissionregistration.k8s.io/v1", "api/v1"} {
		if _, ok := paths[gvPath]; !ok {
			t.Fatalf("/openapi/v3 lists no %s", gvPath)
		}
	}
	// Every document is valid OpenAPI v3 for the protobuf encoding.
	for gvPath, gv := range paths {
		jsonDoc, err := gv.Schema(runtime.ContentTypeJSON)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := gv.Schema(openapiclient.ContentTypeOpenAPIV3PB)
		if err != nil {
			t.Fatalf("%s as protobuf: %v", gvPath, err)
		}
		var got openapi_v3.Document
		if err := proto.Unmarshal(pb, &got); err != nil {
			t.Fatalf("%s: the protobuf answer does not decode: %v", gvPath, err)
		}
		want, err := openapi_v3.ParseDocument(jsonDoc)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, want) {
			t.Errorf("%s: the protobuf document is not the JSON one (%d paths against %d)", gvPath, len(got.GetPaths().GetPath()), len(want.GetPaths().GetPath()))
		}
	}

	const doc = "/openapi/v3/apis/pb3.example.com/v1"
	asJSON := k.do(t, "GET", doc, nil)
	for _, accept := range []string{"application/com.github.proto-openapi.spec.v3.v1.0+protobuf", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"} {
		r := k.do(t, "GET", doc, nil, "Accept: "+accept)
		if ct := r.Header.Get("Content-Type"); r.Code != 200 || ct != "application/com.github.proto-openapi.spec.v3.v1.0+protobuf" || r.Header.Get("Vary") != "Accept" {
			t.Errorf("%s as %s: %d, Content-Type %q, Vary %q", doc, accept, r.Code, ct, r.Header.Get("Vary"))
		}
		if r.Header.Get("Etag") != asJSON.Header.Get("Etag") || r.Header.Get("Etag") == "" {
			t.Errorf("%s as %s: ETag %q, the JSON's %q", doc, accept, r.Header.Get("Etag"), asJSON.Header.Get("Etag"))
		}
	}
	// JSON comes first for a client that takes either.
	if r := k.do(t, "GET", doc, nil, "Accept: application/*"); r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s as application/*: Content-Type %q, want application/json", doc, r.Header.Get("Content-Type"))
	}
	if r := k.do(t, "GET", doc, nil, "Accept: text/plain"); r.Code != 406 || len(r.Body) != 0 {
		t.Errorf("%s as text/plain: %d %q, want 406 without a body", doc, r.Code, r.Body)
	}
}

// A custom resource's /openapi/v2 definition is built as kube-apiserver's
// OpenAPI controller builds it: value validations kept (client-side
// validation reads them), defaults pruned, a nullable object left open.
func TestOpenAPIV2CustomResourceSchema(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: knobs.v2doc.example.com
spec:
  group: v2doc.example.com
  scope: Namespaced
  names: {plural: knobs, kind: Knob}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              label: {type: string, maxLength: 5, pattern: "^a", enum: [ab, ac]}
              count: {type: integer, minimum: 1, default: 2}
              extra: {type: object, nullable: true, properties: {x: {type: string}}}
`))
	r := k.do(t, "GET", "/openapi/v2", nil)
	var doc struct {
		Definitions map[string]struct {
			Properties map[string]struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	spec := doc.Definitions["com.example.v2doc.v1.Knob"].Properties["spec"].Properties
	if spec == nil {
		t.Fatalf("no definition com.example.v2doc.v1.Knob with spec properties in /openapi/v2")
	}
	if l := spec["label"]; l["maxLength"] != float64(5) || l["pattern"] != "^a" || l["enum"] == nil {
		t.Errorf("spec.label %v, want maxLength, pattern and enum kept", l)
	}
	if c := spec["count"]; c["minimum"] != float64(1) || c["default"] != nil {
		t.Errorf("spec.count %v, want minimum kept and the default pruned", c)
	}
	if e := spec["extra"]; len(e) != 0 {
		t.Errorf("spec.extra %v, want {} (a nullable object in OpenAPI v2)", e)
	}
}

// The built-in kinds' documents take kube-apiserver's form: v2 without
// defaults (so a CRD's merged in renames none of the shared definitions),
// and a CRD serving a kind in a built-in group version adds to that group
// version's v3 document.
func TestOpenAPIBuiltinsBesideCRDs(t *testing.T) {
	t.Parallel()
	requireKubectl(t)
	k := startMemKapi(t)
	crd := newCRD("foos", "admissionregistration.k8s.io")
	crd.Annotations = map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}
	createCRD(t, k, crd)

	var v2 struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(k.do(t, "GET", "/openapi/v2", nil).Body, &v2); err != nil {
		t.Fatal(err)
	}
	for name, def := range v2.Definitions {
		if strings.HasSuffix(name, "_v2") {
			t.Errorf("/openapi/v2 has a renamed definition %s", name)
		}
		if data, _ := json.Marshal(def); strings.HasPrefix(name, "io.k8s.api.") && strings.Contains(string(data), `"default"`) {
			t.Errorf("/openapi/v2 definition %s has a default: %s", name, data)
		}
	}

	var v3 struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(k.do(t, "GET", "/openapi/v3/apis/admissionregistration.k8s.io/v1", nil).Body, &v3); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/apis/admissionregistration.k8s.io/v1/namespaces/{namespace}/foos", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"} {
		if _, ok := v3.Paths[p]; !ok {
			t.Errorf("the v3 document of admissionregistration.k8s.io/v1 lacks %s", p)
		}
	}
	if out := k.mustKubectl(t, "explain", "mutatingwebhookconfiguration.webhooks.sideEffects"); !strings.Contains(out, "SideEffects states whether") {
		t.Errorf("explain of a built-in kind beside a CRD in its group version:\n%s", out)
	}
}

// The built-in kinds' operations are kube-apiserver's: path parameters,
// request bodies with the patch types (kubectl apply reads them to choose
// a strategic merge patch), responses, operationIds, /watch/ paths, the
// namespace's /finalize and no namespace deletecollection; every $ref
// resolves in its document.
func TestOpenAPIBuiltinOperations(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	type operation struct {
		OperationID string `json:"operationId"`
		RequestBody struct {
			Content map[string]any `json:"content"`
		} `json:"requestBody"`
		Responses map[string]struct {
			Content map[string]any `json:"content"`
		} `json:"responses"`
	}
	type pathItem struct {
		Parameters []struct {
			Name, In string
			Required bool
		} `json:"parameters"`
		Get, Put, Post, Patch, Delete *operation
	}
	var doc struct {
		Paths map[string]pathItem `json:"paths"`
	}
	gvs := map[string]string{
		"admissionregistration": "/openapi/v3/apis/admissionregistration.k8s.io/v1",
		"core":                  "/openapi/v3/api/v1",
		"apiextensions":         "/openapi/v3/apis/apiextensions.k8s.io/v1",
		"resource":              "/openapi/v3/apis/resource.k8s.io/v1beta2",
	}
	docs := map[string][]byte{}
	for name, p := range gvs {
		r := k.do(t, "GET", p, nil)
		mustCode(t, "GET "+p, r, http.StatusOK)
		docs[name] = r.Body
		checkRefs(t, p, r.Body, "#/components/schemas/")
	}
	if err := json.Unmarshal(docs["admissionregistration"], &doc); err != nil {
		t.Fatal(err)
	}
	item, ok := doc.Paths["/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}"]
	if !ok || len(item.Parameters) == 0 || item.Parameters[0].Name != "name" || item.Parameters[0].In != "path" || !item.Parameters[0].Required {
		t.Errorf("a policy's path: %+v, want the path parameter name", item.Parameters)
	}
	if item.Patch == nil || item.Patch.OperationID != "patchAdmissionregistrationV1ValidatingAdmissionPolicy" {
		t.Fatalf("a policy's patch: %+v", item.Patch)
	}
	for _, ct := range []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"} {
		if _, ok := item.Patch.RequestBody.Content[ct]; !ok {
			t.Errorf("a policy's patch takes no %s", ct)
		}
	}
	if _, ok := item.Patch.Responses["200"].Content["application/json"]; !ok {
		t.Errorf("a policy's patch answers no application/json: %+v", item.Patch.Responses)
	}
	if _, ok := doc.Paths["/apis/admissionregistration.k8s.io/v1/watch/validatingadmissionpolicies"]; !ok {
		t.Error("no /watch/ path for policies")
	}

	doc.Paths = nil
	if err := json.Unmarshal(docs["core"], &doc); err != nil {
		t.Fatal(err)
	}
	if ns := doc.Paths["/api/v1/namespaces"]; ns.Post == nil || ns.Post.OperationID != "createCoreV1Namespace" || ns.Delete != nil {
		t.Errorf("/api/v1/namespaces: post %+v, delete %+v; want createCoreV1Namespace and no deletecollection", ns.Post, ns.Delete)
	}
	if fin := doc.Paths["/api/v1/namespaces/{name}/finalize"]; fin.Put == nil {
		t.Error("no PUT of a namespace's /finalize")
	}

	// The v2 document too, with kube's shared parameters.
	r := k.do(t, "GET", "/openapi/v2", nil)
	checkRefs(t, "/openapi/v2", r.Body, "#/definitions/", "#/parameters/")
	var v2 struct {
		Paths map[string]struct {
			Patch struct {
				OperationID string   `json:"operationId"`
				Consumes    []string `json:"consumes"`
			} `json:"patch"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &v2); err != nil {
		t.Fatal(err)
	}
	if patch := v2.Paths["/api/v1/namespaces/{name}"].Patch; patch.OperationID != "patchCoreV1Namespace" || !strings.Contains(strings.Join(patch.Consumes, ","), "application/strategic-merge-patch+json") {
		t.Errorf("v2 namespace patch: %+v", patch)
	}
}

// checkRefs checks that every $ref of an OpenAPI document points into one
// of its sections (prefixes) at something the document has.
func checkRefs(t *testing.T, name string, data []byte, prefixes ...string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	has := func(ref string) bool {
		for _, prefix := range prefixes {
			if !strings.HasPrefix(ref, prefix) {
				continue
			}
			section := doc
			for _, part := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/"), "/") {
				section, _ = section[part].(map[string]any)
			}
			_, ok := section[strings.TrimPrefix(ref, prefix)]
			return ok
		}
		return false
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && !has(ref) {
				t.Errorf("%s: $ref %s resolves to nothing", name, ref)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

// The /openapi/v3 index as kube-apiserver serves it, from its
// aggregator's OpenAPI v3 proxier (kube's integration tests
// TestAddRemoveGroupVersion, TestOpenAPIV3LazyBuild): a CRD's group
// version is listed while the CRD is, the index has no ETag (a request
// with If-None-Match gets it again), its Last-Modified is the request's
// time and its JSON goes out as http.ServeContent sniffs it (text/plain);
// a group version it does not list is a bare 404.
func TestOpenAPIV3IndexAsKube(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	index := func() (httpResult, handler3.OpenAPIV3Discovery) {
		r := k.do(t, "GET", "/openapi/v3", nil, "Accept: application/json")
		var d handler3.OpenAPIV3Discovery
		decodeInto(t, r, &d)
		return r, d
	}
	crd := newCRD("gizmos", "index.example.com")
	createCRD(t, k, crd)
	const gv = "apis/index.example.com/v1"
	waitFor(t, gv+" in the v3 index", func() bool { _, d := index(); _, ok := d.Paths[gv]; return ok })

	r, d := index()
	if etag := r.Header.Get("Etag"); etag != "" {
		t.Errorf("/openapi/v3 has an ETag %s; kube-apiserver's has none", etag)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("/openapi/v3 Content-Type %q, want text/plain; charset=utf-8", ct)
	}
	if lm, err := http.ParseTime(r.Header.Get("Last-Modified")); err != nil || time.Since(lm) > time.Minute {
		t.Errorf("/openapi/v3 Last-Modified %q, want the time of the request", r.Header.Get("Last-Modified"))
	}
	u, err := url.Parse(d.Paths[gv].ServerRelativeURL)
	if err != nil {
		t.Fatal(err)
	}
	if again := k.do(t, "GET", "/openapi/v3", nil, `If-None-Match: "`+u.Query().Get("hash")+`"`); again.Code != http.StatusOK {
		t.Errorf("/openapi/v3 with If-None-Match: %d, want 200", again.Code)
	}
	doc := k.do(t, "GET", d.Paths[gv].ServerRelativeURL, nil)
	if doc.Code != http.StatusOK || doc.Header.Get("Etag") != `"`+u.Query().Get("hash")+`"` || !strings.Contains(string(doc.Body), "com.example.index.v1.Gizmo") {
		t.Errorf("GET %s: %d, ETag %q", d.Paths[gv].ServerRelativeURL, doc.Code, doc.Header.Get("Etag"))
	}

	if err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, gv+" gone from the v3 index", func() bool { _, d := index(); _, ok := d.Paths[gv]; return !ok })
	for _, p := range []string{"/openapi/v3/" + gv, d.Paths[gv].ServerRelativeURL, "/openapi/v3/apis/nope.example.com/v1"} {
		if gone := k.do(t, "GET", p, nil); gone.Code != http.StatusNotFound || len(gone.Body) != 0 {
			t.Errorf("GET %s: %d %q, want a bare 404", p, gone.Code, gone.Body)
		}
	}
}
