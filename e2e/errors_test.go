package e2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const vwcBody = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"%s"},
"webhooks":[{"name":"a.example.com","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://example.com"}%s}]}`

func vwcJSON(name, extra string) []byte {
	return []byte(strings.Replace(strings.Replace(vwcBody, "%s", name, 1), "%s", extra, 1))
}

const vapBody = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"NAME"},
"spec":{"foo":"bar","matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
"validations":[{"expression":"true"}]}}`

// warnings returns the texts of a response's Warning headers.
func warnings(t testing.TB, h http.Header) []string {
	t.Helper()
	var out []string
	for _, w := range h.Values("Warning") {
		// 299 - "text"
		code, rest, ok := strings.Cut(w, " ")
		if !ok || code != "299" {
			t.Errorf("malformed Warning header %q", w)
			continue
		}
		agent, quoted, ok := strings.Cut(rest, " ")
		if !ok || agent != "-" {
			t.Errorf("malformed Warning header %q", w)
			continue
		}
		text, err := strconv.Unquote(quoted)
		if err != nil {
			t.Errorf("Warning header %q: text is not quoted: %v", w, err)
			continue
		}
		out = append(out, text)
	}
	return out
}

func TestErrorsAsStatus(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	vwcs := collectionPath(gvrVWCs)
	vaps := collectionPath(gvrVAPs)
	if r := k.do(t, "POST", vwcs, vwcJSON("existing", "")); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}

	t.Run("malformed JSON", func(t *testing.T) {
		r := k.do(t, "POST", vwcs, []byte(`{"apiVersion": "admissionregistration.k8s.io/v1", "kind": `))
		// kube-apiserver quotes the body's first 30 bytes.
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`the object provided is unrecognized (must be of type ValidatingWebhookConfiguration): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion": "admissionregis ...)`)
		// Metadata that does not decode.
		r = k.do(t, "POST", vwcs, []byte(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"x","labels":"x"}}`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`ValidatingWebhookConfiguration in version "v1" cannot be handled as a ValidatingWebhookConfiguration: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string`)
		r = k.do(t, "PUT", vwcs+"/existing", []byte(`{not json}`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
	})

	t.Run("body too large", func(t *testing.T) {
		big := bytes.Repeat([]byte(" "), 3*1024*1024+1)
		copy(big, vwcJSON("big", ""))
		r := k.do(t, "POST", vwcs, big)
		expectStatus(t, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctxT(t), "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("oversized create stored the object: %v", err)
		}
	})

	t.Run("unknown resource", func(t *testing.T) {
		// Under a built-in group version, kube-apiserver's router for it
		// answers a Status.
		for _, p := range []string{
			"/apis/admissionregistration.k8s.io/v1/foos",
			"/apis/admissionregistration.k8s.io/v1/foos/x",
			"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/existing/status",
			"/api/v1/foos",
		} {
			r := k.do(t, "GET", p, nil)
			expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound)
		}
		// Anywhere else the request falls through to a plain 404, which
		// client-go makes a NotFound naming what it asked for.
		for _, p := range []string{
			"/apis/nope.example.com/v1/things",
			"/apis/admissionregistration.k8s.io/v7/validatingwebhookconfigurations",
			"/api/v2/namespaces",
			"/nothing-here",
		} {
			expectPlainNotFound(t, k.do(t, "GET", p, nil))
		}
		// (As kubectl's requests name it: kubectl prints it, "(get things x)".)
		err := k.Client.CoreV1().RESTClient().Get().AbsPath("/apis/nope.example.com/v1").Resource("things").Name("x").Do(ctxT(t)).Error()
		var se apierrors.APIStatus
		if !apierrors.IsNotFound(err) || !errors.As(err, &se) || se.Status().Details == nil || se.Status().Details.Kind != "things" || se.Status().Details.Name != "x" {
			t.Errorf("client-go get of an unknown resource: %v (%+v), want a NotFound naming things x", err, se)
		}
	})

	t.Run("missing object", func(t *testing.T) {
		r := k.do(t, "GET", vwcs+"/missing", nil)
		st := expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound,
			`validatingwebhookconfigurations.admissionregistration.k8s.io "missing" not found`)
		if st.Details == nil || st.Details.Name != "missing" || st.Details.Group != "admissionregistration.k8s.io" || st.Details.Kind != "validatingwebhookconfigurations" {
			t.Errorf("details %+v", st.Details)
		}
	})

	t.Run("already exists", func(t *testing.T) {
		r := k.do(t, "POST", vwcs, vwcJSON("existing", ""))
		expectStatus(t, r, http.StatusConflict, metav1.StatusReasonAlreadyExists,
			`validatingwebhookconfigurations.admissionregistration.k8s.io "existing" already exists`)
	})

	t.Run("conflict", func(t *testing.T) {
		body := vwcJSON("existing", "")
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(body); err != nil {
			t.Fatal(err)
		}
		u.SetResourceVersion("1")
		r := k.do(t, "PUT", vwcs+"/existing", mustJSON(t, u.Object))
		expectStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on validatingwebhookconfigurations.admissionregistration.k8s.io "existing": the object has been modified; please apply your changes to the latest version and try again`)
	})

	t.Run("invalid", func(t *testing.T) {
		r := k.do(t, "POST", vwcs, []byte(strings.Replace(string(vwcJSON("bad", "")), `"None"`, `"Some"`, 1)))
		st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid`)
		if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "webhooks[0].sideEffects" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueNotSupported {
			t.Errorf("causes %+v", st.Details)
		}
	})

	t.Run("method not allowed", func(t *testing.T) {
		// kube-apiserver's go-restful answer for a built-in path.
		const msg = "the server does not allow this method on the requested resource"
		r := k.do(t, "POST", vwcs+"/existing", vwcJSON("existing", ""))
		expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, msg)
		r = k.do(t, "PUT", vwcs, vwcJSON("existing", ""))
		expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, msg)
		r = k.do(t, "DELETE", "/api/v1/namespaces", nil)
		expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, msg)
	})

	t.Run("name differs from URL", func(t *testing.T) {
		r := k.do(t, "PUT", vwcs+"/existing", vwcJSON("other", ""))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"the name of the object (other) does not match the name on the URL (existing)")
	})

	t.Run("apiVersion or kind not the endpoint's", func(t *testing.T) {
		// A Namespace sent to the webhook endpoint: kube's decoder decodes
		// it as the Namespace it names, which has no conversion into the
		// endpoint's kind.
		r := k.do(t, "POST", vwcs, []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-in-vwc"}}`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`Namespace in version "v1" cannot be handled as a ValidatingWebhookConfiguration: converting (v1.Namespace) to (admissionregistration.ValidatingWebhookConfiguration): unknown conversion`)
		// A built-in kind's body may leave out its kind: the endpoint's.
		noKind := strings.Replace(string(vwcJSON("no-kind", "")), `"kind":"ValidatingWebhookConfiguration",`, "", 1)
		if r := k.do(t, "POST", vwcs, []byte(noKind)); r.Code != http.StatusCreated {
			t.Errorf("a body without kind: %d %s, want 201", r.Code, r.Body)
		}
		// The right group and version but another kind.
		mwc := strings.Replace(string(vwcJSON("kind-mismatch", "")), "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", 1)
		r = k.do(t, "POST", vwcs, []byte(mwc))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`MutatingWebhookConfiguration in version "v1" cannot be handled as a ValidatingWebhookConfiguration: converting (v1.MutatingWebhookConfiguration) to (admissionregistration.ValidatingWebhookConfiguration): unknown conversion`)
		// A version the kind's scheme does not know.
		r = k.do(t, "POST", vwcs, []byte(strings.Replace(string(vwcJSON("unknown-version", "")), "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v9", 1)))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`ValidatingWebhookConfiguration in version "v9" cannot be handled as a ValidatingWebhookConfiguration: no kind "ValidatingWebhookConfiguration" is registered for version "admissionregistration.k8s.io/v9" in scheme "pkg/api/legacyscheme/scheme.go:30"`)
		// A v1 body sent to the v1beta1 endpoint.
		r = k.do(t, "POST", collectionPath(gvrVAPsBeta), []byte(strings.Replace(strings.Replace(vapBody, "NAME", "wrong-version", 1), `"foo":"bar",`, "", 1)))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		for _, p := range []string{"ns-in-vwc", "kind-mismatch"} {
			if g := k.do(t, "GET", vwcs+"/"+p, nil); g.Code != http.StatusNotFound {
				t.Errorf("%s was stored: %d", p, g.Code)
			}
		}
	})

	t.Run("fieldValidation Strict", func(t *testing.T) {
		r := k.do(t, "POST", vaps+"?fieldValidation=Strict", []byte(strings.Replace(vapBody, "NAME", "strict", 1)))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `ValidatingAdmissionPolicy in version "v1" cannot be handled as a ValidatingAdmissionPolicy: strict decoding error: unknown field "spec.foo"`)
		r = k.do(t, "POST", vwcs+"?fieldValidation=Strict", vwcJSON("strict", `,"foo":1`))
		st := expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if st.Message != `ValidatingWebhookConfiguration in version "v1" cannot be handled as a ValidatingWebhookConfiguration: strict decoding error: unknown field "webhooks[0].foo"` {
			t.Errorf("message %q", st.Message)
		}
		// Duplicate fields are errors too.
		r = k.do(t, "POST", vwcs+"?fieldValidation=Strict", []byte(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"dup","name":"dup2"}}`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `duplicate field "metadata.name"`)
		// PUT too.
		r = k.do(t, "PUT", vwcs+"/existing?fieldValidation=Strict", vwcJSON("existing", `,"foo":1`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `unknown field "webhooks[0].foo"`)
		for _, p := range []string{vaps + "/strict", vwcs + "/strict", vwcs + "/dup"} {
			if g := k.do(t, "GET", p, nil); g.Code != http.StatusNotFound {
				t.Errorf("%s was stored: %d", p, g.Code)
			}
		}
	})

	t.Run("fieldValidation Warn", func(t *testing.T) {
		for _, q := range []string{"?fieldValidation=Warn", ""} { // Warn is the default
			name := "warn" + strings.TrimPrefix(q, "?fieldValidation=")
			r := k.do(t, "POST", vaps+q, []byte(strings.Replace(vapBody, "NAME", strings.ToLower(name), 1)))
			if r.Code != http.StatusCreated {
				t.Fatalf("create %q: %d %s", q, r.Code, r.Body)
			}
			w := warnings(t, r.Header)
			if len(w) != 1 || w[0] != `unknown field "spec.foo"` {
				t.Errorf("create %q: warnings %q, want [unknown field \"spec.foo\"]", q, w)
			}
			if strings.Contains(string(r.Body), `"foo"`) {
				t.Errorf("the unknown field was kept: %s", r.Body)
			}
		}
	})

	t.Run("fieldValidation Ignore", func(t *testing.T) {
		r := k.do(t, "POST", vaps+"?fieldValidation=Ignore", []byte(strings.Replace(vapBody, "NAME", "ignore", 1)))
		if r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		if w := r.Header.Values("Warning"); len(w) != 0 {
			t.Errorf("warnings %q with fieldValidation=Ignore", w)
		}
	})

	t.Run("fieldValidation invalid value", func(t *testing.T) {
		r := k.do(t, "POST", vaps+"?fieldValidation=Sometimes", []byte(strings.Replace(vapBody, "NAME", "sometimes", 1)))
		if r.Code < 400 || r.Code >= 500 {
			t.Errorf("fieldValidation=Sometimes: %d %s", r.Code, r.Body)
		}
	})

	t.Run("unsupported Content-Type", func(t *testing.T) {
		r := k.do(t, "POST", vwcs, vwcJSON("text", ""), "Content-Type: text/plain")
		// kube's negotiation error: the accepted types, no details.
		if st := expectStatus(t, r, http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"); st.Details != nil {
			t.Errorf("415 details %+v, want none", st.Details)
		}
		// A PATCH needs a patch media type.
		r = k.do(t, "PATCH", vwcs+"/existing", []byte(`{}`), "Content-Type: application/json")
		expectStatus(t, r, http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType)
	})

	t.Run("not acceptable", func(t *testing.T) {
		// kapi answers JSON, YAML and, for built-in kinds, protobuf.
		r := k.do(t, "GET", vwcs, nil, "Accept: text/html")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
		r = k.do(t, "GET", vwcs+"/existing", nil, "Accept: text/html")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
		// What client-go sends: protobuf preferred, JSON acceptable.
		r = k.do(t, "GET", vwcs+"/existing", nil, "Accept: application/vnd.kubernetes.protobuf, application/json")
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
			t.Errorf("protobuf-or-JSON Accept: %d %q", r.Code, r.Header.Get("Content-Type"))
		}
		// YAML on request.
		r = k.do(t, "GET", vwcs+"/existing", nil, "Accept: application/yaml")
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(r.Body), "kind: ValidatingWebhookConfiguration") {
			t.Errorf("YAML Accept: %d %q %s", r.Code, r.Header.Get("Content-Type"), r.Body)
		}
		// A concrete type before a wildcard of the same quality, as
		// kube-apiserver orders them.
		r = k.do(t, "GET", vwcs+"/existing", nil, "Accept: */*, application/yaml")
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/yaml" {
			t.Errorf("Accept */*, application/yaml: %d %q, want YAML", r.Code, r.Header.Get("Content-Type"))
		}
		// A group and version with nothing to convert to is not a form
		// kube-apiserver offers.
		r = k.do(t, "GET", vwcs+"/existing", nil, "Accept: application/json;g=meta.k8s.io;v=v1")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
		// The media type parameters kube-apiserver's negotiation reads: a
		// server version (sv) only meta.k8s.io's v1, a stream form only
		// watch and only where the type has one (YAML has none); a media
		// type that asks otherwise is skipped for the next one.
		for _, c := range []struct {
			accept      string
			code        int
			contentType string
		}{
			{"application/json;sv=v1", http.StatusOK, "application/json"},
			{"application/yaml;sv=v1", http.StatusOK, "application/yaml"},
			{"application/json;as=Table;g=meta.k8s.io;v=v1;sv=v1", http.StatusOK, "application/json"},
			{"application/json;sv=v2", http.StatusNotAcceptable, "application/json"},
			{"application/json;as=Table;g=meta.k8s.io;v=v1;sv=v2", http.StatusNotAcceptable, "application/json"},
			{"application/json;stream=watch", http.StatusOK, "application/json"},
			{"*/*;stream=watch", http.StatusOK, "application/json"},
			{"application/json;stream=events", http.StatusNotAcceptable, "application/json"},
			{"application/yaml;stream=watch", http.StatusNotAcceptable, "application/json"},
			{"application/yaml;stream=watch, application/json", http.StatusOK, "application/json"},
			{"application/json;sv=v2, application/yaml", http.StatusOK, "application/yaml"},
		} {
			r = k.do(t, "GET", vwcs+"/existing", nil, "Accept: "+c.accept)
			if r.Code != c.code || r.Header.Get("Content-Type") != c.contentType {
				t.Errorf("Accept %s: %d %q, want %d %q", c.accept, r.Code, r.Header.Get("Content-Type"), c.code, c.contentType)
			}
		}
		// An error is negotiated without the resource's server version:
		// with sv it is written as kube-apiserver writes an error no
		// acceptable form carries, indented JSON.
		r = k.do(t, "GET", vwcs+"/missing", nil, "Accept: application/yaml;sv=v1")
		if r.Code != http.StatusNotFound || r.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(r.Body), "\n  \"reason\": \"NotFound\"") {
			t.Errorf("a missing object with Accept application/yaml;sv=v1: %d %q %s, want an indented JSON Status", r.Code, r.Header.Get("Content-Type"), r.Body)
		}
		// Discovery takes no server version either.
		r = k.do(t, "GET", "/apis/admissionregistration.k8s.io", nil, "Accept: application/json;sv=v1")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
		// Errors in YAML too.
		r = k.do(t, "GET", vwcs+"/missing", nil, "Accept: application/yaml")
		if r.Code != http.StatusNotFound || r.Header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(r.Body), "reason: NotFound") {
			t.Errorf("a missing object with a YAML Accept: %d %q %s, want a YAML Status", r.Code, r.Header.Get("Content-Type"), r.Body)
		}
		// A write whose answer cannot be given is refused before it is
		// made, as kube-apiserver negotiates first: nothing changes.
		for _, w := range []struct{ method, path, body, contentType string }{
			{"POST", vwcs, string(vwcJSON("refused", "")), "application/json"},
			{"PATCH", vwcs + "/existing", `{"metadata":{"labels":{"changed":"yes"}}}`, "application/merge-patch+json"},
			{"DELETE", vwcs + "/existing", "", ""},
			{"DELETE", vwcs, "", ""},
		} {
			var body []byte
			headers := []string{"Accept: text/html"}
			if w.body != "" {
				body = []byte(w.body)
				headers = append(headers, "Content-Type: "+w.contentType)
			}
			r = k.do(t, w.method, w.path, body, headers...)
			expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
		}
		r = k.do(t, "GET", vwcs, nil)
		if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"name":"existing"`) || strings.Contains(string(r.Body), `"changed"`) || strings.Contains(string(r.Body), `"refused"`) {
			t.Errorf("after writes refused for their Accept: %d %s, want existing unchanged and nothing created", r.Code, r.Body)
		}
	})

	t.Run("future resourceVersion", func(t *testing.T) {
		// A 504 that says when to retry says it in Retry-After, which
		// client-go retries on.
		r := k.do(t, "GET", vwcs+"/existing?resourceVersion=999999", nil)
		expectStatus(t, r, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "Too large resource version: 999999")
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After %q, want 1", got)
		}
		// A list of that exact revision is etcd's error to kube-apiserver,
		// at once: a 500 without a reason (and nothing to retry).
		for _, q := range []string{"resourceVersion=999999&resourceVersionMatch=Exact", "resourceVersion=999999&limit=1"} {
			r := k.do(t, "GET", vwcs+"?"+q, nil)
			var st metav1.Status
			if err := json.Unmarshal(r.Body, &st); err != nil || r.Code != http.StatusInternalServerError || st.Reason != "" ||
				st.Message != "etcdserver: mvcc: required revision is a future revision" || r.Header.Get("Retry-After") != "" {
				t.Errorf("list ?%s: %d %s (Retry-After %q), want etcd's future revision error, a 500", q, r.Code, r.Body, r.Header.Get("Retry-After"))
			}
		}
	})

	t.Run("malformed resourceVersion of a get", func(t *testing.T) {
		// kube-apiserver serves a get that names a resourceVersion from its
		// watch cache, whose parser's error it answers as no Status, a 500
		// (a list checks the parameter first, a 400): a 400 here, in the
		// parser's words.
		const want = `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
		r := k.do(t, "GET", vwcs+"/existing?resourceVersion=abc", nil)
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
		// The name is checked before: an invalid one is refused at once,
		// without a wait for a newer resourceVersion.
		start := time.Now()
		r = k.do(t, "GET", vwcs+"/a%25b?resourceVersion=999999", nil)
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `Name parameter invalid: "a%b": may not contain '%'`)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("an invalid name with a future resourceVersion answered after %v, want at once", d)
		}
	})

	t.Run("export parameter of a get", func(t *testing.T) {
		// kube-apiserver's get handler refuses export (removed in 1.18)
		// unless it is false; a list ignores it.
		for _, q := range []string{"export=true", "export=1", "export", "export=yes&export=false"} {
			r := k.do(t, "GET", vwcs+"/existing?"+q, nil)
			expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the export parameter, deprecated since v1.14, is no longer supported")
		}
		for _, p := range []string{vwcs + "/existing?export=false", vwcs + "/existing?export=0", vwcs + "/existing?export=FALSE", vwcs + "?export=true"} {
			if r := k.do(t, "GET", p, nil); r.Code != http.StatusOK {
				t.Errorf("GET %s: %d %s, want 200", p, r.Code, r.Body)
			}
		}
	})

	t.Run("YAML body", func(t *testing.T) {
		y := strings.Replace(vwcYAML, "vwc-e2e", "from-yaml", 1)
		r := k.do(t, "POST", vwcs, []byte(y), "Content-Type: application/yaml")
		if r.Code != http.StatusCreated {
			t.Errorf("YAML create: %d %s", r.Code, r.Body)
		}
		// A body that is not an object, worded as kube-apiserver's decoder
		// words it (it reads apiVersion and kind into a struct first), the
		// body summarized as kube's create handler summarizes one that is
		// not a JSON object: in hex.
		r = k.do(t, "POST", vwcs, []byte(`[]`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`the object provided is unrecognized (must be of type ValidatingWebhookConfiguration): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b5d)`)
		// YAML that does not parse, worded as kube-apiserver's decoder.
		r = k.do(t, "POST", vwcs, []byte("a: ["), "Content-Type: application/yaml")
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"the object provided is unrecognized (must be of type ValidatingWebhookConfiguration): yaml: line 1: did not find expected node content (613a205b)")
		// YAML that parses into something else than an object: the YAML
		// as sent is summarized (its first 30 bytes), not its JSON.
		list := "- apiVersion: admissionregistration.k8s.io/v1\n"
		r = k.do(t, "PUT", vwcs+"/existing", []byte(list), "Content-Type: application/yaml")
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"json parse error: json: cannot unmarshal array into Go value of type struct", "("+hex.EncodeToString([]byte(list)[:30])+" ...)")
	})
}

// kube-apiserver warns on every request through a deprecated version; the
// policy API's v1beta1 is deprecated since v1.31.
func TestDeprecatedVersionWarns(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	r := k.do(t, "GET", "/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies", nil)
	if r.Code != http.StatusOK {
		t.Fatalf("list v1beta1: %d %s", r.Code, r.Body)
	}
	got := warnings(t, r.Header)
	want := "admissionregistration.k8s.io/v1beta1 ValidatingAdmissionPolicy is deprecated in v1.31+, unavailable in v1.34+"
	if len(got) != 1 || got[0] != want {
		t.Errorf("warnings = %q, want [%q]", got, want)
	}
	r = k.do(t, "GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", nil)
	if got := warnings(t, r.Header); len(got) != 0 {
		t.Errorf("v1 warnings = %q, want none", got)
	}
}

// An update's invalid metadata is reported as often as kube-apiserver
// reports it: once by the store's checks common to every kind (object
// meta, and its update rules), then by the kind's own update validation —
// which for a Namespace and a DeviceClass runs the kind's create rules as
// well as its update rules, and for the admission kinds the create rules
// only.
func TestUpdateMetadataCausesAsKube(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("causes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("causes.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("causes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, newVAP("causes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/v1/namespaces/causes", 4},
		{"/apis/resource.k8s.io/v1beta2/deviceclasses/causes.example.com", 4},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/causes", 3},
		{"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/causes", 3},
	} {
		r := k.do(t, "PATCH", c.path, []byte(`{"metadata":{"labels":{"bad key!":"x"}}}`), "Content-Type: application/merge-patch+json")
		var st metav1.Status
		if err := json.Unmarshal(r.Body, &st); err != nil || r.Code != http.StatusUnprocessableEntity || st.Details == nil {
			t.Errorf("PATCH %s with an invalid label: %d %s, want 422 with causes", c.path, r.Code, r.Body)
			continue
		}
		got := 0
		for _, cause := range st.Details.Causes {
			if cause.Field == "metadata.labels" {
				got++
			}
		}
		if got != c.want || got != len(st.Details.Causes) {
			t.Errorf("PATCH %s with an invalid label: causes %s, want %d on metadata.labels", c.path, fmtJSON(st.Details.Causes), c.want)
		}
	}
}

// The byte-level forms kube-apiserver's encoders give: pretty JSON (asked
// for, or for curl, Wget and Mozilla/5.0 user agents) is indented with no
// newline after it, compact JSON ends with one; an error no acceptable form
// can carry is indented JSON; an empty PartialObjectMetadataList's items
// are null (it is built by appending).
func TestResponseBytes(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	path := "/api/v1/namespaces/default"
	for _, c := range []struct {
		what   string
		path   string
		header []string
		pretty bool
	}{
		{"?pretty=true", path + "?pretty=true", nil, true},
		{"curl", path, []string{"User-Agent: curl/8.0"}, true},
		{"Mozilla/5.0", path, []string{"User-Agent: Mozilla/5.0 (X11)"}, true},
		{"Mozilla/4.0", path, []string{"User-Agent: Mozilla/4.0 (compatible)"}, false},
		{"client-go", path, []string{"User-Agent: kubectl/v1.33.0"}, false},
		{"an error for text/html", "/api/v1/namespaces/missing", []string{"Accept: text/html"}, true},
		{"an error for a Table only", "/api/v1/namespaces/missing", []string{"Accept: application/json;as=Table;v=v1;g=meta.k8s.io"}, true},
		{"an error for JSON", "/api/v1/namespaces/missing", nil, false},
	} {
		r := k.do(t, "GET", c.path, nil, c.header...)
		body := string(r.Body)
		indented := strings.HasPrefix(body, "{\n  ")
		if c.pretty && (!indented || strings.HasSuffix(body, "\n")) {
			t.Errorf("%s: %q, want indented JSON without a newline after it", c.what, body)
		}
		if !c.pretty && (indented || !strings.HasSuffix(body, "}\n")) {
			t.Errorf("%s: %q, want compact JSON and a newline", c.what, body)
		}
	}
	r := k.do(t, "GET", collectionPath(gvrVWCs), nil, "Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
	if !strings.HasSuffix(string(r.Body), `"items":null}`+"\n") {
		t.Errorf("an empty PartialObjectMetadataList: %s, want items null", r.Body)
	}
	// A Table and a PartialObjectMetadata come in YAML too.
	for _, c := range []struct{ path, as, kind string }{
		{"/api/v1/namespaces", "Table", "Table"},
		{"/api/v1/namespaces", "PartialObjectMetadataList", "PartialObjectMetadataList"},
		{path, "PartialObjectMetadata", "PartialObjectMetadata"},
	} {
		r := k.do(t, "GET", c.path, nil, "Accept: application/yaml;as="+c.as+";v=v1;g=meta.k8s.io")
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(r.Body), "\nkind: "+c.kind+"\n") {
			t.Errorf("%s as a YAML %s: %d %s %.200s", c.path, c.as, r.Code, r.Header.Get("Content-Type"), r.Body)
		}
	}
}
