package server

import (
	"strings"
	"testing"

	"github.com/kapi-dev/kapi/openapi"
	"github.com/kapi-dev/kapi/server/registry"
)

const vwcPath = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"

const vwcBody = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",
"metadata":{"name":"p"},"webhooks":[{"name":"a.example.com","sideEffects":"None","admissionReviewVersions":["v1"],
"clientConfig":{"url":"https://example.com"}}]}`

func TestPatchTypes(t *testing.T) {
	ts := newTestServer(t)
	if code, body := call(t, ts, "POST", vwcPath, "application/json", vwcBody); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	tests := []struct {
		name, contentType, patch string
		code                     int
		want                     string // in the response body
	}{
		{"json patch", "application/json-patch+json", `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}]`, 200, `"timeoutSeconds":5`},
		{"json patch test fails", "application/json-patch+json", `[{"op":"test","path":"/metadata/name","value":"x"}]`, 422, `"code":422`},
		{"json patch malformed", "application/json-patch+json", `{"op":"add"}`, 400, `"reason":"BadRequest"`},
		{"merge patch", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`, 200, `"a":"b"`},
		{"merge patch malformed", "application/merge-patch+json", `{`, 400, `"reason":"BadRequest"`},
		{"merge patch wrong type", "application/merge-patch+json", `{"webhooks":"x"}`, 422, `"field":"patch"`},
		{"strategic merge adds by key", "application/strategic-merge-patch+json",
			`{"webhooks":[{"name":"b.example.com","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://example.com"}}]}`,
			200, `"name":"a.example.com"`},
		{"strategic merge malformed", "application/strategic-merge-patch+json", `[1]`, 400, `"reason":"BadRequest"`},
		{"name change", "application/merge-patch+json", `{"metadata":{"name":"q"}}`, 400, `does not match the name on the URL`},
		{"uid change", "application/merge-patch+json", `{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"}}`, 422, `metadata.uid: Invalid value: \"00000000-0000-0000-0000-000000000000\": field is immutable`},
		{"invalid result", "application/merge-patch+json", `{"webhooks":[{"name":"a.example.com","sideEffects":"Some","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://example.com"}}]}`, 422, `webhooks[0].sideEffects`},
		{"unsupported type", "text/plain", `x`, 415, `"reason":"UnsupportedMediaType"`},
		{"apply without fieldManager", "application/apply-patch+yaml", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: p\n", 422, `fieldManager`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, ts, "PATCH", vwcPath+"/p", tc.contentType, tc.patch)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("PATCH %s: %d %.400s; want %d containing %q", tc.contentType, code, body, tc.code, tc.want)
			}
		})
	}
	// The strategic merge kept the first webhook and added the second.
	_, body := call(t, ts, "GET", vwcPath+"/p", "", "")
	if !strings.Contains(body, `"a.example.com"`) || !strings.Contains(body, `"b.example.com"`) {
		t.Errorf("after the strategic merge: %s", body)
	}
}

func TestApplyConflictsAndForce(t *testing.T) {
	ts := newTestServer(t)
	cfg := func(timeout int) string {
		return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: s\nwebhooks:\n" +
			"- name: a.example.com\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  clientConfig: {url: 'https://example.com'}\n" +
			"  timeoutSeconds: " + string(rune('0'+timeout)) + "\n"
	}
	if code, body := call(t, ts, "PATCH", vwcPath+"/s?fieldManager=alice", "application/apply-patch+yaml", cfg(5)); code != 201 {
		t.Fatalf("create on apply: %d %s", code, body)
	}
	code, body := call(t, ts, "PATCH", vwcPath+"/s?fieldManager=bob", "application/apply-patch+yaml", cfg(7))
	if code != 409 || !strings.Contains(body, `"reason":"FieldManagerConflict"`) || !strings.Contains(body, `alice`) || !strings.Contains(body, `timeoutSeconds`) {
		t.Fatalf("conflicting apply: %d %s", code, body)
	}
	code, body = call(t, ts, "PATCH", vwcPath+"/s?fieldManager=bob&force=true", "application/apply-patch+yaml", cfg(7))
	if code != 200 || !strings.Contains(body, `"timeoutSeconds":7`) || !strings.Contains(body, `"manager":"bob"`) {
		t.Fatalf("forced apply: %d %s", code, body)
	}
	code, body = call(t, ts, "PATCH", vwcPath+"/s?fieldManager=bob", "application/merge-patch+json", `{}`)
	if code != 200 {
		t.Fatalf("empty merge patch: %d %s", code, body)
	}
	code, body = call(t, ts, "PATCH", vwcPath+"/s?fieldManager=bob&force=true", "application/merge-patch+json", `{}`)
	if code != 422 || !strings.Contains(body, "force") {
		t.Fatalf("force on a merge patch: %d %s", code, body)
	}
	// dryRun: the answer shows the change, the store keeps the old state.
	code, body = call(t, ts, "PATCH", vwcPath+"/s?fieldManager=bob&dryRun=All", "application/apply-patch+yaml", cfg(3))
	if code != 200 || !strings.Contains(body, `"timeoutSeconds":3`) {
		t.Fatalf("dry-run apply: %d %s", code, body)
	}
	if _, body = call(t, ts, "GET", vwcPath+"/s", "", ""); !strings.Contains(body, `"timeoutSeconds":7`) {
		t.Fatalf("dry-run apply persisted: %s", body)
	}
}

