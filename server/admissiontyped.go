package server

import (
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kapi-dev/kapi/server/registry"
)

// typedAttributes are the attributes of a built-in kind's request as the
// mutating webhooks see them: its objects as the Go types of
// kube-apiserver's scheme, as kube's request scope hands them to its
// admission. The mutating dispatcher then decodes a webhook's patch into
// the Go type of the webhook's version (mutating.callAttrMutatingHook),
// and converts what the webhooks left into the request's object.
type typedAttributes struct {
	// record holds the request's attributes with the typed objects: a
	// record of its own, as the audit decorator reads its annotations.
	record admission.Attributes
	// orig is the request's object, which writeBack sets.
	orig *unstructured.Unstructured
	// pristine is the typed object as it was handed over, to tell
	// whether the webhooks changed it.
	pristine runtime.Object
}

// typedAttributesOf returns attr with its objects in scheme's Go types;
// false when they are not all the unstructured objects of a kind the
// scheme knows (they are then left as they are).
func typedAttributesOf(attr admission.Attributes, scheme *runtime.Scheme) (*typedAttributes, bool) {
	obj, ok := toTyped(scheme, attr.GetObject(), attr.GetKind())
	if !ok {
		return nil, false
	}
	old, ok := toTyped(scheme, attr.GetOldObject(), attr.GetKind())
	if !ok {
		return nil, false
	}
	ta := &typedAttributes{
		record: admission.NewAttributesRecord(obj, old, attr.GetKind(), attr.GetNamespace(), attr.GetName(), attr.GetResource(), attr.GetSubresource(), attr.GetOperation(), attr.GetOperationOptions(), attr.IsDryRun(), attr.GetUserInfo()),
	}
	if obj != nil {
		ta.orig = attr.GetObject().(*unstructured.Unstructured)
		ta.pristine = obj.DeepCopyObject()
	}
	return ta, true
}

// toTyped returns obj, an unstructured object of kind (nil for none), as
// scheme's Go type.
func toTyped(scheme *runtime.Scheme, obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, bool) {
	if obj == nil {
		return nil, true
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return nil, false
	}
	if gvk := u.GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		kind = gvk
	}
	out, err := scheme.New(kind)
	if err != nil {
		return nil, false
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, false
	}
	out.GetObjectKind().SetGroupVersionKind(kind)
	return out, true
}

// writeBack puts what the mutating webhooks left in the typed object into
// the request's unstructured object, in the request's version, when they
// changed it (an unchanged object is left as it was decoded).
func (a *typedAttributes) writeBack() error {
	obj := a.record.GetObject()
	if a.orig == nil || reflect.DeepEqual(obj, a.pristine) {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	gvk := a.orig.GroupVersionKind()
	a.orig.Object = m
	a.orig.SetGroupVersionKind(gvk)
	return nil
}

// typedObjectInterfaces create, type, default and convert the Go objects
// of a built-in kind's request under mutating admission as kube-apiserver's
// scheme does, naming kube's scheme in its errors.
type typedObjectInterfaces struct {
	objectInterfaces
	scheme *runtime.Scheme
	name   string
}

func (o typedObjectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return o }
func (o typedObjectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return o }
func (o typedObjectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o }
func (o typedObjectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return o }

// New creates a Go object of gvk; a kind the scheme does not know is its
// error, in kube's scheme's name.
func (o typedObjectInterfaces) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	out, err := o.scheme.New(gvk)
	if runtime.IsNotRegisteredError(err) {
		return nil, runtime.NewNotRegisteredErrForKind(o.name, gvk)
	}
	return out, err
}

func (o typedObjectInterfaces) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return o.objectInterfaces.ObjectKinds(obj)
	}
	kinds, unversioned, err := o.scheme.ObjectKinds(obj)
	if runtime.IsNotRegisteredError(err) {
		return nil, false, runtime.NewNotRegisteredErrForType(o.name, reflect.TypeOf(obj))
	}
	return kinds, unversioned, err
}

