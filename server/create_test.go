package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const nsPath = "/api/v1/namespaces"

// A generated name that is taken is generated again, up to 8 names, as
// kube-apiserver; then the create is a conflict of generated names.
func TestCreateRetriesGeneratedNames(t *testing.T) {
	ts := newTestServer(t)
	var generated []string
	next := []string{"gen-taken", "gen-taken", "gen-free"}
	defer func(old func(string) string) { generateName = old }(generateName)
	generateName = func(prefix string) string {
		name := next[0]
		if len(next) > 1 {
			next = next[1:]
		}
		generated = append(generated, name)
		return name
	}
	if code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"gen-taken"}}`); code != http.StatusCreated {
		t.Fatalf("create gen-taken: %d %s", code, body)
	}
	code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"generateName":"gen-"}}`)
	if code != http.StatusCreated || !strings.Contains(body, `"name":"gen-free"`) {
		t.Fatalf("create with generateName: %d %s, want gen-free after two taken names", code, body)
	}
	if strings.Join(generated, ",") != "gen-taken,gen-taken,gen-free" {
		t.Errorf("names tried %v", generated)
	}
	// Every name taken: after 8 tries, 409.
	next, generated = []string{"gen-taken"}, nil
	code, body = call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"generateName":"gen-"}}`)
	var st metav1.Status
	_ = json.Unmarshal([]byte(body), &st)
	if code != http.StatusConflict || st.Reason != metav1.StatusReasonAlreadyExists || len(generated) != 8 ||
		st.Message != `namespaces "gen-taken" already exists, the server was not able to generate a unique name for the object` {
		t.Errorf("every generated name taken: %d after %d tries, %s", code, len(generated), body)
	}
}

// A dry-run create of a name that is taken is refused, as kube-apiserver's
// dry-run storage refuses it.
func TestDryRunCreateOfExistingName(t *testing.T) {
	ts := newTestServer(t)
	if code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"taken"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body := call(t, ts, http.MethodPost, nsPath+"?dryRun=All", "application/json", `{"metadata":{"name":"taken"}}`)
	if code != http.StatusConflict || !strings.Contains(body, `namespaces \"taken\" already exists`) {
		t.Errorf("dry-run create of a taken name: %d %s, want 409 AlreadyExists", code, body)
	}
	if code, body := call(t, ts, http.MethodPost, nsPath+"?dryRun=All", "application/json", `{"metadata":{"name":"free"}}`); code != http.StatusCreated {
		t.Errorf("dry-run create of a free name: %d %s", code, body)
	}
}

