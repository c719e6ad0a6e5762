package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Checks of kube's own conformance e2e tests (test/e2e/apimachinery:
// webhook.go, crd_conversion_webhook.go) that the other tests here do not
// make, reworked onto custom resources: kapi serves no ConfigMaps or Pods.

// Webhooks registered for the admission configurations themselves are
// never called: they neither mutate a configuration nor stop its deletion
// (kube-apiserver exempts the configuration kinds from webhooks).
func TestWebhookConformanceConfigurationsExempt(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/always-deny", func(c *hookCall) *admissionv1.AdmissionResponse {
		return deny(&metav1.Status{Message: "this webhook denies all requests"})
	})
	hs.handle("/add-label", func(c *hookCall) *admissionv1.AdmissionResponse {
		return patchResponse(addLabelOps(c.Object, "added-label", "yes"))
	})
	k := startMemKapi(t)
	fail := admissionregistrationv1.Fail
	configs := "validatingwebhookconfigurations,mutatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings"
	denyDeletes := vhook("deny-webhook-configuration-deletions.k8s.io", hs.clientConfig("/always-deny"), rule("admissionregistration.k8s.io", "*", configs, opDelete))
	denyDeletes.FailurePolicy = &fail
	createVWC(t, k, hs, "blocking", denyDeletes)
	addLabel := mhook("add-label-to-webhook-configurations.k8s.io", hs.clientConfig("/add-label"), rule("admissionregistration.k8s.io", "*", configs, opCreate))
	addLabel.FailurePolicy = &fail
	createMWC(t, k, hs, "mblocking", addLabel)

	ctx := ctxT(t)
	arc := k.Client.AdmissionregistrationV1()
	dummy := vhook("dummy-validating-webhook.k8s.io", hs.clientConfig(""), rule("", "v1", "invalid", opCreate))
	vwc, err := arc.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "dummy"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{dummy}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a ValidatingWebhookConfiguration: %v", err)
	}
	mdummy := mhook("dummy-mutating-webhook.k8s.io", hs.clientConfig(""), rule("", "v1", "invalid", opCreate))
	mwc, err := arc.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "mdummy"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mdummy}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a MutatingWebhookConfiguration: %v", err)
	}
	vap, err := arc.ValidatingAdmissionPolicies().Create(ctx, newVAP("dummy-policy"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a ValidatingAdmissionPolicy: %v", err)
	}
	for _, labels := range []map[string]string{vwc.Labels, mwc.Labels, vap.Labels} {
		if labels["added-label"] != "" {
			t.Errorf("a configuration was created with labels %v: the mutating webhook was called", labels)
		}
	}
	if err := arc.ValidatingWebhookConfigurations().Delete(ctx, "dummy", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the ValidatingWebhookConfiguration: %v", err)
	}
	if err := arc.MutatingWebhookConfigurations().Delete(ctx, "mdummy", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the MutatingWebhookConfiguration: %v", err)
	}
	if err := arc.ValidatingAdmissionPolicies().Delete(ctx, "dummy-policy", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the ValidatingAdmissionPolicy: %v", err)
	}
	if err := arc.ValidatingWebhookConfigurations().Delete(ctx, "blocking", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the blocking configuration itself: %v", err)
	}
	if n := len(hs.callsTo("/always-deny", "")) + len(hs.callsTo("/add-label", "")); n != 0 {
		t.Errorf("the webhooks on configurations were called %d times, want never", n)
	}
}

// A mutating webhook for both versions of a CRD whose storage version is
// changed by a strategic merge patch of the CRD: a JSON patch through the
// new storage version keeps what the webhooks added at creation and adds
// the patched field ("should mutate custom resource with different stored
// version").
func TestWebhookConformanceMutateStorageVersionChange(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/mutating-custom-resource", func(c *hookCall) *admissionv1.AdmissionResponse {
		var ops []map[string]interface{}
		if v, _, _ := unstructured.NestedString(c.Object.Object, "data", "mutation-start"); v == "yes" {
			ops = []map[string]interface{}{{"op": "add", "path": "/data/mutation-stage-1", "value": "yes"}}
		}
		if v, _, _ := unstructured.NestedString(c.Object.Object, "data", "mutation-stage-1"); v == "yes" {
			ops = []map[string]interface{}{{"op": "add", "path": "/data/mutation-stage-2", "value": "yes"}}
		}
		return patchResponse(ops)
	})
	k := startMemKapi(t)
	schemaYAML := "{type: object, x-kubernetes-preserve-unknown-fields: true}"
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cms.conformance.example.com
spec:
  group: conformance.example.com
  scope: Namespaced
  names: {plural: cms, kind: CM}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: `+schemaYAML+`}}
  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: `+schemaYAML+`}}