func (o typedObjectInterfaces) Recognizes(gvk schema.GroupVersionKind) bool {
	return o.scheme.Recognizes(gvk)
}

// kindOf is the kind of a Go object by its type (a decoded patch may have
// left its apiVersion and kind out).
func (o typedObjectInterfaces) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	kinds, _, err := o.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return kinds[0], nil
}

// Default defaults a webhook's patched object as kube's scheme does: by
// the scheme's defaulters, and by kapi's kind's rules of that version.
func (o typedObjectInterfaces) Default(obj runtime.Object) {
	o.scheme.Default(obj)
	gvk, err := o.kindOf(obj)
	if err != nil {
		return
	}
	if _, served := o.s.resourceForKind(gvk); !served {
		return
	}
	u, err := toUnstructuredObject(obj, gvk)
	if err != nil {
		return
	}
	o.objectInterfaces.Default(u)
	// The apiVersion and kind stay as the patch left them.
	_ = fromUnstructuredObject(u, obj, obj.GetObjectKind().GroupVersionKind())
}

// Convert converts in to out's kind and version as kube-apiserver's scheme
// converts a webhook's versioned object to the internal one (and that to
// another version): through the internal version where the scheme has it
// (CRDs), else between the versions kapi serves by the kind's conversion;
// another kind is the converter's "unknown conversion" into the internal
// type, as kube's says it.
func (o typedObjectInterfaces) Convert(in, out, context interface{}) error {
	src, ok1 := in.(runtime.Object)
	dst, ok2 := out.(runtime.Object)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T into %T", in, out)
	}
	inKind, err := o.kindOf(src)
	if err != nil {
		return err
	}
	outKind, err := o.kindOf(dst)
	if err != nil {
		return err
	}
	defer dst.GetObjectKind().SetGroupVersionKind(outKind)
	if internal, err := o.scheme.New(outKind.GroupKind().WithVersion(runtime.APIVersionInternal)); err == nil {
		if err := o.scheme.Convert(src, internal, context); err != nil {
			return err
		}
		return o.scheme.Convert(internal, dst, context)
	}
	if inKind.GroupKind() != outKind.GroupKind() {
		return fmt.Errorf("converting (%s) to (%s.%s): unknown conversion", reflect.TypeOf(src).Elem(), internalPackage(outKind.Group), outKind.Kind)
	}
	if reflect.TypeOf(src) == reflect.TypeOf(dst) {
		reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
		return nil
	}
	res, served := o.s.resourceForKind(inKind)
	if !served || !res.Serves(outKind.Version) {
		// kube's scheme converts through the internal version, whose
		// conversions kapi does not have: the converter's own error.
		return o.scheme.Convert(src, dst, context)
	}
	u, err := toUnstructuredObject(src, inKind)
	if err != nil {
		return err
	}
	if err := registry.ConvertInMemory(res.Strategy, u, outKind.Version); err != nil {
		return err
	}
	return fromUnstructuredObject(u, dst, outKind)
}

func (o typedObjectInterfaces) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	inKind, err := o.kindOf(in)
	if err != nil {
		return nil, err
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{inKind})
	if !ok {
		return nil, fmt.Errorf("%v cannot be converted to %v", inKind, target)
	}
	out, err := o.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := o.Convert(in, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// internalPackage is the package of kube-apiserver's internal types of
// group, as its converter names them (core.Namespace, resource.DeviceClass).
func internalPackage(group string) string {
	if group == "" {
		return "core"
	}
	return strings.Split(group, ".")[0]
}

func toUnstructuredObject(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// fromUnstructuredObject sets out, a Go object, from u.
func fromUnstructuredObject(u *unstructured.Unstructured, out runtime.Object, gvk schema.GroupVersionKind) error {
	reflect.ValueOf(out).Elem().Set(reflect.Zero(reflect.TypeOf(out).Elem()))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
