package admissionregistration

import (
	"fmt"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/util/webhook"
)

// acceptedAdmissionReviewVersions are the AdmissionReview versions kube
// understands, in the order kube lists them in its messages.
var acceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

var (
	supportedFailurePolicies = sets.New(string(admissionregistrationv1.Ignore), string(admissionregistrationv1.Fail))
	supportedMatchPolicies   = sets.New(string(admissionregistrationv1.Exact), string(admissionregistrationv1.Equivalent))
	allSideEffectClasses     = sets.New(
		string(admissionregistrationv1.SideEffectClassUnknown),
		string(admissionregistrationv1.SideEffectClassNone),
		string(admissionregistrationv1.SideEffectClassSome),
		string(admissionregistrationv1.SideEffectClassNoneOnDryRun),
	)
	noSideEffectClasses = sets.New(
		string(admissionregistrationv1.SideEffectClassNone),
		string(admissionregistrationv1.SideEffectClassNoneOnDryRun),
	)
	supportedReinvocationPolicies = sets.New(
		string(admissionregistrationv1.NeverReinvocationPolicy),
		string(admissionregistrationv1.IfNeededReinvocationPolicy),
	)
)

// webhookOptions are the knobs kube turns on create and relaxes on update
// when the stored object already broke the rule (so old objects stay updatable).
type webhookOptions struct {
	ignoreMatchConditions                   bool
	requireNoSideEffects                    bool
	requireRecognizedAdmissionReviewVersion bool
	requireUniqueWebhookNames               bool
	allowInvalidLabelValueInSelector        bool
	// preexistingMatchConditions are expressions already stored; they are
	// compiled with the more permissive stored-expressions environment.
	preexistingMatchConditions sets.Set[string]
}

func createWebhookOptions() webhookOptions {
	return webhookOptions{
		requireNoSideEffects:                    true,
		requireRecognizedAdmissionReviewVersion: true,
		requireUniqueWebhookNames:               true,
	}
}

// hook is the part shared by MutatingWebhook and ValidatingWebhook, so the
// two configurations can share one implementation.
type hook struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
	mutating                bool
	reinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType
}

func mutatingHooks(webhooks []admissionregistrationv1.MutatingWebhook) []hook {
	hooks := make([]hook, 0, len(webhooks))
	for _, w := range webhooks {
		hooks = append(hooks, hook{
			name:                    w.Name,
			clientConfig:            w.ClientConfig,
			rules:                   w.Rules,
			failurePolicy:           w.FailurePolicy,
			matchPolicy:             w.MatchPolicy,
			namespaceSelector:       w.NamespaceSelector,
			objectSelector:          w.ObjectSelector,
			sideEffects:             w.SideEffects,
			timeoutSeconds:          w.TimeoutSeconds,
			admissionReviewVersions: w.AdmissionReviewVersions,
			matchConditions:         w.MatchConditions,
			mutating:                true,
			reinvocationPolicy:      w.ReinvocationPolicy,
		})
	}
	return hooks
}

func validatingHooks(webhooks []admissionregistrationv1.ValidatingWebhook) []hook {
	hooks := make([]hook, 0, len(webhooks))
	for _, w := range webhooks {
		hooks = append(hooks, hook{
			name:                    w.Name,
			clientConfig:            w.ClientConfig,
			rules:                   w.Rules,
			failurePolicy:           w.FailurePolicy,
			matchPolicy:             w.MatchPolicy,
			namespaceSelector:       w.NamespaceSelector,
			objectSelector:          w.ObjectSelector,
			sideEffects:             w.SideEffects,
			timeoutSeconds:          w.TimeoutSeconds,
			admissionReviewVersions: w.AdmissionReviewVersions,
			matchConditions:         w.MatchConditions,
		})
	}
	return hooks
}

// ValidateMutatingWebhookConfiguration validates a MutatingWebhookConfiguration on create.
func ValidateMutatingWebhookConfiguration(obj *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	return validateWebhookConfiguration(&obj.ObjectMeta, mutatingHooks(obj.Webhooks), createWebhookOptions())
}

// ValidateMutatingWebhookConfigurationUpdate validates a MutatingWebhookConfiguration on update.
func ValidateMutatingWebhookConfigurationUpdate(obj, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	opts := updateWebhookOptions(mutatingHooks(obj.Webhooks), mutatingHooks(old.Webhooks))
	return validateWebhookConfiguration(&obj.ObjectMeta, mutatingHooks(obj.Webhooks), opts)
}

