package builtin

import (
	"embed"
	"io/fs"
	"strings"
)

// The OpenAPI documents of the built-in kinds, as kube-apiserver builds
// them from its routes (hack/openapigen, run by `make generate`): v3 one
// per group version, v2 one of them all.
//
//go:embed docs
var docs embed.FS

// V3Document returns the OpenAPI v3 document of a built-in group version
// by its /openapi/v3 path ("api/v1", "apis/<group>/<version>").
func V3Document(path string) ([]byte, bool) {
	data, err := docs.ReadFile("docs/v3/" + strings.ReplaceAll(path, "/", "__") + ".json")
	return data, err == nil
}

// DiscoveryV3Paths are the /openapi/v3 paths of the documents of the
// discovery and version services ("api", "apis", "apis/<group>" of each
// built-in group, "version"), which kube-apiserver publishes beside its
// group versions'.
func DiscoveryV3Paths() []string {
	entries, err := fs.ReadDir(docs, "docs/v3")
	if err != nil {
		panic(err) // embedded
	}
	var paths []string
	for _, e := range entries {
		path := strings.ReplaceAll(strings.TrimSuffix(e.Name(), ".json"), "__", "/")
		if path == "api" || path == "apis" || path == "version" || strings.Count(path, "/") == 1 && strings.HasPrefix(path, "apis/") {
			paths = append(paths, path)
		}
	}
	return paths
}

// V2Document returns the OpenAPI v2 document of the built-in kinds.
func V2Document() []byte {
	data, err := docs.ReadFile("docs/v2.json")
	if err != nil {
		panic(err) // embedded
	}
	return data
}
