package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/dynamic"
)

// excludedFromPolicies are the resources policies never apply to, as in
// kube-apiserver: the policies and their bindings (webhook configurations
// are subject to policies, not to webhooks).
var excludedFromPolicies = []schema.GroupResource{
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"},
}

// Policies evaluates ValidatingAdmissionPolicies and their bindings with
// kube-apiserver's own plugin (k8s.io/apiserver/pkg/admission/plugin/policy/validating):
// matchConstraints, matchConditions, variables, validations with messages
// and reasons, auditAnnotations, failurePolicy, params through paramKind and
// paramRef, validationActions Deny/Warn/Audit. Policies and bindings come
// from the same caches as the webhooks; params are read through params, a
// dynamic client over kapi's own store.
type Policies struct {
	plugin *validating.Plugin
	caches *Webhooks
}

// NewPolicies builds the policy plugin over w's caches and starts it until
// ctx ends. mapper maps paramKinds to resources.
func NewPolicies(ctx context.Context, w *Webhooks, params dynamic.Interface, mapper meta.RESTMapper) (*Policies, error) {
	p := validating.NewPlugin(nil)
	p.SetExternalKubeInformerFactory(w.factory)
	p.SetExternalKubeClientSet(w.cache)
	p.SetDynamicClient(params)
	p.SetRESTMapper(mapper)
	p.SetAuthorizer(allowAll{})
	p.SetDrainedNotification(ctx.Done())
	p.SetExcludedAdmissionResources(excludedFromPolicies)
	if err := p.ValidateInitialization(); err != nil {
		return nil, err
	}
	return &Policies{plugin: p, caches: w}, nil
}

// Validate evaluates the policies bound to attr's request.
//
// With no binding in the caches, no policy applies and the plugin is not
// asked. Besides sparing its matching, this keeps a fresh kapi's first
// writes (its own namespaces) from waiting: the plugin compiles the
// policies on a goroutine of its own after start, and a request that finds
// it not yet done waits for its readiness check's next 100 ms tick. With
// bindings the wait is right: a request must not slip past a policy that
// is not compiled yet.
func (p *Policies) Validate(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	if !p.plugin.Handles(attr.GetOperation()) || !p.caches.HasPolicyBindings() {
		return nil
	}
	// WithAudit copies the Audit action's and auditAnnotations' results
	// to the request's audit event.
	return admission.WithAudit(p.plugin).(admission.ValidationInterface).Validate(ctx, attr, o)
}
