package openapi

import (
	apiextensionsapply "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapply "k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
)

// BuiltinTypeConverter converts objects of the built-in kinds to and from
// structured-merge-diff values, as server-side apply needs. Its schemas are
// the ones k8s.io/client-go (core, admissionregistration, resource) and
// apiextensions-apiserver (CustomResourceDefinition) generate from the
// kinds' OpenAPI definitions, with their list types and map keys. scheme
// must know the Go types of the kinds.
func BuiltinTypeConverter(scheme *runtime.Scheme) managedfields.TypeConverter {
	return typeConverter{
		core:          clientgoapply.NewTypeConverter(scheme),
		apiextensions: apiextensionsapply.NewTypeConverter(scheme),
	}
}

type typeConverter struct {
	core, apiextensions managedfields.TypeConverter
}

func (c typeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if obj.GetObjectKind().GroupVersionKind().Group == "apiextensions.k8s.io" {
		return c.apiextensions.ObjectToTyped(obj, opts...)
	}
	return c.core.ObjectToTyped(obj, opts...)
}

func (c typeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	// Both give the value back as an unstructured object.
	return c.core.TypedToObject(v)
}
