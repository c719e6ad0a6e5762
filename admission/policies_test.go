package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// A policy applies while a binding to it exists; without one the plugin is
// not asked, so a deleted binding stops applying at once (the plugin itself
// recompiles its policies once a second).
func TestPoliciesApplyWhileBound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWebhooks(nil)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicies(ctx, w, dynamicfake.NewSimpleDynamicClient(scheme), meta.NewDefaultRESTMapper(nil))
	if err != nil {
		t.Fatal(err)
	}
	create := func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
		attr := admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", "c",
			corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"})
		return p.Validate(ctx, attr, admission.NewObjectInterfacesFromScheme(scheme))
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", ResourceVersion: "1"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	if err := w.Observe(ns, false); err != nil {
		t.Fatal(err)
	}
	if w.HasPolicyBindings() {
		t.Fatal("HasPolicyBindings with no binding")
	}
	if err := create(); err != nil {
		t.Fatalf("no policy: %v", err)
	}

	// As the API's defaulting leaves them.
	fail, equivalent := admissionregistrationv1.Fail, admissionregistrationv1.Equivalent
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny", ResourceVersion: "1"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: &equivalent,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "denied by the test policy"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny", ResourceVersion: "2"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "deny",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if err := w.Observe(policy, false); err != nil {
		t.Fatal(err)
	}
	if w.HasPolicyBindings() {
		t.Fatal("HasPolicyBindings with a policy and no binding")
	}
	if err := w.Observe(binding, false); err != nil {
		t.Fatal(err)
	}
	if !w.HasPolicyBindings() {
		t.Fatal("no HasPolicyBindings with a binding")
	}
	// The plugin takes a new binding on its next refresh.
	deadline := time.Now().Add(10 * time.Second)
	for err = create(); err == nil && time.Now().Before(deadline); err = create() {
		time.Sleep(10 * time.Millisecond)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "denied by the test policy") {
		t.Fatalf("bound policy: %v", err)
	}

	if err := w.Observe(binding, true); err != nil {
		t.Fatal(err)
	}
	if w.HasPolicyBindings() {
		t.Fatal("HasPolicyBindings after the binding's deletion")
	}
	if err := create(); err != nil {
		t.Fatalf("binding deleted: %v", err)
	}
}

// Policies read `request` and `namespaceObject` wherever they name them: in
// a variable, a matchCondition, a messageExpression or an auditAnnotation,
// not only in a validation.
func TestPolicyInputsWhereverRead(t *testing.T) {
	fail := admissionregistrationv1.Fail
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
	attr := &admission.VersionedAttributes{
		Attributes: admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", "c",
			corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"}),
		VersionedKind:   corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		VersionedObject: cm,
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"tier": "gold"}}}
	for _, tc := range []struct {
		name        string
		spec        admissionregistrationv1.ValidatingAdmissionPolicySpec
		wantMessage string // of the one deny decision; "" for none
		wantAudit   string // the one audit annotation's value
	}{{
		name: "request in a variable",
		spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Variables:   []admissionregistrationv1.Variable{{Name: "op", Expression: "request.operation"}},
			Validations: []admissionregistrationv1.Validation{{Expression: `variables.op != "CREATE"`, Message: "no creates"}},
		},
		wantMessage: "no creates",
	}, {
		// (kube gives matchConditions no namespaceObject: null.)
		name: "request in a matchCondition",
		spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "creates", Expression: `request.operation == "CREATE" && namespaceObject == null`}},
			Validations:     []admissionregistrationv1.Validation{{Expression: "false", Message: "a create"}},
		},
		wantMessage: "a create",
	}, {
		name: "both in a messageExpression only",
		spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{{Expression: "false", MessageExpression: `request.operation + " in " + namespaceObject.metadata.name`}},
		},
		wantMessage: "CREATE in default",
	}, {
		name: "request in an auditAnnotation only",
		spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations:      []admissionregistrationv1.Validation{{Expression: "true"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "by", ValueExpression: "request.userInfo.username"}},
		},
		wantAudit: "admin",
	}, {
		name: "neither",
		spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{{Expression: `object.metadata.name != "c"`, Message: "not c"}},
		},
		wantMessage: "not c",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.FailurePolicy = &fail
			policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.spec}
			result := compilePolicy(policy).Validate(context.Background(), corev1.SchemeGroupVersion.WithResource("configmaps"), attr, nil, ns, 1000000, allowAll{})
			var denials []string
			for _, d := range result.Decisions {
				if d.Action == "deny" {
					denials = append(denials, d.Message)
				}
			}
			if tc.wantMessage == "" && len(denials) > 0 || tc.wantMessage != "" && (len(denials) != 1 || denials[0] != tc.wantMessage) {
				t.Errorf("denials %q, want %q", denials, tc.wantMessage)
			}
			if tc.wantAudit != "" && (len(result.AuditAnnotations) != 1 || result.AuditAnnotations[0].Value != tc.wantAudit) {
				t.Errorf("audit annotations %+v, want one with %q", result.AuditAnnotations, tc.wantAudit)
			}
		})
	}
}
