package openapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapply "k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
)

// BuiltinTypeConverter converts objects of the built-in kinds to and from
// structured-merge-diff values, as server-side apply needs. Its schemas
// come from the kinds' generated OpenAPI definitions, with their list
// types and map keys: k8s.io/client-go's for core, admissionregistration
// and resource, apiextensions-apiserver's for CustomResourceDefinition.
// scheme must know the Go types of the kinds.
func BuiltinTypeConverter(scheme *runtime.Scheme) (managedfields.TypeConverter, error) {
	ext, err := apiextensionsTypeConverter()
	if err != nil {
		return nil, err
	}
	return typeConverter{core: clientgoapply.NewTypeConverter(scheme), apiextensions: ext}, nil
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
