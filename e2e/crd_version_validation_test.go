package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A write is validated by the schema of the version it was sent through,
// as kube-apiserver validates it, whatever the storage version.
func TestCustomResourceValidatedByRequestVersion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	schemaMax := func(max float64) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"size": {Type: "integer", Maximum: ptr.To(max)},
				}},
			},
		}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "knobs.versions.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "versions.example.com", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "knobs", Kind: "Knob"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaMax(10)},
				{Name: "v1beta1", Served: true, Storage: false, Schema: schemaMax(5)},
			},
		},
	}
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settledCRD(ctx, t, k, crd.Name)
	knob := func(version, name string, size int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "versions.example.com/" + version, "kind": "Knob",
			"metadata": map[string]interface{}{"name": name},
			"spec":     map[string]interface{}{"size": size},
		}}
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "versions.example.com", Version: v, Resource: "knobs"}
	}
	if _, err := k.Dyn.Resource(gvr("v1")).Create(ctx, knob("v1", "seven", 7), metav1.CreateOptions{}); err != nil {
		t.Errorf("size 7 through v1 (maximum 10): %v", err)
	}
	_, err := k.Dyn.Resource(gvr("v1beta1")).Create(ctx, knob("v1beta1", "seven-beta", 7), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size: Invalid value: 7: spec.size in body should be less than or equal to 5") {
		t.Errorf("size 7 through v1beta1 (maximum 5): %v, want kube's Invalid on spec.size", err)
	}
	if _, err := k.Dyn.Resource(gvr("v1beta1")).Create(ctx, knob("v1beta1", "three", 3), metav1.CreateOptions{}); err != nil {
		t.Errorf("size 3 through v1beta1: %v", err)
	}
}

// A write through a version other than the storage version runs in that
// version, as kube-apiserver runs it: decoded, validated and recorded in
// managedFields in it, then converted to the storage version to be stored.
// A field the storage version does not have is checked by the request
// version's schema before the storage version prunes it.
func TestCustomResourceWritesRunInRequestVersion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: dials.pipeline.example.com
spec:
  group: pipeline.example.com
  scope: Cluster
  names: {plural: dials, kind: Dial}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: boolean}}}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [legacy]
            properties:
              size: {type: integer}
              legacy: {type: string}
          status: {type: object, properties: {ready: {type: boolean}}}
