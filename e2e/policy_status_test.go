package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
		// The warnings the controller applied before are gone (and
		// typeChecking with them: structured-merge-diff drops the
		// emptied object, as under kube-apiserver).
		return err == nil && cur.Status.ObservedGeneration == 2 && (cur.Status.TypeChecking == nil || len(cur.Status.TypeChecking.ExpressionWarnings) == 0)
	})
	// The status is applied by the controller's own field manager, as
	// kube's controller applies it (tools wait on that manager).
	cur, err := vaps.Get(ctx, "typed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applied := false
	for _, e := range cur.ManagedFields {
		applied = applied || e.Manager == "validatingadmissionpolicy-status" && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "status"
	}
	if !applied {
		t.Errorf("managedFields %s, want validatingadmissionpolicy-status's Apply of status", fmtJSON(cur.ManagedFields))
	}
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
		return err == nil && p.Status.ObservedGeneration == p.Generation
	})
	return p
}

// With --audit-log-path, a policy's Audit action and auditAnnotations are
// recorded in the request's audit event, under kube-apiserver's keys.
func TestPolicyAuditLog(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	k := startKapi(t, "--in-memory", "--audit-log-path", logPath)
	ctx := ctxT(t)
	adm := k.Client.AdmissionregistrationV1()
	_, err := adm.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "audited"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
				},
			}}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.metadata.name.startsWith('ok-')", Message: "names must start with ok-"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "name", ValueExpression: "'seen ' + object.metadata.name"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "audited"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "audited", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Namespaces are created (Audit never denies) until one is audited.
	var event map[string]any
	for i := 0; event == nil; i++ {
		name := fmt.Sprintf("bad-%d", i)
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) != nil {
				t.Fatalf("audit line is not JSON: %q", line)
			}
			ref, _ := ev["objectRef"].(map[string]any)
			ann, _ := ev["annotations"].(map[string]any)
			if ref["name"] == name && ann["audited/name"] != nil {
				event = ev
			}
		}
		if i > 500 {
			t.Fatal("no audit event with the policy's annotations")
		}
	}
	ann := event["annotations"].(map[string]any)
	if !strings.HasPrefix(event["kind"].(string), "Event") || event["apiVersion"] != "audit.k8s.io/v1" || event["verb"] != "create" {
		t.Errorf("event header: %v %v %v", event["kind"], event["apiVersion"], event["verb"])
	}
	failure, _ := ann["validation.policy.admission.k8s.io/validation_failure"].(string)
	if !strings.Contains(failure, `"message":"names must start with ok-"`) || !strings.Contains(failure, `"validationActions":["Audit"]`) {
		t.Errorf("validation_failure annotation %q", failure)
	}
	// Every answer carries an Audit-Id, the client's when it sent one, and
	// the audit event has the same id.
	if id := k.do(t, "GET", "/api/v1/namespaces", nil).Header.Get("Audit-Id"); len(id) != 36 {
		t.Errorf("Audit-Id %q, want a generated uuid", id)
	}
	if r := k.do(t, "GET", "/api/v1/namespaces/default", nil, "Audit-Id: my-audit-id"); r.Header.Get("Audit-Id") != "my-audit-id" {
		t.Errorf("Audit-Id %q, want the client's my-audit-id", r.Header.Get("Audit-Id"))
	}
	if data, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(data), `"auditID":"my-audit-id"`) {
		t.Errorf("no audit event with the client's Audit-Id (%v)", err)
	}
	// The admission plugin's own metrics, under kube-apiserver's names.
	metrics := string(k.do(t, "GET", "/metrics", nil).Body)
	if !strings.Contains(metrics, "apiserver_validating_admission_policy_check_total{") || !strings.Contains(metrics, `policy="audited"`) {
		t.Errorf("/metrics lacks apiserver_validating_admission_policy_check_total for the policy")
	}
}

// A policy matching a custom resource is checked against the CRD's schema,
// and checked again when that schema changes.
func TestPolicyTypeCheckingFollowsCRDSchema(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := newCRD("gadgets", "typecheck.example.com")
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settledCRD(ctx, t, k, crd.Name)
	vaps := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := vaps.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "gadget-colour"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"typecheck.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"gadgets"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.colour != 'red'"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := settledPolicy(ctx, t, k, "gadget-colour")
	if w := p.Status.TypeChecking.ExpressionWarnings; len(w) != 1 || !strings.Contains(w[0].Warning, "undefined field 'colour'") {
		t.Fatalf("warnings before the schema has colour: %+v", w)
	}
	waitFor(t, "the CRD update", func() bool {
		cur, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		spec := cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties["colour"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		_, err = k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil
	})
	waitFor(t, "the policy to be checked clean", func() bool {
		cur, err := vaps.Get(ctx, "gadget-colour", metav1.GetOptions{})
		return err == nil && (cur.Status.TypeChecking == nil || len(cur.Status.TypeChecking.ExpressionWarnings) == 0) && cur.Status.ObservedGeneration == 1
	})
}

// Every built-in kind kapi serves is typed for the type checker, as kube's
// controller types them (its schema resolver holds k8s.io/api's and
// apiextensions-apiserver's definitions; kube's integration test
// TestBuiltinResolution resolves them all): a policy matching any of them
// gets its mistyped expression's warning, naming the kind.
func TestPolicyTypeCheckingBuiltinKinds(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	vaps := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	for i, c := range []struct{ group, version, resource, kind string }{
		{"", "v1", "namespaces", "/v1, Kind=Namespace"},
		{"apiextensions.k8s.io", "v1", "customresourcedefinitions", "apiextensions.k8s.io/v1, Kind=CustomResourceDefinition"},
		{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "admissionregistration.k8s.io/v1, Kind=ValidatingWebhookConfiguration"},
		{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "admissionregistration.k8s.io/v1, Kind=MutatingWebhookConfiguration"},
		{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "admissionregistration.k8s.io/v1, Kind=ValidatingAdmissionPolicy"},
		{"admissionregistration.k8s.io", "v1beta1", "validatingadmissionpolicybindings", "admissionregistration.k8s.io/v1beta1, Kind=ValidatingAdmissionPolicyBinding"},
		{"resource.k8s.io", "v1beta2", "deviceclasses", "resource.k8s.io/v1beta2, Kind=DeviceClass"},
	} {
		name := fmt.Sprintf("builtin-%d", i)
		if _, err := vaps.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{c.group}, APIVersions: []string{c.version}, Resources: []string{c.resource}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.creationTimestamp == 'x'"}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := settledPolicy(ctx, t, k, name)
		want := c.kind + ": ERROR: <input>:1:35: found no matching overload for '_==_' applied to '(timestamp, string)'"
		if p.Status.TypeChecking == nil || len(p.Status.TypeChecking.ExpressionWarnings) != 1 ||
			p.Status.TypeChecking.ExpressionWarnings[0].FieldRef != "spec.validations[0].expression" ||
			!strings.HasPrefix(p.Status.TypeChecking.ExpressionWarnings[0].Warning, want) {
			t.Errorf("%s: typeChecking %s, want the warning %q", c.resource, fmtJSON(p.Status.TypeChecking), want)
		}
	}
}
