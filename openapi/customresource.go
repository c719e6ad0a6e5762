package openapi

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// CustomResourceV3 is the OpenAPI v3 document of one served version of a
// CRD, as kube-apiserver publishes it (apiextensions-apiserver's builder).
func CustomResourceV3(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, error) {
	return builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
}

// CustomResourceV2 is its OpenAPI v2 document, as kube-apiserver's OpenAPI
// controller builds it: with the value validations, and the defaults
// pruned (the built-in definitions it merges with have none).
func CustomResourceV2(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec.Swagger, error) {
	s, err := builder.BuildOpenAPIV2(crd, version, builder.Options{V2: true, IncludeSelectableFields: true})
	if err != nil {
		return nil, err
	}
	s.Definitions = handler.PruneDefaults(s.Definitions)
	return s, nil
}

// CustomResourceTypeConverter converts the custom resources of crd to and
// from structured-merge-diff values by their schemas (list types, map
// keys), as server-side apply needs; the models are built the way
// kube-apiserver builds them, each version's document holding the meta
// types' definitions it references. (kube-apiserver merges in every
// built-in definition besides, which no custom resource reaches; here that
// kept the v3 definitions, ~2 MB, in memory from the first CRD on.)
func CustomResourceTypeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	var specs []*spec3.OpenAPI
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
}
