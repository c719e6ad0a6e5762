package admissionregistration

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "policy.example.com"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "ReplicaLimit"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"apps"},
							APIVersions: []string{"v1"},
							Resources:   []string{"deployments"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "has-params", Expression: "params != null"}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "replicas", Expression: "object.spec.replicas"},
				{Name: "tooMany", Expression: "variables.replicas > 5"},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "!variables.tooMany",
				MessageExpression: `"replicas must be at most " + string(params.max)`,
				Reason:            ptr(metav1.StatusReasonForbidden),
			}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{
				Key:             "high-replica-count",
				ValueExpression: `"Deployment spec.replicas set to " + string(object.spec.replicas)`,
			}},
		},
	}
}

func defaultedPolicy(mutate func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := validPolicy()
	if mutate != nil {
		mutate(&p.Spec)
	}
	SetDefaultsValidatingAdmissionPolicy(p)
	return p
}

func TestPolicyDefaults(t *testing.T) {
	p := defaultedPolicy(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{}}
	})
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy = %v", *p.Spec.FailurePolicy)
	}
	mc := p.Spec.MatchConstraints
	if *mc.MatchPolicy != admissionregistrationv1.Equivalent || mc.NamespaceSelector == nil || mc.ObjectSelector == nil {
		t.Errorf("matchConstraints not defaulted: %+v", mc)
	}
	if *mc.ResourceRules[0].Scope != admissionregistrationv1.AllScopes || *mc.ExcludeResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("rule scopes not defaulted")
	}
	if p.Spec.Validations[0].Reason == nil {
		t.Errorf("reason was reset")
	}

	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			ParamRef:       &admissionregistrationv1.ParamRef{Name: "p"},
			MatchResources: &admissionregistrationv1.MatchResources{},
		},
	}
	SetDefaultsValidatingAdmissionPolicyBinding(b)
	if *b.Spec.MatchResources.MatchPolicy != admissionregistrationv1.Equivalent || b.Spec.MatchResources.ObjectSelector == nil {
		t.Errorf("binding matchResources not defaulted")
	}
	if b.Spec.ParamRef.ParameterNotFoundAction != nil {
		t.Errorf("parameterNotFoundAction must not be defaulted")
	}
	empty := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	SetDefaultsValidatingAdmissionPolicyBinding(empty)
	if empty.Spec.MatchResources != nil {
		t.Errorf("matchResources must stay unset")
	}
}