// A create of a name whose object is being deleted says so, as
// kube-apiserver.
func TestCreateOfNameBeingDeleted(t *testing.T) {
	ts := newTestServer(t)
	if code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := call(t, ts, http.MethodDelete, nsPath+"/held", "", ""); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
	code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"held"}}`)
	if code != http.StatusConflict || !strings.Contains(body, `"message":"object is being deleted: namespaces \"held\" already exists"`) {
		t.Errorf("create of a name being deleted: %d %s", code, body)
	}
}

// Duplicate owner references are dropped with kube-apiserver's warning
// (a patch's with the wording for after the mutating webhooks).
func TestDuplicateOwnerReferences(t *testing.T) {
	ts := newTestServer(t)
	do := func(method, path, contentType, body string) (int, string, []string) {
		t.Helper()
		code, data, header := callFull(t, ts, method, path, contentType, body)
		return code, data, header.Values("Warning")
	}
	// The owner exists: the garbage collector deletes an object whose
	// owners are all missing.
	code, body, _ := do(http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"owner"}}`)
	var owner struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &owner); code != http.StatusCreated || err != nil {
		t.Fatalf("create the owner: %d %v %s", code, err, body)
	}
	uid := owner.Metadata.UID
	ref := `{"apiVersion":"v1","kind":"Namespace","name":"owner","uid":"` + uid + `"}`
	code, body, warnings := do(http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"owned","ownerReferences":[`+ref+`,`+ref+`]}}`)
	want := `299 - ".metadata.ownerReferences contains duplicate entries; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: ` + uid + `"`
	if code != http.StatusCreated || strings.Count(body, `"uid":"`+uid+`"`) != 1 || len(warnings) != 1 || warnings[0] != want {
		t.Errorf("create with a duplicate owner reference: %d, warnings %q, body %s", code, warnings, body)
	}
	code, body, warnings = do(http.MethodPatch, nsPath+"/owned", "application/merge-patch+json", `{"metadata":{"ownerReferences":[`+ref+`,`+ref+`]}}`)
	want = `299 - ".metadata.ownerReferences contains duplicate entries after mutating admission happens; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: ` + uid + `"`
	if code != http.StatusOK || strings.Count(body, `"uid":"`+uid+`"`) != 1 || len(warnings) != 1 || warnings[0] != want {
		t.Errorf("patch with a duplicate owner reference: %d, warnings %q, body %s", code, warnings, body)
	}
}

// An object too large to store with its managedFields is stored without
// them, as kube-apiserver retries such a write; one too large without them
// is refused (413).
func TestTooLargeObjectShedsManagedFields(t *testing.T) {
	ts := newTestServer(t)
	body := func(name string, n int) string {
		return `{"metadata":{"name":"` + name + `","annotations":{"big":"` + strings.Repeat("x", n) + `"}}}`
	}
	// The stored size of such a namespace with and without its managedFields.
	code, created := call(t, ts, http.MethodPost, nsPath+"?fieldManager=m", "application/json", body("probe-0", 2000))
	if code != http.StatusCreated {
		t.Fatalf("create the probe: %d %s", code, created)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(created), &obj); err != nil {
		t.Fatal(err)
	}
	withFields, _ := json.Marshal(obj)
	delete(obj["metadata"].(map[string]any), "managedFields")
	without, _ := json.Marshal(obj)
	defer func(old int) { maxObjectBytes = old }(maxObjectBytes)
	maxObjectBytes = (len(withFields) + len(without)) / 2

	code, resp := call(t, ts, http.MethodPost, nsPath+"?fieldManager=m", "application/json", body("probe-1", 2000))
	if code != http.StatusCreated || strings.Contains(resp, "managedFields") {
		t.Errorf("create just over the limit with its managedFields: %d %s, want 201 without managedFields", code, resp)
	}
	code, resp = call(t, ts, http.MethodPost, nsPath+"?fieldManager=m", "application/json", body("probe-2", 3000))
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("create over the limit without managedFields: %d %s, want 413", code, resp)
	}
}

// A create whose field manager is empty (no fieldManager, and a user agent
// that names no product) is recorded for kube's "unknown" manager, as
// kube-apiserver's field manager records it; it was not recorded at all,
// and an object without managedFields is not tracked afterwards.
func TestCreateWithoutManagerIsRecordedAsUnknown(t *testing.T) {
	ts := newTestServer(t)
	for name, userAgent := range map[string]string{"no-agent": "", "slash-agent": "/weird"} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+nsPath, strings.NewReader(`{"metadata":{"name":"`+name+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header["User-Agent"] = []string{userAgent}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ns struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ns)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || err != nil {
			t.Fatalf("user agent %q: %d %v", userAgent, resp.StatusCode, err)
		}
		if mf := ns.Metadata.ManagedFields; len(mf) != 1 || mf[0].Manager != "unknown" || mf[0].Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("user agent %q: managedFields %+v, want one Update by unknown", userAgent, mf)
		}
	}
}

// DELETE as kube-apiserver's own storages answer it: a namespace's last
// DELETE answers the namespace (ReturnDeletedObject), and a CRD's first
// DELETE only marks it with its cleanup finalizer, whatever the
// propagation policy.
func TestDeleteAsKubeStoragesAnswer(t *testing.T) {
	ts := newTestServer(t)
	if code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"gone"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := call(t, ts, http.MethodPut, nsPath+"/gone/finalize", "application/json", `{"metadata":{"name":"gone"},"spec":{"finalizers":[]}}`); code != http.StatusOK {
		t.Fatalf("finalize: %d %s", code, body)
	}
	for i, want := range []string{`"phase":"Terminating"`, `"kind":"Namespace"`} {
		if code, body := call(t, ts, http.MethodDelete, nsPath+"/gone", "", ""); code != http.StatusOK || !strings.Contains(body, want) || strings.Contains(body, `"kind":"Status"`) {
			t.Errorf("DELETE %d of a namespace without finalizers: %d %s, want the namespace", i+1, code, body)
		}
	}
	if code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", gvCRD("a.example.com", "first")); code != http.StatusCreated {
		t.Fatalf("create a CRD: %d %s", code, body)
	}
	code, body := call(t, ts, http.MethodDelete, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.a.example.com", "application/json", `{"propagationPolicy":"Foreground"}`)
	var crd struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &crd); code != http.StatusOK || err != nil || strings.Join(crd.Metadata.Finalizers, ",") != "customresourcecleanup.apiextensions.k8s.io" {
		t.Errorf("a CRD's first DELETE with Foreground propagation: %d %v, finalizers %v, want the cleanup finalizer alone", code, err, crd.Metadata.Finalizers)
	}
}