`))
	both := rule("conformance.example.com", "v1", "cms", opCreate, opUpdate)
	both.APIVersions = []string{"v1", "v2"}
	createOnly := rule("conformance.example.com", "v1", "cms", opCreate)
	createOnly.APIVersions = []string{"v1", "v2"}
	createMWC(t, k, hs, "mutate-cms",
		mhook("mutate-custom-resource-data-stage-1.k8s.io", hs.clientConfig("/mutating-custom-resource"), both),
		mhook("mutate-custom-resource-data-stage-2.k8s.io", hs.clientConfig("/mutating-custom-resource"), createOnly))
	ctx := ctxT(t)
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "conformance.example.com", Version: v, Resource: "cms"}
	}
	created, err := k.Dyn.Resource(gvr("v1")).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "conformance.example.com/v1", "kind": "CM", "metadata": map[string]interface{}{"name": "cr-instance-1"},
		"data": map[string]interface{}{"mutation-start": "yes"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	want := map[string]interface{}{"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"}
	if !reflect.DeepEqual(created.Object["data"], want) {
		t.Errorf("created with data %v, want %v", created.Object["data"], want)
	}
	v2Storage := `{"spec": {"versions": [
  {"name": "v1", "storage": false, "served": true, "schema": {"openAPIV3Schema": {"x-kubernetes-preserve-unknown-fields": true, "type": "object"}}},
  {"name": "v2", "storage": true, "served": true, "schema": {"openAPIV3Schema": {"x-kubernetes-preserve-unknown-fields": true, "type": "object"}}}]}}`
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, "cms.conformance.example.com", types.StrategicMergePatchType, []byte(v2Storage), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the CRD to store v2: %v", err)
	}
	patched, err := k.Dyn.Resource(gvr("v2")).Namespace("default").Patch(ctx, "cr-instance-1", types.JSONPatchType, []byte(`[{"op": "add", "path": "/dummy", "value": "test"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("JSON patch through v2: %v", err)
	}
	if !reflect.DeepEqual(patched.Object["data"], want) || patched.Object["dummy"] != "test" {
		t.Errorf("patched through v2: data %v dummy %v, want %v and test", patched.Object["data"], patched.Object["dummy"], want)
	}
}

// A conversion webhook converts a list of custom resources stored in two
// versions (one created before the CRD's storage version changed) into
// either version ("should be able to convert a non homogeneous list of
// CRs").
func TestWebhookConformanceConvertMixedList(t *testing.T) {
	t.Parallel()
	caPEM, cert := webhookCerts(t, "e2e-test-crd-conversion-webhook.e2e.svc")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(hostPortConverter))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	k := startKapi(t, "--in-memory", "--service-resolver", fmt.Sprintf("e2e/e2e-test-crd-conversion-webhook:9443=127.0.0.1:%d", srv.Listener.Addr().(*net.TCPAddr).Port))
	crd := crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: hostports.conformance.example.com
spec:
  group: conformance.example.com
  scope: Namespaced
  names: {plural: hostports, kind: HostPort}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1", "v1beta1"]
      clientConfig:
        service: {namespace: e2e, name: e2e-test-crd-conversion-webhook, port: 9443, path: /crdconvert}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {hostPort: {type: string}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {host: {type: string}, port: {type: string}}}}
