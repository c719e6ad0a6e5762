package openapi

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
)

// BuiltinTypeConverter converts objects of the built-in kinds to and from
// structured-merge-diff values, as server-side apply needs, by the same
// generated definitions kapi publishes (list types, map keys, atomic
// structs), each kind's marked with its group, version and kind.
//
// It holds the definitions of kinds and of what they reference, not every
// generated one (452, most of k8s.io/api, which no served kind reaches),
// and builds only those.
// It builds in the background and the first conversion waits for it, so
// kapi's start overlaps it with opening the store.
func BuiltinTypeConverter(kinds []Kind) managedfields.TypeConverter {
	c := lazyTypeConverter{build: sync.OnceValues(func() (managedfields.TypeConverter, error) {
		return builtinTypeConverter(kinds)
	})}
	go c.build()
	return c
}

// ScaleTypeConverter holds autoscaling/v1 Scale, what /scale writes track
// and apply (built on first use).
var ScaleTypeConverter = LazyTypeConverter(func() (managedfields.TypeConverter, error) {
	return builtinTypeConverter([]Kind{{Group: "autoscaling", Version: "v1", Kind: "Scale"}})
})

// LazyTypeConverter is the type converter build returns, built on first
// use (once).
func LazyTypeConverter(build func() (managedfields.TypeConverter, error)) managedfields.TypeConverter {
	return lazyTypeConverter{build: sync.OnceValues(build)}
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
	var roots []string
	for _, k := range kinds {
		roots = append(roots, typeName(k.Group, k.Version, k.Kind))
	}
	defs := definitions("#/definitions/", roots)
	for _, k := range kinds {
		s, ok := defs[definitionName(k.Group, k.Version, k.Kind)]
		if !ok {
			continue
		}
		s.AddExtension(gvkExtension, []interface{}{map[string]interface{}{"group": k.Group, "version": k.Version, "kind": k.Kind}})
	}
	return managedfields.NewTypeConverter(defs, false)
}
