package openapi

import (
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// BuiltinTypeConverter converts objects of the built-in kinds to and from
// structured-merge-diff values, as server-side apply needs, by the same
// generated definitions kapi publishes (list types, map keys, atomic
// structs), each kind's marked with its group, version and kind.
func BuiltinTypeConverter(kinds []Kind) (managedfields.TypeConverter, error) {
	defs := map[string]*spec.Schema{}
	for name, s := range definitionsV2() {
		defs[name] = s
	}
	for _, k := range kinds {
		name := definitionName(k.Group, k.Version, k.Kind)
		s, ok := defs[name]
		if !ok {
			continue
		}
		marked := *s
		var gvks []interface{}
		if prev, ok := marked.Extensions[gvkExtension].([]interface{}); ok {
			gvks = append(gvks, prev...)
		}
		gvks = append(gvks, map[string]interface{}{"group": k.Group, "version": k.Version, "kind": k.Kind})
		marked.Extensions = spec.Extensions{}
		for key, v := range s.Extensions {
			marked.Extensions[key] = v
		}
		marked.Extensions[gvkExtension] = gvks
		defs[name] = &marked
	}
	return managedfields.NewTypeConverter(defs, false)
}
