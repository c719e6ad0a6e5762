package e2e

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kapi type-checks each policy against the schemas of the kinds it matches
// and writes status.typeChecking and status.observedGeneration, as
// kube-apiserver's controller does; a new generation is checked again.
func TestPolicyTypeChecking(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	vaps := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "typed"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"v1beta2"}, Resources: []string{"deviceclasses"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{
				{Expression: "object.spec.selectors.size() < 3"},
				{Expression: "object.spec.nosuchfield == 'x'"},
			},
		},
	}
	if _, err := vaps.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *admissionregistrationv1.ValidatingAdmissionPolicy
	waitFor(t, "typeChecking of generation 1", func() bool {
		var err error
		got, err = vaps.Get(ctx, "typed", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == 1 && got.Status.TypeChecking != nil
	})
	w := got.Status.TypeChecking.ExpressionWarnings
	if len(w) != 1 || w[0].FieldRef != "spec.validations[1].expression" ||
		!strings.Contains(w[0].Warning, "resource.k8s.io/v1beta2, Kind=DeviceClass: ERROR: <input>:1:12: undefined field 'nosuchfield'") {
		t.Errorf("expressionWarnings %+v", w)
	}

	// Fixing the expression: generation 2 is checked clean.
	got.Spec.Validations[1].Expression = "object.spec.selectors.size() > 0"
	if _, err := vaps.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "typeChecking of generation 2", func() bool {
		cur, err := vaps.Get(ctx, "typed", metav1.GetOptions{})
		return err == nil && cur.Status.ObservedGeneration == 2 && cur.Status.TypeChecking != nil && len(cur.Status.TypeChecking.ExpressionWarnings) == 0
	})
}

// settledPolicy waits until kapi's type-checking controller has recorded
// the policy's current generation (a status write, as kube-apiserver's
// controller makes right after each spec change), and returns the policy.
func settledPolicy(ctx context.Context, t testing.TB, k *kapi, name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	var p *admissionregistrationv1.ValidatingAdmissionPolicy
	waitFor(t, "policy "+name+" to be type-checked", func() bool {
		var err error
		p, err = k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil
	})
	return p
}
