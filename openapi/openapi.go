// Package openapi builds the OpenAPI documents kapi publishes: the
// operations of every served kind (paths, verbs, parameters and
// group-version-kind extensions, which kubectl reads to use server-side
// field validation) and the kinds' schemas (which kubectl explain reads),
// and the structured-merge-diff type converters server-side apply needs.
package openapi

import (
	"sort"

	util3 "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/handler"
)

// Kind is one served resource in one version.
type Kind struct {
	Group, Version, Kind, Plural string
	Namespaced                   bool
	Status                       bool
}

// GroupVersionPath is the /openapi/v3 path of a group version.
func GroupVersionPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

var queryParams = []string{"dryRun", "fieldManager", "fieldValidation", "pretty"}

// paramType is the type of a query parameter: force is a boolean, the
// others strings.
func paramType(name string) string {
	if name == "force" {
		return "boolean"
	}
	return "string"
}

// paramV3 and paramV2 are a query parameter as each version of OpenAPI
// describes it, as kube-apiserver's documents do: v3 gives it a schema,
// v2 has none for parameters outside the body.
func paramV3(name string) map[string]any {
	return map[string]any{"name": name, "in": "query", "schema": map[string]any{"type": paramType(name), "uniqueItems": true}}
}

func paramV2(name string) map[string]any {
	return map[string]any{"name": name, "in": "query", "type": paramType(name), "uniqueItems": true}
}

// V3 returns the OpenAPI v3 document of one group version.
func V3(group, version string, kinds []Kind) map[string]any {
	return map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"title": "Kubernetes", "version": "v1.33.0"},
		"paths":   operations(kinds, paramV3),
		// As kube-apiserver's v3 builder: a $ref with siblings (a field's
		// description, its default) is wrapped in allOf, since OpenAPI 3.0
		// ignores whatever stands beside a $ref (kubectl explain would lose
		// the field's description).
		"components": map[string]any{"schemas": schemasFor("#/components/schemas/", kinds, util3.WrapRefs)},
	}
}

// operations returns the paths of kinds with their operations.
func operations(kinds []Kind, param func(string) map[string]any) map[string]any {
	paths := map[string]any{}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].Plural < kinds[j].Plural })
	for _, k := range kinds {
		gvk := map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
		op := func(action, id string, params ...string) map[string]any {
			ps := []any{}
			for _, p := range params {
				ps = append(ps, param(p))
			}
			return map[string]any{
				"operationId":                     id + k.Kind,
				"x-kubernetes-action":             action,
				"x-kubernetes-group-version-kind": gvk,
				"parameters":                      ps,
				"responses":                       map[string]any{"200": map[string]any{"description": "OK"}},
			}
		}
		base := "/" + GroupVersionPath(k.Group, k.Version)
		if k.Namespaced {
			base += "/namespaces/{namespace}"
		}
		coll := base + "/" + k.Plural
		paths[coll] = map[string]any{
			"get":    op("list", "list"),
			"post":   op("post", "create", queryParams...),
			"delete": op("deletecollection", "deleteCollection", "dryRun"),
		}
		item := map[string]any{
			"get":    op("get", "read"),
			"put":    op("put", "replace", queryParams...),
			"patch":  op("patch", "patch", append(queryParams, "force")...),
			"delete": op("delete", "delete", "dryRun"),
		}
		paths[coll+"/{name}"] = item
		if k.Status {
			paths[coll+"/{name}/status"] = map[string]any{
				"get":   op("get", "read", "pretty"),
				"put":   op("put", "replace", queryParams...),
				"patch": op("patch", "patch", append(queryParams, "force")...),
			}
		}
	}
	return paths
}

// V2 returns the OpenAPI v2 (swagger) document of every kind.
func V2(kinds []Kind) map[string]any {
	return map[string]any{
		"swagger": "2.0",
		"info":    map[string]any{"title": "Kubernetes", "version": "v1.33.0"},
		"paths":   operations(kinds, paramV2),
		// As kube-apiserver publishes v2: without defaults.
		"definitions": schemasFor("#/definitions/", kinds, handler.PruneDefaultsSchema),
	}
}
