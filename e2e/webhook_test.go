package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Admission webhooks called for real: HTTPS webhook servers on 127.0.0.1
// with their own CA, reached through clientConfig.url or, with
// --service-resolver, clientConfig.service. The objects under admission
// are DeviceClasses, namespaces and a namespaced custom resource (webhook
// configurations themselves are exempt in kube-apiserver). Every expected
// answer is kube-apiserver v1.33's, whose webhook plugins live in
// k8s.io/apiserver/pkg/admission/plugin/webhook.

// hookCall is one AdmissionReview a webhook server received.
type hookCall struct {
	Path, Query, SNI string
	// APIVersion and Kind of the AdmissionReview.
	APIVersion, Kind string
	Request          admissionv1.AdmissionRequest
	// Object and OldObject decoded from the request (nil when null).
	Object, OldObject *unstructured.Unstructured
	// Options decoded from the request (nil when null).
	Options map[string]interface{}
	Ctx     context.Context
}

// obj is the object the call is about: the new one, else the old one.
func (c *hookCall) obj() *unstructured.Unstructured {
	if c.Object != nil {
		return c.Object
	}
	if c.OldObject != nil {
		return c.OldObject
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{}}
}

// hookFunc answers a review; nil allows the request. The response's uid
// is filled in when empty.
type hookFunc func(c *hookCall) *admissionv1.AdmissionResponse

// hookServer is an HTTPS admission webhook server with its own CA.
type hookServer struct {
	URL  string
	CA   []byte
	Port int

	srv   *httptest.Server
	mu    sync.Mutex
	calls []hookCall
	funcs map[string]hookFunc
	errs  []string
}

// startHookServer starts a webhook server whose certificate is valid for
// 127.0.0.1 and dnsName. Its /probe path denies every request with
// "probe:<the object's probe label>".
func startHookServer(t testing.TB, dnsName string) *hookServer {
	t.Helper()
	caPEM, cert := webhookCerts(t, dnsName)
	hs := &hookServer{CA: caPEM, funcs: map[string]hookFunc{}}
	hs.funcs["/probe"] = func(c *hookCall) *admissionv1.AdmissionResponse {
		return deny(&metav1.Status{Message: "probe:" + c.obj().GetLabels()["probe"]})
	}
	hs.srv = httptest.NewUnstartedServer(hs)
	hs.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	hs.srv.StartTLS()
	t.Cleanup(func() {
		hs.srv.Close()
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if len(hs.errs) > 0 {
			t.Errorf("bad requests to the webhook server: %q", hs.errs)
		}
	})
	hs.URL = hs.srv.URL
	hs.Port = hs.srv.Listener.Addr().(*net.TCPAddr).Port
	return hs
}

func (hs *hookServer) handle(path string, f hookFunc) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.funcs[path] = f
}

func (hs *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	bad := func(format string, args ...interface{}) {
		hs.mu.Lock()
		hs.errs = append(hs.errs, fmt.Sprintf("%s %s: ", r.Method, r.URL)+fmt.Sprintf(format, args...))
		hs.mu.Unlock()
		http.Error(w, "bad request", http.StatusBadRequest)
	}
	if err != nil || r.Method != http.MethodPost {
		bad("%v", err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		bad("Content-Type %q", ct)
		return
	}
	var review struct {
		APIVersion string                        `json:"apiVersion"`
		Kind       string                        `json:"kind"`
		Request    *admissionv1.AdmissionRequest `json:"request"`
	}
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		bad("not an AdmissionReview (%v): %.200s", err, body)
		return
	}
	c := hookCall{Path: r.URL.Path, Query: r.URL.RawQuery, APIVersion: review.APIVersion, Kind: review.Kind, Request: *review.Request, Ctx: r.Context()}
	if r.TLS != nil {
		c.SNI = r.TLS.ServerName
	}
	decode := func(raw []byte) *unstructured.Unstructured {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			bad("object %s: %v", raw, err)
		}
		return u
	}
	c.Object, c.OldObject = decode(c.Request.Object.Raw), decode(c.Request.OldObject.Raw)
	if raw := c.Request.Options.Raw; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c.Options); err != nil {
			bad("options %s: %v", raw, err)
		}
	}
	hs.mu.Lock()
	hs.calls = append(hs.calls, c)
	f := hs.funcs[c.Path]
	hs.mu.Unlock()
	var resp *admissionv1.AdmissionResponse
	if f != nil {
		resp = f(&c)
	}
	if resp == nil {
		resp = &admissionv1.AdmissionResponse{Allowed: true}
	}
	if resp.UID == "" {
		resp.UID = c.Request.UID
	}
	out := map[string]interface{}{"apiVersion": review.APIVersion, "kind": "AdmissionReview", "response": resp}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// callsTo returns the calls to path, about the object called name when
// name is not empty (the request's name, else the object's).
func (hs *hookServer) callsTo(path, name string) []hookCall {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []hookCall
	for _, c := range hs.calls {
		if c.Path != path {
			continue
		}
		if name != "" && c.Request.Name != name && c.obj().GetName() != name {
			continue
		}
		out = append(out, c)
	}
	return out
}

// clientConfig is the webhook at path of hs.
func (hs *hookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	u := hs.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: hs.CA}
}

func deny(st *metav1.Status) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: st}
}

// patchResponse allows with a JSONPatch of ops (none: no patch).
func patchResponse(ops []map[string]interface{}, warnings ...string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
	if len(ops) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, _ = json.Marshal(ops)
		resp.PatchType = &pt
	}
	return resp
}

// addLabelOps adds the label key=value to obj unless it has it.
func addLabelOps(obj *unstructured.Unstructured, key, value string) []map[string]interface{} {
	labels := obj.GetLabels()
	if _, ok := labels[key]; ok {
		return nil
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "labels"); !found {
		return []map[string]interface{}{{"op": "add", "path": "/metadata/labels", "value": map[string]string{key: value}}}
	}
	return []map[string]interface{}{{"op": "add", "path": "/metadata/labels/" + key, "value": value}}
}

// Webhook configuration fixtures.

func rule(group, version, resource string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: strings.Split(resource, ",")},
	}
}

var (
	opCreate = admissionregistrationv1.Create
	opUpdate = admissionregistrationv1.Update
	opDelete = admissionregistrationv1.Delete
)

func deviceClassRule(ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return rule("resource.k8s.io", "*", "deviceclasses", ops...)
}

func gearRule(ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return rule("hooks.example.com", "v1", "gears", ops...)
}

func vhook(name string, cc admissionregistrationv1.WebhookClientConfig, rules ...admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}
}

func mhook(name string, cc admissionregistrationv1.WebhookClientConfig, rules ...admissionregistrationv1.RuleWithOperations) admissionregistrationv1.MutatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}
}

func labelSelector(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func probeHookName(cfg string) string { return "probe." + cfg + ".example.com" }

// createVWC creates a validating configuration of hooks, with a probe
// webhook in front, and waits until kapi calls it.
func createVWC(t testing.TB, k *kapi, hs *hookServer, name string, hooks ...admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	probe := vhook(probeHookName(name), hs.clientConfig("/probe"), deviceClassRule(opCreate))
	probe.ObjectSelector = labelSelector("probe", name)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks:   append([]admissionregistrationv1.ValidatingWebhook{probe}, hooks...),
	}
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctxT(t), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingWebhookConfiguration %s: %v", name, err)
	}
	waitProbe(t, k, name, true)
}

// createMWC is createVWC for a mutating configuration.
func createMWC(t testing.TB, k *kapi, hs *hookServer, name string, hooks ...admissionregistrationv1.MutatingWebhook) {
	t.Helper()
	probe := mhook(probeHookName(name), hs.clientConfig("/probe"), deviceClassRule(opCreate))
	probe.ObjectSelector = labelSelector("probe", name)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks:   append([]admissionregistrationv1.MutatingWebhook{probe}, hooks...),
	}
	if _, err := k.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctxT(t), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MutatingWebhookConfiguration %s: %v", name, err)
	}
	waitProbe(t, k, name, true)
}

// waitProbe dry-run creates a DeviceClass labelled probe=cfg until the
// probe webhook of cfg denies it (active) or lets it pass (!active).
func waitProbe(t testing.TB, k *kapi, cfg string, active bool) {
	t.Helper()
	body := deviceClassJSON("probe-"+cfg, map[string]string{"probe": cfg})
	want := fmt.Sprintf("admission webhook %q denied the request: probe:%s", probeHookName(cfg), cfg)
	eventually(t, 10*time.Second, fmt.Sprintf("webhook configuration %s active=%v", cfg, active), func() (bool, error) {
		r := k.do(t, "POST", collectionPath(gvrDevClasses)+"?dryRun=All", body)
		if active {
			var st metav1.Status
			_ = json.Unmarshal(r.Body, &st)
			return r.Code == http.StatusBadRequest && st.Message == want, fmt.Errorf("%d %.300s", r.Code, r.Body)
		}
		return r.Code == http.StatusCreated, fmt.Errorf("%d %.300s", r.Code, r.Body)
	})
}

// Objects under admission.

