package admissionregistration

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is an expected error: "<type> <path>", e.g. "Required webhooks[0].name".
func errorKeys(errs field.ErrorList) []string {
	keys := make([]string, 0, len(errs))
	for _, e := range errs {
		keys = append(keys, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	sort.Strings(keys)
	return keys
}

func checkErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	sort.Strings(want)
	got := errorKeys(errs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got: %q\nwant: %q\nfull: %v", got, want, errs.ToAggregate())
	}
}

func ptr[T any](v T) *T { return &v }

func validMutatingWebhook() admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: "hook.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr("/mutate")},
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{""},
				APIVersions: []string{"v1"},
				Resources:   []string{"pods"},
			},
		}},
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func mutatingConfig(mutate func(*admissionregistrationv1.MutatingWebhook)) *admissionregistrationv1.MutatingWebhookConfiguration {
	hook := validMutatingWebhook()
	if mutate != nil {
		mutate(&hook)
	}
	obj := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{hook},
	}
	SetDefaultsMutatingWebhookConfiguration(obj)
	return obj
}

func TestMutatingWebhookDefaults(t *testing.T) {
	obj := &admissionregistrationv1.MutatingWebhookConfiguration{
		Webhooks: []admissionregistrationv1.MutatingWebhook{validMutatingWebhook()},
	}
	SetDefaultsMutatingWebhookConfiguration(obj)
	h := obj.Webhooks[0]
	if *h.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy = %v", *h.FailurePolicy)
	}
	if *h.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("matchPolicy = %v", *h.MatchPolicy)
	}
	if h.NamespaceSelector == nil || h.ObjectSelector == nil {
		t.Errorf("selectors not defaulted")
	}
	if *h.TimeoutSeconds != 10 {
		t.Errorf("timeoutSeconds = %v", *h.TimeoutSeconds)
	}
	if *h.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("reinvocationPolicy = %v", *h.ReinvocationPolicy)
	}
	if *h.ClientConfig.Service.Port != 443 {
		t.Errorf("port = %v", *h.ClientConfig.Service.Port)
	}
	if *h.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("scope = %v", *h.Rules[0].Scope)
	}

	noSideEffects := &admissionregistrationv1.ValidatingWebhookConfiguration{
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.b.c"}},
	}
	SetDefaultsValidatingWebhookConfiguration(noSideEffects)
	v := noSideEffects.Webhooks[0]
	if v.SideEffects != nil || v.AdmissionReviewVersions != nil {
		t.Errorf("sideEffects and admissionReviewVersions must not be defaulted in v1")
	}
	if *v.TimeoutSeconds != 10 || *v.FailurePolicy != admissionregistrationv1.Fail || v.NamespaceSelector == nil {
		t.Errorf("validating webhook not defaulted: %+v", v)
	}

	// Values that are set are kept.
	kept := mutatingConfig(func(h *admissionregistrationv1.MutatingWebhook) {
		h.TimeoutSeconds = ptr(int32(5))
		h.FailurePolicy = ptr(admissionregistrationv1.Ignore)
		h.ClientConfig.Service.Port = ptr(int32(8443))
	})
	if *kept.Webhooks[0].TimeoutSeconds != 5 || *kept.Webhooks[0].FailurePolicy != admissionregistrationv1.Ignore || *kept.Webhooks[0].ClientConfig.Service.Port != 8443 {
		t.Errorf("defaulting overwrote set values")
	}
}