func TestManagerName(t *testing.T) {
	for _, tc := range []struct{ fieldManager, ua, want string }{
		{"mine", "kubectl/v1.32.4 (linux/amd64)", "mine"},
		{"", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc", "kubectl"},
		{"", "controller\x01name/1.0", "controllername"},
		{"", strings.Repeat("x", 200) + "/1", strings.Repeat("x", 128)},
		// Never past 128 bytes: a 2-byte rune that would end at 129 is left out.
		{"", strings.Repeat("x", 127) + "é/1.0", strings.Repeat("x", 127)},
	} {
		if got := managerName(tc.fieldManager, tc.ua); got != tc.want {
			t.Errorf("managerName(%q, %q) = %q, want %q", tc.fieldManager, tc.ua, got, tc.want)
		}
	}
}

// A CRD's change serves a new descriptor: the field managers of the one
// it replaces are let go (with the schemas they hold).
func TestFieldManagersForgetReplacedDescriptors(t *testing.T) {
	var f fieldManagers
	descriptor := func() *registry.Resource {
		return &registry.Resource{Group: "example.com", Plural: "widgets", Kind: "Widget", Versions: []string{"v1"}, StorageVersion: "v1",
			TypeConverter: openapi.ScaleTypeConverter}
	}
	first, second := descriptor(), descriptor()
	for _, sub := range []string{"", "status"} {
		if _, err := f.get(first, "v1", sub); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.get(second, "v1", ""); err != nil {
		t.Fatal(err)
	}
	for k, e := range f.m {
		if e.res == first {
			t.Errorf("field manager %s of the replaced descriptor kept", k)
		}
	}
}

// A JSON or merge patch's result is decoded by the apiVersion and kind it
// names, as kube-apiserver's patch handler decodes it (its codec): one
// whose apiVersion and kind it cannot read, or that names a kind or version
// the kind's scheme cannot decode into the endpoint's kind, is an invalid
// patch (422, on field "patch"), not a create's 400. Unlike a create, a
// custom resource's patch is not checked against the endpoint's group
// version: its validation refuses another apiVersion (422), under the group
// and kind the object names. A strategic merge patch's result is read
// field by field into the endpoint kind's Go type: the apiVersion and kind
// it sets are not read.
func TestPatchResultTypeMeta(t *testing.T) {
	ts := newTestServer(t)
	serveThings(t, ts)
	const things = "/apis/a.example.com/v1/namespaces/default/things"
	if code, body := call(t, ts, "POST", things, "application/json", `{"apiVersion":"a.example.com/v1","kind":"Thing","metadata":{"name":"one"}}`); code != 201 {
		t.Fatalf("create a thing: %d %s", code, body)
	}
	const (
		merge = "application/merge-patch+json"
		json  = "application/json-patch+json"
		smp   = "application/strategic-merge-patch+json"
		ns    = "/api/v1/namespaces/default"
	)
	for _, tc := range []struct {
		path, contentType, patch string
		code                     int
		want                     []string // in the response body
	}{
		{ns, merge, `{"apiVersion":"v9"}`, 422, []string{`"field":"patch"`, `: no kind \"Namespace\" is registered for version \"v9\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"`}},
		{ns, merge, `{"kind":"Pod"}`, 422, []string{`"field":"patch"`, `: converting (v1.Pod) to (core.Namespace): unknown conversion`}},
		{ns, merge, `{"apiVersion":5}`, 422, []string{`"field":"patch"`,
			`: couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string`}},
		{ns, json, `[{"op":"replace","path":"","value":[1]}]`, 422, []string{`"message":" \"\" is invalid: patch: Invalid value: \"[1]\": couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct`}},
		{ns + "?fieldValidation=Ignore", merge, `[1]`, 422, []string{`patch: Invalid value: \"[1]\": couldn't get version/kind`}},
		{things + "/one", merge, `{"apiVersion":"a/b/c"}`, 422, []string{`"field":"patch"`, `: unexpected GroupVersion string: a/b/c"`}},
		{things + "/one", merge, `{"apiVersion":"v9"}`, 422, []string{
			`"message":"Thing \"one\" is invalid: apiVersion: Invalid value: \"v9\": must be a.example.com/v1"`, `"field":"apiVersion"`}},
		{things + "/one", merge, `{"apiVersion":"other.example.com/v1","kind":"Other"}`, 422, []string{
			`"message":"Other.other.example.com \"one\" is invalid: [kind: Invalid value: \"Other\": must be Thing, apiVersion: Invalid value: \"other.example.com/v1\": must be a.example.com/v1]"`}},
		{ns, smp, `{"apiVersion":"v9","kind":"Pod","metadata":{"labels":{"smp":"yes"}}}`, 200, []string{`"kind":"Namespace","apiVersion":"v1"`, `"smp":"yes"`}},
	} {
		code, body := call(t, ts, "PATCH", tc.path, tc.contentType, tc.patch)
		ok := code == tc.code
		for _, w := range tc.want {
			ok = ok && strings.Contains(body, w)
		}
		if !ok {
			t.Errorf("PATCH %s (%s) %s: %d %.600s\nwant %d containing %q", tc.path, tc.contentType, tc.patch, code, body, tc.code, tc.want)
		}
	}
}

// A JSON patch that is not a list of operations fails as kube-apiserver's
// patch handler fails it: under fieldValidation Warn (the default) or
// Strict it decodes the operations strictly into its handlers package's
// type first, which its message names; under Ignore json-patch's decoder
// is the first to fail.
func TestMalformedJSONPatchMessage(t *testing.T) {
	ts := newTestServer(t)
	const ns = "/api/v1/namespaces/default"
	for query, want := range map[string]string{
		"":                        `"message":"error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"`,
		"?fieldValidation=Strict": `"message":"error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"`,
		"?fieldValidation=Ignore": `"message":"json: cannot unmarshal object into Go value of type jsonpatch.Patch"`,
	} {
		code, body := call(t, ts, "PATCH", ns+query, "application/json-patch+json", `{"op":"add"}`)
		if code != 400 || !strings.Contains(body, want) {
			t.Errorf("PATCH%s: %d %s\nwant 400 containing %s", query, code, body, want)
		}
	}
}

// A strategic merge patch whose result does not fit the kind's Go type is
// an invalid patch quoting the patch as its Go map prints, with the error
// of the unstructured converter kube-apiserver reads the result with
// (applyPatchToObject: FromUnstructuredWithValidation), not encoding/json's.
func TestStrategicMergePatchResultErrors(t *testing.T) {
	ts := newTestServer(t)
	const ns = "/api/v1/namespaces/default"
	for patch, want := range map[string]string{
		`{"metadata":{"labels":{"a":1}}}`: `"message":" \"\" is invalid: patch: Invalid value: \"map[metadata:map[labels:map[a:1]]]\": cannot convert int64 to string"`,
		`{"spec":{"finalizers":"x"}}`:     `"message":" \"\" is invalid: patch: Invalid value: \"map[spec:map[finalizers:x]]\": cannot restore slice from string"`,
		`{"metadata":"x"}`:                `"message":" \"\" is invalid: patch: Invalid value: \"map[metadata:x]\": cannot restore struct from: string"`,
		`{"apiVersion":5}`:                `"message":" \"\" is invalid: patch: Invalid value: \"map[apiVersion:5]\": cannot convert int64 to string"`,
	} {
		code, body := call(t, ts, "PATCH", ns, "application/strategic-merge-patch+json", patch)
		if code != 422 || !strings.Contains(body, want) || !strings.Contains(body, `"field":"patch"`) {
			t.Errorf("PATCH %s: %d %s\nwant 422 containing %s", patch, code, body, want)
		}
	}
}