func deviceClassJSON(name string, labels map[string]string) []byte {
	meta := map[string]interface{}{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	data, _ := json.Marshal(map[string]interface{}{
		"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceClass", "metadata": meta, "spec": map[string]interface{}{},
	})
	return data
}

func deviceClassPath(name string) string { return collectionPath(gvrDevClasses) + "/" + name }

// gearJSON is a Gear of hooks.example.com/<version> (v1 when empty).
func gearJSON(version, name string, labels map[string]string, spec map[string]interface{}) []byte {
	if version == "" {
		version = "v1"
	}
	meta := map[string]interface{}{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	obj := map[string]interface{}{"apiVersion": "hooks.example.com/" + version, "kind": "Gear", "metadata": meta}
	if spec != nil {
		obj["spec"] = spec
	}
	data, _ := json.Marshal(obj)
	return data
}

func gearsPath(version, ns string) string {
	if version == "" {
		version = "v1"
	}
	return "/apis/hooks.example.com/" + version + "/namespaces/" + ns + "/gears"
}

const gearCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gears.hooks.example.com
spec:
  group: hooks.example.com
  scope: Namespaced
  names:
    plural: gears
    singular: gear
    kind: Gear
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema: &schema
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
              color:
                type: string
          status:
            type: object
            properties:
              ready:
                type: boolean
`

const gearBetaVersionYAML = `  - name: v1beta1
    served: true
    storage: false
    subresources:
      status: {}
    schema:
      openAPIV3Schema: *schema
`

// createGearCRD creates the Gear CRD (with a served v1beta1 when beta).
func createGearCRD(t testing.TB, k *kapi, beta bool) {
	t.Helper()
	manifest := gearCRDYAML
	if beta {
		manifest += gearBetaVersionYAML
	}
	createCRD(t, k, crdFromYAML(t, manifest))
}

func createNamespace(t testing.TB, k *kapi, name string, labels map[string]string) {
	t.Helper()
	ns := newNamespace(name)
	ns.Labels = labels
	if _, err := k.Client.CoreV1().Namespaces().Create(ctxT(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// mustCode checks a request's status code.
func mustCode(t testing.TB, what string, r httpResult, code int) {
	t.Helper()
	if r.Code != code {
		t.Errorf("%s: HTTP %d, want %d; body: %.500s", what, r.Code, code, r.Body)
	}
}

func decodeObj(t testing.TB, r httpResult) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(r.Body); err != nil {
		t.Fatalf("decoding %.300s: %v", r.Body, err)
	}
	return u
}

// objName describes an object of a review briefly.
func objName(u *unstructured.Unstructured) string {
	if u == nil {
		return "null"
	}
	return fmt.Sprintf("%s %s/%s (spec %v)", u.GetKind(), u.GetNamespace(), u.GetName(), u.Object["spec"])
}

func callNames(calls []hookCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, string(c.Request.Operation)+" "+c.obj().GetName())
	}
	return out
}

// 1. A validating webhook's denial.
func TestWebhookValidatingDenial(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/deny", func(c *hookCall) *admissionv1.AdmissionResponse {
		switch c.obj().GetLabels()["deny"] {
		case "plain":
			return deny(&metav1.Status{Message: "no plain classes"})
		case "coded":
			return deny(&metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: "not yours"})
		case "bare":
			return deny(nil)
		case "low":
			return deny(&metav1.Status{Code: http.StatusOK, Message: "a success code"})
		case "warn":
			resp := deny(&metav1.Status{Message: "warned and denied"})
			resp.Warnings = []string{"first warning", "second warning"}
			return resp
		case "reason":
			return deny(&metav1.Status{Reason: metav1.StatusReasonConflict})
		}
		return nil
	})
	k := startMemKapi(t)
	const hook = "deny.webhook.example.com"
	createVWC(t, k, hs, "deny", vhook(hook, hs.clientConfig("/deny"), deviceClassRule(opCreate, opUpdate)))

	// kube: webhook/errors.ToStatusErr: the webhook's status with its code
	// (400 when unset or below 400), its reason (none when unset) and the
	// message `admission webhook "<name>" denied the request: <message>`.
	prefix := fmt.Sprintf("admission webhook %q denied the request", hook)
	for _, tc := range []struct {
		label    string
		code     int
		reason   metav1.StatusReason
		message  string
		warnings []string
	}{
		{"plain", 400, "", prefix + ": no plain classes", nil},
		{"coded", 403, metav1.StatusReasonForbidden, prefix + ": not yours", nil},
		{"bare", 400, "", prefix + " without explanation", nil},
		{"low", 400, "", prefix + ": a success code", nil},
		{"reason", 400, metav1.StatusReasonConflict, prefix + ": Conflict", nil},
		{"warn", 400, "", prefix + ": warned and denied", []string{"first warning", "second warning"}},
	} {
		name := "denied-" + tc.label
		r := k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON(name, map[string]string{"deny": tc.label}))
		st := expectStatus(t, r, tc.code, tc.reason)
		if st.Message != tc.message {
			t.Errorf("%s: message %q, want %q", tc.label, st.Message, tc.message)
		}
		if st.Details != nil {
			t.Errorf("%s: details %+v, want none", tc.label, st.Details)
		}
		if got := warnings(t, r.Header); !jsonEqual(got, tc.warnings) {
			t.Errorf("%s: warnings %q, want %q", tc.label, got, tc.warnings)
		}
		mustCode(t, "GET "+name+" after the denial", k.do(t, "GET", deviceClassPath(name), nil), http.StatusNotFound)
	}
	if calls := hs.callsTo("/deny", "denied-plain"); len(calls) != 1 {
		t.Errorf("the webhook saw %d requests for denied-plain, want 1", len(calls))
	}

	// An allowed object, then an update the webhook denies.
	r := k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("allowed", nil))
	mustCode(t, "create allowed", r, http.StatusCreated)
	obj := decodeObj(t, r)
	obj.SetLabels(map[string]string{"deny": "plain"})
	r = k.do(t, "PUT", deviceClassPath("allowed"), mustJSON(t, obj.Object))
	if st := expectStatus(t, r, 400, ""); st.Message != prefix+": no plain classes" {
		t.Errorf("update: message %q", st.Message)
	}
	if got := decodeObj(t, k.do(t, "GET", deviceClassPath("allowed"), nil)); got.GetLabels()["deny"] != "" || got.GetResourceVersion() != obj.GetResourceVersion() {
		t.Errorf("after the denied update: labels %v rv %s, want unchanged (rv %s)", got.GetLabels(), got.GetResourceVersion(), obj.GetResourceVersion())
	}
	if calls := hs.callsTo("/deny", "allowed"); len(callNames(calls)) != 2 || calls[1].Request.Operation != admissionv1.Update {
		t.Errorf("calls for allowed: %q, want CREATE then UPDATE", callNames(calls))
	}

	// Deleting the configuration stops the calls.
	if err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctxT(t), "deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitProbe(t, k, "deny", false)
	mustCode(t, "create after the configuration is gone", k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("denied-plain", map[string]string{"deny": "plain"})), http.StatusCreated)
}

// 2. A mutating webhook's JSONPatch and warnings.
func TestWebhookMutatingPatch(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/mutate", func(c *hookCall) *admissionv1.AdmissionResponse {
		obj := c.Object
		switch c.Request.Operation {
		case admissionv1.Create:
			ops := addLabelOps(obj, "mutated", "yes")
			if strings.HasPrefix(obj.GetName(), "bad-") {
				ops = append(ops, map[string]interface{}{"op": "add", "path": "/spec/size", "value": "big"})
			}
			if strings.HasPrefix(obj.GetName(), "move-") {
				ops = append(ops, map[string]interface{}{"op": "replace", "path": "/metadata/namespace", "value": "kube-public"})
			}
			if strings.HasPrefix(obj.GetName(), "crename-") {
				ops = append(ops, map[string]interface{}{"op": "replace", "path": "/metadata/name", "value": "renamed-by-hook"})
			}
			if strings.HasPrefix(obj.GetName(), "badmf-") {
				ops = append(ops, map[string]interface{}{"op": "replace", "path": "/metadata/managedFields", "value": []map[string]interface{}{{"manager": "hook", "operation": "Bogus", "apiVersion": "hooks.example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{}}}})
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec"); !found {
				ops = append(ops, map[string]interface{}{"op": "add", "path": "/spec", "value": map[string]interface{}{"color": "blue"}})
			} else if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "color"); !found {
				ops = append(ops, map[string]interface{}{"op": "add", "path": "/spec/color", "value": "blue"})
			}
			return patchResponse(ops, "labelled by the mutating webhook", "defaulted spec.color")
		case admissionv1.Update:
			if strings.HasPrefix(obj.GetName(), "rename-") {
				return patchResponse([]map[string]interface{}{{"op": "replace", "path": "/metadata/name", "value": "renamed"}})
			}
			// A warning a header cannot carry (a control character) is
			// dropped, as kube-apiserver drops it.
			return patchResponse([]map[string]interface{}{{"op": "add", "path": "/metadata/annotations", "value": map[string]string{"hooks.example.com/updated": "true"}}}, "annotated", "dropped for its\nnewline")
		}
		return nil
	})
	hs.handle("/class", func(c *hookCall) *admissionv1.AdmissionResponse {
		if strings.HasPrefix(c.Object.GetName(), "badclass-") {
			return patchResponse([]map[string]interface{}{{"op": "replace", "path": "/spec/selectors", "value": "not a list"}})
		}
		return patchResponse(addLabelOps(c.Object, "class-mutated", "yes"))
	})
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	classHook := mhook("class.mutate.example.com", hs.clientConfig("/class"), deviceClassRule(opCreate))
	classHook.ObjectSelector = labelSelector("mutate", "me")
	createMWC(t, k, hs, "mutate",
		mhook("gears.mutate.example.com", hs.clientConfig("/mutate"), gearRule(opCreate, opUpdate)),
		classHook)
	// Two validating webhooks with the same warning: kube-apiserver's
	// warning recorder keeps one.
	seen := func(c *hookCall) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"seen by a validating webhook"}}
	}
	hs.handle("/seen", seen)
	hs.handle("/seen2", seen)
	createVWC(t, k, hs, "seen",
		vhook("seen.example.com", hs.clientConfig("/seen"), gearRule(opCreate)),
		vhook("seen2.example.com", hs.clientConfig("/seen2"), gearRule(opCreate)))
	gears := gearsPath("v1", "default")

	r := k.do(t, "POST", gears, gearJSON("", "g1", nil, map[string]interface{}{"size": 1}))
	mustCode(t, "create g1", r, http.StatusCreated)
	if got, want := warnings(t, r.Header), []string{"labelled by the mutating webhook", "defaulted spec.color", "seen by a validating webhook"}; !jsonEqual(got, want) {
		t.Errorf("create g1: warnings %q, want %q", got, want)
	}
	for what, obj := range map[string]*unstructured.Unstructured{"created": decodeObj(t, r), "stored": decodeObj(t, k.do(t, "GET", gears+"/g1", nil))} {
		if obj.GetLabels()["mutated"] != "yes" || !jsonEqual(obj.Object["spec"], map[string]interface{}{"size": 1, "color": "blue"}) {
			t.Errorf("%s g1: labels %v spec %v, want the label mutated=yes and spec {size: 1, color: blue}", what, obj.GetLabels(), obj.Object["spec"])
		}
	}
	// The validating webhooks see the mutated object.
	if calls := hs.callsTo("/seen", "g1"); len(calls) != 1 || calls[0].Object.GetLabels()["mutated"] != "yes" || nested(calls[0].Object, "spec", "color") != "blue" {
		t.Errorf("the validating webhook saw g1 %d times, first %v, want once, mutated", len(calls), calls)
	}

	// What the client set stays.
	r = k.do(t, "POST", gears, gearJSON("", "g2", map[string]string{"keep": "me"}, map[string]interface{}{"size": 2, "color": "red"}))
	mustCode(t, "create g2", r, http.StatusCreated)
	if obj := decodeObj(t, r); !jsonEqual(obj.GetLabels(), map[string]string{"keep": "me", "mutated": "yes"}) || nested(obj, "spec", "color") != "red" {
		t.Errorf("created g2: labels %v spec %v", obj.GetLabels(), obj.Object["spec"])
	}

	// UPDATE: the webhook annotates.
	obj := decodeObj(t, k.do(t, "GET", gears+"/g1", nil))
	_ = unstructured.SetNestedField(obj.Object, int64(5), "spec", "size")
	r = k.do(t, "PUT", gears+"/g1", mustJSON(t, obj.Object))
	mustCode(t, "update g1", r, http.StatusOK)
	if got := warnings(t, r.Header); !jsonEqual(got, []string{"annotated"}) {
		t.Errorf("update g1: warnings %q, want [annotated]", got)
	}
	if got := decodeObj(t, k.do(t, "GET", gears+"/g1", nil)); got.GetAnnotations()["hooks.example.com/updated"] != "true" || nested(got, "spec", "size") != int64(5) {
		t.Errorf("stored g1 after the update: annotations %v spec %v", got.GetAnnotations(), got.Object["spec"])
	}

	// A webhook renaming the object on update: the name is immutable,
	// and the error names the object as the webhook left it (kube's
	// BeforeUpdate).
	mustCode(t, "create rename-1", k.do(t, "POST", gears, gearJSON("", "rename-1", nil, map[string]interface{}{"size": 1})), http.StatusCreated)
	obj = decodeObj(t, k.do(t, "GET", gears+"/rename-1", nil))
	r = k.do(t, "PUT", gears+"/rename-1", mustJSON(t, obj.Object))
	if st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Gear.hooks.example.com "renamed" is invalid: metadata.name`); st.Details == nil || st.Details.Name != "renamed" {
		t.Errorf("renaming update: details %+v, want name renamed", st.Details)
	}

	// A patch that breaks the schema: validation runs after mutation
	// (422), and the validating webhooks are not called.
	r = k.do(t, "POST", gears, gearJSON("", "bad-1", nil, map[string]interface{}{"size": 1}))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Gear.hooks.example.com "bad-1" is invalid: `, "spec.size")
	if calls := hs.callsTo("/seen", "bad-1"); len(calls) != 0 {
		t.Errorf("the validating webhook saw bad-1 %d times, want 0", len(calls))
	}

	// managedFields a webhook leaves invalid are put back as they were,
	// with kube-apiserver's warning; the write goes on.
	r = k.do(t, "POST", gears, gearJSON("", "badmf-1", nil, map[string]interface{}{"size": 1}))
	mustCode(t, "create badmf-1", r, http.StatusCreated)
	if got := strings.Join(warnings(t, r.Header), "\n"); !strings.Contains(got, ".metadata.managedFields was in an invalid state after admission; this could be caused by an outdated mutating admission controller; please fix your requests: ") {
		t.Errorf("create badmf-1: warnings %q, want kube's about invalid managedFields", got)
	}
	if mf := decodeObj(t, k.do(t, "GET", gears+"/badmf-1", nil)).GetManagedFields(); len(mf) != 1 || mf[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("badmf-1's managedFields %+v, want the client's Update entry", mf)
	}

	// A webhook may not move the object to another namespace (400, as
	// kube-apiserver's check after admission).
	r = k.do(t, "POST", gears, gearJSON("", "move-1", nil, map[string]interface{}{"size": 1}))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the namespace of the provided object does not match the namespace sent on the request")
	if g := k.do(t, "GET", gearsPath("v1", "kube-public")+"/move-1", nil); g.Code != http.StatusNotFound {
		t.Errorf("move-1 was stored in kube-public: %d", g.Code)
	}

	// A webhook that renames the object on create: it is stored under the
	// new name, but the request keeps the client's for the validating
	// webhooks, as kube-apiserver names the request once.
	r = k.do(t, "POST", gears, gearJSON("", "crename-1", nil, map[string]interface{}{"size": 1}))
	mustCode(t, "create crename-1", r, http.StatusCreated)
	if got := decodeObj(t, r).GetName(); got != "renamed-by-hook" {
		t.Errorf("created %s, want renamed-by-hook", got)
	}
	if calls := hs.callsTo("/seen", "renamed-by-hook"); len(calls) != 1 || calls[0].Request.Name != "crename-1" || calls[0].Object.GetName() != "renamed-by-hook" {
		t.Errorf("the validating webhook's calls for the renamed object: %d, request name %q; want one, named crename-1", len(calls), func() string {
			if len(calls) > 0 {
				return calls[0].Request.Name
			}
			return ""
		}())
	}

	// A built-in kind, cluster-scoped.
	r = k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("mutated-class", map[string]string{"mutate": "me"}))
	mustCode(t, "create a DeviceClass", r, http.StatusCreated)
	if got := decodeObj(t, k.do(t, "GET", deviceClassPath("mutated-class"), nil)); !jsonEqual(got.GetLabels(), map[string]string{"mutate": "me", "class-mutated": "yes"}) {
		t.Errorf("stored DeviceClass labels %v, want mutate=me and class-mutated=yes", got.GetLabels())
	}
	// A webhook's patch that leaves an object the kind cannot decode: the
	// server's error (500), as kube-apiserver's dispatcher answers it.
	r = k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("badclass-1", map[string]string{"mutate": "me"}))
	expectStatus(t, r, http.StatusInternalServerError, metav1.StatusReasonInternalError,
		"Internal error occurred: json: cannot unmarshal string into Go struct field DeviceClassSpec.spec.selectors")
}

// Webhooks on a custom resource's /scale get the autoscaling/v1 Scale, as
// from kube-apiserver, and a mutating webhook's change of it reaches the
// custom resource.
func TestWebhookScale(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/scale-mutate", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse([]map[string]interface{}{{"op": "replace", "path": "/spec/replicas", "value": 4}})
	})
	hs.handle("/scale-seen", func(c *hookCall) *admissionv1.AdmissionResponse { return nil })
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	scaleRule := rule("dyn.example.com", "v1", "gadgets/scale", opUpdate)
	createMWC(t, k, hs, "scale-mutate", mhook("scale.mutate.example.com", hs.clientConfig("/scale-mutate"), scaleRule))
	createVWC(t, k, hs, "scale-seen", vhook("scale.seen.example.com", hs.clientConfig("/scale-seen"), scaleRule))
	gadgets := "/apis/dyn.example.com/v1/namespaces/default/gadgets"
	mustCode(t, "create", k.do(t, "POST", gadgets, []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"scaled"},"spec":{"color":"red","replicas":1}}`)), http.StatusCreated)

	r := k.do(t, "PATCH", gadgets+"/scaled/scale?fieldManager=scaler", []byte(`{"spec":{"replicas":2}}`), "Content-Type: application/merge-patch+json")
	mustCode(t, "patch /scale", r, http.StatusOK)
	if got := nested(decodeObj(t, r), "spec", "replicas"); got != int64(4) {
		t.Errorf("/scale answered spec.replicas %v, want the webhook's 4", got)
	}
	if got := nested(decodeObj(t, k.do(t, "GET", gadgets+"/scaled", nil)), "spec", "replicas"); got != int64(4) {
		t.Errorf("stored spec.replicas %v, want the webhook's 4", got)
	}
	calls := hs.callsTo("/scale-seen", "scaled")
	if len(calls) != 1 {
		t.Fatalf("the validating webhook was called %d times, want once", len(calls))
	}
	c := calls[0]
	scaleKind := metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	if c.Request.Kind != scaleKind || c.Request.Resource != (metav1.GroupVersionResource{Group: "dyn.example.com", Version: "v1", Resource: "gadgets"}) || c.Request.SubResource != "scale" {
		t.Errorf("review kind %v resource %v subresource %q, want autoscaling/v1 Scale, gadgets, scale", c.Request.Kind, c.Request.Resource, c.Request.SubResource)
	}
	if c.Object == nil || c.Object.GetKind() != "Scale" || nested(c.Object, "spec", "replicas") != int64(4) ||
		c.OldObject == nil || c.OldObject.GetKind() != "Scale" || nested(c.OldObject, "spec", "replicas") != int64(1) {
		t.Errorf("review objects %s / %s, want the Scales with replicas 4 and 1", objName(c.Object), objName(c.OldObject))
	}
	// The client's options, a patch's as UpdateOptions, as kube passes them.
	if c.Options["kind"] != "UpdateOptions" || c.Options["fieldManager"] != "scaler" {
		t.Errorf("review options %v, want UpdateOptions with fieldManager scaler", c.Options)
	}

	// The mutating webhooks see the client's Scale (its labels, its
	// managedFields); the validating ones a Scale made from the resource.
	scale := decodeObj(t, k.do(t, "GET", gadgets+"/scaled/scale", nil))
	scale.SetLabels(map[string]string{"from": "client"})
	mustCode(t, "PUT /scale", k.do(t, "PUT", gadgets+"/scaled/scale?fieldManager=putter", mustJSON(t, scale.Object)), http.StatusOK)
	mut := hs.callsTo("/scale-mutate", "scaled")
	last := mut[len(mut)-1]
	if last.Object.GetLabels()["from"] != "client" || len(last.Object.GetManagedFields()) == 0 {
		t.Errorf("the mutating webhook's Scale: labels %v, %d managedFields entries; want the client's label and its managedFields", last.Object.GetLabels(), len(last.Object.GetManagedFields()))
	}
	val := hs.callsTo("/scale-seen", "scaled")
	if got := val[len(val)-1].Object.GetLabels(); len(got) != 0 {
		t.Errorf("the validating webhook's Scale has labels %v, want none (made from the resource)", got)
	}
}