`)
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = caPEM
	createCRD(t, k, crd)
	ctx := ctxT(t)
	path := func(v string) string { return "/apis/conformance.example.com/" + v + "/namespaces/default/hostports" }
	instance := func(name string) []byte {
		return []byte(`{"apiVersion":"conformance.example.com/v1","kind":"HostPort","metadata":{"name":"` + name + `"},"hostPort":"localhost:8080"}`)
	}
	mustCode(t, "create cr-instance-1", k.do(t, "POST", path("v1"), instance("cr-instance-1")), http.StatusCreated)
	got, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Versions[0].Storage, got.Spec.Versions[1].Storage = false, true
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("storing v2: %v", err)
	}
	mustCode(t, "create cr-instance-2", k.do(t, "POST", path("v1"), instance("cr-instance-2")), http.StatusCreated)
	for v, want := range map[string]map[string]interface{}{
		"v1": {"hostPort": "localhost:8080"},
		"v2": {"host": "localhost", "port": "8080"},
	} {
		list := &unstructured.UnstructuredList{}
		r := k.do(t, "GET", path(v), nil)
		mustCode(t, "list "+v, r, http.StatusOK)
		if err := list.UnmarshalJSON(r.Body); err != nil {
			t.Fatalf("list %s: %v", v, err)
		}
		if len(list.Items) != 2 {
			t.Fatalf("list %s: %d items, want 2", v, len(list.Items))
		}
		for _, item := range list.Items {
			if item.GetAPIVersion() != "conformance.example.com/"+v {
				t.Errorf("list %s: item %s in %s", v, item.GetName(), item.GetAPIVersion())
			}
			for field, value := range want {
				if item.Object[field] != value {
					t.Errorf("list %s: item %s has %s=%v, want %v", v, item.GetName(), field, item.Object[field], value)
				}
			}
		}
	}
}

// hostPortConverter is kube's e2e conversion webhook: v1's hostPort is
// v2's host and port.
func hostPortConverter(w http.ResponseWriter, r *http.Request) {
	review := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	to := review.Request.DesiredAPIVersion
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		obj := map[string]interface{}{}
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(to, "/v2") {
			if hp, ok := obj["hostPort"].(string); ok {
				host, port, _ := strings.Cut(hp, ":")
				obj["host"], obj["port"] = host, port
				delete(obj, "hostPort")
			}
		} else if host, ok := obj["host"].(string); ok {
			obj["hostPort"] = fmt.Sprintf("%s:%v", host, obj["port"])
			delete(obj, "host")
			delete(obj, "port")
		}
		obj["apiVersion"] = to
		data, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"}, Response: resp})
}

// A webhook denies a CRD by its labels, selected by an objectSelector
// ("should deny crd creation").
func TestWebhookConformanceDenyCRD(t *testing.T) {
	t.Parallel()
	hs := startHookServer(t, "localhost")
	hs.handle("/crd", func(c *hookCall) *admissionv1.AdmissionResponse {
		if c.obj().GetLabels()["webhook-e2e-test"] == "webhook-disallow" {
			return deny(&metav1.Status{Message: "the crd contains unwanted label"})
		}
		return nil
	})
	k := startMemKapi(t)
	h := vhook("deny-crd-with-unwanted-label.k8s.io", hs.clientConfig("/crd"), rule("apiextensions.k8s.io", "*", "customresourcedefinitions", opCreate))
	h.ObjectSelector = labelSelector("conformance", "true")
	createVWC(t, k, hs, "deny-crd", h)
	crd := newCRD("denieds", "conformance.example.com")
	crd.Labels = map[string]string{"conformance": "true", "webhook-e2e-test": "webhook-disallow"}
	r := k.do(t, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", mustJSON(t, crd))
	st := expectStatus(t, r, http.StatusBadRequest, "")
	if want := `admission webhook "deny-crd-with-unwanted-label.k8s.io" denied the request: the crd contains unwanted label`; st.Message != want {
		t.Errorf("message %q, want %q", st.Message, want)
	}
	crd.Labels = map[string]string{"webhook-e2e-test": "webhook-disallow"}
	mustCode(t, "create a CRD the objectSelector leaves out", k.do(t, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", mustJSON(t, crd)), http.StatusCreated)
}
