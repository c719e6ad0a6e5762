package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Webhooks calls the mutating and validating admission webhooks of the
// stored configurations, with kube-apiserver's own admission plugins
// (k8s.io/apiserver/pkg/admission/plugin/webhook): rule matching with
// matchPolicy, namespace and object selectors, matchConditions, ordering,
// reinvocation, failurePolicy, timeouts, sideEffects with dryRun,
// AdmissionReview v1/v1beta1, patches and warnings. The plugins read the
// configurations and namespaces from informer caches that kapi feeds from
// its store (Observe), not through a loopback client.
//
// The plugins are built with the first webhook configuration: their CEL
// environments take milliseconds of CPU and megabytes of memory that a
// kapi without webhooks never needs.
type Webhooks struct {
	cache    *cacheClient
	factory  cacheFactory
	resolver webhookutil.ServiceResolver
	plugins  func() (*webhookPlugins, error)
	// started is set once Start has synced the caches; what Start set
	// before it (stop, the stores below) is then visible to whoever
	// reads it true. Controllers write while Start runs.
	started atomic.Bool
	stop    <-chan struct{} // the caches', once started
	// stopMu keeps the caches from stopping while the plugins are built:
	// a stopped cache refuses their handlers, and kube's configuration
	// managers panic then. stopped is set when the caches stop.
	stopMu  sync.Mutex
	stopped bool
	// The caches HasMutating, hasValidating and HasPolicyBindings look
	// into, once started.
	mutatingConfigs, validatingConfigs, policyBindings cache.Store
	// watching holds the resources whose caches watch the tracker.
	watchingMu sync.Mutex
	watching   map[schema.GroupVersionResource]bool
	// taken is closed, and replaced, whenever a cache has taken a change:
	// Observe waits on it.
	takenMu sync.Mutex
	taken   chan struct{}
}

// ReadNamespacesFrom gives the plugins' client a way to the store: kube's
// namespaceSelector matching, when its cache does not have a namespace
// yet ("in case of latency in our caches"), gets it from storage through
// its client, and kapi's client is the caches' own. get answers a
// NotFound Status for a namespace that does not exist. Call before Start.
func (w *Webhooks) ReadNamespacesFrom(get func(ctx context.Context, name string) (*corev1.Namespace, error)) {
	w.cache.getNamespace = get
}

type webhookPlugins struct {
	mutating   *mutating.Plugin
	validating *validating.Plugin
}

// allowAll answers every authorization check as for kapi's admin identity
// (kapi has no RBAC yet), for matchConditions' `authorizer`.
type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// NewWebhooks returns the webhooks over empty caches. resolver resolves
// clientConfig.service references.
func NewWebhooks(resolver webhookutil.ServiceResolver) *Webhooks {
	w := &Webhooks{cache: newCacheClient(), resolver: resolver, watching: map[schema.GroupVersionResource]bool{}, taken: make(chan struct{})}
	// A cache lists the tracker, then watches it; the tracker's watch
	// replays nothing, so a change between the two would never reach the
	// cache. The client records that the cache watches: Start waits for
	// every cache's watch.
	w.cache.watching = func(gvr schema.GroupVersionResource) {
		w.watchingMu.Lock()
		w.watching[gvr] = true
		w.watchingMu.Unlock()
	}
	w.factory = cacheFactory{informers.NewSharedInformerFactory(w.cache, 0)}
	w.plugins = sync.OnceValues(w.buildPlugins)
	return w
}

