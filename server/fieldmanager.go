package server

import (
	"bytes"
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/kapi-dev/kapi/openapi"
	"github.com/kapi-dev/kapi/server/registry"
)

// fieldManagers holds one managedfields.FieldManager per resource, version
// and subresource: they maintain metadata.managedFields on every write and
// run server-side apply. Objects are handled in the version of the request,
// as kube-apiserver's field managers handle them (managedFields record it).
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

func (f *fieldManagers) get(res *registry.Resource, version, subresource string) (*managedfields.FieldManager, error) {
	if res.TypeConverter == nil {
		return nil, fmt.Errorf("%s has no type converter", res.GroupResource())
	}
	key := res.StorageResource() + "/" + version + "/" + subresource
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[key]; ok && e.res == res {
		return e.fm, nil
	}
	gv := schema.GroupVersion{Group: res.Group, Version: version}
	var resetFields map[fieldpath.APIVersion]fieldpath.Filter
	if reset := resetFieldsOf(res, version, subresource); reset != nil {
		resetFields = map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(gv.String()): fieldpath.NewExcludeSetFilter(reset)}
	}
	conv := versionConvertor{res}
	newFieldManager := managedfields.NewDefaultFieldManager
	if res.Custom {
		// Managers of other versions are compared through the CRD's
		// conversion, as kube-apiserver's CRD field managers do.
		newFieldManager = managedfields.NewDefaultCRDFieldManager
	}
	typeConverter, kind := res.TypeConverter, gv.WithKind(res.Kind)
	if subresource == "scale" {
		// /scale writes track and apply the autoscaling/v1 Scale, whose
		// managedFields scaleWrite maps to and from the resource's.
		typeConverter, kind, gv = openapi.ScaleTypeConverter, scaleGroupKind.WithVersion("v1"), scaleGroupKind.WithVersion("v1").GroupVersion()
	}
	fm, err := newFieldManager(typeConverter, conv, conv, conv, kind, gv, subresource, resetFields)
	if err != nil {
		return nil, err
	}
	if f.m == nil {
		f.m = map[string]fieldManager{}
	}
	// The field managers of a descriptor the resource no longer serves
	// (a CRD changed) go, with what they hold (type converter, schemas).
	for k, e := range f.m {
		if e.res != res && e.res.StorageResource() == res.StorageResource() {
			delete(f.m, k)
		}
	}
	f.m[key] = fieldManager{res: res, fm: fm}
	return fm, nil
}

// resetFieldsOf returns the fields a write through version and subresource
// does not change (the strategy puts them back), so that no manager comes
// to own them by it: the kind's own (custom resources: the version's
// subresources), else status through the main resource and spec and
// metadata (or spec alone: StatusKeepsMetadata) through /status.
func resetFieldsOf(res *registry.Resource, version, subresource string) *fieldpath.Set {
	if rs, ok := res.Strategy.(registry.ResetFieldsStrategy); ok {
		return rs.ResetFields(version, subresource)
	}
	switch {
	case subresource == "status" && res.StatusKeepsMetadata:
		return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	case subresource == "status":
		return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
	case res.Status:
		return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	return nil
}

// versionConvertor converts, defaults and creates unstructured objects of
// one resource for its field managers: a conversion is the resource's own
// (a custom resource's through its CRD's conversion); defaults are applied
// by the kind's strategy.
type versionConvertor struct{ res *registry.Resource }

func (c versionConvertor) Convert(in, out, context interface{}) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	converted, err := c.ConvertToVersion(u, o.GroupVersionKind().GroupVersion())
	if err != nil {
		return err
	}
	o.Object = converted.(*unstructured.Unstructured).Object
	return nil
}

func (c versionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	out := u.DeepCopy()
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok || gvk == u.GroupVersionKind() {
		return out, nil
	}
	if gvk.GroupKind() != c.res.GroupKind() {
		return nil, fmt.Errorf("cannot convert %v to %v", u.GroupVersionKind(), gvk)
	}
	if err := registry.ConvertInMemory(c.res.Strategy, out, gvk.Version); err != nil {
		return nil, err
	}
	return out, nil
}

func (versionConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (versionConvertor) Default(runtime.Object) {}

func (c versionConvertor) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	return newOfKind(c.res, gvk), nil
}

// newOfKind is a new object of gvk, as kube's handlers make one to compare
// a first write with: a built-in kind's zero value (its empty spec and
// status are then nobody's), a custom resource's bare.
func newOfKind(res *registry.Resource, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if res.GoType != nil && gvk.GroupKind() == res.GroupKind() {
		if zero, err := runtime.DefaultUnstructuredConverter.ToUnstructured(res.GoType(gvk.Version)); err == nil {
			u.Object = zero
		}
	}
	u.SetGroupVersionKind(gvk)
	return u
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
		if buf.Len()+utf8.RuneLen(r) > 128 {
			break // as kube-apiserver: never past 128 bytes
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// trackUpdate records an Update by manager through req's version and
// subresource in obj's managedFields (live and obj are in req's version).
func (s *Server) trackUpdate(req *resourceRequest, live, obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	fm, err := s.fieldManagers.get(req.res, req.version, req.subresource)
	if err != nil {
		return obj
	}
	if live == nil {
		// A create compares with a new object of the kind, as kube's
		// handler does.
		live = newOfKind(req.res, obj.GroupVersionKind())
	}
	out, ok := fm.UpdateNoErrors(live, obj, manager).(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	return out
}
