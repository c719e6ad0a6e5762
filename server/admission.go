package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"unicode/utf8"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"

	kapiadmission "github.com/kapi-dev/kapi/admission"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
	"github.com/kapi-dev/kapi/storage"
)

// adminUser is who every request is, until authentication comes: the
// identity of kapi's kubeconfig.
var adminUser = &user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}

// The identities of the writes kapi's controllers make, as kube's make
// them: kube-apiserver's own (its loopback client: CRD and policy status,
// the initial namespaces), and kube-controller-manager's garbage collector
// and namespace controller (with their service accounts' credentials).
var (
	apiserverUser = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.AllAuthenticated, user.SystemPrivilegedGroup}}
	collectorUser = serviceAccountUser("generic-garbage-collector")
	namespaceUser = serviceAccountUser("namespace-controller")
)

func serviceAccountUser(name string) *user.DefaultInfo {
	return &user.DefaultInfo{Name: "system:serviceaccount:kube-system:" + name, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated}}
}

// admissionFeed hands the stored namespaces and webhook configurations to
// the admission plugins' caches, in revision order, off the writer's path.
type admissionFeed struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []storage.Event
}

var admissionResources = map[string]func() runtime.Object{
	"/namespaces": func() runtime.Object { return &corev1.Namespace{} },
	"admissionregistration.k8s.io/mutatingwebhookconfigurations":   func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
	"admissionregistration.k8s.io/validatingwebhookconfigurations": func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
	"admissionregistration.k8s.io/validatingadmissionpolicies":     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
	"admissionregistration.k8s.io/validatingadmissionpolicybindings": func() runtime.Object {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	},
	"resource.k8s.io/deviceclasses": func() runtime.Object { return &resourcev1beta2.DeviceClass{} },
}

// startAdmission feeds the webhooks' caches with what is stored, then
// follows every change of it.
func (s *Server) startAdmission(ctx context.Context) error {
	feed := &admissionFeed{}
	feed.cond = sync.NewCond(&feed.mu)
	s.store.Subscribe(func(ev storage.Event) {
		if _, ok := admissionResources[ev.Object.Resource]; !ok {
			return
		}
		feed.mu.Lock()
		feed.events = append(feed.events, ev)
		feed.mu.Unlock()
		feed.cond.Signal()
	})
	for resource := range admissionResources {
		for after := ""; ; {
			page, err := s.store.List(ctx, resource, storage.ListOptions{AfterName: after, Limit: 500})
			if err != nil {
				return err
			}
			for _, o := range page.Items {
				if err := s.observe(storage.Event{Op: storage.OpAdded, Object: *o}); err != nil {
					return err
				}
				after = o.Name
			}
			if !page.More {
				break
			}
		}
	}
	// The caches run until the feed below has stopped: feeding the first
	// webhook configuration builds the webhook plugins, which add their
	// handlers to the caches, and a stopped cache refuses a handler.
	cachesCtx, stopCaches := context.WithCancel(context.WithoutCancel(ctx))
	if err := s.webhooks.Start(cachesCtx); err != nil {
		stopCaches()
		return err
	}
	var err error
	if s.policies, err = kapiadmission.NewPolicies(ctx, s.webhooks, paramsClient{s}, restMapper{s}); err != nil {
		stopCaches()
		return err
	}
	close(s.policiesSet)
	go func() {
		<-ctx.Done()
		feed.cond.Broadcast()
	}()
	go func() {
		defer stopCaches()
		for {
			feed.mu.Lock()
			for len(feed.events) == 0 && ctx.Err() == nil {
				feed.cond.Wait()
			}
			events := feed.events
			feed.events = nil
			feed.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			for _, ev := range events {
				if err := s.observe(ev); err != nil {
					s.log.Warn("admission cache", "resource", ev.Object.Resource, "name", ev.Object.Name, "err", err)
				}
			}
		}
	}()
	return nil
}

func (s *Server) observe(ev storage.Event) error {
	obj := admissionResources[ev.Object.Resource]()
	if err := json.Unmarshal(ev.Object.Data, obj); err != nil {
		return err
	}
	return s.webhooks.Observe(obj, ev.Op == storage.OpDeleted)
}