// A create's resourceVersion is refused only when kube-apiserver's storage
// reads it as a revision (a number other than 0); any other it clears, and
// the object is stored with a new one (kube's field validation integration
// test creates custom resources whose resourceVersion is "%!s(MISSING)").
func TestCreateWithResourceVersionNotARevision(t *testing.T) {
	ts := newTestServer(t)
	for _, rv := range []string{"0", "%!s(MISSING)", "-1", "abc", "18446744073709551616"} {
		name := fmt.Sprintf("rv-%d", len(rv))
		code, body := call(t, ts, http.MethodPost, nsPath, "application/json", fmt.Sprintf(`{"metadata":{"name":%q,"resourceVersion":%q}}`, name, rv))
		var got metav1.ObjectMeta
		var obj struct{ Metadata *metav1.ObjectMeta }
		obj.Metadata = &got
		_ = json.Unmarshal([]byte(body), &obj)
		if code != http.StatusCreated || got.ResourceVersion == rv || got.ResourceVersion == "" {
			t.Errorf("create with resourceVersion %q: %d %s, want 201 with a new resourceVersion", rv, code, body)
			continue
		}
		if code, body := call(t, ts, http.MethodGet, nsPath+"/"+name, "", ""); code != http.StatusOK || !strings.Contains(body, `"resourceVersion":"`+got.ResourceVersion+`"`) {
			t.Errorf("get after create with resourceVersion %q: %d %s", rv, code, body)
		}
	}
	code, body := call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"rv-rev","resourceVersion":"7"}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "resourceVersion should not be set on objects to be created") {
		t.Errorf("create with resourceVersion 7: %d %s, want 400", code, body)
	}
}

// A protobuf body that does not decode is answered as kube-apiserver's
// create and update handlers answer it (transformDecodeError): an envelope
// that does not parse makes the object unrecognized, with a hex summary of
// the body; an envelope whose object does not parse names its kind and
// version. An envelope without a kind or version takes the endpoint's, as
// kube's decoder defaults it (scope.Kind).
func TestProtobufBodyDecodeErrors(t *testing.T) {
	ts := newTestServer(t)
	envelope := func(apiVersion, kind string, raw []byte) string {
		unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
		data, err := unk.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return "k8s\x00" + string(data)
	}
	ns, err := (&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kindless"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body, want string
		code       int
	}{
		{"k8s\x00\xff", `the object provided is unrecognized (must be of type Namespace): `, http.StatusBadRequest},
		{`{"apiVersion":"v1"}`, `the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({"apiVersion":"v1"})`, http.StatusBadRequest},
		{"0123456789012345678901234567890123456789", `the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (303132333435363738393031323334353637383930313233343536373839 ...)`, http.StatusBadRequest},
		{envelope("v1", "Namespace", []byte{0xff}), `Namespace in version "v1" cannot be handled as a Namespace: `, http.StatusBadRequest},
		{envelope("", "", ns), "", http.StatusCreated},
	} {
		code, body := call(t, ts, http.MethodPost, "/api/v1/namespaces", "application/vnd.kubernetes.protobuf", tc.body)
		var st metav1.Status
		if code != tc.code || (tc.want != "" && (json.Unmarshal([]byte(body), &st) != nil || !strings.HasPrefix(st.Message, tc.want))) {
			t.Errorf("body %q: %d %s, want %d %s", tc.body, code, body, tc.code, tc.want)
		}
	}
}

