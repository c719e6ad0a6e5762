// Package admissionregistration holds kube-apiserver's defaulting and
// validation rules for the admissionregistration.k8s.io kinds
// (MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding), written
// against the v1 types. The rules follow kubernetes v1.33
// (pkg/apis/admissionregistration/v1/defaults.go and
// pkg/apis/admissionregistration/validation/validation.go): the same field
// paths, error types and, where possible, the same detail messages.
//
// Defaults must be applied before validation, as kube-apiserver does: several
// fields (the policy's failurePolicy, matchPolicy and selectors) are reported
// as Required when the defaulting step has not filled them.
package admissionregistration

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetDefaultsMutatingWebhookConfiguration fills the defaults kube-apiserver
// materialises on every webhook of a MutatingWebhookConfiguration.
// sideEffects and admissionReviewVersions are not defaulted in v1.
func SetDefaultsMutatingWebhookConfiguration(obj *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range obj.Webhooks {
		hook := &obj.Webhooks[i]
		defaultFailurePolicy(&hook.FailurePolicy)
		defaultMatchPolicy(&hook.MatchPolicy)
		defaultSelector(&hook.NamespaceSelector)
		defaultSelector(&hook.ObjectSelector)
		defaultTimeout(&hook.TimeoutSeconds)
		if hook.ReinvocationPolicy == nil {
			never := admissionregistrationv1.NeverReinvocationPolicy
			hook.ReinvocationPolicy = &never
		}
		defaultClientConfig(&hook.ClientConfig)
		for j := range hook.Rules {
			defaultScope(&hook.Rules[j].Rule)
		}
	}
}

// SetDefaultsValidatingWebhookConfiguration fills the defaults kube-apiserver
// materialises on every webhook of a ValidatingWebhookConfiguration.
func SetDefaultsValidatingWebhookConfiguration(obj *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range obj.Webhooks {
		hook := &obj.Webhooks[i]
		defaultFailurePolicy(&hook.FailurePolicy)
		defaultMatchPolicy(&hook.MatchPolicy)
		defaultSelector(&hook.NamespaceSelector)
		defaultSelector(&hook.ObjectSelector)
		defaultTimeout(&hook.TimeoutSeconds)
		defaultClientConfig(&hook.ClientConfig)
		for j := range hook.Rules {
			defaultScope(&hook.Rules[j].Rule)
		}
	}
}

// SetDefaultsValidatingAdmissionPolicy fills spec.failurePolicy and, when
// spec.matchConstraints is set, its matchPolicy, selectors and rule scopes.
// Validation reason is not defaulted (the "Invalid" default of the docs is
// applied when a request is denied, not stored).
func SetDefaultsValidatingAdmissionPolicy(obj *admissionregistrationv1.ValidatingAdmissionPolicy) {
	defaultFailurePolicy(&obj.Spec.FailurePolicy)
	if obj.Spec.MatchConstraints != nil {
		defaultMatchResources(obj.Spec.MatchConstraints)
	}
}

// SetDefaultsValidatingAdmissionPolicyBinding fills the defaults of
// spec.matchResources when it is set. Upstream has no default for
// spec.paramRef.parameterNotFoundAction, so that field stays required.
func SetDefaultsValidatingAdmissionPolicyBinding(obj *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if obj.Spec.MatchResources != nil {
		defaultMatchResources(obj.Spec.MatchResources)
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	defaultMatchPolicy(&m.MatchPolicy)
	defaultSelector(&m.NamespaceSelector)
	defaultSelector(&m.ObjectSelector)
	for i := range m.ResourceRules {
		defaultScope(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		defaultScope(&m.ExcludeResourceRules[i].Rule)
	}
}

func defaultFailurePolicy(p **admissionregistrationv1.FailurePolicyType) {
	if *p == nil {
		fail := admissionregistrationv1.Fail
		*p = &fail
	}
}

func defaultMatchPolicy(p **admissionregistrationv1.MatchPolicyType) {
	if *p == nil {
		equivalent := admissionregistrationv1.Equivalent
		*p = &equivalent
	}
}

func defaultSelector(s **metav1.LabelSelector) {
	if *s == nil {
		*s = &metav1.LabelSelector{}
	}
}

func defaultTimeout(t **int32) {
	if *t == nil {
		ten := int32(10)
		*t = &ten
	}
}

func defaultClientConfig(cc *admissionregistrationv1.WebhookClientConfig) {
	if cc.Service != nil && cc.Service.Port == nil {
		port := int32(443)
		cc.Service.Port = &port
	}
}

func defaultScope(rule *admissionregistrationv1.Rule) {
	if rule.Scope == nil {
		all := admissionregistrationv1.AllScopes
		rule.Scope = &all
	}
}