// admissionAttributes describes a write for the admission plugins. obj and
// old (either may be nil), kind and resource are in the request's version.
func (s *Server) admissionAttributes(req *resourceRequest, obj, old *unstructured.Unstructured, op admission.Operation, options runtime.Object, dryRun bool) admission.Attributes {
	gvk := schema.GroupVersionKind{Group: req.res.Group, Version: req.version, Kind: req.res.Kind}
	gvr := schema.GroupVersionResource{Group: req.res.Group, Version: req.version, Resource: req.res.Plural}
	var o, oo runtime.Object
	name := req.name
	if obj != nil {
		o = obj
		if name == "" {
			name = obj.GetName()
		}
	}
	if old != nil {
		oo = old
	}
	if req.options != nil {
		options = req.options
	}
	if req.inCollection {
		name = ""
	}
	namespace := req.namespace
	if req.res.Group == "" && req.res.Plural == "namespaces" && !req.unnamedCreate {
		// A namespace's own requests are in the namespace, as
		// kube-apiserver's request info puts them (a namespaceSelector
		// then finds its labels): the one the client named, so not a
		// generated name (kube names the namespace before generating it).
		namespace = name
	}
	return admission.NewAttributesRecord(o, oo, gvk, namespace, name, gvr, req.subresource, op, options, dryRun, req.actor())
}

// withWarnings lets a request's handlers and admission plugins add Warning
// headers to w (warning.AddWarning with the returned context).
func withWarnings(ctx context.Context, w http.ResponseWriter) context.Context {
	return warning.WithWarningRecorder(ctx, &warningRecorder{w: w, seen: map[string]bool{}})
}

// The limits kube-apiserver puts on a response's warnings: past 4096 runes
// in all, each is cut to 256 runes, and those that no longer fit dropped.
const (
	warningRunesTotal = 4 * 1024
	warningRunesEach  = 256
)

// warningRecorder adds each distinct warning once, within kube-apiserver's
// limits.
type warningRecorder struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	seen map[string]bool
	// added are the warnings so far, in order, to be written again cut
	// once the limit is passed.
	added []recordedWarning
	// runes counts the runes of the warnings written; cutting is set once
	// they passed warningRunesTotal.
	runes   int
	cutting bool
}

type recordedWarning struct{ agent, text string }

func (r *warningRecorder) AddWarning(agent, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if text == "" || r.seen[text] || (r.cutting && r.runes >= warningRunesTotal) {
		return
	}
	r.seen[text] = true
	r.added = append(r.added, recordedWarning{agent, text})
	if r.cutting {
		r.write(agent, text)
		return
	}
	// A text a header cannot carry is dropped before it counts, as kube
	// drops it: it does not start the cutting.
	if _, err := utilnet.NewWarningHeader(299, agent, text); err != nil {
		return
	}
	if r.runes+utf8.RuneCountInString(text) <= warningRunesTotal {
		r.write(agent, text)
		return
	}
	// Past the limit: every warning is cut, those already written too.
	r.cutting, r.runes = true, 0
	r.w.Header().Del("Warning")
	for _, a := range r.added {
		r.write(a.agent, a.text)
	}
}

// write adds one Warning header (cut when cutting); a text a header cannot
// carry (control characters, invalid UTF-8) is dropped, as kube drops it.
func (r *warningRecorder) write(agent, text string) {
	if r.cutting {
		if runes := []rune(text); len(runes) > warningRunesEach {
			text = string(runes[:warningRunesEach])
		}
	}
	header, err := utilnet.NewWarningHeader(299, agent, text)
	if err != nil {
		return
	}
	r.runes += utf8.RuneCountInString(text)
	r.w.Header().Add("Warning", header)
}

// objectInterfaces lets the admission plugins convert, type and create the
// unstructured objects kapi hands them, through the registry.
type objectInterfaces struct {
	s *Server
	// res is the resource of the request under admission (nil if it is
	// not served). Its converter converts the request's objects, as the
	// converter of kube-apiserver's request scope does.
	res *registry.Resource
}

// objectInterfaces are those of the request attr is about.
func (s *Server) objectInterfaces(attr admission.Attributes) objectInterfaces {
	gvr := attr.GetResource()
	res, _ := s.reg.Get(gvr.Group, gvr.Version, gvr.Resource)
	return objectInterfaces{s: s, res: res}
}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return o }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return o }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return o }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.s.equivalentResources()
}

func (o objectInterfaces) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (o objectInterfaces) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return nil, false, fmt.Errorf("object has no kind")
	}
	return []schema.GroupVersionKind{gvk}, false, nil
}

