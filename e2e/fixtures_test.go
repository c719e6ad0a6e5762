package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The YAML manifests kubectl tests create. Each is valid for
// kube-apiserver v1.33.

const crdYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
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
              size:
                type: integer
`

const mwcYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mwc-e2e
webhooks:
- name: mutate.example.com
  sideEffects: None
  admissionReviewVersions: ["v1"]
  clientConfig:
    url: https://mutate.example.com/hook
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
`

const vwcYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: vwc-e2e
webhooks:
- name: validate.example.com
  sideEffects: None
  admissionReviewVersions: ["v1"]
  clientConfig:
    url: https://validate.example.com/hook
  rules:
  - operations: ["CREATE", "UPDATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
- name: validate2.example.com
  sideEffects: NoneOnDryRun
  admissionReviewVersions: ["v1"]
  clientConfig:
    url: https://validate.example.com/hook2
`

// vapV1beta1YAML is created through v1beta1 and read through v1.
const vapV1beta1YAML = `apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
  - expression: "object.spec.replicas >= 1"
`

const vapBindingYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-binding
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef:
    name: replica-limits
    parameterNotFoundAction: Deny
`

const deviceClassYAML = `apiVersion: resource.k8s.io/v1beta2
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: 'device.driver == "gpu.example.com"'
`

// Typed fixtures for client-go tests.

func newCRD(plural, group string) *apiextensionsv1.CustomResourceDefinition {
	base := strings.ReplaceAll(plural, "-", "")
	kind := strings.ToUpper(base[:1]) + strings.TrimSuffix(base[1:], "s")
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
					},
				}},
			}},
		},
	}
}

func newVWC(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://validate.example.com/" + name
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.example.com",
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}
}

func newMWC(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://mutate.example.com/" + name
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mutate.example.com",
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}
}

func newVAP(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}},
		},
	}
}

func newVAPBinding(name, policy string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// denyDeletesPolicy is a policy refusing every DELETE of group/resource
// with message.
func denyDeletesPolicy(name, group, resource, message string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	policy := newVAP(name)
	policy.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	policy.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}}
	policy.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: message}}
	return policy
}

// bindPolicy creates policy and a Deny binding of it, of the same name.
func bindPolicy(t testing.TB, k *kapi, policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	adm := k.Client.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctxT(t), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctxT(t), newVAPBinding(policy.Name, policy.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func newDeviceClass(name string) *resourcev1beta2.DeviceClass {
	return &resourcev1beta2.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1beta2.DeviceClassSpec{
			Selectors: []resourcev1beta2.DeviceSelector{{CEL: &resourcev1beta2.CELDeviceSelector{Expression: `device.driver == "` + name + `"`}}},
		},
	}
}

func newNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// Resources of the served kinds, for the dynamic client and raw HTTP.
var (
	gvrNamespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrCRDs       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrMWCs       = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	gvrVWCs       = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	gvrVAPs       = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	gvrVAPsBeta   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1beta1", Resource: "validatingadmissionpolicies"}
	gvrBindings   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	gvrDevClasses = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1beta2", Resource: "deviceclasses"}
)

// collectionPath is the URL path of a cluster-scoped resource's collection.
func collectionPath(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return "/api/" + gvr.Version + "/" + gvr.Resource
	}
	return "/apis/" + gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// writeFile writes content to a file in a fresh temporary directory.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// httpResult is a raw HTTP exchange's answer.
type httpResult struct {
	Code   int
	Header http.Header
	Body   []byte
}

// Status decodes the body as a metav1.Status, marking the test failed
// (and returning a zero Status) when it is not one.
func (r httpResult) Status(t testing.TB) metav1.Status {
	t.Helper()
	var probe struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(r.Body, &probe); err != nil || probe.Kind != "Status" || probe.APIVersion != "v1" {
		t.Errorf("body is not a v1 Status: %.300s", r.Body)
		return metav1.Status{}
	}
	var st metav1.Status
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Errorf("body is not a valid Status (%v): %s", err, r.Body)
	}
	return st
}

// do sends a raw HTTP request to kapi; body may be nil. header holds
// "Name: value" pairs.
func (k *kapi) do(t testing.TB, method, path string, body []byte, header ...string) httpResult {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, k.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range header {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			t.Fatalf("bad header %q", h)
		}
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return httpResult{Code: resp.StatusCode, Header: resp.Header, Body: data}
}

// expectStatus checks a failed request's code, Status reason and that the
// message contains each of wantInMessage.
func expectStatus(t testing.TB, r httpResult, code int, reason metav1.StatusReason, wantInMessage ...string) metav1.Status {
	t.Helper()
	if r.Code != code {
		t.Errorf("HTTP %d, want %d; body: %.300s", r.Code, code, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	st := r.Status(t)
	if st.Kind == "" {
		return st
	}
	if st.Status != metav1.StatusFailure || int(st.Code) != code || st.Reason != reason {
		t.Errorf("status=%q code=%d reason=%q, want Failure %d %q; body: %s", st.Status, st.Code, st.Reason, code, reason, r.Body)
	}
	for _, w := range wantInMessage {
		if !strings.Contains(st.Message, w) {
			t.Errorf("message %q does not contain %q", st.Message, w)
		}
	}
	return st
}

// expectPlainNotFound checks for the plain-text 404 of a path
// kube-apiserver's routers all pass on (Go's http.NotFound).
func expectPlainNotFound(t testing.TB, r httpResult) {
	t.Helper()
	if r.Code != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") || string(r.Body) != "404 page not found\n" {
		t.Errorf("HTTP %d %q %q, want 404 text/plain \"404 page not found\"", r.Code, r.Header.Get("Content-Type"), r.Body)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func rvInt(t testing.TB, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an integer: %v", rv, err)
	}
	return n
}

// eventually polls cond until it is true or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func fmtJSON(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}