// A custom resource's create and update name protobuf among the media
// types they take, as kube-apiserver's handlers for custom resources do
// (their serializer has one, to answer PartialObjectMetadata): a protobuf
// body is then refused as their decoder refuses it (it cannot decode into
// an unstructured object, whose kind is not set yet), naming the envelope's
// kind and version.
func TestCustomResourceProtobufBody(t *testing.T) {
	ts := newTestServer(t)
	serveThings(t, ts)
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "a.example.com/v1", Kind: "Thing"}, Raw: []byte{}}
	data, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const path = "/apis/a.example.com/v1/namespaces/default/things"
	for _, tc := range []struct {
		method, path, contentType, body, want string
		code                                  int
	}{
		{http.MethodPost, path, "application/vnd.kubernetes.protobuf", "k8s\x00" + string(data),
			`Thing in version "v1" cannot be handled as a Thing: Object 'Kind' is missing in 'object has no kind field '`, http.StatusBadRequest},
		{http.MethodPut, path + "/one", "application/vnd.kubernetes.protobuf", "k8s\x00" + string(data),
			`Thing in version "v1" cannot be handled as a Thing: Object 'Kind' is missing in 'object has no kind field '`, http.StatusBadRequest},
		{http.MethodPost, path, "application/vnd.kubernetes.protobuf", "{}",
			`the object provided is unrecognized (must be of type Thing): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({})`, http.StatusBadRequest},
		{http.MethodPost, path, "text/plain", "{}",
			"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf", http.StatusUnsupportedMediaType},
	} {
		code, body := call(t, ts, tc.method, tc.path, tc.contentType, tc.body)
		var st metav1.Status
		if code != tc.code || json.Unmarshal([]byte(body), &st) != nil || st.Message != tc.want {
			t.Errorf("%s %s %s %q: %d %s, want %d %s", tc.method, tc.path, tc.contentType, tc.body, code, body, tc.code, tc.want)
		}
	}
}

