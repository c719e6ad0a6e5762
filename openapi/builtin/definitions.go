// Package builtin holds the OpenAPI definitions of the built-in kinds kapi
// serves and the types they use, generated from k8s.io/api and
// k8s.io/apimachinery by `make generate`.
package builtin

import (
	"sync"

	"k8s.io/kube-openapi/pkg/common"
)

// Definitions returns, by Go type name ("k8s.io/api/core/v1.Namespace"),
// the function that builds each generated definition, so that a caller
// builds only those it needs: the served kinds reach 56 of the 399.
var Definitions = sync.OnceValue(definitionFuncs)

// GetOpenAPIDefinitions builds every generated definition.
func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	out := map[string]common.OpenAPIDefinition{}
	for name, build := range Definitions() {
		out[name] = build(ref)
	}
	return out
}
