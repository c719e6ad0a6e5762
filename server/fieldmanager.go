package server

import (
	"bytes"
	"fmt"
	"sync"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/kapi-dev/kapi/server/registry"
)

// fieldManagers holds one managedfields.FieldManager per resource and
// subresource: they maintain metadata.managedFields on every write and run
// server-side apply. Objects are handled in the storage version.
type fieldManagers struct {
	mu sync.Mutex
	m  map[string]fieldManager
}

// fieldManager is the field manager of one resource descriptor: a CRD's
// change serves a new descriptor, with the new schema's type converter.
type fieldManager struct {
	res *registry.Resource
	fm  *managedfields.FieldManager
}

func (f *fieldManagers) get(res *registry.Resource, subresource string) (*managedfields.FieldManager, error) {
	if res.TypeConverter == nil {
		return nil, fmt.Errorf("%s has no type converter", res.GroupResource())
	}
	key := res.StorageResource() + "/" + subresource
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[key]; ok && e.res == res {
		return e.fm, nil
	}
	gv := schema.GroupVersion{Group: res.Group, Version: res.StorageVersion}
	// Fields a write through this endpoint does not change (the strategy
	// puts them back), so that no manager comes to own them by it.
	var reset *fieldpath.Set
	switch {
	case subresource == "status":
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
	case res.Status:
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	var resetFields map[fieldpath.APIVersion]fieldpath.Filter
	if reset != nil {
		resetFields = map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(gv.String()): fieldpath.NewExcludeSetFilter(reset)}
	}
	conv := sameFieldsConvertor{}
	fm, err := managedfields.NewDefaultFieldManager(res.TypeConverter, conv, conv, conv, gv.WithKind(res.Kind), gv, subresource, resetFields)
	if err != nil {
		return nil, err
	}
	if f.m == nil {
		f.m = map[string]fieldManager{}
	}
	f.m[key] = fieldManager{res: res, fm: fm}
	return fm, nil
}

// sameFieldsConvertor converts, defaults and creates unstructured objects
// for the field manager. kapi hands it objects in the storage version and
// the versions of a kind share their fields, so a conversion only renames
// the apiVersion; defaults are applied later by the kind's strategy.
type sameFieldsConvertor struct{}

func (sameFieldsConvertor) Convert(in, out, context interface{}) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (sameFieldsConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	out := u.DeepCopy()
	if gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()}); ok {
		out.SetGroupVersionKind(gvk)
	}
	return out, nil
}

func (sameFieldsConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (sameFieldsConvertor) Default(runtime.Object) {}

func (sameFieldsConvertor) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// managerName is the field manager of a write: the fieldManager parameter,
// or else the User-Agent's product name, as kube-apiserver derives it.
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	product, _, _ := bytes.Cut([]byte(userAgent), []byte("/"))
	var buf bytes.Buffer
	for _, r := range string(product) {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len() >= 128 {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// trackUpdate records an Update by manager in obj's managedFields.
func (s *Server) trackUpdate(res *registry.Resource, subresource string, live, obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	fm, err := s.fieldManagers.get(res, subresource)
	if err != nil {
		return obj
	}
	if live == nil {
		live = &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
	}
	out, ok := fm.UpdateNoErrors(live, obj, manager).(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	return out
}
