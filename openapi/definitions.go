package openapi

import (
	"sync"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// gvkExtension names the kind a definition describes.
const gvkExtension = "x-kubernetes-group-version-kind"

// apiextensionsDefinitions are the OpenAPI definitions that
// apiextensions-apiserver generates for its types and the ones they use
// (meta types, autoscaling/v1 Scale), keyed by their REST-friendly names
// ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition").
var apiextensionsDefinitions = sync.OnceValue(func() map[string]*spec.Schema {
	ref := func(path string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + util.ToRESTFriendlyName(path))
	}
	out := map[string]*spec.Schema{}
	for path, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		schema := def.Schema
		out[util.ToRESTFriendlyName(path)] = &schema
	}
	kinds := map[string][3]string{
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition":     {"apiextensions.k8s.io", "v1", "CustomResourceDefinition"},
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList": {"apiextensions.k8s.io", "v1", "CustomResourceDefinitionList"},
		"io.k8s.api.autoscaling.v1.Scale": {"autoscaling", "v1", "Scale"},
	}
	for name, gvk := range kinds {
		if s, ok := out[name]; ok {
			s.AddExtension(gvkExtension, []interface{}{map[string]interface{}{"group": gvk[0], "version": gvk[1], "kind": gvk[2]}})
		}
	}
	return out
})

// apiextensionsTypeConverter is the structured-merge-diff converter of the
// CustomResourceDefinition kind.
var apiextensionsTypeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	return managedfields.NewTypeConverter(apiextensionsDefinitions(), false)
})