// An update's resourceVersion precondition is checked after the mutating
// webhooks, as kube-apiserver's store checks it: a webhook that denies
// answers a stale update before its conflict.
func TestWebhookBeforeResourceVersionConflict(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/no-updates", func(c *hookCall) *admissionv1.AdmissionResponse {
		return deny(&metav1.Status{Message: "no updates"})
	})
	k := startMemKapi(t)
	mustCode(t, "create", k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("stale.example.com", nil)), http.StatusCreated)
	createMWC(t, k, hs, "no-updates", mhook("no.updates.example.com", hs.clientConfig("/no-updates"), deviceClassRule(opUpdate)))
	stale := decodeObj(t, k.do(t, "GET", deviceClassPath("stale.example.com"), nil))
	stale.SetResourceVersion("1")
	r := k.do(t, "PUT", deviceClassPath("stale.example.com"), mustJSON(t, stale.Object))
	// (A denial without a code is a 400, as kube's webhook plugin makes it.)
	st := expectStatus(t, r, http.StatusBadRequest, "", `admission webhook "no.updates.example.com" denied the request: no updates`)
	if st.Reason == metav1.StatusReasonConflict {
		t.Errorf("a stale update a mutating webhook denies: %s, want the denial", r.Body)
	}
}

// 3. The AdmissionReview a webhook receives.
func TestWebhookAdmissionReview(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	createNamespace(t, k, "review", nil)
	ops := []admissionregistrationv1.OperationType{opCreate, opUpdate, opDelete}
	createMWC(t, k, hs, "review-m", mhook("m.review.example.com", hs.clientConfig("/m"), rule("hooks.example.com", "v1", "gears,gears/status", ops...)))
	createVWC(t, k, hs, "review-v", vhook("v.review.example.com", hs.clientConfig("/v"), rule("hooks.example.com", "v1", "gears,gears/status", ops...)))
	gears := gearsPath("v1", "review")

	gvk := metav1.GroupVersionKind{Group: "hooks.example.com", Version: "v1", Kind: "Gear"}
	gvr := metav1.GroupVersionResource{Group: "hooks.example.com", Version: "v1", Resource: "gears"}
	uids := map[string]bool{}
	// check compares the one call of each webhook for name and operation.
	check := func(what, name string, op admissionv1.Operation, sub string, dryRun bool, options map[string]interface{}) (m, v *hookCall) {
		t.Helper()
		for _, path := range []string{"/m", "/v"} {
			var calls []hookCall
			for _, c := range hs.callsTo(path, name) {
				if c.Request.Operation == op && c.Request.SubResource == sub && (c.Request.DryRun != nil && *c.Request.DryRun) == dryRun {
					calls = append(calls, c)
				}
			}
			if len(calls) != 1 {
				t.Errorf("%s: webhook %s called %d times for %s %s, want once (all calls %q)", what, path, len(calls), op, name, callNames(hs.callsTo(path, "")))
				continue
			}
			c := calls[0]
			rq := c.Request
			if c.APIVersion != "admission.k8s.io/v1" || c.Kind != "AdmissionReview" {
				t.Errorf("%s %s: review %s %s, want admission.k8s.io/v1 AdmissionReview", what, path, c.APIVersion, c.Kind)
			}
			if rq.UID == "" || uids[string(rq.UID)] {
				t.Errorf("%s %s: uid %q, want a fresh one for each call", what, path, rq.UID)
			}
			uids[string(rq.UID)] = true
			if rq.Kind != gvk || rq.Resource != gvr || rq.RequestKind == nil || *rq.RequestKind != gvk || rq.RequestResource == nil || *rq.RequestResource != gvr {
				t.Errorf("%s %s: kind %v resource %v requestKind %v requestResource %v, want %v and %v", what, path, rq.Kind, rq.Resource, rq.RequestKind, rq.RequestResource, gvk, gvr)
			}
			if rq.SubResource != sub || rq.RequestSubResource != sub {
				t.Errorf("%s %s: subResource %q requestSubResource %q, want %q", what, path, rq.SubResource, rq.RequestSubResource, sub)
			}
			if rq.Namespace != "review" || rq.Operation != op {
				t.Errorf("%s %s: namespace %q operation %q", what, path, rq.Namespace, rq.Operation)
			}
			if rq.UserInfo.Username == "" || !contains(rq.UserInfo.Groups, "system:authenticated") {
				t.Errorf("%s %s: userInfo %+v, want a user in system:authenticated", what, path, rq.UserInfo)
			}
			if rq.DryRun == nil || *rq.DryRun != dryRun {
				t.Errorf("%s %s: dryRun %v, want %v", what, path, rq.DryRun, dryRun)
			}
			if !jsonEqual(c.Options, options) {
				t.Errorf("%s %s: options %s, want %s", what, path, fmtJSON(c.Options), fmtJSON(options))
			}
			// kube-apiserver bounds the call with timeoutSeconds (10 by
			// default) and tells the webhook.
			if c.Query != "timeout=10s" {
				t.Errorf("%s %s: query %q, want timeout=10s", what, path, c.Query)
			}
			for _, o := range []*unstructured.Unstructured{c.Object, c.OldObject} {
				if o != nil && (o.GetAPIVersion() != "hooks.example.com/v1" || o.GetKind() != "Gear" || o.GetNamespace() != "review") {
					t.Errorf("%s %s: object %s %s in %q", what, path, o.GetAPIVersion(), o.GetKind(), o.GetNamespace())
				}
			}
			if path == "/m" {
				m = &c
			} else {
				v = &c
			}
		}
		if m == nil || v == nil {
			t.FailNow()
		}
		return m, v
	}
	createOpts := map[string]interface{}{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
	updateOpts := map[string]interface{}{"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}

	// CREATE, without a fieldManager: kube-apiserver passes the options
	// as the client sent them.
	r := k.do(t, "POST", gears, gearJSON("", "g1", map[string]string{"app": "a"}, map[string]interface{}{"size": 1}))
	mustCode(t, "create g1", r, http.StatusCreated)
	created := decodeObj(t, r)
	m, v := check("CREATE", "g1", admissionv1.Create, "", false, createOpts)
	for path, c := range map[string]*hookCall{"/m": m, "/v": v} {
		if c.Request.Name != "g1" || c.Object == nil || c.Object.GetName() != "g1" || nested(c.Object, "spec", "size") != int64(1) || c.Object.GetLabels()["app"] != "a" || c.OldObject != nil {
			t.Errorf("CREATE %s: name %q object %v oldObject %v", path, c.Request.Name, c.Object, c.OldObject)
		}
	}
	// The mutating webhooks run before the registry sets uid and
	// creationTimestamp; the validating ones after.
	if m.Object.GetUID() != "" {
		t.Errorf("CREATE /m: object uid %q, want none yet", m.Object.GetUID())
	}
	if v.Object.GetUID() != created.GetUID() || v.Object.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("CREATE /v: object uid %q creationTimestamp %v, want uid %q and a timestamp", v.Object.GetUID(), v.Object.GetCreationTimestamp(), created.GetUID())
	}

	// System fields a client sends are dropped before the mutating
	// webhooks (and the field manager) see the object.
	r = k.do(t, "POST", gears, []byte(`{"apiVersion":"hooks.example.com/v1","kind":"Gear","metadata":{"name":"g-sys","uid":"bogus","creationTimestamp":"2020-01-01T00:00:00Z","deletionTimestamp":"2020-01-01T00:00:00Z","selfLink":"/x"}}`))
	mustCode(t, "create g-sys", r, http.StatusCreated)
	if calls := hs.callsTo("/m", "g-sys"); len(calls) != 1 || calls[0].Object.GetUID() != "" || !calls[0].Object.GetCreationTimestamp().Time.IsZero() ||
		calls[0].Object.GetDeletionTimestamp() != nil || calls[0].Object.GetSelfLink() != "" {
		t.Errorf("CREATE /m of an object naming system fields: %v, want them dropped", calls)
	}
	if mf := fmtJSON(decodeObj(t, r).GetManagedFields()); strings.Contains(mf, "deletionTimestamp") || strings.Contains(mf, "f:uid") {
		t.Errorf("managedFields of g-sys record system fields: %s", mf)
	}

	// CREATE with fieldManager and dryRun.
	r = k.do(t, "POST", gears+"?dryRun=All&fieldManager=e2e-create", gearJSON("", "g-dry", nil, nil))
	mustCode(t, "dry-run create", r, http.StatusCreated)
	check("dry-run CREATE", "g-dry", admissionv1.Create, "", true, map[string]interface{}{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": []string{"All"}, "fieldManager": "e2e-create"})
	mustCode(t, "GET g-dry", k.do(t, "GET", gears+"/g-dry", nil), http.StatusNotFound)

	// generateName: the mutating webhooks see no name, the validating ones
	// the generated name.
	r = k.do(t, "POST", gears, []byte(`{"apiVersion":"hooks.example.com/v1","kind":"Gear","metadata":{"generateName":"gen-"}}`))
	mustCode(t, "generateName create", r, http.StatusCreated)
	genName := decodeObj(t, r).GetName()
	var gm, gv []hookCall
	for _, c := range hs.callsTo("/m", "") {
		if c.Object != nil && c.Object.GetGenerateName() == "gen-" {
			gm = append(gm, c)
		}
	}
	for _, c := range hs.callsTo("/v", "") {
		if c.Object != nil && c.Object.GetGenerateName() == "gen-" {
			gv = append(gv, c)
		}
	}
	if len(gm) != 1 || gm[0].Request.Name != "" || gm[0].Object.GetName() != "" {
		t.Errorf("generateName: mutating calls %d, name %q", len(gm), callNames(gm))
	}
	if len(gv) != 1 || gv[0].Request.Name != genName || gv[0].Object.GetName() != genName {
		var got string
		if len(gv) == 1 {
			got = gv[0].Request.Name
		}
		t.Errorf("generateName: validating calls %d, request.name %q, want request.name and object name %q (kube fills the generated name in before validating admission)", len(gv), got, genName)
	}

	// UPDATE (PUT) with a fieldManager. The client leaves out the uid and
	// creationTimestamp and sends another generation: the mutating
	// webhooks see the object as sent, the validating ones as the
	// registry completed it (kube's BeforeUpdate runs between them).
	upd := created.DeepCopy()
	_ = unstructured.SetNestedField(upd.Object, int64(2), "spec", "size")
	upd.SetUID("")
	unstructured.RemoveNestedField(upd.Object, "metadata", "creationTimestamp")
	upd.SetGeneration(99)
	r = k.do(t, "PUT", gears+"/g1?fieldManager=e2e-put", mustJSON(t, upd.Object))
	mustCode(t, "update g1", r, http.StatusOK)
	m, v = check("UPDATE", "g1", admissionv1.Update, "", false, map[string]interface{}{"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "e2e-put"})
	for path, c := range map[string]*hookCall{"/m": m, "/v": v} {
		if c.Object == nil || c.OldObject == nil || nested(c.Object, "spec", "size") != int64(2) || nested(c.OldObject, "spec", "size") != int64(1) ||
			c.OldObject.GetResourceVersion() != created.GetResourceVersion() || c.OldObject.GetUID() != created.GetUID() {
			t.Errorf("UPDATE %s: object %v oldObject %v, want size 2 over the created g1 (size 1)", path, c.Object, c.OldObject)
		}
	}
	if m.Object.GetUID() != "" || m.Object.GetGeneration() != 99 || !m.Object.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("UPDATE /m: object uid %q generation %d creationTimestamp %v, want the client's (none, 99, none)", m.Object.GetUID(), m.Object.GetGeneration(), m.Object.GetCreationTimestamp())
	}
	if v.Object.GetUID() != created.GetUID() || v.Object.GetGeneration() != created.GetGeneration()+1 || v.Object.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("UPDATE /v: object uid %q generation %d creationTimestamp %v, want the stored uid, the next generation and the creation time", v.Object.GetUID(), v.Object.GetGeneration(), v.Object.GetCreationTimestamp())
	}

	// PATCH is admitted as an UPDATE, with UpdateOptions.
	r = k.do(t, "PATCH", gears+"/g1", []byte(`{"spec":{"size":3}}`), "Content-Type: application/merge-patch+json")
	mustCode(t, "patch g1", r, http.StatusOK)
	calls := hs.callsTo("/v", "g1")
	if c := calls[len(calls)-1]; c.Request.Operation != admissionv1.Update || nested(c.Object, "spec", "size") != int64(3) || nested(c.OldObject, "spec", "size") != int64(2) || !jsonEqual(c.Options, updateOpts) {
		t.Errorf("PATCH: operation %s object %v oldObject %v options %v", c.Request.Operation, c.Object, c.OldObject, c.Options)
	}

	// The status subresource.
	st := decodeObj(t, k.do(t, "GET", gears+"/g1", nil))
	_ = unstructured.SetNestedField(st.Object, true, "status", "ready")
	mustCode(t, "update g1/status", k.do(t, "PUT", gears+"/g1/status", mustJSON(t, st.Object)), http.StatusOK)
	m, v = check("UPDATE status", "g1", admissionv1.Update, "status", false, updateOpts)
	for path, c := range map[string]*hookCall{"/m": m, "/v": v} {
		if c.Object == nil || nested(c.Object, "status", "ready") != true || c.OldObject == nil || nested(c.OldObject, "status", "ready") != nil {
			t.Errorf("UPDATE status %s: object %v oldObject %v", path, c.Object, c.OldObject)
		}
	}

	// deletecollection: one DELETE per object, each with the object as
	// oldObject. kube-apiserver's DeleteCollection handler builds the
	// admission attributes once, with no name, and
	// rest.AdmissionToValidateObjectDeleteFunc keeps that name: the
	// webhooks see request.name "".
	for _, n := range []string{"c1", "c2"} {
		mustCode(t, "create "+n, k.do(t, "POST", gears, gearJSON("", n, map[string]string{"coll": "yes"}, nil)), http.StatusCreated)
	}
	mustCode(t, "deletecollection", k.do(t, "DELETE", gears+"?labelSelector=coll%3Dyes", nil), http.StatusOK)
	for _, path := range []string{"/m", "/v"} {
		for _, n := range []string{"c1", "c2"} {
			var dels []hookCall
			for _, c := range hs.callsTo(path, n) {
				if c.Request.Operation == admissionv1.Delete {
					dels = append(dels, c)
				}
			}
			if len(dels) != 1 {
				t.Errorf("deletecollection %s: %d DELETE calls for %s, want 1", path, len(dels), n)
				continue
			}
			c := dels[0]
			if c.Request.Name != "" || c.Request.Namespace != "review" || c.Object != nil || c.OldObject == nil || c.OldObject.GetName() != n {
				t.Errorf("deletecollection %s for %s: name %q namespace %q object %s oldObject %s, want name \"\" (as kube-apiserver), no object and %s as oldObject", path, n, c.Request.Name, c.Request.Namespace, objName(c.Object), objName(c.OldObject), n)
			}
			if !jsonEqual(c.Options, map[string]interface{}{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}) {
				t.Errorf("deletecollection %s for %s: options %v", path, n, c.Options)
			}
		}
	}

	// DELETE: no object; kube-apiserver admits a delete (mutating and
	// validating webhooks, rest.AdmissionToValidateObjectDeleteFunc) with
	// the object being deleted as oldObject.
	r = k.do(t, "DELETE", gears+"/g1?propagationPolicy=Background", nil)
	mustCode(t, "delete g1", r, http.StatusOK)
	m, v = check("DELETE", "g1", admissionv1.Delete, "", false, map[string]interface{}{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background"})
	for path, c := range map[string]*hookCall{"/m": m, "/v": v} {
		if c.Request.Name != "g1" || c.Object != nil || c.OldObject == nil || c.OldObject.GetName() != "g1" || nested(c.OldObject, "spec", "size") != int64(3) {
			t.Errorf("DELETE %s: name %q object %s oldObject %s, want no object and the deleted g1 (size 3) as oldObject", path, c.Request.Name, objName(c.Object), objName(c.OldObject))
		}
	}
}

// 4. namespaceSelector, objectSelector and matchConditions.
func TestWebhookSelectors(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	createNamespace(t, k, "sel-a", map[string]string{"team": "a"})
	createNamespace(t, k, "sel-b", map[string]string{"team": "b"})

	nsHook := vhook("ns.sel.example.com", hs.clientConfig("/ns"), gearRule(opCreate), rule("", "v1", "namespaces", opCreate), deviceClassRule(opCreate))
	nsHook.NamespaceSelector = labelSelector("team", "a")
	// kube-apiserver labels every namespace kubernetes.io/metadata.name.
	nsNameHook := vhook("nsname.sel.example.com", hs.clientConfig("/nsname"), gearRule(opCreate))
	nsNameHook.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"sel-b"}}}}
	objHook := vhook("obj.sel.example.com", hs.clientConfig("/obj"), gearRule(opCreate, opUpdate, opDelete))
	objHook.ObjectSelector = labelSelector("hook", "on")
	mcHook := vhook("mc.sel.example.com", hs.clientConfig("/mc"), gearRule(opCreate))
	mcHook.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "not-skipped", Expression: `!has(object.metadata.annotations) || !('skip' in object.metadata.annotations)`},
		{Name: "create", Expression: `request.operation == "CREATE"`},
	}
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	mcErrHook := vhook("mcerr.sel.example.com", hs.clientConfig("/mcerr"), gearRule(opCreate))
	mcErrHook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "size", Expression: `object.spec.size > 0`}}
	mcErrHook.ObjectSelector = labelSelector("mc", "err")
	mcErrHook.FailurePolicy = &fail
	mcIgnoreHook := mcErrHook
	mcIgnoreHook.Name, mcIgnoreHook.ClientConfig = "mcignore.sel.example.com", hs.clientConfig("/mcignore")
	mcIgnoreHook.ObjectSelector = labelSelector("mc", "ignore")
	mcIgnoreHook.FailurePolicy = &ignore
	createVWC(t, k, hs, "selectors", nsHook, nsNameHook, objHook, mcHook, mcErrHook, mcIgnoreHook)
	// kube-apiserver defaults the kubernetes.io/metadata.name label of a
	// namespace when it decodes it (SetDefaults_Namespace), so that even
	// the mutating webhooks match a namespace on it.
	nsNameMHook := mhook("nsname-m.sel.example.com", hs.clientConfig("/nsname-m"), rule("", "v1", "namespaces", opCreate))
	nsNameMHook.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"ns-named"}}}}
	// A namespace whose name is still to be generated has no such label
	// yet (kube sets it with the generated name, after the mutating
	// webhooks).
	nsUnnamedMHook := mhook("nsunnamed-m.sel.example.com", hs.clientConfig("/nsunnamed-m"), rule("", "v1", "namespaces", opCreate))
	nsUnnamedMHook.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	createMWC(t, k, hs, "mselectors", nsNameMHook, nsUnnamedMHook)

	create := func(ns, name string, labels map[string]string, spec map[string]interface{}) httpResult {
		t.Helper()
		return k.do(t, "POST", gearsPath("", ns), gearJSON("", name, labels, spec))
	}
	expectCalls := func(path, name string, want ...string) {
		t.Helper()
		if got := callNames(hs.callsTo(path, name)); !jsonEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("webhook %s called for %s: %q, want %q", path, name, got, want)
		}
	}

	// namespaceSelector.
	mustCode(t, "create a1", create("sel-a", "a1", nil, nil), http.StatusCreated)
	mustCode(t, "create b1", create("sel-b", "b1", nil, nil), http.StatusCreated)
	expectCalls("/ns", "a1", "CREATE a1")
	expectCalls("/ns", "b1")
	expectCalls("/nsname", "a1")
	expectCalls("/nsname", "b1", "CREATE b1")
	// A cluster-scoped object never skips on namespaceSelector; a
	// namespace matches on its own labels.
	mustCode(t, "create a DeviceClass", k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("dc1", nil)), http.StatusCreated)
	expectCalls("/ns", "dc1", "CREATE dc1")
	createNamespace(t, k, "ns-team-a", map[string]string{"team": "a"})
	createNamespace(t, k, "ns-team-x", map[string]string{"team": "x"})
	expectCalls("/ns", "ns-team-a", "CREATE ns-team-a")
	expectCalls("/ns", "ns-team-x")
	createNamespace(t, k, "ns-named", nil)
	expectCalls("/nsname-m", "ns-named", "CREATE ns-named")
	expectCalls("/nsname-m", "ns-team-a")
	if calls := hs.callsTo("/nsname-m", "ns-named"); len(calls) == 1 && calls[0].Object.GetLabels()["kubernetes.io/metadata.name"] != "ns-named" {
		t.Errorf("the mutating webhook saw namespace ns-named with labels %v, want kubernetes.io/metadata.name=ns-named", calls[0].Object.GetLabels())
	}
	expectCalls("/nsunnamed-m", "ns-named")
	r := k.do(t, "POST", "/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"ns-gen-"}}`))
	mustCode(t, "create a namespace with generateName", r, http.StatusCreated)
	generated := decodeObj(t, r)
	if calls := hs.callsTo("/nsunnamed-m", ""); len(calls) != 1 {
		t.Errorf("the webhook for namespaces without the name label was called %d times, want once (for the generated name)", len(calls))
	}
	if got := generated.GetLabels()["kubernetes.io/metadata.name"]; got != generated.GetName() || got == "" {
		t.Errorf("namespace %q stored with kubernetes.io/metadata.name %q, want its generated name", generated.GetName(), got)
	}
	// The same defaulting sets a namespace's phase (SetDefaults_NamespaceStatus).
	if calls := hs.callsTo("/nsname-m", "ns-named"); len(calls) == 1 {
		if phase, _, _ := unstructured.NestedString(calls[0].Object.Object, "status", "phase"); phase != "Active" {
			t.Errorf("the mutating webhook saw namespace ns-named with status.phase %q, want Active", phase)
		}
	}

	// objectSelector matches the new or the old object.
	r = create("sel-b", "o-plain", nil, nil)
	mustCode(t, "create o-plain", r, http.StatusCreated)
	plain := decodeObj(t, r)
	r = create("sel-b", "o-on", map[string]string{"hook": "on"}, nil)
	mustCode(t, "create o-on", r, http.StatusCreated)
	on := decodeObj(t, r)
	plain.SetLabels(map[string]string{"hook": "on"})
	mustCode(t, "label o-plain", k.do(t, "PUT", gearsPath("", "sel-b")+"/o-plain", mustJSON(t, plain.Object)), http.StatusOK)
	on.SetLabels(nil)
	mustCode(t, "unlabel o-on", k.do(t, "PUT", gearsPath("", "sel-b")+"/o-on", mustJSON(t, on.Object)), http.StatusOK)
	mustCode(t, "delete o-plain", k.do(t, "DELETE", gearsPath("", "sel-b")+"/o-plain", nil), http.StatusOK)
	mustCode(t, "delete o-on", k.do(t, "DELETE", gearsPath("", "sel-b")+"/o-on", nil), http.StatusOK)
	expectCalls("/obj", "o-plain", "UPDATE o-plain", "DELETE o-plain")
	expectCalls("/obj", "o-on", "CREATE o-on", "UPDATE o-on")

	// matchConditions: one false skips the webhook.
	r = k.do(t, "POST", gearsPath("", "sel-b"), []byte(`{"apiVersion":"hooks.example.com/v1","kind":"Gear","metadata":{"name":"mc-skip","annotations":{"skip":"yes"}}}`))
	mustCode(t, "create mc-skip", r, http.StatusCreated)
	mustCode(t, "create mc-run", create("sel-b", "mc-run", nil, nil), http.StatusCreated)
	expectCalls("/mc", "mc-skip")
	expectCalls("/mc", "mc-run", "CREATE mc-run")

	// A condition in error: Fail rejects without calling (403, kube's
	// ShouldCallHook: apierrors.NewForbidden), Ignore skips.
	r = create("sel-b", "mc-err", map[string]string{"mc": "err"}, map[string]interface{}{})
	st := expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden)
	if want := `gears.hooks.example.com "mc-err" is forbidden: expression 'object.spec.size > 0' resulted in error: no such key: size`; st.Message != want {
		t.Errorf("matchConditions error: message %q, want %q", st.Message, want)
	}
	if d := st.Details; d == nil || d.Name != "mc-err" || d.Group != "hooks.example.com" || d.Kind != "gears" {
		t.Errorf("matchConditions error: details %+v, want name mc-err, group hooks.example.com, kind gears", d)
	}
	mustCode(t, "GET mc-err", k.do(t, "GET", gearsPath("", "sel-b")+"/mc-err", nil), http.StatusNotFound)
	mustCode(t, "create mc-ok", create("sel-b", "mc-ok", map[string]string{"mc": "err"}, map[string]interface{}{"size": 1}), http.StatusCreated)
	mustCode(t, "create mc-ignored", create("sel-b", "mc-ignored", map[string]string{"mc": "ignore"}, map[string]interface{}{}), http.StatusCreated)
	expectCalls("/mcerr", "", "CREATE mc-ok")
	expectCalls("/mcignore", "")
}

