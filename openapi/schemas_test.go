package openapi

import (
	"encoding/json"
	"regexp"
	"testing"
)

// definitions builds what the roots reach, with every $ref resolvable,
// and nothing else.
func TestDefinitionsClosure(t *testing.T) {
	defs := definitions("#/definitions/", []string{
		typeName("", "v1", "Namespace"),
		typeName("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
	})
	for _, want := range []string{
		"io.k8s.api.core.v1.Namespace",
		"io.k8s.api.core.v1.NamespaceSpec",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
	} {
		if defs[want] == nil {
			t.Errorf("no definition %s", want)
		}
	}
	for _, unwanted := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.NamespaceList"} {
		if defs[unwanted] != nil {
			t.Errorf("definition %s built, though nothing asked reaches it", unwanted)
		}
	}
	ref := regexp.MustCompile(`"\$ref":"#/definitions/([^"]+)"`)
	for name, s := range defs {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllSubmatch(data, -1) {
			if defs[string(m[1])] == nil {
				t.Errorf("%s refers to %s, which was not built", name, m[1])
			}
		}
	}
}