func (o objectInterfaces) Recognizes(gvk schema.GroupVersionKind) bool {
	_, ok := o.s.resourceForKind(gvk)
	return ok
}

// Default defaults an object a mutating webhook patched, by its kind's
// rules, as kube-apiserver's dispatcher does after each webhook.
func (o objectInterfaces) Default(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	res, found := o.s.resourceForKind(u.GroupVersionKind())
	if !found {
		return // a Scale, say
	}
	if d, ok := res.Strategy.(registry.Defaulter); ok {
		d.Default(u)
	}
}

func (o objectInterfaces) Convert(in, out, context interface{}) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T into %T", in, out)
	}
	target := dst.GroupVersionKind()
	if ac, ok := o.requestConverter(target); ok {
		// An object of a custom resource's request goes through the CRD's
		// converter whatever kind and version a mutating webhook gave it,
		// as kube-apiserver's request scope converts it: the converter
		// refuses a group or version the CRD does not serve in its own
		// words, and leaves another kind for validation to refuse (422).
		out := src.DeepCopy()
		if err := ac.ConvertForAdmission(out, target.Version); err != nil {
			return err
		}
		dst.Object = out.Object
		return nil
	}
	converted, err := o.ConvertToVersion(src, target.GroupVersion())
	if err != nil {
		return err
	}
	dst.Object = converted.(*unstructured.Unstructured).Object
	return nil
}

// requestConverter is the admission converter of the request's resource
// when it converts objects of kind target.
func (o objectInterfaces) requestConverter(target schema.GroupVersionKind) (registry.AdmissionConverter, bool) {
	res := o.res
	if res == nil || target.GroupKind() != (schema.GroupKind{Group: res.Group, Kind: res.Kind}) {
		return nil, false
	}
	ac, ok := res.Strategy.(registry.AdmissionConverter)
	return ac, ok
}

func (o objectInterfaces) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("%v cannot be converted to %v", u.GroupVersionKind(), target)
	}
	if u.GroupVersionKind() == scaleGroupKind.WithVersion("v1") && gvk == u.GroupVersionKind() {
		return u.DeepCopy(), nil // /scale's Scale: one version
	}
	res, found := o.s.resourceForKind(u.GroupVersionKind())
	if !found {
		return nil, fmt.Errorf("no served kind %v", u.GroupVersionKind())
	}
	out := u.DeepCopy()
	if err := registry.ConvertInMemory(res.Strategy, out, gvk.Version); err != nil {
		return nil, err
	}
	return out, nil
}

func (o objectInterfaces) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// resourceForKind finds the served resource of a kind.
func (s *Server) resourceForKind(gvk schema.GroupVersionKind) (*registry.Resource, bool) {
	for _, res := range s.reg.All() {
		if res.Group == gvk.Group && res.Kind == gvk.Kind && res.Serves(gvk.Version) {
			return res, true
		}
	}
	return nil, false
}

// equivalentResources maps every served resource to the kind of each of
// its versions, and makes the versions of a resource equivalent, for
// matchPolicy: Equivalent.
//
// The mapping is rebuilt only when the registry changes.
func (s *Server) equivalentResources() runtime.EquivalentResourceMapper {
	s.equivalentMu.Lock()
	defer s.equivalentMu.Unlock()
	m, _, _ := s.equivalent.get(s.reg.Generation(), func() (runtime.EquivalentResourceMapper, error) {
		m := runtime.NewEquivalentResourceRegistry()
		for _, res := range s.reg.All() {
			for _, v := range res.Versions {
				gvr := schema.GroupVersionResource{Group: res.Group, Version: v, Resource: res.Plural}
				m.RegisterKindFor(gvr, "", schema.GroupVersionKind{Group: res.Group, Version: v, Kind: res.Kind})
				if res.StatusIn(v) {
					m.RegisterKindFor(gvr, "status", schema.GroupVersionKind{Group: res.Group, Version: v, Kind: res.Kind})
				}
				if res.ScaleIn(v) != nil {
					m.RegisterKindFor(gvr, "scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"})
				}
			}
		}
		return m, nil
	})
	return m
}

