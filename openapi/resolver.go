package openapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"

	"github.com/kapi-dev/kapi/openapi/builtin"
)

// BuiltinSchemaResolver resolves the schema of a built-in kind (for
// type-checking policy expressions) from the generated definitions;
// scheme maps the kinds to their Go types.
func BuiltinSchemaResolver(scheme *runtime.Scheme) *resolver.DefinitionsSchemaResolver {
	return resolver.NewDefinitionsSchemaResolver(builtin.GetOpenAPIDefinitions, scheme)
}
