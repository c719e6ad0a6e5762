package openapi

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

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

// definitionName is the REST-friendly name of a built-in kind's definition.
func definitionName(group, version, kind string) string {
	switch group {
	case "":
		return "io.k8s.api.core." + version + "." + kind
	case "apiextensions.k8s.io":
		return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions." + version + "." + kind
	}
	short, _, _ := strings.Cut(group, ".")
	return "io.k8s.api." + short + "." + version + "." + kind
}

// definitions returns every built-in definition, with $refs under prefix
// ("#/definitions/" for v2, "#/components/schemas/" for v3).
func definitions(prefix string) map[string]*spec.Schema {
	// Each type's reference is parsed once, not at each of its uses (every
	// kind refers to ObjectMeta...): a fifth fewer allocations.
	refs := map[string]spec.Ref{}
	ref := func(path string) spec.Ref {
		r, ok := refs[path]
		if !ok {
			r = spec.MustCreateRef(prefix + util.ToRESTFriendlyName(path))
			refs[path] = r
		}
		return r
	}
	out := map[string]*spec.Schema{}
	for _, get := range []func(common.ReferenceCallback) map[string]common.OpenAPIDefinition{builtin.GetOpenAPIDefinitions, apiextensionsopenapi.GetOpenAPIDefinitions} {
		for path, def := range get(ref) {
			s := def.Schema
			out[util.ToRESTFriendlyName(path)] = &s
		}
	}
	return out
}

var (
	definitionsV2 = sync.OnceValue(func() map[string]*spec.Schema { return definitions("#/definitions/") })
	definitionsV3 = sync.OnceValue(func() map[string]*spec.Schema { return definitions("#/components/schemas/") })
)

var refPattern = regexp.MustCompile(`"\$ref":"#/(?:definitions|components/schemas)/([^"]+)"`)

// reachable returns the definitions of defs named by roots and of
// everything they reference, as JSON.
func reachable(defs map[string]*spec.Schema, roots []string) map[string][]byte {
	out := map[string][]byte{}
	var visit func(name string)
	visit = func(name string) {
		if _, done := out[name]; done {
			return
		}
		s, ok := defs[name]
		if !ok {
			return
		}
		data, err := json.Marshal(s)
		if err != nil {
			return
		}
		out[name] = data
		for _, match := range refPattern.FindAllSubmatch(data, -1) {
			visit(string(match[1]))
		}
	}
	for _, name := range roots {
		visit(name)
	}
	return out
}

// schemasFor returns the definitions of kinds and of everything they
// reference, each kind's marked with its group, version and kind as
// kube-apiserver marks them (x-kubernetes-group-version-kind).
func schemasFor(defs map[string]*spec.Schema, kinds []Kind) map[string]any {
	var roots []string
	for _, k := range kinds {
		roots = append(roots, definitionName(k.Group, k.Version, k.Kind), definitionName(k.Group, k.Version, k.Kind+"List"))
	}
	out := map[string]any{}
	for name, data := range reachable(defs, roots) {
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			out[name] = m
		}
	}
	for _, k := range kinds {
		for _, kind := range []string{k.Kind, k.Kind + "List"} {
			if m, ok := out[definitionName(k.Group, k.Version, kind)].(map[string]any); ok {
				m[gvkExtension] = []any{map[string]any{"group": k.Group, "version": k.Version, "kind": kind}}
			}
		}
	}
	return out
}
