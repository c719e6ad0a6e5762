package openapi

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
)

// BuiltinTypeConverter converts objects of the built-in kinds to and from
// structured-merge-diff values, as server-side apply needs, by the same
// generated definitions kapi publishes (list types, map keys, atomic
// structs), each kind's marked with its group, version and kind.
//
// It holds the definitions of kinds and of what they reference, not every
// generated one (452, most of k8s.io/api, which no served kind reaches;
// with them all it took 1.5 ms to build and kept 300 KB, now 0.4 ms and
// 20 KB).
// It builds in the background and the first conversion waits for it, so
// kapi's start overlaps it with opening the store.
func BuiltinTypeConverter(kinds []Kind) managedfields.TypeConverter {
	c := lazyTypeConverter{build: sync.OnceValues(func() (managedfields.TypeConverter, error) {
		return builtinTypeConverter(kinds)
	})}
	go c.build()
	return c
}

type lazyTypeConverter struct {
	build func() (managedfields.TypeConverter, error)
}

func (c lazyTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tc, err := c.build()
	if err != nil {
		return nil, err
	}
	return tc.ObjectToTyped(obj, opts...)
}

func (c lazyTypeConverter) TypedToObject(value *typed.TypedValue) (runtime.Object, error) {
	tc, err := c.build()
	if err != nil {
		return nil, err
	}
	return tc.TypedToObject(value)
}

func builtinTypeConverter(kinds []Kind) (managedfields.TypeConverter, error) {
	all := definitionsV2()
	var roots []string
	for _, k := range kinds {
		roots = append(roots, definitionName(k.Group, k.Version, k.Kind))
	}
	defs := map[string]*spec.Schema{}
	for name := range reachable(all, roots) {
		defs[name] = all[name]
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