// A built-in kind's create or update whose body names another kind, or a
// version the kind's scheme does not know, fails as kube-apiserver's
// decoder fails it (transformDecodeError over its JSON serializer): a kind
// its scheme does not know in that version is not registered; another kind
// it knows decodes and then has no conversion into the endpoint kind's
// internal type; an apiVersion that is no group version makes the object
// unrecognized. The endpoint's kind in another version its scheme knows is
// the create handler's own "API version in the data" refusal.
func TestBodyKindDecodeErrors(t *testing.T) {
	ts := newTestServer(t)
	const (
		nsPath  = "/api/v1/namespaces"
		legacy  = `in scheme "pkg/api/legacyscheme/scheme.go:30"`
		crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	)
	for _, tc := range []struct {
		method, path, body, want string
	}{
		{http.MethodPost, nsPath, `{"apiVersion":"v9","kind":"Namespace","metadata":{"name":"a"}}`,
			`Namespace in version "v9" cannot be handled as a Namespace: no kind "Namespace" is registered for version "v9" ` + legacy},
		{http.MethodPost, nsPath, `{"apiVersion":"apps/v1","kind":"Namespace","metadata":{"name":"a"}}`,
			`Namespace in version "v1" cannot be handled as a Namespace: no kind "Namespace" is registered for version "apps/v1" ` + legacy},
		{http.MethodPost, nsPath, `{"kind":"namespace","metadata":{"name":"a"}}`,
			`namespace in version "v1" cannot be handled as a Namespace: no kind "namespace" is registered for version "v1" ` + legacy},
		{http.MethodPost, nsPath, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`,
			`Pod in version "v1" cannot be handled as a Namespace: converting (v1.Pod) to (core.Namespace): unknown conversion`},
		{http.MethodPost, nsPath, `{"apiVersion":"a/b/c","kind":"Namespace","metadata":{"name":"a"}}`,
			`the object provided is unrecognized (must be of type Namespace): unexpected GroupVersion string: a/b/c ({"apiVersion":"a/b/c","kind":" ...)`},
		{http.MethodPut, nsPath + "/default", `{"apiVersion":"v1","kind":"Foo","metadata":{"name":"default"}}`,
			`Foo in version "v1" cannot be handled as a Namespace: no kind "Foo" is registered for version "v1" ` + legacy},
		{http.MethodPost, vwcPath, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`,
			`Namespace in version "v1" cannot be handled as a ValidatingWebhookConfiguration: converting (v1.Namespace) to (admissionregistration.ValidatingWebhookConfiguration): unknown conversion`},
		{http.MethodPost, vwcPath, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"a"}}`,
			`MutatingWebhookConfiguration in version "v1" cannot be handled as a ValidatingWebhookConfiguration: converting (v1.MutatingWebhookConfiguration) to (admissionregistration.ValidatingWebhookConfiguration): unknown conversion`},
		{http.MethodPost, vwcPath, `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"a"}}`,
			`the API version in the data (admissionregistration.k8s.io/v1beta1) does not match the expected API version (admissionregistration.k8s.io/v1)`},
		{http.MethodPost, crdPath, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CRD","metadata":{"name":"a"}}`,
			`CRD in version "v1" cannot be handled as a CustomResourceDefinition: no kind "CRD" is registered for version "apiextensions.k8s.io/v1" in scheme "pkg/apiserver/apiserver.go:55"`},
		{http.MethodPost, "/apis/resource.k8s.io/v1beta2/deviceclasses", `{"apiVersion":"resource.k8s.io/v1beta2","kind":"ResourceClaim","metadata":{"name":"a"}}`,
			`ResourceClaim in version "v1beta2" cannot be handled as a DeviceClass: converting (v1beta2.ResourceClaim) to (resource.DeviceClass): unknown conversion`},
	} {
		code, body := call(t, ts, tc.method, tc.path, "application/json", tc.body)
		var st metav1.Status
		if code != http.StatusBadRequest || json.Unmarshal([]byte(body), &st) != nil || st.Reason != metav1.StatusReasonBadRequest || st.Message != tc.want {
			t.Errorf("%s %s %s: %d %s\nwant 400 %s", tc.method, tc.path, tc.body, code, body, tc.want)
		}
	}
}

// A body naming a kind its decoder's scheme does not know names that
// scheme as kube-apiserver's errors name it: a built-in kind's protobuf
// body the kind's own scheme (the legacy scheme), a custom resource's
// Scale patched to another kind client-go's scale converter's (kapi's own
// schemes are named after where the module cache holds apimachinery). A
// Scale PUT that does not decode is the custom resource typer's error (see
// scaleBodyUndecodable).
func TestNotRegisteredSchemeNames(t *testing.T) {
	ts := newTestServer(t)
	ns, err := (&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pb"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v9", Kind: "Namespace"}, Raw: ns}
	data, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"scalers.s.example.com"},
		"spec":{"group":"s.example.com","scope":"Cluster","names":{"plural":"scalers","kind":"Scaler"},
		"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
		"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	if code, body := call(t, ts, http.MethodPost, crds, "application/json", crd); code != http.StatusCreated {
		t.Fatalf("create the CRD: %d %s", code, body)
	}
	const scalers = "/apis/s.example.com/v1/scalers"
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := call(t, ts, http.MethodPost, scalers, "application/json", `{"apiVersion":"s.example.com/v1","kind":"Scaler","metadata":{"name":"one"},"spec":{"replicas":1}}`)
		if code == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the custom resource is not served: %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, tc := range []struct {
		method, path, contentType, body string
		code                            int
		want                            string
	}{
		{http.MethodPost, nsPath, "application/vnd.kubernetes.protobuf", "k8s\x00" + string(data), http.StatusBadRequest,
			`Namespace in version "v9" cannot be handled as a Namespace: no kind "Namespace" is registered for version "v9" in scheme "pkg/api/legacyscheme/scheme.go:30"`},
		{http.MethodPut, scalers + "/one/scale", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Foo","metadata":{"name":"one"},"spec":{"replicas":2}}`, http.StatusBadRequest,
			`no kind is registered for the type v1.Scale in scheme "k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go:725"`},
		{http.MethodPatch, scalers + "/one/scale", "application/merge-patch+json", `{"kind":"Foo"}`, http.StatusUnprocessableEntity,
			`no kind "Foo" is registered for version "autoscaling/v1" in scheme "k8s.io/client-go/scale/util.go:146"`},
	} {
		code, body := call(t, ts, tc.method, tc.path, tc.contentType, tc.body)
		var st metav1.Status
		if code != tc.code || json.Unmarshal([]byte(body), &st) != nil || !strings.HasSuffix(st.Message, tc.want) {
			t.Errorf("%s %s: %d %s\nwant %d %s", tc.method, tc.path, code, body, tc.code, tc.want)
		}
	}
}