// ValidateValidatingWebhookConfiguration validates a ValidatingWebhookConfiguration on create.
func ValidateValidatingWebhookConfiguration(obj *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	return validateWebhookConfiguration(&obj.ObjectMeta, validatingHooks(obj.Webhooks), createWebhookOptions())
}

// ValidateValidatingWebhookConfigurationUpdate validates a ValidatingWebhookConfiguration on update.
func ValidateValidatingWebhookConfigurationUpdate(obj, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	opts := updateWebhookOptions(validatingHooks(obj.Webhooks), validatingHooks(old.Webhooks))
	return validateWebhookConfiguration(&obj.ObjectMeta, validatingHooks(obj.Webhooks), opts)
}

// updateWebhookOptions relaxes a rule when the stored object already breaks
// it, and skips match-condition checks when they did not change.
func updateWebhookOptions(hooks, oldHooks []hook) webhookOptions {
	opts := webhookOptions{
		ignoreMatchConditions:                   sameMatchConditions(hooks, oldHooks),
		requireNoSideEffects:                    true,
		requireRecognizedAdmissionReviewVersion: true,
		requireUniqueWebhookNames:               true,
		preexistingMatchConditions:              sets.New[string](),
	}
	names := sets.New[string]()
	strict := metav1validation.LabelSelectorValidationOptions{}
	for _, h := range oldHooks {
		if h.sideEffects == nil || !noSideEffectClasses.Has(string(*h.sideEffects)) {
			opts.requireNoSideEffects = false
		}
		if len(h.admissionReviewVersions) > 0 && !hasAcceptedAdmissionReviewVersion(h.admissionReviewVersions) {
			opts.requireRecognizedAdmissionReviewVersion = false
		}
		if names.Has(h.name) {
			opts.requireUniqueWebhookNames = false
		}
		names.Insert(h.name)
		if h.namespaceSelector != nil && len(metav1validation.ValidateLabelSelector(h.namespaceSelector, strict, nil)) > 0 {
			opts.allowInvalidLabelValueInSelector = true
		}
		if h.objectSelector != nil && len(metav1validation.ValidateLabelSelector(h.objectSelector, strict, nil)) > 0 {
			opts.allowInvalidLabelValueInSelector = true
		}
		for _, mc := range h.matchConditions {
			opts.preexistingMatchConditions.Insert(mc.Expression)
		}
	}
	return opts
}

func sameMatchConditions(hooks, oldHooks []hook) bool {
	if len(hooks) != len(oldHooks) {
		return false
	}
	for i := range hooks {
		if !reflect.DeepEqual(hooks[i].matchConditions, oldHooks[i].matchConditions) {
			return false
		}
	}
	return true
}

func validateWebhookConfiguration(meta *metav1.ObjectMeta, hooks []hook, opts webhookOptions) field.ErrorList {
	allErrors := apimachineryvalidation.ValidateObjectMeta(meta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	names := sets.New[string]()
	for i, h := range hooks {
		fldPath := field.NewPath("webhooks").Index(i)
		allErrors = append(allErrors, validateHook(&h, opts, fldPath)...)
		allErrors = append(allErrors, validateAdmissionReviewVersions(h.admissionReviewVersions, opts.requireRecognizedAdmissionReviewVersion, fldPath.Child("admissionReviewVersions"))...)
		if opts.requireUniqueWebhookNames && len(h.name) > 0 {
			if names.Has(h.name) {
				allErrors = append(allErrors, field.Duplicate(fldPath.Child("name"), h.name))
			} else {
				names.Insert(h.name)
			}
		}
	}
	return allErrors
}

func validateHook(h *hook, opts webhookOptions, fldPath *field.Path) field.ErrorList {
	// The name must be a DNS subdomain with at least three segments.
	allErrors := utilvalidation.IsFullyQualifiedName(fldPath.Child("name"), h.name)

	for i := range h.rules {
		allErrors = append(allErrors, validateRuleWithOperations(&h.rules[i], fldPath.Child("rules").Index(i))...)
	}
	if h.failurePolicy != nil && !supportedFailurePolicies.Has(string(*h.failurePolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("failurePolicy"), *h.failurePolicy, sets.List(supportedFailurePolicies)))
	}
	if h.matchPolicy != nil && !supportedMatchPolicies.Has(string(*h.matchPolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("matchPolicy"), *h.matchPolicy, sets.List(supportedMatchPolicies)))
	}
	allowedSideEffects := allSideEffectClasses
	if opts.requireNoSideEffects {
		allowedSideEffects = noSideEffectClasses
	}
	if h.sideEffects == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(sets.List(allowedSideEffects), ", "))))
	} else if !allowedSideEffects.Has(string(*h.sideEffects)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("sideEffects"), *h.sideEffects, sets.List(allowedSideEffects)))
	}
	if h.timeoutSeconds != nil && (*h.timeoutSeconds > 30 || *h.timeoutSeconds < 1) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("timeoutSeconds"), *h.timeoutSeconds, "the timeout value must be between 1 and 30 seconds"))
	}

	selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValueInSelector}
	if h.namespaceSelector != nil {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(h.namespaceSelector, selectorOpts, fldPath.Child("namespaceSelector"))...)
	}
	if h.objectSelector != nil {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(h.objectSelector, selectorOpts, fldPath.Child("objectSelector"))...)
	}
	if h.mutating && h.reinvocationPolicy != nil && !supportedReinvocationPolicies.Has(string(*h.reinvocationPolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("reinvocationPolicy"), *h.reinvocationPolicy, sets.List(supportedReinvocationPolicies)))
	}

	allErrors = append(allErrors, validateClientConfig(&h.clientConfig, fldPath.Child("clientConfig"))...)

	if !opts.ignoreMatchConditions {
		allErrors = append(allErrors, validateMatchConditions(h.matchConditions, false, opts.preexistingMatchConditions, fldPath.Child("matchConditions"))...)
	}
	return allErrors
}