// mutate runs the mutating admission webhooks on a write; they change obj
// in place.
func (s *Server) mutate(ctx context.Context, attr admission.Attributes) error {
	// The namespace lifecycle plugin comes first in kube-apiserver's
	// chain: an immortal namespace's DELETE never reaches a webhook.
	if attr.GetOperation() == admission.Delete && attr.GetKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		if err := kapiadmission.AdmitNamespaceDelete(attr.GetResource().GroupResource(), attr.GetName()); err != nil {
			return err
		}
	}
	// s.mutating is wrapped as kube-apiserver wraps its mutating
	// admission: managedFields a webhook leaves invalid are put back as
	// they were, with a warning.
	o := s.objectInterfaces(attr)
	if o.res == nil || !s.webhooks.HasMutating() {
		return s.mutating.Admit(ctx, attr, o)
	}
	if as, ok := o.res.Strategy.(registry.AdmissionScheme); ok {
		// A built-in kind's objects are the Go types of kube's scheme
		// under its mutating admission, as kube hands them over: the
		// dispatcher decodes a webhook's patch with that scheme into the
		// type of the webhook's version.
		scheme, name := as.AdmissionScheme()
		if ta, ok := typedAttributesOf(attr, scheme); ok {
			if err := s.mutating.Admit(ctx, ta.record, typedObjectInterfaces{objectInterfaces: o, scheme: scheme, name: name}); err != nil {
				return err
			}
			return ta.writeBack()
		}
	}
	return s.mutating.Admit(ctx, attr, o)
}

// storedNamespace reads a namespace from the store, for admission's
// lookups that its caches miss (kube's read storage then).
func (s *Server) storedNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	res, ok := s.reg.Get("", "v1", "namespaces")
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	u, _, err := s.getObject(ctx, res, "", name)
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return ns, nil
}

// mutatingWebhooks is the mutating half of the webhooks as an admission
// plugin.
type mutatingWebhooks struct{ w *kapiadmission.Webhooks }

func (m mutatingWebhooks) Handles(admission.Operation) bool { return true }

func (m mutatingWebhooks) Admit(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	return m.w.Admit(ctx, attr, o)
}

// validateAdmission runs, in kube-apiserver's order, the validating
// admission policies and the validating webhooks on a write.
func (s *Server) validateAdmission(ctx context.Context, attr admission.Attributes) error {
	select {
	case <-s.policiesSet:
	case <-ctx.Done():
		return apierrors.NewServiceUnavailable("admission is not started yet")
	}
	o := s.objectInterfaces(attr)
	if err := s.policies.Validate(ctx, attr, o); err != nil {
		return err
	}
	return s.webhooks.Validate(ctx, attr, o)
}

// mutateAndNormalize runs the mutating webhooks on obj (the object of
// attr) and, when they changed a built-in kind's object, decodes it again
// as the kind decodes a body: what a webhook added that the kind does not
// know is dropped and defaults apply, before the kind's own validation
// runs, as kube-apiserver decodes each webhook's patch into the kind's Go
// type. A custom resource is left as the webhooks left it (kube's
// dispatcher only defaults it, by its schema, after each patch): its
// validation and the validating admission see what a webhook added, and
// only its storage encoding prunes and coerces it (req.mutated).
func (s *Server) mutateAndNormalize(ctx context.Context, req *resourceRequest, attr admission.Attributes, obj *unstructured.Unstructured) error {
	if !s.webhooks.HasMutating() {
		return nil // nothing can change obj: spare the comparison
	}
	before, err := unstructuredjson.Marshal(obj.Object)
	if err != nil {
		return err
	}
	if err := s.mutate(ctx, attr); err != nil {
		return err
	}
	after, err := unstructuredjson.Marshal(obj.Object)
	if err != nil || string(after) == string(before) {
		return err
	}
	// What the kind decodes from now, as kube-apiserver decodes a
	// webhook's patch applied to the object it encoded (compact JSON).
	req.decodedFrom = after
	if req.res.Custom {
		req.mutated = true
		return checkNamespace(req, obj)
	}
	normalized, _, err := req.res.Strategy.Decode(req.version, after)
	if err != nil {
		// kube-apiserver decodes what each webhook returned into the kind
		// and answers a failure as its own (500): the webhook, not the
		// client, sent it.
		return apierrors.NewInternalError(err)
	}
	obj.Object = normalized.Object
	// As kube-apiserver checks the object after admission: a webhook may
	// not move it to another namespace.
	return checkNamespace(req, obj)
}
