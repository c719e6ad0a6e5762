package openapi

import (
	"strings"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kapi-dev/kapi/openapi/builtin"
)

// The schemas of the built-in kinds come from their generated OpenAPI
// definitions: openapi/builtin (k8s.io/api, made by `make generate`) and
// apiextensions-apiserver's own.

// gvkExtension names the kind a definition describes.
const gvkExtension = "x-kubernetes-group-version-kind"

// typeName is the Go type name of a built-in kind's generated definition.
func typeName(group, version, kind string) string {
	switch group {
	case "":
		return "k8s.io/api/core/" + version + "." + kind
	case "apiextensions.k8s.io":
		return "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/" + version + "." + kind
	}
	short, _, _ := strings.Cut(group, ".")
	return "k8s.io/api/" + short + "/" + version + "." + kind
}

// definitionName is the REST-friendly name of a built-in kind's
// definition, as published ("io.k8s.api.core.v1.Namespace").
func definitionName(group, version, kind string) string {
	return util.ToRESTFriendlyName(typeName(group, version, kind))
}

// definitions returns the built-in definitions of roots (Go type names)
// and of everything they depend on, by REST-friendly name, with $refs
// under prefix ("#/definitions/" for v2, "#/components/schemas/" for v3).
// Only these are built: the served kinds reach 79 of the 452 generated
// definitions, and building them all took 6–7 ms.
func definitions(prefix string, roots []string) map[string]*spec.Schema {
	// Each type's reference is parsed once, not at each of its uses (every
	// kind refers to ObjectMeta...).
	refs := map[string]spec.Ref{}
	ref := func(path string) spec.Ref {
		r, ok := refs[path]
		if !ok {
			r = spec.MustCreateRef(prefix + util.ToRESTFriendlyName(path))
			refs[path] = r
		}
		return r
	}
	generated := builtin.Definitions()
	var apiextensions map[string]common.OpenAPIDefinition // built if needed
	build := func(path string) (common.OpenAPIDefinition, bool) {
		if f, ok := generated[path]; ok {
			return f(ref), true
		}
		if apiextensions == nil {
			apiextensions = apiextensionsopenapi.GetOpenAPIDefinitions(ref)
		}
		def, ok := apiextensions[path]
		return def, ok
	}
	out := map[string]*spec.Schema{}
	var visit func(path string)
	visit = func(path string) {
		name := util.ToRESTFriendlyName(path)
		if _, done := out[name]; done {
			return
		}
		def, ok := build(path)
		if !ok {
			return
		}
		out[name] = &def.Schema
		for _, dep := range def.Dependencies {
			visit(dep)
		}
	}
	for _, path := range roots {
		visit(path)
	}
	return out
}