// 5. failurePolicy and timeoutSeconds.
func TestWebhookFailurePolicy(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	// Slower than the 1 s timeout by far, so that a loaded machine does
	// not blur the two.
	slow := func(c *hookCall) *admissionv1.AdmissionResponse {
		select {
		case <-time.After(10 * time.Second):
		case <-c.Ctx.Done():
		}
		return nil
	}
	hs.handle("/slow", slow)
	hs.handle("/mslow", slow)
	hs.handle("/baduid", func(c *hookCall) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{UID: "wrong", Allowed: true}
	})
	// A webhook that is down: a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	downURL := fmt.Sprintf("https://127.0.0.1:%d/down", downPort)
	down := admissionregistrationv1.WebhookClientConfig{URL: &downURL, CABundle: hs.CA}

	k := startMemKapi(t)
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	one := int32(1)
	vh := func(name string, cc admissionregistrationv1.WebhookClientConfig, policy *admissionregistrationv1.FailurePolicyType, timeout *int32) admissionregistrationv1.ValidatingWebhook {
		h := vhook(name+".example.com", cc, deviceClassRule(opCreate))
		h.ObjectSelector = labelSelector("case", name)
		h.FailurePolicy, h.TimeoutSeconds = policy, timeout
		return h
	}
	mh := func(name string, cc admissionregistrationv1.WebhookClientConfig, policy *admissionregistrationv1.FailurePolicyType, timeout *int32) admissionregistrationv1.MutatingWebhook {
		h := mhook(name+".example.com", cc, deviceClassRule(opCreate))
		h.ObjectSelector = labelSelector("case", name)
		h.FailurePolicy, h.TimeoutSeconds = policy, timeout
		return h
	}
	createVWC(t, k, hs, "failures",
		vh("down-fail", down, &fail, nil),
		vh("down-ignore", down, &ignore, nil),
		vh("down-default", down, nil, nil),
		vh("slow-fail", hs.clientConfig("/slow"), &fail, &one),
		vh("slow-ignore", hs.clientConfig("/slow"), &ignore, &one),
		vh("baduid", hs.clientConfig("/baduid"), &fail, nil))
	createMWC(t, k, hs, "mfailures",
		mh("mdown-fail", down, &fail, nil),
		mh("mdown-ignore", down, &ignore, nil),
		mh("mslow-fail", hs.clientConfig("/mslow"), &fail, &one),
		mh("mslow-ignore", hs.clientConfig("/mslow"), &ignore, &one))

	// kube: a call failure under Fail is apierrors.NewInternalError of
	// `failed calling webhook "<name>": failed to call webhook: Post "<url>?timeout=<s>": <error>`.
	failed := func(hook, url string) string {
		return fmt.Sprintf(`Internal error occurred: failed calling webhook "%s.example.com": failed to call webhook: Post "%s": `, hook, url)
	}
	downQ := downURL + "?timeout=10s"
	refused := fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", downPort)
	const deadline = "context deadline exceeded"
	for _, tc := range []struct {
		name    string
		code    int
		message string // "" for the baduid case, computed from the call
		maxTime time.Duration
	}{
		{"down-fail", 500, failed("down-fail", downQ) + refused, 0},
		{"down-default", 500, failed("down-default", downQ) + refused, 0}, // failurePolicy defaults to Fail
		{"down-ignore", 201, "", 0},
		{"mdown-fail", 500, failed("mdown-fail", downQ) + refused, 0},
		{"mdown-ignore", 201, "", 0},
		{"slow-fail", 500, failed("slow-fail", hs.URL+"/slow?timeout=1s") + deadline, 8 * time.Second},
		{"slow-ignore", 201, "", 8 * time.Second},
		{"mslow-fail", 500, failed("mslow-fail", hs.URL+"/mslow?timeout=1s") + deadline, 8 * time.Second},
		{"mslow-ignore", 201, "", 8 * time.Second},
		{"baduid", 500, "", 0},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "class-" + tc.name
			start := time.Now()
			r := k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON(name, map[string]string{"case": tc.name}))
			took := time.Since(start)
			if tc.maxTime > 0 && took > tc.maxTime {
				t.Errorf("took %v, want under %v (timeoutSeconds: 1)", took, tc.maxTime)
			}
			if tc.code == 201 {
				mustCode(t, "create", r, http.StatusCreated)
				return
			}
			st := expectStatus(t, r, tc.code, metav1.StatusReasonInternalError)
			want := tc.message
			if tc.name == "baduid" {
				calls := hs.callsTo("/baduid", name)
				if len(calls) != 1 {
					t.Fatalf("/baduid called %d times for %s, want 1", len(calls), name)
				}
				want = fmt.Sprintf(`Internal error occurred: failed calling webhook "baduid.example.com": received invalid webhook response: expected response.uid=%q, got "wrong"`, calls[0].Request.UID)
			}
			if st.Message != want {
				t.Errorf("message %q, want %q", st.Message, want)
			}
			if st.Details == nil || len(st.Details.Causes) != 1 || "Internal error occurred: "+st.Details.Causes[0].Message != st.Message {
				t.Errorf("details %+v, want one cause with the error", st.Details)
			}
			mustCode(t, "GET after the failure", k.do(t, "GET", deviceClassPath(name), nil), http.StatusNotFound)
		})
	}
}