func TestValidateValidatingAdmissionPolicy(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)
		want   []string
	}{
		{name: "valid"},
		{name: "valid without params or variables", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = nil
			s.Variables = nil
			s.MatchConditions = nil
			s.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5", Message: "too many"}}
			s.AuditAnnotations = nil
		}},
		{name: "audit annotations only", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) { s.Validations = nil }},
		{name: "no validations nor auditAnnotations", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Validations = nil
			s.AuditAnnotations = nil
		}, want: []string{"Required value spec.validations", "Required value spec.auditAnnotations"}},
		{name: "bad failurePolicy", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.FailurePolicy = ptr(admissionregistrationv1.FailurePolicyType("Maybe"))
		}, want: []string{"Unsupported value spec.failurePolicy"}},
		{name: "missing matchConstraints", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) { s.MatchConstraints = nil },
			want: []string{"Required value spec.matchConstraints"}},
		{name: "missing resourceRules", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = nil
		}, want: []string{"Required value spec.matchConstraints.resourceRules"}},
		{name: "bad resource rules", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules[0].ResourceNames = []string{"a", "a", "b/c"}
			s.MatchConstraints.ResourceRules[0].Resources = []string{"*/*", "pods"}
			s.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{}}
			s.MatchConstraints.MatchPolicy = ptr(admissionregistrationv1.MatchPolicyType("Loose"))
		}, want: []string{
			"Duplicate value spec.matchConstraints.resourceRules[0].resourceNames[1]",
			"Invalid value spec.matchConstraints.resourceRules[0].resourceNames[2]",
			"Invalid value spec.matchConstraints.resourceRules[0].resources",
			"Required value spec.matchConstraints.excludeResourceRules[0].operations",
			"Required value spec.matchConstraints.excludeResourceRules[0].apiGroups",
			"Required value spec.matchConstraints.excludeResourceRules[0].apiVersions",
			"Required value spec.matchConstraints.excludeResourceRules[0].resources",
			"Unsupported value spec.matchConstraints.matchPolicy",
		}},
		{name: "paramKind", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "Not_A_Kind"}
		}, want: []string{"Invalid value spec.paramKind.apiVersion", "Invalid value spec.paramKind.kind"}},
		{name: "paramKind required fields", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{}
		}, want: []string{"Required value spec.paramKind.apiVersion", "Required value spec.paramKind.kind"}},
		{name: "params without paramKind", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = nil
		}, want: []string{
			"Invalid value spec.matchConditions[0].expression",
			"Invalid value spec.validations[0].messageExpression",
		}},
		{name: "variables", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Variables = []admissionregistrationv1.Variable{
				{Name: "", Expression: " "},
				{Name: "in", Expression: "1"},
				{Name: "ok", Expression: "variables.missing"},
				{Name: "x-y", Expression: "1 +"},
			}
			s.Validations[0].Expression = "true"
		}, want: []string{
			"Required value spec.variables[0].name",
			"Required value spec.variables[0].expression",
			"Invalid value spec.variables[1].name",
			"Invalid value spec.variables[2].expression",
			"Invalid value spec.variables[3].name",
			"Invalid value spec.variables[3].expression",
		}},
		{name: "validations", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Validations = []admissionregistrationv1.Validation{
				{Expression: ""},
				{Expression: "object.spec.replicas", Message: "two\nlines", MessageExpression: "  "},
				{Expression: "true", Message: "   ", MessageExpression: "42", Reason: ptr(metav1.StatusReasonUnauthorized)},
				{Expression: "authorizer.path('/healthz').check('get').allowed()", MessageExpression: "authorizer.path('/x').check('get').reason()"},
			}
		}, want: []string{
			"Required value spec.validations[0].expression",
			"Invalid value spec.validations[1].expression",
			"Invalid value spec.validations[1].messageExpression",
			"Invalid value spec.validations[1].message",
			"Invalid value spec.validations[2].messageExpression",
			"Invalid value spec.validations[2].message",
			"Unsupported value spec.validations[2].reason",
			"Invalid value spec.validations[3].messageExpression",
		}},
		{name: "audit annotations", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
				{Key: "a", ValueExpression: ""},
				{Key: "a", ValueExpression: "1"},
				{Key: "bad key", ValueExpression: "null"},
				{Key: strings.Repeat("k", 64), ValueExpression: `"v"`},
				{Key: "long", ValueExpression: `"` + strings.Repeat("v", 5*1024) + `"`},
			}
		}, want: []string{
			"Required value spec.auditAnnotations[0].valueExpression",
			"Invalid value spec.auditAnnotations[1].valueExpression",
			"Duplicate value spec.auditAnnotations[1].key",
			"Invalid value spec.auditAnnotations[2].key",
			"Invalid value spec.auditAnnotations[3].key",
			"Required value spec.auditAnnotations[4].valueExpression",
		}},
		{name: "too many audit annotations", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.AuditAnnotations = nil
			for i := 0; i < 21; i++ {
				s.AuditAnnotations = append(s.AuditAnnotations, admissionregistrationv1.AuditAnnotation{Key: fmt.Sprintf("k%d", i), ValueExpression: `"v"`})
			}
		}, want: []string{"Invalid value spec.auditAnnotations"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateValidatingAdmissionPolicy(defaultedPolicy(tc.mutate)), tc.want...)
		})
	}
}

func TestValidatePolicyWithoutDefaults(t *testing.T) {
	p := validPolicy()
	p.Name = ""
	checkErrors(t, ValidateValidatingAdmissionPolicy(p),
		"Required value metadata.name",
		"Required value spec.failurePolicy",
		"Required value spec.matchConstraints.matchPolicy",
		"Required value spec.matchConstraints.namespaceSelector",
		"Required value spec.matchConstraints.objectSelector",
		"Invalid value spec.auditAnnotations[0].key",
	)
}

func TestValidatePolicyUpdate(t *testing.T) {
	old := defaultedPolicy(nil)
	old.ResourceVersion = "1"
	old.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: "1 +"}}

	// Match conditions unchanged: not re-checked.
	updated := old.DeepCopy()
	updated.Spec.Validations[0].Message = "changed"
	checkErrors(t, ValidateValidatingAdmissionPolicyUpdate(updated, old))

	// paramKind changed: they are.
	updated.Spec.ParamKind.Kind = "OtherKind"
	checkErrors(t, ValidateValidatingAdmissionPolicyUpdate(updated, old), "Invalid value spec.matchConditions[0].expression")
}