func TestValidateMutatingWebhookConfiguration(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.MutatingWebhook)
		want   []string
	}{
		{name: "valid"},
		{name: "valid url", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr("https://example.com/hook")}
		}},
		{name: "missing name", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.Name = "" },
			want: []string{"Required value webhooks[0].name"}},
		{name: "name with two segments", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.Name = "example.com" },
			want: []string{"Invalid value webhooks[0].name"}},
		{name: "name not a subdomain", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.Name = "Hook.example.com" },
			want: []string{"Invalid value webhooks[0].name"}},
		{name: "missing sideEffects", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.SideEffects = nil },
			want: []string{"Required value webhooks[0].sideEffects"}},
		{name: "sideEffects Some", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
		}, want: []string{"Unsupported value webhooks[0].sideEffects"}},
		{name: "bad failurePolicy", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.FailurePolicy = ptr(admissionregistrationv1.FailurePolicyType("Sometimes"))
		}, want: []string{"Unsupported value webhooks[0].failurePolicy"}},
		{name: "bad matchPolicy", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchPolicy = ptr(admissionregistrationv1.MatchPolicyType("Fuzzy"))
		}, want: []string{"Unsupported value webhooks[0].matchPolicy"}},
		{name: "bad reinvocationPolicy", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ReinvocationPolicy = ptr(admissionregistrationv1.ReinvocationPolicyType("Always"))
		}, want: []string{"Unsupported value webhooks[0].reinvocationPolicy"}},
		{name: "timeout too large", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.TimeoutSeconds = ptr(int32(31)) },
			want: []string{"Invalid value webhooks[0].timeoutSeconds"}},
		{name: "timeout zero", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.TimeoutSeconds = ptr(int32(0)) },
			want: []string{"Invalid value webhooks[0].timeoutSeconds"}},
		{name: "no admissionReviewVersions", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.AdmissionReviewVersions = nil },
			want: []string{"Required value webhooks[0].admissionReviewVersions"}},
		{name: "unknown admissionReviewVersion", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} },
			want: []string{"Invalid value webhooks[0].admissionReviewVersions"}},
		{name: "duplicate and malformed admissionReviewVersions", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.AdmissionReviewVersions = []string{"v1", "v1", "V1"}
		}, want: []string{"Invalid value webhooks[0].admissionReviewVersions[1]", "Invalid value webhooks[0].admissionReviewVersions[2]"}},
		{name: "both url and service", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.ClientConfig.URL = ptr("https://x.example.com") },
			want: []string{"Required value webhooks[0].clientConfig"}},
		{name: "neither url nor service", mutate: func(h *admissionregistrationv1.MutatingWebhook) { h.ClientConfig.Service = nil },
			want: []string{"Required value webhooks[0].clientConfig"}},
		{name: "http url with user, fragment and query", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr("http://u:p@example.com/x?a=b#f")}
		}, want: []string{
			"Invalid value webhooks[0].clientConfig.url", "Invalid value webhooks[0].clientConfig.url",
			"Invalid value webhooks[0].clientConfig.url", "Invalid value webhooks[0].clientConfig.url",
		}},
		{name: "service path and port", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig.Service.Path = ptr("mutate")
			h.ClientConfig.Service.Port = ptr(int32(70000))
		}, want: []string{"Invalid value webhooks[0].clientConfig.service.path", "Invalid value webhooks[0].clientConfig.service.port"}},
		{name: "service name missing is reported on namespace, as kube does", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig.Service.Name = ""
		}, want: []string{"Required value webhooks[0].clientConfig.service.namespace"}},
		{name: "rule wildcards", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Operations = []admissionregistrationv1.OperationType{"*", "CREATE", "PATCH"}
			h.Rules[0].APIGroups = []string{"*", "apps"}
			h.Rules[0].APIVersions = []string{"*", ""}
			h.Rules[0].Scope = ptr(admissionregistrationv1.ScopeType("Everywhere"))
		}, want: []string{
			"Invalid value webhooks[0].rules[0].operations",
			"Unsupported value webhooks[0].rules[0].operations[2]",
			"Invalid value webhooks[0].rules[0].apiGroups",
			"Invalid value webhooks[0].rules[0].apiVersions",
			"Required value webhooks[0].rules[0].apiVersions[1]",
			"Unsupported value webhooks[0].rules[0].scope",
		}},
		{name: "rule required fields", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0] = admissionregistrationv1.RuleWithOperations{}
		}, want: []string{
			"Required value webhooks[0].rules[0].operations",
			"Required value webhooks[0].rules[0].apiGroups",
			"Required value webhooks[0].rules[0].apiVersions",
			"Required value webhooks[0].rules[0].resources",
		}},
		{name: "resource * with plain resource", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Resources = []string{"*", "pods"}
		}, want: []string{"Invalid value webhooks[0].rules[0].resources"}},
		{name: "resource * with subresources is fine", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Resources = []string{"*", "pods/status"}
		}},
		{name: "resource */* with others", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Resources = []string{"*/*", "pods"}
		}, want: []string{"Invalid value webhooks[0].rules[0].resources"}},
		{name: "resource overlapping subresource wildcards", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Resources = []string{"pods/*", "pods/status", "*/scale", "deployments/scale", ""}
		}, want: []string{
			"Invalid value webhooks[0].rules[0].resources[1]",
			"Invalid value webhooks[0].rules[0].resources[3]",
			"Required value webhooks[0].rules[0].resources[4]",
		}},
		{name: "selectors", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
			h.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "In"}}}
		}, want: []string{"Invalid value webhooks[0].namespaceSelector.matchLabels", "Required value webhooks[0].objectSelector.matchExpressions[0].values"}},
		{name: "valid match conditions", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "exclude-leases", Expression: `!(request.resource.group == "coordination.k8s.io" && request.resource.resource == "leases")`},
				{Name: "example.com/authz", Expression: `authorizer.group("").resource("pods").check("create").allowed()`},
			}
		}},
		{name: "bad match conditions", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "", Expression: "  "},
				{Name: "not valid!", Expression: "object.foo +"},
				{Name: "string", Expression: `"not a bool"`},
				{Name: "string", Expression: `params != null`},
			}
		}, want: []string{
			"Required value webhooks[0].matchConditions[0].expression",
			"Required value webhooks[0].matchConditions[0].name",
			"Invalid value webhooks[0].matchConditions[1].name",
			"Invalid value webhooks[0].matchConditions[1].expression",
			"Invalid value webhooks[0].matchConditions[2].expression",
			"Invalid value webhooks[0].matchConditions[3].expression",
			"Duplicate value webhooks[0].matchConditions[3].name",
		}},
		{name: "too many match conditions", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			for i := 0; i < 65; i++ {
				h.MatchConditions = append(h.MatchConditions, admissionregistrationv1.MatchCondition{Name: fmt.Sprintf("c%d", i), Expression: "true"})
			}
		}, want: []string{"Too many webhooks[0].matchConditions"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateMutatingWebhookConfiguration(mutatingConfig(tc.mutate)), tc.want...)
		})
	}
}