// 6. sideEffects None and NoneOnDryRun with dryRun=All.
func TestWebhookDryRun(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/mutate", func(c *hookCall) *admissionv1.AdmissionResponse {
		if c.Object == nil {
			return nil
		}
		return patchResponse(addLabelOps(c.Object, "dry", "mutated"))
	})
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	noneOnDryRun := admissionregistrationv1.SideEffectClassNoneOnDryRun
	nodr := vhook("nodr.dry.example.com", hs.clientConfig("/nodr"), gearRule(opCreate, opDelete))
	nodr.SideEffects = &noneOnDryRun
	createVWC(t, k, hs, "dry", vhook("none.dry.example.com", hs.clientConfig("/none"), gearRule(opCreate, opDelete)), nodr)
	mut := mhook("mutate.dry.example.com", hs.clientConfig("/mutate"), gearRule(opCreate))
	mut.SideEffects = &noneOnDryRun
	createMWC(t, k, hs, "mdry", mut)
	gears := gearsPath("", "default")

	r := k.do(t, "POST", gears+"?dryRun=All", gearJSON("", "d1", nil, nil))
	mustCode(t, "dry-run create", r, http.StatusCreated)
	if got := decodeObj(t, r); got.GetLabels()["dry"] != "mutated" {
		t.Errorf("dry-run create answered labels %v, want the webhook's dry=mutated", got.GetLabels())
	}
	mustCode(t, "GET d1", k.do(t, "GET", gears+"/d1", nil), http.StatusNotFound)
	for _, path := range []string{"/none", "/nodr", "/mutate"} {
		calls := hs.callsTo(path, "d1")
		if len(calls) != 1 || calls[0].Request.DryRun == nil || !*calls[0].Request.DryRun || !jsonEqual(calls[0].Options["dryRun"], []string{"All"}) {
			t.Errorf("%s: %d calls for d1 (%v), want one with dryRun true and options.dryRun [All]", path, len(calls), calls)
		}
	}

	mustCode(t, "create d2", k.do(t, "POST", gears, gearJSON("", "d2", nil, nil)), http.StatusCreated)
	mustCode(t, "dry-run delete d2", k.do(t, "DELETE", gears+"/d2?dryRun=All", nil), http.StatusOK)
	mustCode(t, "GET d2", k.do(t, "GET", gears+"/d2", nil), http.StatusOK)
	for _, path := range []string{"/none", "/nodr"} {
		calls := hs.callsTo(path, "d2")
		if len(calls) != 2 || calls[0].Request.DryRun == nil || *calls[0].Request.DryRun || calls[1].Request.Operation != admissionv1.Delete || calls[1].Request.DryRun == nil || !*calls[1].Request.DryRun {
			t.Errorf("%s: calls for d2 %q, want CREATE (dryRun false) then DELETE (dryRun true)", path, callNames(calls))
		}
	}

	// admissionregistration.k8s.io/v1 allows only None and NoneOnDryRun.
	r = k.do(t, "POST", collectionPath(gvrVWCs), []byte(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"some"},
"webhooks":[{"name":"some.example.com","sideEffects":"Some","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://example.com"}}]}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`)
}

// 7. reinvocationPolicy IfNeeded.
func TestWebhookReinvocation(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/a", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse(addLabelOps(c.Object, "a", "done"), "a was here")
	})
	hs.handle("/b", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse(addLabelOps(c.Object, "b", "done"), "b was here")
	})
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	ifNeeded, never := admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy
	hook := func(name, path, cse string, policy *admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
		h := mhook(name, hs.clientConfig(path), gearRule(opCreate))
		h.ObjectSelector = labelSelector("case", cse)
		h.ReinvocationPolicy = policy
		return h
	}
	createMWC(t, k, hs, "reinvoke",
		hook("a-ifneeded.example.com", "/a", "ifneeded", &ifNeeded),
		hook("b-first.example.com", "/b", "ifneeded", nil),
		hook("a-never.example.com", "/a", "never", &never),
		hook("b-second.example.com", "/b", "never", nil))
	gears := gearsPath("", "default")

	r := k.do(t, "POST", gears, gearJSON("", "r1", map[string]string{"case": "ifneeded"}, nil))
	mustCode(t, "create r1", r, http.StatusCreated)
	if got := decodeObj(t, r).GetLabels(); !jsonEqual(got, map[string]string{"case": "ifneeded", "a": "done", "b": "done"}) {
		t.Errorf("r1 labels %v", got)
	}
	// kube-apiserver's warning recorder drops a repeated text.
	if got, want := warnings(t, r.Header), []string{"a was here", "b was here"}; !jsonEqual(got, want) {
		t.Errorf("r1 warnings %q, want %q", got, want)
	}
	a, b := hs.callsTo("/a", "r1"), hs.callsTo("/b", "r1")
	if len(a) != 2 || len(b) != 1 {
		t.Errorf("r1: webhook a called %d times, b %d; want 2 and 1 (a reinvoked after b changed the object)", len(a), len(b))
	} else if a[0].Object.GetLabels()["b"] != "" || a[1].Object.GetLabels()["b"] != "done" || a[1].Object.GetLabels()["a"] != "done" {
		t.Errorf("r1: a saw labels %v then %v, want the second call to see b's change", a[0].Object.GetLabels(), a[1].Object.GetLabels())
	}

	// reinvocationPolicy Never: one call.
	mustCode(t, "create r2", k.do(t, "POST", gears, gearJSON("", "r2", map[string]string{"case": "never"}, nil)), http.StatusCreated)
	if a, b := hs.callsTo("/a", "r2"), hs.callsTo("/b", "r2"); len(a) != 1 || len(b) != 1 {
		t.Errorf("r2: webhook a called %d times, b %d; want 1 and 1", len(a), len(b))
	}
	// IfNeeded, but nothing changed after a: one call.
	mustCode(t, "create r3", k.do(t, "POST", gears, gearJSON("", "r3", map[string]string{"case": "ifneeded", "b": "preset"}, nil)), http.StatusCreated)
	if a := hs.callsTo("/a", "r3"); len(a) != 1 {
		t.Errorf("r3: webhook a called %d times, want 1 (b changed nothing)", len(a))
	}
}

// 8. admissionReviewVersions.
func TestWebhookReviewVersions(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/mbeta", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse(addLabelOps(c.Object, "beta", "patched"), "from v1beta1")
	})
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	vh := func(name, path string, versions ...string) admissionregistrationv1.ValidatingWebhook {
		h := vhook(name, hs.clientConfig(path), gearRule(opCreate))
		h.AdmissionReviewVersions = versions
		return h
	}
	createVWC(t, k, hs, "versions",
		vh("beta.versions.example.com", "/beta", "v1beta1"),
		vh("betafirst.versions.example.com", "/betafirst", "v1beta1", "v1"),
		vh("v1first.versions.example.com", "/v1first", "v1", "v1beta1"))
	mh := mhook("mbeta.versions.example.com", hs.clientConfig("/mbeta"), gearRule(opCreate))
	mh.AdmissionReviewVersions = []string{"v1beta1"}
	createMWC(t, k, hs, "mversions", mh)

	r := k.do(t, "POST", gearsPath("", "default"), gearJSON("", "rv", nil, map[string]interface{}{"size": 1}))
	mustCode(t, "create", r, http.StatusCreated)
	if got := decodeObj(t, r).GetLabels(); got["beta"] != "patched" {
		t.Errorf("labels %v, want the v1beta1 webhook's patch", got)
	}
	if got := warnings(t, r.Header); !jsonEqual(got, []string{"from v1beta1"}) {
		t.Errorf("warnings %q, want [from v1beta1]", got)
	}
	for path, want := range map[string]string{"/beta": "admission.k8s.io/v1beta1", "/betafirst": "admission.k8s.io/v1beta1", "/v1first": "admission.k8s.io/v1", "/mbeta": "admission.k8s.io/v1beta1"} {
		calls := hs.callsTo(path, "rv")
		if len(calls) != 1 {
			t.Errorf("%s: %d calls, want 1", path, len(calls))
			continue
		}
		c := calls[0]
		if c.APIVersion != want || c.Kind != "AdmissionReview" {
			t.Errorf("%s: review %s %s, want %s AdmissionReview", path, c.APIVersion, c.Kind, want)
		}
		rq := c.Request
		if rq.UID == "" || rq.Operation != admissionv1.Create || rq.Name != "rv" || rq.Namespace != "default" || rq.Kind.Kind != "Gear" || rq.Resource.Resource != "gears" || c.Object == nil || nested(c.Object, "spec", "size") != int64(1) {
			t.Errorf("%s: request %s", path, fmtJSON(rq))
		}
	}
}

// 9. matchPolicy Equivalent and Exact.
func TestWebhookMatchPolicy(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/mequiv", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse(addLabelOps(c.Object, "seen-as", strings.ReplaceAll(c.Object.GetAPIVersion(), "/", ".")))
	})
	k := startMemKapi(t)
	createGearCRD(t, k, true)
	equivalent, exact := admissionregistrationv1.Equivalent, admissionregistrationv1.Exact
	vh := func(name, path, version string, policy *admissionregistrationv1.MatchPolicyType) admissionregistrationv1.ValidatingWebhook {
		h := vhook(name, hs.clientConfig(path), rule("hooks.example.com", version, "gears", opCreate))
		h.MatchPolicy = policy
		return h
	}
	createVWC(t, k, hs, "policy",
		vh("equiv.policy.example.com", "/equiv", "v1", &equivalent),
		vh("exact.policy.example.com", "/exact", "v1", &exact),
		vh("beta.policy.example.com", "/beta", "v1beta1", &exact))
	mh := mhook("mequiv.policy.example.com", hs.clientConfig("/mequiv"), rule("hooks.example.com", "v1", "gears", opCreate))
	mh.MatchPolicy = &equivalent
	createMWC(t, k, hs, "mpolicy", mh)

	v1Kind := metav1.GroupVersionKind{Group: "hooks.example.com", Version: "v1", Kind: "Gear"}
	betaKind := metav1.GroupVersionKind{Group: "hooks.example.com", Version: "v1beta1", Kind: "Gear"}
	v1Res := metav1.GroupVersionResource{Group: "hooks.example.com", Version: "v1", Resource: "gears"}
	betaRes := metav1.GroupVersionResource{Group: "hooks.example.com", Version: "v1beta1", Resource: "gears"}
	expectCall := func(path, name string, kind, reqKind metav1.GroupVersionKind, res, reqRes metav1.GroupVersionResource) {
		t.Helper()
		calls := hs.callsTo(path, name)
		if len(calls) != 1 {
			t.Errorf("%s: %d calls for %s, want 1", path, len(calls), name)
			return
		}
		rq := calls[0].Request
		if rq.Kind != kind || rq.Resource != res || rq.RequestKind == nil || *rq.RequestKind != reqKind || rq.RequestResource == nil || *rq.RequestResource != reqRes {
			t.Errorf("%s for %s: kind %v resource %v requestKind %v requestResource %v, want %v %v %v %v", path, name, rq.Kind, rq.Resource, rq.RequestKind, rq.RequestResource, kind, res, reqKind, reqRes)
		}
		if want := kind.Group + "/" + kind.Version; calls[0].Object.GetAPIVersion() != want {
			t.Errorf("%s for %s: object in %s, want %s", path, name, calls[0].Object.GetAPIVersion(), want)
		}
	}
	expectNoCall := func(path, name string) {
		t.Helper()
		if calls := hs.callsTo(path, name); len(calls) != 0 {
			t.Errorf("%s: %d calls for %s, want none", path, len(calls), name)
		}
	}

	// Through v1beta1: Equivalent sends it in v1, Exact for v1 skips it.
	r := k.do(t, "POST", gearsPath("v1beta1", "default"), gearJSON("v1beta1", "e-beta", nil, map[string]interface{}{"size": 1}))
	mustCode(t, "create through v1beta1", r, http.StatusCreated)
	if got := decodeObj(t, r); got.GetAPIVersion() != "hooks.example.com/v1beta1" || got.GetLabels()["seen-as"] != "hooks.example.com.v1" {
		t.Errorf("created through v1beta1: %s labels %v, want v1beta1 with the label the v1 webhook patched in", got.GetAPIVersion(), got.GetLabels())
	}
	expectCall("/equiv", "e-beta", v1Kind, betaKind, v1Res, betaRes)
	expectCall("/mequiv", "e-beta", v1Kind, betaKind, v1Res, betaRes)
	expectNoCall("/exact", "e-beta")
	expectCall("/beta", "e-beta", betaKind, betaKind, betaRes, betaRes)

	// Through v1.
	mustCode(t, "create through v1", k.do(t, "POST", gearsPath("v1", "default"), gearJSON("v1", "e-v1", nil, nil)), http.StatusCreated)
	expectCall("/equiv", "e-v1", v1Kind, v1Kind, v1Res, v1Res)
	expectCall("/exact", "e-v1", v1Kind, v1Kind, v1Res, v1Res)
	expectNoCall("/beta", "e-v1")
}

// 10. clientConfig.service, resolved through --service-resolver.
func TestWebhookServiceReference(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "hooksvc.webhooks.svc")
	hs.handle("/svc", func(c *hookCall) *admissionv1.AdmissionResponse {
		if c.obj().GetLabels()["deny"] == "yes" {
			return deny(&metav1.Status{Message: "denied through the service"})
		}
		return nil
	})
	k := startKapi(t, "--in-memory", "--service-resolver",
		fmt.Sprintf("webhooks/hooksvc:443=127.0.0.1:%d,webhooks/hooksvc:8443=127.0.0.1:%d", hs.Port, hs.Port))
	svc := func(name, path string, port int32) admissionregistrationv1.WebhookClientConfig {
		ref := &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: name, Path: &path}
		if port != 0 {
			ref.Port = &port
		}
		return admissionregistrationv1.WebhookClientConfig{Service: ref, CABundle: hs.CA}
	}
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	svcHook := vhook("svc.example.com", svc("hooksvc", "/svc", 0), deviceClassRule(opCreate))
	svcHook.ObjectSelector = labelSelector("case", "svc")
	portHook := vhook("port.example.com", svc("hooksvc", "/port", 8443), deviceClassRule(opCreate))
	portHook.ObjectSelector = labelSelector("case", "svc")
	missing := vhook("missing.example.com", svc("missing", "/x", 0), deviceClassRule(opCreate))
	missing.ObjectSelector = labelSelector("case", "missing")
	missing.FailurePolicy = &fail
	missingIgnore := vhook("missing-ignore.example.com", svc("missing", "/x", 0), deviceClassRule(opCreate))
	missingIgnore.ObjectSelector = labelSelector("case", "missing-ignore")
	missingIgnore.FailurePolicy = &ignore
	createVWC(t, k, hs, "services", svcHook, portHook, missing, missingIgnore)

	r := k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("svc-denied", map[string]string{"case": "svc", "deny": "yes"}))
	if st := expectStatus(t, r, http.StatusBadRequest, ""); st.Message != `admission webhook "svc.example.com" denied the request: denied through the service` {
		t.Errorf("message %q", st.Message)
	}
	mustCode(t, "create svc-allowed", k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("svc-allowed", map[string]string{"case": "svc"})), http.StatusCreated)
	for _, path := range []string{"/svc", "/port"} {
		calls := hs.callsTo(path, "svc-allowed")
		if len(calls) != 1 {
			t.Errorf("%s: %d calls for svc-allowed, want 1", path, len(calls))
			continue
		}
		if c := calls[0]; c.SNI != "hooksvc.webhooks.svc" || c.Query != "timeout=10s" {
			t.Errorf("%s: TLS server name %q query %q, want hooksvc.webhooks.svc and timeout=10s", path, c.SNI, c.Query)
		}
	}

	// A service the resolver does not know: the call fails.
	r = k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("svc-missing", map[string]string{"case": "missing"}))
	st := expectStatus(t, r, http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "missing.example.com": failed to call webhook: Post "https://missing.webhooks.svc:443/x?timeout=10s": `, "missing")
	t.Logf("unresolved service: %s", st.Message)
	mustCode(t, "GET svc-missing", k.do(t, "GET", deviceClassPath("svc-missing"), nil), http.StatusNotFound)
	mustCode(t, "create svc-missing-ignore", k.do(t, "POST", collectionPath(gvrDevClasses), deviceClassJSON("svc-missing-ignore", map[string]string{"case": "missing-ignore"})), http.StatusCreated)
}

