package e2e

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
