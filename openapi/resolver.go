package openapi

import (
	"maps"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/kapi-dev/kapi/openapi/builtin"
)

// BuiltinSchemaResolver resolves the schema of a built-in kind (for
// type-checking policy expressions) from the generated definitions:
// openapi/builtin's (k8s.io/api) and apiextensions-apiserver's own (the
// CRD kinds), as kube's type checker resolves them from kube's definitions
// and apiextensions' scheme; scheme maps the kinds to their Go types.
func BuiltinSchemaResolver(scheme *runtime.Scheme) *resolver.DefinitionsSchemaResolver {
	return resolver.NewDefinitionsSchemaResolver(func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := apiextensionsopenapi.GetOpenAPIDefinitions(ref)
		maps.Copy(defs, builtin.GetOpenAPIDefinitions(ref))
		return defs
	}, scheme)
}