// A namespace's DELETE follows kube-apiserver's namespace storage:
// admission sees a uid precondition set to the namespace's, a namespace
// already terminating with spec.finalizers left is answered as it is
// (no admission), the preconditions are worded as that storage words
// them, and the mark is a deletionTimestamp without a grace period.
func TestWebhookNamespaceDelete(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/ns-deletes", func(c *hookCall) *admissionv1.AdmissionResponse { return nil })
	k := startMemKapi(t)
	ctx := ctxT(t)
	ns := newNamespace("held-open")
	ns.Spec.Finalizers = []corev1.FinalizerName{"example.com/hold"}
	created, err := k.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createVWC(t, k, hs, "ns-deletes", vhook("ns.deletes.example.com", hs.clientConfig("/ns-deletes"), rule("", "v1", "namespaces", opDelete)))

	wrong := types.UID("00000000-0000-4000-8000-000000000000")
	err = k.Client.CoreV1().Namespaces().Delete(ctx, "held-open", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed: UID in precondition: "+string(wrong)+", UID in object meta: "+string(created.UID)) {
		t.Errorf("delete with a wrong uid: %v, want the namespace storage's Conflict", err)
	}
	if n := len(hs.callsTo("/ns-deletes", "held-open")); n != 0 {
		t.Errorf("the failed precondition reached admission (%d calls)", n)
	}
	for i := 0; i < 2; i++ {
		if err := k.Client.CoreV1().Namespaces().Delete(ctx, "held-open", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %d: %v", i+1, err)
		}
	}
	calls := hs.callsTo("/ns-deletes", "held-open")
	if len(calls) != 1 {
		t.Fatalf("the webhook was called %d times for two DELETEs of a namespace held by spec.finalizers, want once", len(calls))
	}
	pre, _ := calls[0].Options["preconditions"].(map[string]interface{})
	if pre["uid"] != string(created.UID) {
		t.Errorf("the DELETE's options %v, want preconditions.uid %s", calls[0].Options, created.UID)
	}
	got, err := k.Client.CoreV1().Namespaces().Get(ctx, "held-open", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds != nil || got.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("the deleted namespace: %v deletionTimestamp %v deletionGracePeriodSeconds %v phase %s, want Terminating with a timestamp and no grace period", err, got.DeletionTimestamp, got.DeletionGracePeriodSeconds, got.Status.Phase)
	}
}

// The DELETE of an immortal namespace is refused by kube-apiserver's
// NamespaceLifecycle plugin, the first of its admission chain: no mutating
// or validating webhook is called (kapi refused it after calling them).
func TestWebhookImmortalNamespaceDelete(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	k := startMemKapi(t)
	nsDeletes := rule("", "v1", "namespaces", opDelete)
	createMWC(t, k, hs, "immortal-m", mhook("m.immortal.example.com", hs.clientConfig("/m"), nsDeletes))
	createVWC(t, k, hs, "immortal-v", vhook("v.immortal.example.com", hs.clientConfig("/v"), nsDeletes))
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		for _, q := range []string{"", "?dryRun=All"} {
			r := k.do(t, "DELETE", "/api/v1/namespaces/"+name+q, nil)
			st := expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden)
			if want := fmt.Sprintf("namespaces %q is forbidden: this namespace may not be deleted", name); st.Message != want {
				t.Errorf("DELETE %s%s: message %q, want %q", name, q, st.Message, want)
			}
		}
		if m, v := hs.callsTo("/m", name), hs.callsTo("/v", name); len(m)+len(v) > 0 {
			t.Errorf("DELETE %s reached the webhooks: mutating %q, validating %q", name, callNames(m), callNames(v))
		}
	}
	// Any other namespace's DELETE reaches both.
	createNamespace(t, k, "mortal", nil)
	mustCode(t, "DELETE mortal", k.do(t, "DELETE", "/api/v1/namespaces/mortal", nil), http.StatusOK)
	if m, v := hs.callsTo("/m", "mortal"), hs.callsTo("/v", "mortal"); len(m) != 1 || len(v) != 1 {
		t.Errorf("DELETE mortal: mutating %q, validating %q, want one call each", callNames(m), callNames(v))
	}
}