func TestWebhookConfigurationNameAndDuplicates(t *testing.T) {
	obj := mutatingConfig(nil)
	obj.Name = "Not_Valid"
	obj.Webhooks = append(obj.Webhooks, obj.Webhooks[0])
	checkErrors(t, ValidateMutatingWebhookConfiguration(obj),
		"Invalid value metadata.name", "Duplicate value webhooks[1].name")

	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "v.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr("https://example.com")},
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1beta1"},
		}},
	}
	SetDefaultsValidatingWebhookConfiguration(v)
	checkErrors(t, ValidateValidatingWebhookConfiguration(v))
	v.Webhooks[0].SideEffects = ptr(admissionregistrationv1.SideEffectClassUnknown)
	v.Webhooks = append(v.Webhooks, v.Webhooks[0])
	checkErrors(t, ValidateValidatingWebhookConfiguration(v),
		"Unsupported value webhooks[0].sideEffects", "Unsupported value webhooks[1].sideEffects", "Duplicate value webhooks[1].name")
}

func TestWebhookConfigurationUpdate(t *testing.T) {
	// A stored object that already has side effects "Some", duplicate names
	// and an unknown review version may be updated without fixing them.
	old := mutatingConfig(func(h *admissionregistrationv1.MutatingWebhook) {
		h.SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
		h.AdmissionReviewVersions = []string{"v0"}
	})
	old.Webhooks = append(old.Webhooks, old.Webhooks[0])
	old.ResourceVersion = "1"
	updated := old.DeepCopy()
	updated.Webhooks[0].TimeoutSeconds = ptr(int32(20))
	checkErrors(t, ValidateMutatingWebhookConfigurationUpdate(updated, old))

	// Once fixed, the rules apply again.
	fixed := mutatingConfig(nil)
	fixed.ResourceVersion = "1"
	broken := fixed.DeepCopy()
	broken.Webhooks[0].SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
	checkErrors(t, ValidateMutatingWebhookConfigurationUpdate(broken, fixed), "Unsupported value webhooks[0].sideEffects")

	// The metadata update rules are the store's, common to every kind
	// (kube's kind validation checks the metadata as on create only).
	renamed := fixed.DeepCopy()
	renamed.Name = "other"
	checkErrors(t, ValidateMutatingWebhookConfigurationUpdate(renamed, fixed))

	// Unchanged match conditions are not recompiled; changed ones are.
	vold := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "config", ResourceVersion: "1"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "v.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr("https://example.com")},
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "not valid +"}},
		}},
	}
	SetDefaultsValidatingWebhookConfiguration(vold)
	vnew := vold.DeepCopy()
	vnew.Webhooks[0].TimeoutSeconds = ptr(int32(3))
	checkErrors(t, ValidateValidatingWebhookConfigurationUpdate(vnew, vold))
	vnew.Webhooks[0].MatchConditions = append(vnew.Webhooks[0].MatchConditions, admissionregistrationv1.MatchCondition{Name: "ok", Expression: "true"})
	checkErrors(t, ValidateValidatingWebhookConfigurationUpdate(vnew, vold), "Invalid value webhooks[0].matchConditions[0].expression")
}

func TestWebhookErrorMessages(t *testing.T) {
	obj := mutatingConfig(func(h *admissionregistrationv1.MutatingWebhook) {
		h.SideEffects = nil
		h.Rules[0].Operations = []admissionregistrationv1.OperationType{"*", "CREATE"}
		h.TimeoutSeconds = ptr(int32(40))
	})
	got := ValidateMutatingWebhookConfiguration(obj).ToAggregate().Error()
	for _, want := range []string{
		`webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{"*", "CREATE"}: if '*' is present, must not specify other operations`,
		`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`,
		`webhooks[0].timeoutSeconds: Invalid value: 40: the timeout value must be between 1 and 30 seconds`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q not in %q", want, got)
		}
	}
}