// buildPlugins builds the plugins over the caches. Observe builds them
// before the first configuration reaches the caches: a plugin is ready
// once its handler has taken what the caches held when it was added, and
// one that is not yet ready makes a request wait for its readiness check's
// next 100 ms tick.
func (w *Webhooks) buildPlugins() (*webhookPlugins, error) {
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	if w.stopped {
		// A write still in flight while kapi stops.
		return nil, errors.New("the admission caches are stopped")
	}
	p := &webhookPlugins{}
	// Each plugin builds its CEL environments: the two side by side.
	var mutatingErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		p.mutating, mutatingErr = mutating.NewMutatingWebhook(nil)
	}()
	var err error
	p.validating, err = validating.NewValidatingAdmissionWebhook(nil)
	<-built
	if err = errors.Join(mutatingErr, err); err != nil {
		return nil, err
	}
	p.mutating.SetServiceResolver(w.resolver)
	p.validating.SetServiceResolver(w.resolver)
	p.mutating.SetExternalKubeClientSet(w.cache)
	p.validating.SetExternalKubeClientSet(w.cache)
	p.mutating.SetAuthorizer(allowAll{})
	p.validating.SetAuthorizer(allowAll{})
	p.mutating.SetExternalKubeInformerFactory(w.factory)
	p.validating.SetExternalKubeInformerFactory(w.factory)
	if err := p.mutating.ValidateInitialization(); err != nil {
		return nil, err
	}
	if err := p.validating.ValidateInitialization(); err != nil {
		return nil, err
	}
	if w.started.Load() {
		// Starts any cache the plugins asked for that Start did not.
		w.factory.Start(w.stop)
	}
	return p, nil
}

// The resources the plugins read from caches: namespaces (for
// namespaceSelector), their configurations, and the built-in kinds a policy
// may take its params from.
var (
	namespacesResource    = corev1.SchemeGroupVersion.WithResource("namespaces")
	mutatingResource      = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	validatingResource    = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
	policiesResource      = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingsResource      = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
	deviceClassesResource = resourcev1beta2.SchemeGroupVersion.WithResource("deviceclasses")
	cachedResources       = []schema.GroupVersionResource{namespacesResource, mutatingResource, validatingResource, policiesResource, bindingsResource, deviceClassesResource}
)