// A namespace created from a generateName: kube-apiserver puts a
// namespace's own request in the namespace the client named, before the
// name is generated, so the webhooks' requests are in no namespace; the
// validating ones name the generated name (rest.AdmissionToValidateObjectFunc).
// A namespaceSelector still matches the namespace's own labels.
func TestWebhookGeneratedNamespaceName(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	k := startMemKapi(t)
	nsCreates := rule("", "v1", "namespaces", opCreate)
	mh := mhook("m.gen.example.com", hs.clientConfig("/m"), nsCreates)
	mh.NamespaceSelector = labelSelector("team", "gen")
	createMWC(t, k, hs, "gen-m", mh)
	vh := vhook("v.gen.example.com", hs.clientConfig("/v"), nsCreates)
	vh.NamespaceSelector = labelSelector("team", "gen")
	createVWC(t, k, hs, "gen-v", vh)

	r := k.do(t, "POST", "/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"gen-","labels":{"team":"gen"}}}`))
	mustCode(t, "create from generateName", r, http.StatusCreated)
	generated := decodeObj(t, r).GetName()
	m, v := hs.callsTo("/m", ""), hs.callsTo("/v", "")
	if len(m) != 1 || len(v) != 1 {
		t.Fatalf("webhook calls: mutating %q, validating %q; want one each", callNames(m), callNames(v))
	}
	if rq := m[0].Request; rq.Name != "" || rq.Namespace != "" {
		t.Errorf("mutating webhook's request: name %q namespace %q, want both empty", rq.Name, rq.Namespace)
	}
	if rq := v[0].Request; rq.Name != generated || rq.Namespace != "" {
		t.Errorf("validating webhook's request: name %q namespace %q, want name %q and no namespace", rq.Name, rq.Namespace, generated)
	}

	// A namespace the client names is its requests' namespace.
	createNamespace(t, k, "named-gen", map[string]string{"team": "gen"})
	for path, calls := range map[string][]hookCall{"/m": hs.callsTo("/m", "named-gen"), "/v": hs.callsTo("/v", "named-gen")} {
		if len(calls) != 1 || calls[0].Request.Namespace != "named-gen" {
			t.Errorf("%s: calls for named-gen %q, want one in namespace named-gen", path, callNames(calls))
		}
	}
}

// An object a mutating webhook patched is defaulted again before the next
// webhook sees it, as kube-apiserver's dispatcher defaults it.
func TestWebhookDefaultsBetweenMutations(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/drop-mode", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse([]map[string]interface{}{{"op": "remove", "path": "/spec/mode"}})
	})
	hs.handle("/see-mode", func(c *hookCall) *admissionv1.AdmissionResponse { return nil })
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: dials.defaults.example.com
spec:
  group: defaults.example.com
  scope: Namespaced
  names: {plural: dials, kind: Dial}
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
              mode: {type: string, default: auto}
`))
	dialRule := rule("defaults.example.com", "v1", "dials", opCreate)
	createMWC(t, k, hs, "dial-modes",
		mhook("a.drop.example.com", hs.clientConfig("/drop-mode"), dialRule),
		mhook("b.see.example.com", hs.clientConfig("/see-mode"), dialRule))
	r := k.do(t, "POST", "/apis/defaults.example.com/v1/namespaces/default/dials", []byte(`{"apiVersion":"defaults.example.com/v1","kind":"Dial","metadata":{"name":"d"},"spec":{"mode":"manual"}}`))
	mustCode(t, "create", r, http.StatusCreated)
	calls := hs.callsTo("/see-mode", "d")
	if len(calls) == 0 {
		t.Fatal("the second webhook was not called")
	}
	if got := nested(calls[0].Object, "spec", "mode"); got != "auto" {
		t.Errorf("the second webhook saw spec.mode %v, want the default auto after the first removed it", got)
	}
	if got := nested(decodeObj(t, r), "spec", "mode"); got != "auto" {
		t.Errorf("created spec.mode %v, want auto", got)
	}
}

// A mutating webhook's patch that changes a custom resource's kind or
// apiVersion goes through the CRD's converter, as kube-apiserver's request
// scope converts it (apiextensions' crConverter): another kind is left for
// validation to refuse (422, as a body of that kind is), another served
// version is converted, and a group or version the CRD does not serve is
// the converter's own error (a 500 that is no Status of kube's). The kind
// was a 500 "no served kind" before.
func TestWebhookPatchedTypeMeta(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	// A label value holds no "/": the webhook reads "_" as one.
	hs.handle("/typemeta", func(c *hookCall) *admissionv1.AdmissionResponse {
		to := strings.ReplaceAll(c.obj().GetLabels()["to"], "_", "/")
		op := map[string]interface{}{"op": "replace", "path": "/apiVersion", "value": to}
		switch c.obj().GetLabels()["case"] {
		case "":
			return nil
		case "kind":
			op = map[string]interface{}{"op": "replace", "path": "/kind", "value": "Other"}
		case "no-apiversion":
			op = map[string]interface{}{"op": "remove", "path": "/apiVersion"}
		}
		return patchResponse([]map[string]interface{}{op})
	})
	k := startMemKapi(t)
	createGearCRD(t, k, true)
	createMWC(t, k, hs, "typemeta", mhook("typemeta.example.com", hs.clientConfig("/typemeta"), gearRule(opCreate, opUpdate)))
	gears := gearsPath("", "default")
	gear := func(name, kase, to string) []byte {
		return gearJSON("", name, map[string]string{"case": kase, "to": strings.ReplaceAll(to, "/", "_")}, map[string]interface{}{"size": 1})
	}

	r := k.do(t, "POST", gears, gear("g-kind", "kind", ""))
	st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Other.hooks.example.com "g-kind" is invalid: kind: Invalid value: "Other": must be Gear`)
	if st.Details == nil || st.Details.Kind != "Other" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "kind" {
		t.Errorf("details %+v, want kind Other and one cause on kind", st.Details)
	}
	mustCode(t, "create g-plain", k.do(t, "POST", gears, gearJSON("", "g-plain", nil, map[string]interface{}{"size": 1})), http.StatusCreated)
	r = k.do(t, "PATCH", gears+"/g-plain", []byte(`{"metadata":{"labels":{"case":"kind"}}}`), "Content-Type: application/merge-patch+json")
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Other.hooks.example.com "g-plain" is invalid: kind: Invalid value: "Other": must be Gear`)

	r = k.do(t, "POST", gears, gear("g-beta", "version", "hooks.example.com/v1beta1"))
	mustCode(t, "create g-beta", r, http.StatusCreated)
	if got := decodeObj(t, r); got.GetAPIVersion() != "hooks.example.com/v1" || got.GetKind() != "Gear" {
		t.Errorf("g-beta answered as %s %s, want hooks.example.com/v1 Gear", got.GetAPIVersion(), got.GetKind())
	}

	for _, tc := range []struct{ name, kase, to, message string }{
		{"g-v9", "version", "hooks.example.com/v9", "request to convert CR from an invalid group/version: hooks.example.com/v9"},
		{"g-group", "version", "other.example.com/v1", `other.example.com/v1, Kind=Gear is unstructured and is not suitable for converting to "hooks.example.com/v1"`},
		{"g-none", "no-apiversion", "", `/, Kind=Gear is unstructured and is not suitable for converting to "hooks.example.com/v1"`},
	} {
		r := k.do(t, "POST", gears, gear(tc.name, tc.kase, tc.to))
		if st := expectStatus(t, r, http.StatusInternalServerError, ""); st.Message != tc.message {
			t.Errorf("%s: message %q, want %q", tc.name, st.Message, tc.message)
		}
		mustCode(t, "GET "+tc.name, k.do(t, "GET", gears+"/"+tc.name, nil), http.StatusNotFound)
	}
}

// kube-apiserver converts a custom resource for admission with the CRD's
// converter alone, and prunes it (and drops the nulls its schema allows
// none of) only as its storage encodes it: a webhook of another version
// sees, and hands back, the fields its version's schema does not know (kapi
// pruned them by that version, and stored the object without them), the
// validating webhooks see what a mutating one added, and a null a mutating
// webhook sets reaches validation (422; kapi dropped it).
func TestWebhookCustomResourcePrunedAtStorage(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/mutate", func(c *hookCall) *admissionv1.AdmissionResponse {
		switch c.obj().GetLabels()["case"] {
		case "unknown":
			return patchResponse([]map[string]interface{}{
				{"op": "add", "path": "/spec/bogus", "value": "x"},
				{"op": "add", "path": "/metadata/bogus", "value": "x"},
			})
		case "null":
			return patchResponse([]map[string]interface{}{{"op": "add", "path": "/spec/b", "value": nil}})
		case "annotation":
			return patchResponse([]map[string]interface{}{{"op": "add", "path": "/metadata/annotations", "value": map[string]interface{}{"n": 1}}})
		}
		return patchResponse(addLabelOps(c.Object, "seen", "yes"))
	})
	hs.handle("/see", func(c *hookCall) *admissionv1.AdmissionResponse { return nil })
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: knobs.prune.example.com
spec:
  group: prune.example.com
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
              a: {type: string}
              b: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              b: {type: string}
`))
	// Both webhooks match v1beta1 only: a v1 request is converted for them.
	knobRule := rule("prune.example.com", "v1beta1", "knobs", opCreate)
	createMWC(t, k, hs, "prune-m", mhook("mutate.prune.example.com", hs.clientConfig("/mutate"), knobRule))
	createVWC(t, k, hs, "prune-v", vhook("see.prune.example.com", hs.clientConfig("/see"), knobRule))
	knobs := "/apis/prune.example.com/v1/namespaces/default/knobs"

	r := k.do(t, "POST", knobs, []byte(`{"apiVersion":"prune.example.com/v1","kind":"Knob","metadata":{"name":"k1"},"spec":{"a":"A","b":"B"}}`))
	mustCode(t, "create k1", r, http.StatusCreated)
	want := map[string]interface{}{"a": "A", "b": "B"}
	if got := decodeObj(t, r); !reflect.DeepEqual(got.Object["spec"], want) || got.GetLabels()["seen"] != "yes" {
		t.Errorf("k1 created with spec %v labels %v, want spec %v and the webhook's label", got.Object["spec"], got.GetLabels(), want)
	}
	for _, path := range []string{"/mutate", "/see"} {
		for _, c := range hs.callsTo(path, "k1") {
			if c.obj().GetAPIVersion() != "prune.example.com/v1beta1" || !reflect.DeepEqual(c.obj().Object["spec"], want) {
				t.Errorf("%s saw %s spec %v, want v1beta1 spec %v", path, c.obj().GetAPIVersion(), c.obj().Object["spec"], want)
			}
		}
	}

	r = k.do(t, "POST", knobs, []byte(`{"apiVersion":"prune.example.com/v1","kind":"Knob","metadata":{"name":"k2","labels":{"case":"unknown"}},"spec":{"a":"A"}}`))
	mustCode(t, "create k2", r, http.StatusCreated)
	calls := hs.callsTo("/see", "k2")
	if len(calls) != 1 || nested(calls[0].obj(), "spec", "bogus") != "x" || nested(calls[0].obj(), "metadata", "bogus") != "x" {
		t.Errorf("the validating webhook saw %v, want what the mutating one added", callNames(calls))
		if len(calls) == 1 {
			t.Logf("it saw %v", calls[0].obj().Object)
		}
	}
	got := decodeObj(t, k.do(t, "GET", knobs+"/k2", nil))
	if nested(got, "spec", "bogus") != nil || nested(got, "metadata", "bogus") != nil {
		t.Errorf("k2 stored with spec %v metadata %v: the unknown fields are not pruned", got.Object["spec"], got.Object["metadata"])
	}

	r = k.do(t, "POST", knobs, []byte(`{"apiVersion":"prune.example.com/v1","kind":"Knob","metadata":{"name":"k3","labels":{"case":"null"}},"spec":{"a":"A"}}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Knob.prune.example.com "k3" is invalid: spec.b: Invalid value: "null": spec.b in body must be of type string: "null"`)

	// Metadata ObjectMeta cannot hold passes validation (its accessors
	// read nothing) and fails as the storage encodes it: kube's 500 with
	// the JSON decoder's error, no reason.
	r = k.do(t, "POST", knobs, []byte(`{"apiVersion":"prune.example.com/v1","kind":"Knob","metadata":{"name":"k4","labels":{"case":"annotation"}},"spec":{"a":"A"}}`))
	if st := expectStatus(t, r, http.StatusInternalServerError, ""); st.Message != "json: cannot unmarshal number into Go struct field ObjectMeta.annotations of type string" {
		t.Errorf("k4: message %q", st.Message)
	}
	mustCode(t, "GET k4", k.do(t, "GET", knobs+"/k4", nil), http.StatusNotFound)
}