func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, fldPath *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(fldPath, "exactly one of url or service is required")}
	case cc.URL != nil:
		return webhook.ValidateWebhookURL(fldPath.Child("url"), *cc.URL, true)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		// kube-apiserver passes the service name where ValidateWebhookService
		// expects the namespace and the other way round, so a missing name is
		// reported on service.namespace ("service namespace is required") and
		// a missing namespace on service.name. Keep that, to answer as kube does.
		return webhook.ValidateWebhookService(fldPath.Child("service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)
	}
}

func hasAcceptedAdmissionReviewVersion(versions []string) bool {
	for _, v := range versions {
		for _, accepted := range acceptedAdmissionReviewVersions {
			if v == accepted {
				return true
			}
		}
	}
	return false
}

func validateAdmissionReviewVersions(versions []string, requireRecognized bool, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(versions) == 0 {
		return append(allErrors, field.Required(fldPath, fmt.Sprintf("must specify one of %v", strings.Join(acceptedAdmissionReviewVersions, ", "))))
	}
	seen := sets.New[string]()
	for i, v := range versions {
		if seen.Has(v) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), v, msg))
		}
	}
	if requireRecognized && !hasAcceptedAdmissionReviewVersion(versions) {
		allErrors = append(allErrors, field.Invalid(fldPath, versions, fmt.Sprintf("must include at least one of %v", strings.Join(acceptedAdmissionReviewVersions, ", "))))
	}
	return allErrors
}

// validateMatchConditions checks the matchConditions of a webhook or policy:
// at most 64, names qualified and unique, expressions compile to bool.
// hasParams declares the "params" variable (policies with a paramKind).
func validateMatchConditions(conditions []admissionregistrationv1.MatchCondition, hasParams bool, preexisting sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(conditions) > 64 {
		allErrors = append(allErrors, field.TooMany(fldPath, len(conditions), 64))
	}
	names := sets.New[string]()
	for i, mc := range conditions {
		p := fldPath.Index(i)
		trimmed := strings.TrimSpace(mc.Expression)
		if len(trimmed) == 0 {
			allErrors = append(allErrors, field.Required(p.Child("expression"), ""))
		} else {
			decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, StrictCost: true}
			allErrors = append(allErrors, compile(getStatelessCompiler(), boolExpression(trimmed), decls, preexisting.Has(trimmed), p.Child("expression"))...)
		}
		if len(mc.Name) == 0 {
			allErrors = append(allErrors, field.Required(p.Child("name"), ""))
		} else {
			allErrors = append(allErrors, validateQualifiedName(mc.Name, p.Child("name"))...)
			if names.Has(mc.Name) {
				allErrors = append(allErrors, field.Duplicate(p.Child("name"), mc.Name))
			} else {
				names.Insert(mc.Name)
			}
		}
	}
	return allErrors
}

// validateQualifiedName is core validation's ValidateQualifiedName: a label
// key, i.e. an optional DNS subdomain prefix and "/" and a name of at most 63
// characters.
func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(value) {
		allErrors = append(allErrors, field.Invalid(fldPath, value, msg))
	}
	return allErrors
}
