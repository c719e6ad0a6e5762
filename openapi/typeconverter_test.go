package openapi

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
)

// fieldSet is the set of fields obj sets, by tc's schemas.
func fieldSet(t *testing.T, tc managedfields.TypeConverter, obj map[string]interface{}) *fieldpath.Set {
	t.Helper()
	typed, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatalf("ObjectToTyped(%v): %v", obj["kind"], err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// A list of ObjectMeta's keyed by uid, of atomic items: its paths name an
// item by its key only with the meta types' definitions.
func ownerReferences() []interface{} {
	return []interface{}{
		map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u-1"},
		map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "u-2"},
	}
}

func hasPath(t *testing.T, set *fieldpath.Set, want string) {
	t.Helper()
	found := false
	set.Iterate(func(p fieldpath.Path) {
		if p.String() == want {
			found = true
		}
	})
	if !found {
		t.Errorf("no %s in %s", want, set)
	}
}

func TestBuiltinTypeConverter(t *testing.T) {
	tc := BuiltinTypeConverter([]Kind{
		{Group: "", Version: "v1", Kind: "Namespace"},
		{Group: "resource.k8s.io", Version: "v1beta2", Kind: "DeviceClass"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	})
	ns := fieldSet(t, tc, map[string]interface{}{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": "n", "ownerReferences": ownerReferences()},
		"spec":     map[string]interface{}{"finalizers": []interface{}{"kubernetes"}},
	})
	hasPath(t, ns, `.metadata.ownerReferences[uid="u-2"]`)
	dc := fieldSet(t, tc, map[string]interface{}{
		"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceClass",
		"metadata": map[string]interface{}{"name": "gpu"},
		"spec": map[string]interface{}{"selectors": []interface{}{
			map[string]interface{}{"cel": map[string]interface{}{"expression": "true"}},
		}},
	})
	hasPath(t, dc, `.spec.selectors`)
	// Keyed by name.
	vwc := fieldSet(t, tc, map[string]interface{}{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]interface{}{"name": "w"},
		"webhooks": []interface{}{map[string]interface{}{"name": "a.example.com", "sideEffects": "None"}},
	})
	hasPath(t, vwc, `.webhooks[name="a.example.com"].sideEffects`)
}

func TestCustomResourceTypeConverter(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"ports": {Type: "array", XListType: ptr("map"), XListMapKeys: []string{"port"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object", Required: []string{"port"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"port": {Type: "integer"}, "name": {Type: "string"}},
						}}},
					}}},
				}},
			}},
		},
	}
	tc, err := CustomResourceTypeConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	set := fieldSet(t, tc, map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "default", "ownerReferences": ownerReferences()},
		"spec":     map[string]interface{}{"ports": []interface{}{map[string]interface{}{"port": int64(80), "name": "http"}}},
	})
	hasPath(t, set, `.metadata.ownerReferences[uid="u-1"]`)
	hasPath(t, set, `.spec.ports[port=80].name`)
}

func ptr[T any](v T) *T { return &v }