// Start runs the caches until ctx ends and waits for their first sync
// and their watches.
func (w *Webhooks) Start(ctx context.Context) error {
	tookChange := func() {
		w.takenMu.Lock()
		close(w.taken)
		w.taken = make(chan struct{})
		w.takenMu.Unlock()
	}
	// The informers the plugins use, before the factory starts them.
	stores := map[schema.GroupVersionResource]cache.Store{}
	for _, gvr := range cachedResources {
		informer, err := w.factory.ForResource(gvr)
		if err != nil {
			return err
		}
		if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { tookChange() },
			UpdateFunc: func(any, any) { tookChange() },
			DeleteFunc: func(any) { tookChange() },
		}); err != nil {
			return err
		}
		stores[gvr] = informer.Informer().GetStore()
	}
	w.mutatingConfigs, w.validatingConfigs, w.policyBindings = stores[mutatingResource], stores[validatingResource], stores[bindingsResource]
	stop := make(chan struct{})
	go func() {
		<-ctx.Done()
		w.stopMu.Lock()
		w.stopped = true
		close(stop)
		w.stopMu.Unlock()
	}()
	w.stop = stop
	w.factory.Start(w.stop)
	// The factory's own WaitForCacheSync polls every 100 ms, a start-up
	// delay as long as the rest of kapi's start: poll every millisecond.
	for {
		synced, ready := w.factory.WaitForCacheSync(expired), true
		for _, ok := range synced {
			ready = ready && ok
		}
		w.watchingMu.Lock()
		for _, gvr := range cachedResources {
			ready = ready && w.watching[gvr]
		}
		w.watchingMu.Unlock()
		if ready {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("admission caches did not sync: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	w.started.Store(true)
	return nil
}

// expired is a closed channel: WaitForCacheSync on it reports at once.
var expired = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// ActiveNamespace tells whether the caches hold namespace name as Active.
// false means only that the caches cannot vouch for it (not there yet, or
// terminating): ask the store.
func (w *Webhooks) ActiveNamespace(name string) bool {
	if !w.started.Load() {
		return false
	}
	ns, err := w.factory.Core().V1().Namespaces().Lister().Get(name)
	return err == nil && ns.Status.Phase == corev1.NamespaceActive
}

// Observe feeds a stored namespace, admission configuration or
// DeviceClass (its current state, or its deletion) to the plugins' caches.
// Once Start has run, call it only while Start's context lasts: the first
// webhook configuration builds the plugins, and a stopped cache refuses
// their handlers.
func (w *Webhooks) Observe(obj runtime.Object, deleted bool) error {
	t := w.cache.tracker
	gvr := namespacesResource
	var ns, name string
	switch o := obj.(type) {
	case *corev1.Namespace:
		name = o.Name
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		gvr, name = mutatingResource, o.Name
		if _, err := w.plugins(); err != nil {
			return err
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		gvr, name = validatingResource, o.Name
		if _, err := w.plugins(); err != nil {
			return err
		}
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		gvr, name = policiesResource, o.Name
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		gvr, name = bindingsResource, o.Name
	case *resourcev1beta2.DeviceClass:
		// A possible policy param: the policy plugin reads built-in kinds
		// client-go knows from these caches.
		gvr, name = deviceClassesResource, o.Name
	default:
		return fmt.Errorf("admission: cannot observe %T", obj)
	}
	var err error
	if deleted {
		if err = t.Delete(gvr, ns, name); isNotFound(err) {
			err = nil
		}
	} else if err = t.Update(gvr, obj, ns); isNotFound(err) {
		err = t.Add(obj)
	}
	if err != nil || !w.started.Load() {
		return err
	}
	// Wait until the informer has taken the change, so that the tracker
	// watch it reads never fills up, and a request right after a change
	// sees it.
	informer, ierr := w.factory.ForResource(gvr)
	if ierr != nil {
		return ierr
	}
	want := ""
	if !deleted {
		want = obj.(metav1.Object).GetResourceVersion()
	}
	store := informer.Informer().GetStore()
	timeout := time.NewTimer(time.Second)
	defer timeout.Stop()
	for {
		w.takenMu.Lock()
		next := w.taken
		w.takenMu.Unlock()
		item, exists, _ := store.GetByKey(name)
		if (deleted && !exists) || (exists && item.(metav1.Object).GetResourceVersion() == want) {
			return nil
		}
		select {
		case <-next: // a cache took a change: look again
		case <-timeout.C:
			return fmt.Errorf("admission cache did not take %s %s", gvr.Resource, name)
		}
	}
}

// HasMutating tells whether any MutatingWebhookConfiguration exists: with
// none, Admit changes nothing.
func (w *Webhooks) HasMutating() bool { return w.mayHold(&w.mutatingConfigs) }

// hasValidating tells whether any ValidatingWebhookConfiguration exists:
// with none, Validate calls no webhook.
func (w *Webhooks) hasValidating() bool { return w.mayHold(&w.validatingConfigs) }

// HasPolicyBindings tells whether any ValidatingAdmissionPolicyBinding
// exists: with none, no policy applies to any request.
func (w *Webhooks) HasPolicyBindings() bool { return w.mayHold(&w.policyBindings) }

// mayHold tells whether the cache store may hold an object: before Start
// it is unknown, so it may. store points at one of the fields Start sets:
// it is read only once started says Start has set it.
func (w *Webhooks) mayHold(store *cache.Store) bool {
	return !w.started.Load() || len((*store).ListKeys()) > 0
}

// Admit runs the mutating webhooks on attr, changing its object in place.
// As kube-apiserver's admission chain does, it runs them a second time
// when a webhook with reinvocationPolicy IfNeeded asks for it.
func (w *Webhooks) Admit(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	if !w.HasMutating() {
		return nil
	}
	p, err := w.plugins()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if !p.mutating.Handles(attr.GetOperation()) {
		return nil
	}
	// WithAudit copies the webhooks' audit annotations to the request's
	// audit event.
	mutating := admission.WithAudit(p.mutating).(admission.MutationInterface)
	if err := mutating.Admit(ctx, attr, o); err != nil {
		return err
	}
	if rc := attr.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return mutating.Admit(ctx, attr, o)
	}
	return nil
}

// Validate runs the validating webhooks on attr.
func (w *Webhooks) Validate(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	if !w.hasValidating() {
		return nil
	}
	p, err := w.plugins()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if !p.validating.Handles(attr.GetOperation()) {
		return nil
	}
	return admission.WithAudit(p.validating).(admission.ValidationInterface).Validate(ctx, attr, o)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