`))
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "pipeline.example.com", Version: v, Resource: "dials"}
	}
	v1, beta := k.Dyn.Resource(gvr("v1")), k.Dyn.Resource(gvr("v1beta1"))
	dial := func(version, name string, spec map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "pipeline.example.com/" + version, "kind": "Dial",
			"metadata": map[string]interface{}{"name": name},
			"spec":     spec,
		}}
	}
	managers := func(u *unstructured.Unstructured) map[string]string {
		m := map[string]string{}
		for _, e := range u.GetManagedFields() {
			m[e.Manager+"/"+string(e.Operation)] = e.APIVersion
		}
		return m
	}

	// Created through v1beta1 with the field only v1beta1 has (and
	// requires): valid there; v1 prunes it when stored.
	made, err := beta.Create(ctx, dial("v1beta1", "a", map[string]interface{}{"size": int64(1), "legacy": "x"}), metav1.CreateOptions{FieldManager: "maker"})
	if err != nil {
		t.Fatalf("create through v1beta1 with spec.legacy: %v", err)
	}
	if made.GetAPIVersion() != "pipeline.example.com/v1beta1" || nested(made, "spec", "legacy") != nil || nested(made, "spec", "size") != int64(1) {
		t.Errorf("create answered %s spec %v, want v1beta1 with size 1 and legacy pruned by the storage version", made.GetAPIVersion(), made.Object["spec"])
	}
	if got := managers(made); got["maker/Update"] != "pipeline.example.com/v1beta1" {
		t.Errorf("managedFields %v, want maker's Update recorded in pipeline.example.com/v1beta1", got)
	}
	// Without it, v1beta1's schema refuses the write.
	_, err = beta.Create(ctx, dial("v1beta1", "b", map[string]interface{}{"size": int64(1)}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.legacy: Required value") {
		t.Errorf("create through v1beta1 without spec.legacy: %v, want Invalid spec.legacy: Required value", err)
	}

	// An update through v1beta1: the old object is read in v1beta1 (no
	// legacy), the new one has it.
	made.Object["spec"] = map[string]interface{}{"size": int64(2), "legacy": "y"}
	updated, err := beta.Update(ctx, made, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatalf("update through v1beta1: %v", err)
	}
	if nested(updated, "spec", "size") != int64(2) || updated.GetGeneration() != 2 {
		t.Errorf("update answered spec %v generation %d, want size 2, generation 2", updated.Object["spec"], updated.GetGeneration())
	}
	// A write through v1 is recorded in v1 beside them.
	stored, err := v1.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored.Object["spec"] = map[string]interface{}{"size": int64(3)}
	stored, err = v1.Update(ctx, stored, metav1.UpdateOptions{FieldManager: "v1writer"})
	if err != nil {
		t.Fatalf("update through v1: %v", err)
	}
	want := map[string]string{"maker/Update": "pipeline.example.com/v1beta1", "updater/Update": "pipeline.example.com/v1beta1", "v1writer/Update": "pipeline.example.com/v1"}
	if got := managers(stored); !jsonEqual(got, want) {
		t.Errorf("managedFields %v, want %v", got, want)
	}

	// Server-side apply through v1beta1 takes a v1beta1 configuration
	// and records it in v1beta1.
	applied, err := beta.Apply(ctx, "c", dial("v1beta1", "c", map[string]interface{}{"size": int64(4), "legacy": "z"}), metav1.ApplyOptions{FieldManager: "applier"})
	if err != nil {
		t.Fatalf("apply through v1beta1: %v", err)
	}
	if got := managers(applied); got["applier/Apply"] != "pipeline.example.com/v1beta1" {
		t.Errorf("managedFields %v, want applier's Apply in pipeline.example.com/v1beta1", got)
	}
	if _, err := beta.Apply(ctx, "c", dial("v1", "c", map[string]interface{}{"size": int64(4)}), metav1.ApplyOptions{FieldManager: "applier"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "invalid object type: pipeline.example.com/v1, Kind=Dial") {
		t.Errorf("apply of a v1 configuration through v1beta1: %v, want kube's BadRequest on the object type", err)
	}

	// v1 has a status subresource, v1beta1 none: through v1beta1 status is
	// written with the object (and owned by its writer); through v1 it is
	// reset and only /status writes it.
	made, err = beta.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "pipeline.example.com/v1beta1", "kind": "Dial",
		"metadata": map[string]interface{}{"name": "d"},
		"spec":     map[string]interface{}{"legacy": "x"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := k.do(t, "PATCH", "/apis/pipeline.example.com/v1beta1/dials/d?fieldManager=patcher", []byte(`{"status":{"ready":true}}`), "Content-Type: application/merge-patch+json")
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"status":{"ready":true}`) {
		t.Errorf("merge patch of status through v1beta1 (no status subresource): %d %s, want status written", r.Code, r.Body)
	}
	var patched unstructured.Unstructured
	if err := patched.UnmarshalJSON(r.Body); err != nil {
		t.Fatal(err)
	}
	owns := false
	for _, e := range patched.GetManagedFields() {
		owns = owns || e.Manager == "patcher" && e.APIVersion == "pipeline.example.com/v1beta1" && strings.Contains(string(e.FieldsV1.Raw), `"f:status"`)
	}
	if !owns {
		t.Errorf("managedFields %s, want patcher owning status in v1beta1", fmtJSON(patched.GetManagedFields()))
	}
	r = k.do(t, "PATCH", "/apis/pipeline.example.com/v1/dials/d?fieldManager=patcher", []byte(`{"status":{"ready":false}}`), "Content-Type: application/merge-patch+json")
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"status":{"ready":true}`) {
		t.Errorf("merge patch of status through v1 (status subresource): %d %s, want status kept", r.Code, r.Body)
	}
}

// The conditions kube-apiserver's other CRD controllers set: API approval
// for the protected groups (*.k8s.io), and Established=False for a
// conversion webhook whose caBundle cannot be used.
func TestCustomResourceDefinitionConditions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crdYAML := func(group, annotation, conversion string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.` + group + `
  annotations: {` + annotation + `}
spec:
  group: ` + group + `
  scope: Cluster
  names: {plural: things, kind: Thing}
` + conversion + `
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
`
	}
	condition := func(name string, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
		var c *apiextensionsv1.CustomResourceDefinitionCondition
		eventually(t, 10*time.Second, "condition "+string(typ)+" of "+name, func() (bool, error) {
			crd, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c = crdCondition(crd, typ)
			return c != nil, nil
		})
		return c
	}
	for _, c := range []struct{ group, annotation, status, reason, message string }{
		{"approved.k8s.io", `api-approved.kubernetes.io: "https://github.com/kubernetes/kubernetes/pull/1"`, "True", "ApprovedAnnotation", "approved in https://github.com/kubernetes/kubernetes/pull/1"},
		{"unapproved.k8s.io", `api-approved.kubernetes.io: "unapproved, experimental"`, "False", "UnapprovedAnnotation", `not approved: "unapproved, experimental"`},
	} {
		createCRD(t, k, crdFromYAML(t, crdYAML(c.group, c.annotation, "")))
		got := condition("things."+c.group, apiextensionsv1.KubernetesAPIApprovalPolicyConformant)
		if string(got.Status) != c.status || got.Reason != c.reason || got.Message != c.message {
			t.Errorf("%s: KubernetesAPIApprovalPolicyConformant %s %s %q, want %s %s %q", c.group, got.Status, got.Reason, got.Message, c.status, c.reason, c.message)
		}
	}
	if _, err := settledCRD(ctx, t, k, "things.approved.k8s.io"); err != nil { // Established
		t.Fatal(err)
	}

	conversion := `  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {url: "https://127.0.0.1:1/convert", caBundle: bm90IGEgY2VydA==}`
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crdFromYAML(t, crdYAML("badca.example.com", "", conversion)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := condition("things.badca.example.com", apiextensionsv1.Established)
	if got.Status != apiextensionsv1.ConditionFalse || got.Reason != "InvalidCABundle" || got.Message != "The conversion webhook CABundle is invalid" {
		t.Errorf("Established of a CRD with an invalid caBundle: %s %s %q, want False InvalidCABundle", got.Status, got.Reason, got.Message)
	}
	if na := condition("things.badca.example.com", apiextensionsv1.NamesAccepted); na.Status != apiextensionsv1.ConditionTrue {
		t.Errorf("NamesAccepted of a CRD with an invalid caBundle: %s %s, want True", na.Status, na.Reason)
	}
	// Its resource is not served: kube-apiserver's handler, which would
	// serve it (names accepted), fails to build its converter and answers
	// 500; a version it does not serve and the wrong scope are 404 first.
	things := schema.GroupVersionResource{Group: "badca.example.com", Version: "v1", Resource: "things"}
	_, err := k.Dyn.Resource(things).List(ctx, metav1.ListOptions{})
	if se := (apierrors.APIStatus)(nil); !errors.As(err, &se) || se.Status().Code != http.StatusInternalServerError ||
		se.Status().Reason != metav1.StatusReasonInternalError || se.Status().Message != "Internal error occurred: error resolving resource" {
		t.Errorf("list of a CRD with an invalid caBundle: %v, want 500 InternalError \"error resolving resource\"", err)
	}
	if _, err := k.Dyn.Resource(things).Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("get of a CRD with an invalid caBundle: %v, want 500", err)
	}
	things.Version = "v2"
	if _, err := k.Dyn.Resource(things).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("list in a version the CRD does not define: %v, want 404", err)
	}
	things.Version = "v1"
	if _, err := k.Dyn.Resource(things).Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespaced list of a cluster-scoped CRD with an invalid caBundle: %v, want 404", err)
	}
}

