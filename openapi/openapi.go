// Package openapi holds what kapi publishes and uses of OpenAPI: the
// documents of the built-in kinds (openapi/builtin, generated as
// kube-apiserver builds them), those of custom resources, and the
// structured-merge-diff type converters server-side apply needs.
package openapi

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
