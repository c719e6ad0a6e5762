package builtin

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/deprecation"

	"github.com/kapi-dev/kapi/openapi"
	"github.com/kapi-dev/kapi/server/registry"
	v "github.com/kapi-dev/kapi/server/validation/resource"
)

func deviceClassResource() *registry.Resource {
	type T = resourcev1beta2.DeviceClass
	s := &typed[T]{
		storageVersion:   "v1beta2",
		groupVersion:     func(version string) string { return "resource.k8s.io/" + version },
		unconditional:    true,
		tracksGeneration: true,
		validate:         v.ValidateDeviceClass,
		// As kube's strategy: the create rules, then the update rules
		// (so a stored selector valid only in the permissive environment
		// of stored expressions is refused on update, as kube refuses it).
		validateUpdate: func(obj, old *T) field.ErrorList {
			return append(v.ValidateDeviceClass(obj), v.ValidateDeviceClassUpdate(obj, old)...)
		},
		specChanged: func(obj, old *T) bool { return semanticChanged(obj.Spec, old.Spec) },
		// The parameters' size limit counts their bytes as sent.
		rawExtensions: func(obj *T) []*runtime.RawExtension {
			out := make([]*runtime.RawExtension, len(obj.Spec.Config))
			for i, c := range obj.Spec.Config {
				if c.Opaque != nil {
					out[i] = &c.Opaque.Parameters
				}
			}
			return out
		},
	}
	return &registry.Resource{
		Group: "resource.k8s.io", Versions: []string{"v1beta2"}, StorageVersion: "v1beta2",
		Kind: "DeviceClass", ListKind: "DeviceClassList",
		Plural: "deviceclasses", Singular: "deviceclass",
		// kube-apiserver answers a DeviceClass DELETE with the object.
		ReturnDeletedObject: true,
		Strategy:            s,
		Table: registry.TableConvertor{
			Columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
			Cells:   func(u *unstructured.Unstructured) []interface{} { return []interface{}{u.GetName(), age(u)} },
		},
	}
}

// The Kubernetes release kapi serves the API of.
const servedMajor, servedMinor = 1, 33

// Register adds every built-in kind to reg, in the order discovery lists
// their groups.
func Register(reg *registry.Registry) {
	type kind struct {
		res     *registry.Resource
		goTypes map[string]func() interface{}
	}
	kinds := []kind{
		{namespaceResource(), map[string]func() interface{}{"v1": func() interface{} { return &corev1.Namespace{} }}},
		{crdResource(), map[string]func() interface{}{"v1": func() interface{} { return &apiextensionsv1.CustomResourceDefinition{} }}},
		{mutatingWebhookConfigurationResource(), map[string]func() interface{}{"v1": func() interface{} { return &admissionregistrationv1.MutatingWebhookConfiguration{} }}},
		{validatingWebhookConfigurationResource(), map[string]func() interface{}{"v1": func() interface{} { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }}},
		{validatingAdmissionPolicyResource(), map[string]func() interface{}{
			"v1":      func() interface{} { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			"v1beta1": func() interface{} { return &admissionregistrationv1beta1.ValidatingAdmissionPolicy{} },
		}},
		{validatingAdmissionPolicyBindingResource(), map[string]func() interface{}{
			"v1":      func() interface{} { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			"v1beta1": func() interface{} { return &admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding{} },
		}},
		{deviceClassResource(), map[string]func() interface{}{"v1beta2": func() interface{} { return &resourcev1beta2.DeviceClass{} }}},
	}
	var served []openapi.Kind
	for _, k := range kinds {
		for _, v := range k.res.Versions {
			served = append(served, openapi.Kind{Group: k.res.Group, Version: v, Kind: k.res.Kind})
		}
	}
	typeConverter := openapi.BuiltinTypeConverter(served)
	for _, k := range kinds {
		r, goTypes := k.res, k.goTypes
		r.GoType = func(version string) interface{} { return goTypes[version]() }
		r.TypeConverter = typeConverter
		for version, newObj := range goTypes {
			// The k8s.io/api types know their release lifecycle; kube-apiserver
			// warns on every request through a deprecated version.
			if obj, ok := newObj().(runtime.Object); ok && deprecation.IsDeprecated(obj, servedMajor, servedMinor) {
				if r.DeprecationWarnings == nil {
					r.DeprecationWarnings = map[string]string{}
				}
				obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: r.Group, Version: version, Kind: r.Kind})
				r.DeprecationWarnings[version] = deprecation.WarningMessage(obj)
				if r.RemovedReleases == nil {
					r.RemovedReleases = map[string]string{}
				}
				r.RemovedReleases[version] = deprecation.RemovedRelease(obj)
			}
		}
		reg.Add(r)
	}
}