// A stored object is read as kube-apiserver's codecs read it: defaulted by
// the version it was stored in, then converted and pruned for the request,
// without the requested version's defaults. An update decodes its body with
// them, so a label patch through such a version changes the spec (and the
// generation) as under kube. An object stored before the storage version
// moved is read in its own version, not through the new one.
func TestCustomResourceReadsAcrossVersions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gauges.reads.example.com
spec:
  group: reads.example.com
  scope: Cluster
  names: {plural: gauges, kind: Gauge}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, extra: {type: string, default: e2}}}
`)
	createCRD(t, k, crd)
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "reads.example.com", Version: v, Resource: "gauges"}
	}
	v1, v2 := k.Dyn.Resource(gvr("v1")), k.Dyn.Resource(gvr("v2"))
	gauge := func(version, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "reads.example.com/" + version, "kind": "Gauge",
			"metadata": map[string]interface{}{"name": name},
			"spec":     map[string]interface{}{"size": int64(3)},
		}}
	}
	if _, err := v1.Create(ctx, gauge("v1", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := v2.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || nested(got, "spec", "extra") != nil {
		t.Errorf("GET through v2 of an object stored in v1: %v spec %v, want no v2 default", err, got.Object["spec"])
	}
	made, err := v2.Create(ctx, gauge("v2", "b"), metav1.CreateOptions{})
	if err != nil || nested(made, "spec", "extra") != nil {
		t.Errorf("create through v2: %v spec %v, want the stored object (v1 pruned extra) without v2's default", err, made.Object["spec"])
	}
	patched, err := v2.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err != nil || patched.GetGeneration() != 2 {
		t.Errorf("a label patch through v2: %v generation %d, want 2 (the decoded body has v2's default, the old object not)", err, patched.GetGeneration())
	}

	// The storage version moves to v2, which does not know spec.size.
	cur, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
	cur.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"].Properties["count"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	spec := cur.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
	delete(spec.Properties, "size")
	cur.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A patch through v1 of an object still stored in v1 sees its size.
	eventually(t, 10*time.Second, "a JSON patch through v1 testing spec.size", func() (bool, error) {
		_, err := v1.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/size","value":3},{"op":"replace","path":"/spec/size","value":4}]`), metav1.PatchOptions{})
		return err == nil, err
	})
}