func TestValidatePolicyStatusUpdate(t *testing.T) {
	old := defaultedPolicy(nil)
	old.ResourceVersion = "1"
	updated := old.DeepCopy()
	updated.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{
		ObservedGeneration: 1,
		TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{
			{FieldRef: "spec.validations[0].expression", Warning: "no such field"},
			{FieldRef: " ", Warning: ""},
			{FieldRef: "spec.validations[0", Warning: "w"},
		}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: "Maybe", Reason: "R", LastTransitionTime: metav1.Now()}},
	}
	checkErrors(t, ValidateValidatingAdmissionPolicyStatusUpdate(updated, old),
		"Required value status.typeChecking.expressionWarnings[1].fieldRef",
		"Required value status.typeChecking.expressionWarnings[1].warning",
		"Invalid value status.typeChecking.expressionWarnings[2].fieldRef",
		"Unsupported value status.conditions[0].status",
	)
	// An invalid spec does not matter on the status subresource.
	updated.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
	updated.Spec.Validations = nil
	updated.Spec.AuditAnnotations = nil
	checkErrors(t, ValidateValidatingAdmissionPolicyStatusUpdate(updated, old))
}

func defaultedBinding(mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "policy.example.com",
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    "limits",
				Namespace:               "default",
				ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit},
		},
	}
	if mutate != nil {
		mutate(&b.Spec)
	}
	SetDefaultsValidatingAdmissionPolicyBinding(b)
	return b
}

func TestValidateValidatingAdmissionPolicyBinding(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec)
		want   []string
	}{
		{name: "valid"},
		{name: "valid with selector and matchResources without rules", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{
				Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction),
			}
			s.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "test"}}}
		}},
		{name: "no paramRef", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.ParamRef = nil }},
		{name: "policyName", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.PolicyName = "" },
			want: []string{"Required value spec.policyName"}},
		{name: "policyName invalid", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.PolicyName = "Bad_Name" },
			want: []string{"Invalid value spec.policyName"}},
		{name: "paramRef name and selector", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef.Name = "a/b"
			s.ParamRef.Selector = &metav1.LabelSelector{}
			s.ParamRef.ParameterNotFoundAction = ptr(admissionregistrationv1.ParameterNotFoundActionType("Ignore"))
		}, want: []string{
			"Invalid value spec.paramRef.name",
			"Forbidden spec.paramRef.name",
			"Forbidden spec.paramRef.selector",
			"Unsupported value spec.paramRef.parameterNotFoundAction",
		}},
		{name: "paramRef empty", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{}
		}, want: []string{"Required value spec.paramRef", "Required value spec.paramRef.parameterNotFoundAction"}},
		{name: "validationActions empty", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = nil
		}, want: []string{"Required value spec.validationActions"}},
		{name: "validationActions bad", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{"Deny", "Warn", "Deny", "Log"}
		}, want: []string{
			"Duplicate value spec.validationActions[2]",
			"Unsupported value spec.validationActions[3]",
			"Invalid value spec.validationActions",
		}},
		{name: "matchResources uses kube's path", mutate: func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.MatchResources = &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}},
				ResourceRules:  []admissionregistrationv1.NamedRuleWithOperations{{}},
			}
		}, want: []string{
			"Invalid value spec.matchResouces.objectSelector.matchLabels",
			"Required value spec.matchResouces.resourceRules[0].operations",
			"Required value spec.matchResouces.resourceRules[0].apiGroups",
			"Required value spec.matchResouces.resourceRules[0].apiVersions",
			"Required value spec.matchResouces.resourceRules[0].resources",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateValidatingAdmissionPolicyBinding(defaultedBinding(tc.mutate)), tc.want...)
		})
	}
}

func TestBindingUpdateAndMessages(t *testing.T) {
	old := defaultedBinding(nil)
	old.ResourceVersion = "1"
	updated := old.DeepCopy()
	updated.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{"Deny", "Warn"}
	errs := ValidateValidatingAdmissionPolicyBindingUpdate(updated, old)
	checkErrors(t, errs, "Invalid value spec.validationActions")
	want := `spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn"}: must not contain both Deny and Warn`
	if !strings.Contains(errs.ToAggregate().Error(), want) {
		t.Errorf("got %q, want it to contain %q", errs.ToAggregate().Error(), want)
	}
}

func TestPolicyCELMessages(t *testing.T) {
	p := defaultedPolicy(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Validations[0].Expression = `"not a bool"`
	})
	errs := ValidateValidatingAdmissionPolicy(p)
	checkErrors(t, errs, "Invalid value spec.validations[0].expression")
	if got := errs[0].Detail; got != "must evaluate to bool but got string" {
		t.Errorf("detail = %q", got)
	}
	if errs[0].BadValue != `"not a bool"` {
		t.Errorf("bad value = %v", errs[0].BadValue)
	}
}
