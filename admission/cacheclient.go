package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	resourcev1beta2client "k8s.io/client-go/kubernetes/typed/resource/v1beta2"
	clienttesting "k8s.io/client-go/testing"
)

// cacheClient is the client kube's admission plugins and their informers
// are given. It reads the objects Observe feeds into an in-memory tracker
// (client-go's ObjectTracker), and serves what the plugins ask of their
// client: list and watch of the cached resources (cachedResources), and
// namespace gets, which fall back to the store. The rest of
// kubernetes.Interface is left unimplemented (nil): client-go's fake
// clientset, which implements all of it, put a fake typed client of every
// API group into kapi's binary (~8 MB, and ~3 ms of package init at start).
type cacheClient struct {
	kubernetes.Interface
	tracker clienttesting.ObjectTracker
	// watching is called when a cache starts its watch of gvr.
	watching func(gvr schema.GroupVersionResource)
	// getNamespace reads a namespace the tracker does not have.
	getNamespace func(ctx context.Context, name string) (*corev1.Namespace, error)
}

// cacheScheme holds the kinds of cachedResources.
var cacheScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, admissionregistrationv1.AddToScheme, resourcev1beta2.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

func newCacheClient() *cacheClient {
	return &cacheClient{tracker: clienttesting.NewObjectTracker(cacheScheme, serializer.NewCodecFactory(cacheScheme).UniversalDecoder())}
}

// list lists the tracker's objects of gvr as a list of type L.
func list[L runtime.Object](c *cacheClient, gvr schema.GroupVersionResource, kind string) (L, error) {
	var none L
	obj, err := c.tracker.List(gvr, gvr.GroupVersion().WithKind(kind), "")
	if err != nil {
		return none, err
	}
	l, ok := obj.(L)
	if !ok {
		return none, fmt.Errorf("admission caches: %s listed as %T", gvr.Resource, obj)
	}
	return l, nil
}

func (c *cacheClient) watch(gvr schema.GroupVersionResource) (watch.Interface, error) {
	w, err := c.tracker.Watch(gvr, "")
	if err == nil && c.watching != nil {
		c.watching(gvr)
	}
	return w, err
}

func (c *cacheClient) CoreV1() corev1client.CoreV1Interface { return coreV1{c: c} }

func (c *cacheClient) AdmissionregistrationV1() admissionregistrationv1client.AdmissionregistrationV1Interface {
	return admissionregistrationV1{c: c}
}

func (c *cacheClient) ResourceV1beta2() resourcev1beta2client.ResourceV1beta2Interface {
	return resourceV1beta2{c: c}
}

type coreV1 struct {
	corev1client.CoreV1Interface
	c *cacheClient
}

func (g coreV1) Namespaces() corev1client.NamespaceInterface { return namespaces{c: g.c} }

type namespaces struct {
	corev1client.NamespaceInterface
	c *cacheClient
}

func (r namespaces) List(context.Context, metav1.ListOptions) (*corev1.NamespaceList, error) {
	return list[*corev1.NamespaceList](r.c, namespacesResource, "Namespace")
}

func (r namespaces) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.c.watch(namespacesResource)
}

// Get answers the cached namespace, or else the stored one: kube's
// namespaceSelector matching asks its client when its cache does not have
// a namespace yet ("in case of latency in our caches").
func (r namespaces) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	obj, err := r.c.tracker.Get(namespacesResource, "", name)
	if err == nil {
		return obj.(*corev1.Namespace), nil
	}
	if r.c.getNamespace == nil {
		return nil, err
	}
	return r.c.getNamespace(ctx, name)
}

type admissionregistrationV1 struct {
	admissionregistrationv1client.AdmissionregistrationV1Interface
	c *cacheClient
}

func (g admissionregistrationV1) MutatingWebhookConfigurations() admissionregistrationv1client.MutatingWebhookConfigurationInterface {
	return mutatingConfigs{c: g.c}
}

func (g admissionregistrationV1) ValidatingWebhookConfigurations() admissionregistrationv1client.ValidatingWebhookConfigurationInterface {
	return validatingConfigs{c: g.c}
}

func (g admissionregistrationV1) ValidatingAdmissionPolicies() admissionregistrationv1client.ValidatingAdmissionPolicyInterface {
	return policies{c: g.c}
}

func (g admissionregistrationV1) ValidatingAdmissionPolicyBindings() admissionregistrationv1client.ValidatingAdmissionPolicyBindingInterface {
	return bindings{c: g.c}
}

type mutatingConfigs struct {
	admissionregistrationv1client.MutatingWebhookConfigurationInterface
	c *cacheClient
}

func (r mutatingConfigs) List(context.Context, metav1.ListOptions) (*admissionregistrationv1.MutatingWebhookConfigurationList, error) {
	return list[*admissionregistrationv1.MutatingWebhookConfigurationList](r.c, mutatingResource, "MutatingWebhookConfiguration")
}

func (r mutatingConfigs) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.c.watch(mutatingResource)
}

type validatingConfigs struct {
	admissionregistrationv1client.ValidatingWebhookConfigurationInterface
	c *cacheClient
}

func (r validatingConfigs) List(context.Context, metav1.ListOptions) (*admissionregistrationv1.ValidatingWebhookConfigurationList, error) {
	return list[*admissionregistrationv1.ValidatingWebhookConfigurationList](r.c, validatingResource, "ValidatingWebhookConfiguration")
}

func (r validatingConfigs) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.c.watch(validatingResource)
}

type policies struct {
	admissionregistrationv1client.ValidatingAdmissionPolicyInterface
	c *cacheClient
}

func (r policies) List(context.Context, metav1.ListOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyList, error) {
	return list[*admissionregistrationv1.ValidatingAdmissionPolicyList](r.c, policiesResource, "ValidatingAdmissionPolicy")
}

func (r policies) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.c.watch(policiesResource)
}

type bindings struct {
	admissionregistrationv1client.ValidatingAdmissionPolicyBindingInterface
	c *cacheClient
}

func (r bindings) List(context.Context, metav1.ListOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyBindingList, error) {
	return list[*admissionregistrationv1.ValidatingAdmissionPolicyBindingList](r.c, bindingsResource, "ValidatingAdmissionPolicyBinding")
}

func (r bindings) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.c.watch(bindingsResource)
}

type resourceV1beta2 struct {
	resourcev1beta2client.ResourceV1beta2Interface
	c *cacheClient
}

func (g resourceV1beta2) DeviceClasses() resourcev1beta2client.DeviceClassInterface {
	return deviceClasses{c: g.c}
}

type deviceClasses struct {
	resourcev1beta2client.DeviceClassInterface
	c *cacheClient
}

func (r deviceClasses) List(context.Context, metav1.ListOptions) (*resourcev1beta2.DeviceClassList, error) {
	return list[*resourcev1beta2.DeviceClassList](r.c, deviceClassesResource, "DeviceClass")
}

func (r deviceClasses) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return r.c.watch(deviceClassesResource)
}

// cacheFactory is the informer factory over cacheClient. It has informers
// for cachedResources only: for any other resource ForResource fails, so
// that a policy whose paramKind is another served kind (a v1beta1 policy,
// say) reads its params through the dynamic client kapi gives the plugin,
// as kube's plugin does for kinds its factory lacks, instead of from a
// cache nothing feeds.
type cacheFactory struct {
	informers.SharedInformerFactory
}

func (f cacheFactory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	for _, cached := range cachedResources {
		if gvr == cached {
			return f.SharedInformerFactory.ForResource(gvr)
		}
	}
	return nil, fmt.Errorf("admission caches: no informer for %s", gvr)
}
