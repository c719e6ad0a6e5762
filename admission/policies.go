package admission

import (
	"context"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
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
	p := newPolicyPlugin()
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

// newPolicyPlugin is kube-apiserver's ValidatingAdmissionPolicy plugin
// (validating.NewPlugin) assembled from the same parts, with the policies
// compiled by compilePolicy.
func newPolicyPlugin() *validating.Plugin {
	p := &validating.Plugin{Plugin: generic.NewPlugin(
		admission.NewHandler(admission.Connect, admission.Create, admission.Delete, admission.Update),
		func(f informers.SharedInformerFactory, _ kubernetes.Interface, params dynamic.Interface, mapper meta.RESTMapper) generic.Source[validating.PolicyHook] {
			return generic.NewPolicySource(
				f.Admissionregistration().V1().ValidatingAdmissionPolicies().Informer(),
				f.Admissionregistration().V1().ValidatingAdmissionPolicyBindings().Informer(),
				validating.NewValidatingAdmissionPolicyAccessor,
				validating.NewValidatingAdmissionPolicyBindingAccessor,
				compilePolicy,
				f, params, mapper,
			)
		},
		func(a authorizer.Authorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[validating.PolicyHook] {
			return validating.NewDispatcher(a, generic.NewPolicyMatcher(m))
		},
	)}
	p.SetEnabled(true)
	return p
}

// The CEL environments policies are compiled in, with and without strict
// cost enforcement, each built once.
var (
	strictCostEnv  = sync.OnceValue(func() *plugincel.CompositionEnv { return newCompositionEnv(true) })
	lenientCostEnv = sync.OnceValue(func() *plugincel.CompositionEnv { return newCompositionEnv(false) })
)

func newCompositionEnv(strictCost bool) *plugincel.CompositionEnv {
	env, err := plugincel.NewCompositionEnv(plugincel.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), strictCost))
	if err != nil {
		panic(err) // the base environment is fixed: it compiles
	}
	return env
}

// compilePolicy compiles a policy's variables, matchConditions,
// validations, messageExpressions and auditAnnotations as kube-apiserver's
// plugin does, with two differences in cost, none in outcome. A policy with
// no messageExpression, or no auditAnnotation, gets an evaluator that
// evaluates nothing for them. The plugin's evaluators build the CEL
// activation (the request and the namespace converted to unstructured by
// reflection) before looking at their expressions, so an empty group
// cost as much as the validations themselves: two of the three
// activations of a policy with validations only. (Kubernetes skips
// empty groups itself in releases after the v1.33 libraries kapi uses.)
// And the evaluators are given the request and the namespace only when
// the policy reads them (policyInputs).
func compilePolicy(policy *validating.Policy) validating.Validator {
	strictCost := utilfeature.DefaultFeatureGate.Enabled(features.StrictCostEnforcementForVAP)
	env := lenientCostEnv
	if strictCost {
		env = strictCostEnv
	}
	inputs := readInputs(policy)
	hasParams := policy.Spec.ParamKind != nil
	withAuthorizer := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, StrictCost: strictCost}
	withoutAuthorizer := plugincel.OptionalVariableDeclarations{HasParams: hasParams, StrictCost: strictCost}
	compiler := plugincel.NewCompositedCompilerFromTemplate(env())

	variables := make([]plugincel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, withAuthorizer, environment.StoredExpressions)

	var matcher matchconditions.Matcher
	if conditions := policy.Spec.MatchConditions; len(conditions) > 0 {
		expressions := make([]plugincel.ExpressionAccessor, len(conditions))
		for i := range conditions {
			expressions[i] = (*matchconditions.MatchCondition)(&conditions[i])
		}
		matcher = matchconditions.NewMatcher(inputs.only(compiler.CompileCondition(expressions, withAuthorizer, environment.StoredExpressions)),
			policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	}

	validations := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	var messageFilter plugincel.ConditionEvaluator = noExpressions{}
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
			messageFilter = nil
		}
	}
	if messageFilter == nil {
		// Compiled with one entry per validation, nil where a validation
		// has no messageExpression: results are matched by index.
		messageFilter = inputs.only(compiler.CompileCondition(messages, withoutAuthorizer, environment.StoredExpressions))
	}

	var auditFilter plugincel.ConditionEvaluator = noExpressions{}
	if len(policy.Spec.AuditAnnotations) > 0 {
		annotations := make([]plugincel.ExpressionAccessor, len(policy.Spec.AuditAnnotations))
		for i, a := range policy.Spec.AuditAnnotations {
			annotations[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
		}
		auditFilter = inputs.only(compiler.CompileCondition(annotations, withAuthorizer, environment.StoredExpressions))
	}

	return validating.NewValidator(
		inputs.only(compiler.CompileCondition(validations, withAuthorizer, environment.StoredExpressions)),
		matcher, auditFilter, messageFilter, policy.Spec.FailurePolicy)
}

// noExpressions is the evaluator of an empty group of expressions: it
// evaluates nothing and leaves the cost budget as it is.
type noExpressions struct{}

func (noExpressions) ForInput(_ context.Context, _ *admission.VersionedAttributes, _ *admissionv1.AdmissionRequest,
	_ plugincel.OptionalVariableBindings, _ *corev1.Namespace, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	return nil, budget, nil
}

func (noExpressions) CompilationErrors() []error { return nil }

// policyInputs says which of the two costly CEL variables any expression of
// a policy reads: `request` and `namespaceObject`. kube's evaluators
// convert both to unstructured (by reflection, the request's options
// through JSON) for every evaluation, read or not; given none, they
// convert nothing. An expression reads a variable only by naming it, so a
// policy none of whose expressions (variables included) holds the name
// cannot read it, and its evaluators are given none: the outcome is the
// same. (Later Kubernetes releases convert them only when read.)
type policyInputs struct {
	request, namespace bool
}

func readInputs(policy *validating.Policy) policyInputs {
	var in policyInputs
	read := func(expression string) {
		// "request" also matches authorizer.requestResource: erring
		// on the side of converting.
		in.request = in.request || strings.Contains(expression, plugincel.RequestVarName)
		in.namespace = in.namespace || strings.Contains(expression, plugincel.NamespaceVarName)
	}
	for _, v := range policy.Spec.Variables {
		read(v.Expression)
	}
	for _, c := range policy.Spec.MatchConditions {
		read(c.Expression)
	}
	for _, v := range policy.Spec.Validations {
		read(v.Expression)
		read(v.MessageExpression)
	}
	for _, a := range policy.Spec.AuditAnnotations {
		read(a.ValueExpression)
	}
	return in
}

// only wraps e so that it is given the request and the namespace only if
// the policy reads them.
func (in policyInputs) only(e plugincel.ConditionEvaluator) plugincel.ConditionEvaluator {
	if in.request && in.namespace {
		return e
	}
	return unreadInputs{e, in}
}

type unreadInputs struct {
	plugincel.ConditionEvaluator
	reads policyInputs
}

func (e unreadInputs) ForInput(ctx context.Context, attr *admission.VersionedAttributes, request *admissionv1.AdmissionRequest,
	vars plugincel.OptionalVariableBindings, namespace *corev1.Namespace, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	if !e.reads.request {
		request = nil
	}
	if !e.reads.namespace {
		namespace = nil
	}
	return e.ConditionEvaluator.ForInput(ctx, attr, request, vars, namespace, budget)
}