// Admission sees kapi's controllers as kube's: the garbage collector's
// deletes come from its service account, the namespace controller's from
// its own.
func TestWebhookSeesControllerIdentities(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	// Cogs are stored as v1beta1; discovery prefers v1, which the
	// collector goes through, as kube's: an Exact v1 webhook sees it.
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cogs.hooks.example.com
spec:
  group: hooks.example.com
  scope: Namespaced
  names: {plural: cogs, singular: cog, kind: Cog}
  versions:
  - name: v1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1beta1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`))
	exact := admissionregistrationv1.Exact
	cogHook := vhook("cogs.example.com", hs.clientConfig("/cogs"), rule("hooks.example.com", "v1", "cogs", opDelete))
	cogHook.MatchPolicy = &exact
	nsHook := vhook("ns.example.com", hs.clientConfig("/ns"), rule("", "v1", "namespaces/status,namespaces/finalize", opUpdate))
	createVWC(t, k, hs, "who", vhook("who.example.com", hs.clientConfig("/who"), gearRule(opDelete)), cogHook, nsHook)
	createNamespace(t, k, "doomed", nil)
	gears := gearsPath("", "default")
	r := k.do(t, "POST", gears, gearJSON("", "owner", nil, nil))
	mustCode(t, "create the owner", r, http.StatusCreated)
	owner := decodeObj(t, r)
	dep := gearJSON("", "dependent", nil, nil)
	var obj map[string]interface{}
	if err := json.Unmarshal(dep, &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]interface{})["ownerReferences"] = []interface{}{map[string]interface{}{
		"apiVersion": owner.GetAPIVersion(), "kind": owner.GetKind(), "name": owner.GetName(), "uid": string(owner.GetUID()),
	}}
	dep, _ = json.Marshal(obj)
	mustCode(t, "create the dependent", k.do(t, "POST", gears, dep), http.StatusCreated)
	mustCode(t, "create in doomed", k.do(t, "POST", gearsPath("", "doomed"), gearJSON("", "content", nil, nil)), http.StatusCreated)
	cog := fmt.Sprintf(`{"apiVersion":"hooks.example.com/v1beta1","kind":"Cog","metadata":{"name":"cog","ownerReferences":[{"apiVersion":"%s","kind":"%s","name":"owner","uid":"%s"}]}}`,
		owner.GetAPIVersion(), owner.GetKind(), owner.GetUID())
	mustCode(t, "create the cog", k.do(t, "POST", "/apis/hooks.example.com/v1beta1/namespaces/default/cogs", []byte(cog)), http.StatusCreated)
	mustCode(t, "delete the owner", k.do(t, "DELETE", gears+"/owner", nil), http.StatusOK)
	mustCode(t, "delete the namespace", k.do(t, "DELETE", "/api/v1/namespaces/doomed", nil), http.StatusOK)
	for _, c := range []struct{ path, name, user, requestName string }{
		{"/who", "owner", "kubernetes-admin", "owner"},
		{"/who", "dependent", "system:serviceaccount:kube-system:generic-garbage-collector", "dependent"},
		{"/cogs", "cog", "system:serviceaccount:kube-system:generic-garbage-collector", "cog"},
		// The namespace controller deletes by collection: unnamed.
		{"/who", "content", "system:serviceaccount:kube-system:namespace-controller", ""},
		// Then writes its conditions and finalizes, through the API.
		{"/ns", "doomed", "system:serviceaccount:kube-system:namespace-controller", "doomed"},
	} {
		eventually(t, 10*time.Second, "the webhook to see "+c.name+"'s deletion", func() (bool, error) {
			calls := hs.callsTo(c.path, c.name)
			if c.path == "/ns" {
				var got []string
				for _, call := range calls {
					got = append(got, call.Request.SubResource+" "+call.Request.UserInfo.Username)
				}
				want := []string{"status " + c.user, "finalize " + c.user}
				return reflect.DeepEqual(got, want), fmt.Errorf("namespace updates seen: %v, want %v", got, want)
			}
			if len(calls) == 0 {
				return false, nil
			}
			if got := calls[0].Request.UserInfo.Username; got != c.user {
				t.Errorf("the deletion of %s came from %q, want %q", c.name, got, c.user)
			}
			if got := calls[0].Request.Name; got != c.requestName {
				t.Errorf("the deletion of %s was named %q to admission, want %q", c.name, got, c.requestName)
			}
			return true, nil
		})
	}
}

// A CRD's deletion writes its Terminating condition and removes its
// finalizer through customresourcedefinitions/status, as kube-apiserver's
// CRD finalizer does through its loopback client: admission sees them.
func TestWebhookSeesCRDFinalizer(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	k := startMemKapi(t)
	createGearCRD(t, k, false)
	createVWC(t, k, hs, "crds", vhook("crds.example.com", hs.clientConfig("/crds"), rule("apiextensions.k8s.io", "v1", "customresourcedefinitions/status", opUpdate)))
	if err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctxT(t), "gears.hooks.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the CRD finalizer's status updates", func() (bool, error) {
		var seen []string
		for _, c := range hs.callsTo("/crds", "gears.hooks.example.com") {
			for _, cond := range c.Object.Object["status"].(map[string]interface{})["conditions"].([]interface{}) {
				if cond := cond.(map[string]interface{}); cond["type"] == "Terminating" {
					seen = append(seen, fmt.Sprintf("%s %s %v", c.Request.UserInfo.Username, cond["reason"], c.Object.GetFinalizers()))
				}
			}
		}
		want := []string{"system:apiserver InstanceDeletionInProgress [customresourcecleanup.apiextensions.k8s.io]", "system:apiserver InstanceDeletionCompleted []"}
		return reflect.DeepEqual(seen, want), fmt.Errorf("status updates seen: %v, want %v", seen, want)
	})
}

// A DeviceClass's opaque parameters are measured against their 10 KiB
// limit as kube-apiserver measures them: as the body wrote them
// (whitespace counts), or, once a mutating webhook patched the object, as
// kube-apiserver re-encoded it to apply the patch (compact JSON).
func TestWebhookPatchedDeviceClassParameters(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/label", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse(addLabelOps(c.Object, "mutated", "yes"))
	})
	k := startMemKapi(t)
	hook := mhook("label.compact.example.com", hs.clientConfig("/label"), deviceClassRule(opCreate))
	hook.ObjectSelector = labelSelector("mutate", "me")
	createMWC(t, k, hs, "compact", hook)

	// 10,241 bytes as written, 1,001 of them whitespace.
	params := `{"b":"` + strings.Repeat("x", 9226) + `",` + strings.Repeat(" ", 1001) + `"a":1}`
	if len(params) != 10241 {
		t.Fatalf("parameters of %d bytes", len(params))
	}
	class := func(name, labels string) []byte {
		return []byte(`{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{"name":"` + name + `","labels":{` + labels + `}},` +
			`"spec":{"config":[{"opaque":{"driver":"dra.example.com","parameters":` + params + `}}]}}`)
	}
	r := k.do(t, "POST", collectionPath(gvrDevClasses), class("as-sent", ""))
	mustCode(t, "create without a webhook's patch", r, http.StatusUnprocessableEntity)
	var st metav1.Status
	_ = json.Unmarshal(r.Body, &st)
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.config[0].opaque.parameters" ||
		st.Details.Causes[0].Message != "Too long: may not be more than 10240 bytes" {
		t.Errorf("create without a webhook's patch: %s", r.Body)
	}
	r = k.do(t, "POST", collectionPath(gvrDevClasses), class("patched", `"mutate":"me"`))
	mustCode(t, "create a webhook patched", r, http.StatusCreated)
	if got := decodeObj(t, r).GetLabels()["mutated"]; got != "yes" {
		t.Errorf("the webhook did not patch the class: %s", r.Body)
	}
}

// A mutating webhook's patch of a built-in kind's apiVersion or kind is
// decoded as kube-apiserver's dispatcher decodes it (mutating
// callAttrMutatingHook): the JSON serializer of its scheme, into the Go
// type of the webhook's version, fills in what the patch removed from the
// object's kind (accepted, as a body that leaves them out); a kind or
// version the scheme does not know is the serializer's error as an
// InternalError; a garbage apiVersion too; and a kind the scheme knows but
// is not the request's decodes and then fails its conversion to the
// internal version (a 500 that is no Status of kube's). kapi decoded the
// patch as unstructured: a 500 "Object 'Kind' is missing" for a removed
// kind, "/, Kind=DeviceClass cannot be converted" for a removed
// apiVersion, and "no served kind" for an unknown kind.
func TestWebhookPatchedBuiltinTypeMeta(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	// A label value holds no "/": the webhook reads "_" as one.
	hs.handle("/typemeta", func(c *hookCall) *admissionv1.AdmissionResponse {
		labels := c.obj().GetLabels()
		to := strings.ReplaceAll(labels["to"], "_", "/")
		var ops []map[string]interface{}
		switch labels["case"] {
		case "":
			return nil
		case "strip":
			ops = []map[string]interface{}{{"op": "remove", "path": "/apiVersion"}, {"op": "remove", "path": "/kind"}}
		case "no-kind":
			ops = []map[string]interface{}{{"op": "remove", "path": "/kind"}}
		case "no-apiversion":
			ops = []map[string]interface{}{{"op": "remove", "path": "/apiVersion"}}
		case "version":
			ops = []map[string]interface{}{{"op": "replace", "path": "/apiVersion", "value": to}}
		case "kind":
			ops = []map[string]interface{}{{"op": "replace", "path": "/kind", "value": labels["kind"]}}
		case "retype":
			ops = []map[string]interface{}{{"op": "replace", "path": "/apiVersion", "value": to}, {"op": "replace", "path": "/kind", "value": labels["kind"]}}
		}
		if _, done := labels["patched"]; !done {
			ops = append(ops, map[string]interface{}{"op": "add", "path": "/metadata/labels/patched", "value": "yes"})
		}
		return patchResponse(ops)
	})
	k := startMemKapi(t)
	createMWC(t, k, hs, "typemeta",
		mhook("typemeta.example.com", hs.clientConfig("/typemeta"),
			deviceClassRule(opCreate, opUpdate),
			rule("", "v1", "namespaces", opCreate),
			rule("apiextensions.k8s.io", "v1", "customresourcedefinitions", opCreate)))
	classes := collectionPath(gvrDevClasses)
	class := func(name string, labels ...string) []byte {
		m := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			m[labels[i]] = strings.ReplaceAll(labels[i+1], "/", "_")
		}
		return deviceClassJSON(name, m)
	}
	expectStored := func(r httpResult, code int, path string) {
		t.Helper()
		mustCode(t, path, r, code)
		if r.Code != code {
			return
		}
		got := decodeObj(t, r)
		if got.GetAPIVersion() != "resource.k8s.io/v1beta2" || got.GetKind() != "DeviceClass" || got.GetLabels()["patched"] != "yes" {
			t.Errorf("%s answered as %s %s labels %v, want resource.k8s.io/v1beta2 DeviceClass patched", path, got.GetAPIVersion(), got.GetKind(), got.GetLabels())
		}
		r = k.do(t, "GET", path, nil)
		mustCode(t, "GET "+path, r, http.StatusOK)
		if got := decodeObj(t, r); got.GetLabels()["patched"] != "yes" {
			t.Errorf("%s stored with labels %v, want patched", path, got.GetLabels())
		}
	}

	// (a) What the patch leaves out of the object's kind is the webhook's
	// version's, on create and on update.
	for _, kase := range []string{"strip", "no-kind", "no-apiversion"} {
		name := "c-" + kase
		expectStored(k.do(t, "POST", classes, class(name, "case", kase)), http.StatusCreated, deviceClassPath(name))
	}
	mustCode(t, "create c-plain", k.do(t, "POST", classes, class("c-plain")), http.StatusCreated)
	r := k.do(t, "PATCH", deviceClassPath("c-plain"), []byte(`{"metadata":{"labels":{"case":"strip"}}}`), "Content-Type: application/merge-patch+json")
	expectStored(r, http.StatusOK, deviceClassPath("c-plain"))
	// The version the webhook saw, said again.
	expectStored(k.do(t, "POST", classes, class("c-same", "case", "version", "to", "resource.k8s.io/v1beta2")), http.StatusCreated, deviceClassPath("c-same"))

	// A namespace and a CRD alike.
	r = k.do(t, "POST", collectionPath(gvrNamespaces), []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-strip","labels":{"case":"strip"}}}`))
	mustCode(t, "create ns-strip", r, http.StatusCreated)
	if got := decodeObj(t, r); got.GetAPIVersion() != "v1" || got.GetKind() != "Namespace" || got.GetLabels()["patched"] != "yes" {
		t.Errorf("ns-strip answered as %s %s labels %v", got.GetAPIVersion(), got.GetKind(), got.GetLabels())
	}
	crd := strings.Replace(gearCRDYAML, "  name: gears.hooks.example.com\n", "  name: gears.hooks.example.com\n  labels:\n    case: strip\n", 1)
	r = k.do(t, "POST", collectionPath(gvrCRDs), []byte(crd), "Content-Type: application/yaml")
	mustCode(t, "create CRD with case strip", r, http.StatusCreated)
	if r.Code == http.StatusCreated {
		if got := decodeObj(t, r); got.GetAPIVersion() != "apiextensions.k8s.io/v1" || got.GetKind() != "CustomResourceDefinition" || got.GetLabels()["patched"] != "yes" {
			t.Errorf("CRD answered as %s %s labels %v", got.GetAPIVersion(), got.GetKind(), got.GetLabels())
		}
	}

	// (c) A kind or version kube's scheme does not know, a garbage
	// apiVersion: the decoder's error, as an InternalError; a kind it
	// knows that is not the request's: the conversion's error.
	for _, tc := range []struct {
		name   string
		labels []string
		reason metav1.StatusReason
		msg    string
	}{
		{"e-kind", []string{"case", "kind", "kind", "Other"}, metav1.StatusReasonInternalError,
			`Internal error occurred: no kind "Other" is registered for version "resource.k8s.io/v1beta2" in scheme "pkg/api/legacyscheme/scheme.go:30"`},
		{"e-version", []string{"case", "version", "to", "resource.k8s.io/v9"}, metav1.StatusReasonInternalError,
			`Internal error occurred: no kind "DeviceClass" is registered for version "resource.k8s.io/v9" in scheme "pkg/api/legacyscheme/scheme.go:30"`},
		{"e-group", []string{"case", "version", "to", "other.example.com/v1"}, metav1.StatusReasonInternalError,
			`Internal error occurred: no kind "DeviceClass" is registered for version "other.example.com/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"`},
		{"e-garbage", []string{"case", "version", "to", "a/b/c"}, metav1.StatusReasonInternalError,
			`Internal error occurred: unexpected GroupVersion string: a/b/c`},
		{"e-configmap", []string{"case", "retype", "to", "v1", "kind", "ConfigMap"}, "",
			`converting (v1.ConfigMap) to (resource.DeviceClass): unknown conversion`},
	} {
		r := k.do(t, "POST", classes, class(tc.name, tc.labels...))
		if st := expectStatus(t, r, http.StatusInternalServerError, tc.reason); st.Message != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, st.Message, tc.msg)
		}
		mustCode(t, "GET "+tc.name, k.do(t, "GET", deviceClassPath(tc.name), nil), http.StatusNotFound)
	}
}
