package e2e

// ValidatingAdmissionPolicies and their bindings, as a client sees them:
// the codes, reasons, messages, details and Warning headers of
// kube-apiserver v1.33 (k8s.io/apiserver/pkg/admission/plugin/policy).
// Policies, bindings and params reach the admission caches asynchronously,
// so each test first repeats a probe request until the policy shows its
// effect, then checks the exact answers.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The objects under policy: DeviceClasses and Namespaces (cluster-scoped)
// and Gizmos, a small namespaced custom resource with spec.size.
const (
	polGroup    = "vap.example.com"
	polDCRes    = "deviceclasses.resource.k8s.io"
	polNSRes    = "namespaces"
	polGizmoRes = "gizmos." + polGroup
)

var (
	polDCPath = collectionPath(gvrDevClasses)
	polNSPath = collectionPath(gvrNamespaces)
)

func polGizmoPath(ns string) string {
	return "/apis/" + polGroup + "/v1/namespaces/" + ns + "/gizmos"
}

// polObject is the JSON of an object to create.
func polObject(apiVersion, kind, name string, labels map[string]string, spec map[string]any) []byte {
	obj := map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "labels": labels},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return data
}

func polDC(name string, labels map[string]string) []byte {
	return polObject("resource.k8s.io/v1beta2", "DeviceClass", name, labels, map[string]any{})
}

func polNS(name string, labels map[string]string) []byte {
	return polObject("v1", "Namespace", name, labels, nil)
}

// polGizmo is a Gizmo; size < 0 leaves out spec altogether.
func polGizmo(name string, labels map[string]string, size int) []byte {
	var spec map[string]any
	if size >= 0 {
		spec = map[string]any{"size": size}
	}
	return polObject(polGroup+"/v1", "Gizmo", name, labels, spec)
}

// polLimit is a Limit, the namespaced param kind: spec.size is a maximum.
func polLimit(name string, labels map[string]string, size int) []byte {
	return polObject(polGroup+"/v1", "Limit", name, labels, map[string]any{"size": size})
}

func polLabels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func polSelector(kv ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: polLabels(kv...)}
}

// polRules matches the operations on the resources of a group, in every
// version.
func polRules(ops []admissionregistrationv1.OperationType, group string, resources ...string) []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
	}}}
}

var (
	polCreateOnly = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	polWrites     = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	polAllOps     = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
)

// polPolicy is a policy on the rules with the validations.
func polPolicy(name string, rules []admissionregistrationv1.NamedRuleWithOperations, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			Validations:      validations,
		},
	}
}

func polBinding(name, policy string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	if len(actions) == 0 {
		actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
}

// polApply creates a policy and then its bindings.
func polApply(t testing.TB, k *kapi, p *admissionregistrationv1.ValidatingAdmissionPolicy, bindings ...*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	if p != nil {
		if _, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating policy %s: %v", p.Name, err)
		}
	}
	for _, b := range bindings {
		if _, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctxT(t), b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating binding %s: %v", b.Name, err)
		}
	}
}

// polMust sends a request that must answer want.
func polMust(t testing.TB, k *kapi, want int, method, path string, body []byte, header ...string) httpResult {
	t.Helper()
	r := k.do(t, method, path, body, header...)
	if r.Code != want {
		t.Fatalf("%s %s: HTTP %d, want %d; body: %.400s", method, path, r.Code, want, r.Body)
	}
	return r
}

// polAwait sends a fresh request (attempt i names a new object) until its
// answer satisfies cond: the way to wait for a policy, binding or param to
// reach kapi's admission caches. It returns the answer and the attempt.
func polAwait(t testing.TB, what string, send func(i int) httpResult, cond func(httpResult) bool) (httpResult, int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		r := send(i)
		if cond(r) {
			return r, i
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after 10s still HTTP %d %.400s (warnings %q)", what, r.Code, r.Body, r.Header.Values("Warning"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// polRejectedWith: the request failed and the body holds s.
func polRejectedWith(s string) func(httpResult) bool {
	return func(r httpResult) bool { return r.Code >= 400 && strings.Contains(string(r.Body), s) }
}

// polDeniedBy: the request failed because of the binding.
func polDeniedBy(policy, binding string) func(httpResult) bool {
	return polRejectedWith(fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", policy, binding))
}

// polWarnedBy: the request succeeded with a Warning from the binding.
func polWarnedBy(policy, binding string) func(httpResult) bool {
	prefix := fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': ", policy, binding)
	return func(r httpResult) bool {
		if r.Code >= 300 {
			return false
		}
		for _, w := range r.Header.Values("Warning") {
			if strings.Contains(w, prefix) {
				return true
			}
		}
		return false
	}
}

// polDenial is kube-apiserver's message for a request the binding denied.
func polDenial(policy, binding, message string) string {
	return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, binding, message)
}

// polExpectDenied checks the whole Status of a request a binding denied:
// admission.NewForbidden's message and details with the code and reason
// of the first failed validation, and the denial again as the one cause.
func polExpectDenied(t testing.TB, r httpResult, code int, reason metav1.StatusReason, qualifiedResource, name, policy, binding, message string) {
	t.Helper()
	inner := polDenial(policy, binding, message)
	st := expectStatus(t, r, code, reason)
	if st.Kind == "" {
		return
	}
	if want := fmt.Sprintf("%s %q is forbidden: %s", qualifiedResource, name, inner); st.Message != want {
		t.Errorf("message\n %q\nwant\n %q", st.Message, want)
	}
	resource, group, _ := strings.Cut(qualifiedResource, ".")
	want := &metav1.StatusDetails{Name: name, Group: group, Kind: resource, Causes: []metav1.StatusCause{{Message: inner}}}
	if !reflect.DeepEqual(st.Details, want) {
		t.Errorf("details\n %s\nwant\n %s", fmtJSON(st.Details), fmtJSON(want))
	}
}

// polExpectAbsent checks that a denied object was not stored.
func polExpectAbsent(t testing.TB, k *kapi, path string) {
	t.Helper()
	if r := k.do(t, "GET", path, nil); r.Code != http.StatusNotFound {
		t.Errorf("GET %s: HTTP %d, want 404 (the request was denied); body: %.300s", path, r.Code, r.Body)
	}
}

// polExpectWarnings checks the exact Warning texts, in any order.
func polExpectWarnings(t testing.TB, r httpResult, want ...string) {
	t.Helper()
	got := warnings(t, r.Header)
	sort.Strings(got)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings\n %q\nwant\n %q", got, want)
	}
}

func polWarning(policy, binding, message string) string {
	return fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", policy, binding, message)
}

// polCRDs creates the Gizmo CRD and, with params, the Limit CRD, and
// waits until they are established.
func polCRDs(t testing.TB, k *kapi, params bool) {
	t.Helper()
	createCRD(t, k, newCRD("gizmos", polGroup))
	if params {
		createCRD(t, k, newCRD("limits", polGroup))
	}
}

const polBadName = `!object.metadata.name.startsWith("bad")`

// Deny: the message, messageExpression and its fallbacks, the default
// message, and each reason with its code, from the first failed validation.
func TestPolicyDenyMessages(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	forbidden, tooLarge := metav1.StatusReasonForbidden, metav1.StatusReasonRequestEntityTooLarge
	cases := []struct {
		policy      string
		validations []admissionregistrationv1.Validation
		code        int
		reason      metav1.StatusReason
		message     func(name string) string
	}{{
		policy:      "with-message",
		validations: []admissionregistrationv1.Validation{{Expression: polBadName, Message: "names must not start with bad"}},
		code:        422, reason: metav1.StatusReasonInvalid,
		message: func(string) string { return "names must not start with bad" },
	}, {
		policy: "with-message-expression",
		validations: []admissionregistrationv1.Validation{{Expression: polBadName, Message: "the static message",
			MessageExpression: `"the name " + object.metadata.name + " is not allowed"`}},
		code: 422, reason: metav1.StatusReasonInvalid,
		message: func(name string) string { return "the name " + name + " is not allowed" },
	}, {
		// A messageExpression giving a blank string falls back to the
		// message, trimmed.
		policy:      "blank-message-expression",
		validations: []admissionregistrationv1.Validation{{Expression: polBadName, Message: "  the fallback message ", MessageExpression: `"   "`}},
		code:        422, reason: metav1.StatusReasonInvalid,
		message: func(string) string { return "the fallback message" },
	}, {
		// So does one that fails at runtime.
		policy: "failing-message-expression",
		validations: []admissionregistrationv1.Validation{{Expression: polBadName, Message: "the message after a failed messageExpression",
			MessageExpression: `string(object.metadata.annotations["missing"])`}},
		code: 422, reason: metav1.StatusReasonInvalid,
		message: func(string) string { return "the message after a failed messageExpression" },
	}, {
		policy:      "default-message",
		validations: []admissionregistrationv1.Validation{{Expression: "  " + polBadName + " "}},
		code:        422, reason: metav1.StatusReasonInvalid,
		message: func(string) string { return "failed expression: " + polBadName },
	}, {
		policy:      "reason-forbidden",
		validations: []admissionregistrationv1.Validation{{Expression: polBadName, Message: "forbidden name", Reason: &forbidden}},
		code:        403, reason: metav1.StatusReasonForbidden,
		message: func(string) string { return "forbidden name" },
	}, {
		policy:      "reason-too-large",
		validations: []admissionregistrationv1.Validation{{Expression: polBadName, Message: "too large", Reason: &tooLarge}},
		code:        413, reason: metav1.StatusReasonRequestEntityTooLarge,
		message: func(string) string { return "too large" },
	}, {
		// The first validation to fail gives the message, reason and code.
		policy: "first-failure-decides",
		validations: []admissionregistrationv1.Validation{
			{Expression: "true", Message: "never fails"},
			{Expression: polBadName, Message: "second", Reason: &forbidden},
			{Expression: polBadName, Message: "third", Reason: &tooLarge},
		},
		code: 403, reason: metav1.StatusReasonForbidden,
		message: func(string) string { return "second" },
	}, {
		// messageExpressions belong to their own validation: one given by
		// a later validation is not the message of an earlier one.
		policy: "message-expressions-by-validation",
		validations: []admissionregistrationv1.Validation{
			{Expression: "true", MessageExpression: `"never used"`},
			{Expression: polBadName, Message: "the second's own message"},
			{Expression: polBadName, MessageExpression: `"the third's message"`},
		},
		code: 422, reason: metav1.StatusReasonInvalid,
		message: func(string) string { return "the second's own message" },
	}, {
		policy: "message-expression-after-plain-validations",
		validations: []admissionregistrationv1.Validation{
			{Expression: "true", Message: "never fails"},
			{Expression: polBadName, Message: "static", MessageExpression: `"computed for " + object.metadata.name`},
		},
		code: 422, reason: metav1.StatusReasonInvalid,
		message: func(name string) string { return "computed for " + name },
	}}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			t.Parallel()
			p := polPolicy(c.policy, polRules(polWrites, "resource.k8s.io", "deviceclasses"), c.validations...)
			p.Spec.MatchConstraints.ObjectSelector = polSelector("case", c.policy)
			binding := c.policy + "-binding"
			polApply(t, k, p, polBinding(binding, c.policy))
			labels := polLabels("case", c.policy)
			r, i := polAwait(t, "policy "+c.policy, func(i int) httpResult {
				return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("bad-%s-%d", c.policy, i), labels))
			}, polDeniedBy(c.policy, binding))
			name := fmt.Sprintf("bad-%s-%d", c.policy, i)
			polExpectDenied(t, r, c.code, c.reason, polDCRes, name, c.policy, binding, c.message(name))
			polExpectWarnings(t, r)
			polExpectAbsent(t, k, polDCPath+"/"+name)
			// Passing validations, or no match, admit.
			polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("good-"+c.policy, labels))
			polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("bad-unlabelled-"+c.policy, nil))
		})
	}
}

// validationActions: Deny rejects, Warn admits with a Warning, Audit admits
// silently, Warn and Audit together warn once, and a Warn binding warns on
// a request another binding denies.
func TestPolicyValidationActions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const policy = "actions"
	p := polPolicy(policy, polRules(polWrites, "resource.k8s.io", "deviceclasses"),
		admissionregistrationv1.Validation{Expression: polBadName, Message: "bad name"})
	p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "action", Operator: metav1.LabelSelectorOpExists}}}
	bind := func(name string, labelValues []string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		b := polBinding(name, policy, actions...)
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "action", Operator: metav1.LabelSelectorOpIn, Values: labelValues},
		}}}
		return b
	}
	deny, warn, audit := admissionregistrationv1.Deny, admissionregistrationv1.Warn, admissionregistrationv1.Audit
	// The bindings reach the cache in order: once the last one acts, so do
	// the others (the Audit ones show nothing).
	polApply(t, k, p,
		bind("audit", []string{"audit"}, audit),
		bind("warn-audit", []string{"warn-audit"}, warn, audit),
		bind("deny", []string{"deny", "deny-and-warn"}, deny),
		bind("also-warn", []string{"deny-and-warn"}, warn),
		bind("warn", []string{"warn"}, warn),
	)
	label := func(v string) map[string]string { return polLabels("action", v) }
	r, i := polAwait(t, "binding warn", func(i int) httpResult {
		return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("bad-warn-%d", i), label("warn")))
	}, polWarnedBy(policy, "warn"))

	t.Run("Warn", func(t *testing.T) {
		if r.Code != http.StatusCreated {
			t.Errorf("HTTP %d, want 201: %.300s", r.Code, r.Body)
		}
		polExpectWarnings(t, r, polWarning(policy, "warn", "bad name"))
		polMust(t, k, http.StatusOK, "GET", polDCPath+fmt.Sprintf("/bad-warn-%d", i), nil)
		// A passing request has no warning.
		polExpectWarnings(t, polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("good-warn", label("warn"))))
		// Warn applies to updates too.
		patch := []byte(`{"metadata":{"annotations":{"a":"b"}}}`)
		up := polMust(t, k, http.StatusOK, "PATCH", polDCPath+fmt.Sprintf("/bad-warn-%d", i), patch, "Content-Type: application/merge-patch+json")
		polExpectWarnings(t, up, polWarning(policy, "warn", "bad name"))
	})
	t.Run("Deny", func(t *testing.T) {
		r := k.do(t, "POST", polDCPath, polDC("bad-deny", label("deny")))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "bad-deny", policy, "deny", "bad name")
		polExpectWarnings(t, r)
		polExpectAbsent(t, k, polDCPath+"/bad-deny")
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("good-deny", label("deny")))
	})
	t.Run("Audit", func(t *testing.T) {
		r := polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("bad-audit", label("audit")))
		polExpectWarnings(t, r)
	})
	t.Run("WarnAndAudit", func(t *testing.T) {
		r := polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("bad-warn-audit", label("warn-audit")))
		polExpectWarnings(t, r, polWarning(policy, "warn-audit", "bad name"))
	})
	t.Run("DeniedWithWarning", func(t *testing.T) {
		r := k.do(t, "POST", polDCPath, polDC("bad-both", label("deny-and-warn")))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "bad-both", policy, "deny", "bad name")
		polExpectWarnings(t, r, polWarning(policy, "also-warn", "bad name"))
		polExpectAbsent(t, k, polDCPath+"/bad-both")
	})
}

// What a policy applies to: its operations, excluded resources, namespace
// and object selectors, matchConditions, and the binding's matchResources.
func TestPolicyMatching(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	polCRDs(t, k, false)
	const badLabel = `!('bad' in object.metadata.labels)`

	t.Run("Operations", func(t *testing.T) {
		t.Parallel()
		// CREATE only: an UPDATE to the same state passes.
		p := polPolicy("create-only", polRules(polCreateOnly, "resource.k8s.io", "deviceclasses"),
			admissionregistrationv1.Validation{Expression: badLabel, Message: "no bad label"})
		p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "ops")
		polApply(t, k, p, polBinding("create-only", "create-only"))
		r, i := polAwait(t, "policy create-only", func(i int) httpResult {
			return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("ops-%d", i), polLabels("case", "ops", "bad", "yes")))
		}, polDeniedBy("create-only", "create-only"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("ops-%d", i), "create-only", "create-only", "no bad label")
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("ops-good", polLabels("case", "ops")))
		up := polMust(t, k, http.StatusOK, "PATCH", polDCPath+"/ops-good", []byte(`{"metadata":{"labels":{"bad":"yes"}}}`), "Content-Type: application/merge-patch+json")
		polExpectWarnings(t, up)
		// The objectSelector: without the label the policy does not apply.
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("ops-unselected", polLabels("bad", "yes")))
	})

	t.Run("ExcludeResourceRules", func(t *testing.T) {
		t.Parallel()
		p := polPolicy("exclude", []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: polCreateOnly,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"", "resource.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"namespaces", "deviceclasses"}},
		}}}, admissionregistrationv1.Validation{Expression: `!object.metadata.name.startsWith("excl-")`, Message: "excluded prefix"})
		p.Spec.MatchConstraints.ExcludeResourceRules = append(polRules(polAllOps, "resource.k8s.io", "deviceclasses"),
			admissionregistrationv1.NamedRuleWithOperations{ResourceNames: []string{"excl-allowed"}, RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: polAllOps,
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
			}})
		polApply(t, k, p, polBinding("exclude", "exclude"))
		r, i := polAwait(t, "policy exclude", func(i int) httpResult {
			return k.do(t, "POST", polNSPath, polNS(fmt.Sprintf("excl-%d", i), nil))
		}, polDeniedBy("exclude", "exclude"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polNSRes, fmt.Sprintf("excl-%d", i), "exclude", "exclude", "excluded prefix")
		polExpectAbsent(t, k, polNSPath+fmt.Sprintf("/excl-%d", i))
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("excl-device", nil))
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("excl-allowed", nil))
	})

	t.Run("NamespaceSelector", func(t *testing.T) {
		t.Parallel()
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("prod", polLabels("env", "prod")))
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("dev", polLabels("env", "dev")))
		p := polPolicy("prod-only", polRules(polWrites, polGroup, "gizmos"),
			admissionregistrationv1.Validation{Expression: "object.spec.size <= 10", Message: "too big for prod"})
		p.Spec.MatchConstraints.NamespaceSelector = polSelector("env", "prod")
		polApply(t, k, p, polBinding("prod-only", "prod-only"))
		r, i := polAwait(t, "policy prod-only", func(i int) httpResult {
			return k.do(t, "POST", polGizmoPath("prod"), polGizmo(fmt.Sprintf("big-%d", i), nil, 11))
		}, polDeniedBy("prod-only", "prod-only"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, fmt.Sprintf("big-%d", i), "prod-only", "prod-only", "too big for prod")
		polExpectAbsent(t, k, polGizmoPath("prod")+fmt.Sprintf("/big-%d", i))
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("prod"), polGizmo("small", nil, 10))
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("dev"), polGizmo("big", nil, 11))
	})

	t.Run("NamespaceSelectorClusterScoped", func(t *testing.T) {
		t.Parallel()
		// A namespaceSelector does not keep a policy from cluster-scoped
		// objects (other than namespaces).
		p := polPolicy("ns-selector-cluster", polRules(polCreateOnly, "resource.k8s.io", "deviceclasses"),
			admissionregistrationv1.Validation{Expression: polBadName, Message: "cluster-scoped too"})
		p.Spec.MatchConstraints.NamespaceSelector = polSelector("env", "nowhere")
		p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "ns-selector-cluster")
		polApply(t, k, p, polBinding("ns-selector-cluster", "ns-selector-cluster"))
		r, i := polAwait(t, "policy ns-selector-cluster", func(i int) httpResult {
			return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("bad-nsc-%d", i), polLabels("case", "ns-selector-cluster")))
		}, polDeniedBy("ns-selector-cluster", "ns-selector-cluster"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("bad-nsc-%d", i), "ns-selector-cluster", "ns-selector-cluster", "cluster-scoped too")
	})

	t.Run("MatchConditions", func(t *testing.T) {
		t.Parallel()
		p := polPolicy("conditions", polRules(polCreateOnly, "resource.k8s.io", "deviceclasses"),
			admissionregistrationv1.Validation{Expression: "false", Message: "gpu classes are closed"})
		p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "conditions")
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{
			{Name: "is-gpu", Expression: `object.metadata.name.startsWith("gpu")`},
			{Name: "not-exempt", Expression: `!object.metadata.name.endsWith("exempt")`},
		}
		polApply(t, k, p, polBinding("conditions", "conditions"))
		r, i := polAwait(t, "policy conditions", func(i int) httpResult {
			return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("gpu-%d", i), polLabels("case", "conditions")))
		}, polDeniedBy("conditions", "conditions"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("gpu-%d", i), "conditions", "conditions", "gpu classes are closed")
		// Any false condition skips the policy.
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("cpu-1", polLabels("case", "conditions")))
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("gpu-exempt", polLabels("case", "conditions")))
	})

	t.Run("BindingMatchResources", func(t *testing.T) {
		t.Parallel()
		// The policy covers namespaces and DeviceClasses; the binding
		// narrows it to namespaces.
		p := polPolicy("narrowed", []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: polCreateOnly,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"", "resource.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"namespaces", "deviceclasses"}},
		}}}, admissionregistrationv1.Validation{Expression: `!object.metadata.name.startsWith("narrow-")`, Message: "narrowed prefix"})
		b := polBinding("namespaces-only", "narrowed")
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: polCreateOnly,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
		}}}}
		polApply(t, k, p, b)
		r, i := polAwait(t, "policy narrowed", func(i int) httpResult {
			return k.do(t, "POST", polNSPath, polNS(fmt.Sprintf("narrow-%d", i), nil))
		}, polDeniedBy("narrowed", "namespaces-only"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polNSRes, fmt.Sprintf("narrow-%d", i), "narrowed", "namespaces-only", "narrowed prefix")
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("narrow-device", nil))
	})
}

// Params: a custom resource (namespaced) and a built-in kind
// (DeviceClass, cluster-scoped) as paramKind, paramRef by name, namespace
// and selector, parameterNotFoundAction, and the configuration errors.
func TestPolicyParams(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	polCRDs(t, k, true)

	t.Run("CustomResource", func(t *testing.T) {
		t.Parallel()
		for _, ns := range []string{"params", "by-name", "missing-deny", "missing-allow", "missing-ignore", "ignore-probe", "explicit-ns", "selector", "selector-warn"} {
			polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS(ns, polLabels("param", ns)))
		}
		limits := func(ns string) string { return "/apis/" + polGroup + "/v1/namespaces/" + ns + "/limits" }
		polMust(t, k, http.StatusCreated, "POST", limits("by-name"), polLimit("limit", nil, 5))
		polMust(t, k, http.StatusCreated, "POST", limits("params"), polLimit("limit", nil, 3))
		polMust(t, k, http.StatusCreated, "POST", limits("params"), polLimit("small", polLabels("set", "s"), 4))
		polMust(t, k, http.StatusCreated, "POST", limits("params"), polLimit("large", polLabels("set", "s"), 10))
		polMust(t, k, http.StatusCreated, "POST", limits("ignore-probe"), polLimit("limit", nil, 1))

		withParams := func(name string, fail admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.ValidatingAdmissionPolicy {
			p := polPolicy(name, polRules(polCreateOnly, polGroup, "gizmos"), admissionregistrationv1.Validation{
				Expression:        "object.spec.size <= params.spec.size",
				MessageExpression: `"size " + string(object.spec.size) + " exceeds " + string(params.spec.size)`,
			})
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: polGroup + "/v1", Kind: "Limit"}
			p.Spec.FailurePolicy = &fail
			return p
		}
		notFoundDeny, notFoundAllow := admissionregistrationv1.DenyAction, admissionregistrationv1.AllowAction
		bind := func(policy, ns string, ref admissionregistrationv1.ParamRef, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			b := polBinding(ns, policy, actions...)
			b.Spec.ParamRef = &ref
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: polSelector("param", ns)}
			return b
		}
		set := polSelector("set", "s")
		polApply(t, k, withParams("max-size", admissionregistrationv1.Fail),
			bind("max-size", "missing-allow", admissionregistrationv1.ParamRef{Name: "limit", ParameterNotFoundAction: &notFoundAllow}),
			bind("max-size", "missing-deny", admissionregistrationv1.ParamRef{Name: "limit", ParameterNotFoundAction: &notFoundDeny}),
			bind("max-size", "by-name", admissionregistrationv1.ParamRef{Name: "limit", ParameterNotFoundAction: &notFoundDeny}),
			bind("max-size", "explicit-ns", admissionregistrationv1.ParamRef{Name: "limit", Namespace: "params", ParameterNotFoundAction: &notFoundDeny}),
			bind("max-size", "selector", admissionregistrationv1.ParamRef{Selector: set, Namespace: "params", ParameterNotFoundAction: &notFoundDeny}),
			bind("max-size", "selector-warn", admissionregistrationv1.ParamRef{Selector: set, Namespace: "params", ParameterNotFoundAction: &notFoundDeny}, admissionregistrationv1.Warn),
		)
		polApply(t, k, withParams("max-size-ignore", admissionregistrationv1.Ignore),
			bind("max-size-ignore", "missing-ignore", admissionregistrationv1.ParamRef{Name: "limit", ParameterNotFoundAction: &notFoundDeny}),
			bind("max-size-ignore", "ignore-probe", admissionregistrationv1.ParamRef{Name: "limit", ParameterNotFoundAction: &notFoundDeny}),
		)
		gizmo := func(ns string, size int) func(i int) httpResult {
			return func(i int) httpResult {
				return k.do(t, "POST", polGizmoPath(ns), polGizmo(fmt.Sprintf("g%d-%d", size, i), nil, size))
			}
		}
		name := func(size, i int) string { return fmt.Sprintf("g%d-%d", size, i) }

		// paramRef.name, in the request's namespace.
		r, i := polAwait(t, "param by-name/limit", gizmo("by-name", 6), polRejectedWith("size 6 exceeds 5"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, name(6, i), "max-size", "by-name", "size 6 exceeds 5")
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("by-name"), polGizmo("five", nil, 5))

		// parameterNotFoundAction Allow: the binding passes.
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("missing-allow"), polGizmo("huge", nil, 1000))

		// parameterNotFoundAction Deny with failurePolicy Fail: denied.
		r = k.do(t, "POST", polGizmoPath("missing-deny"), polGizmo("any", nil, 1))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, "any", "max-size", "missing-deny",
			"failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
		polExpectAbsent(t, k, polGizmoPath("missing-deny")+"/any")

		// parameterNotFoundAction Deny with failurePolicy Ignore: admitted
		// (the policy acts where it finds its param).
		r, i = polAwait(t, "param ignore-probe/limit", gizmo("ignore-probe", 2), polRejectedWith("size 2 exceeds 1"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, name(2, i), "max-size-ignore", "ignore-probe", "size 2 exceeds 1")
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("missing-ignore"), polGizmo("huge", nil, 1000))

		// paramRef.namespace names another namespace.
		r, i = polAwait(t, "param params/limit", gizmo("explicit-ns", 4), polRejectedWith("size 4 exceeds 3"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, name(4, i), "max-size", "explicit-ns", "size 4 exceeds 3")
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("explicit-ns"), polGizmo("three", nil, 3))

		// A selector: every selected param is evaluated, and all must pass.
		_, _ = polAwait(t, "params selected by set=s", gizmo("selector-warn", 11), func(r httpResult) bool {
			return r.Code == http.StatusCreated && len(r.Header.Values("Warning")) == 2
		})
		r = polMust(t, k, http.StatusCreated, "POST", polGizmoPath("selector-warn"), polGizmo("eleven", nil, 11))
		polExpectWarnings(t, r, polWarning("max-size", "selector-warn", "size 11 exceeds 10"), polWarning("max-size", "selector-warn", "size 11 exceeds 4"))
		r = polMust(t, k, http.StatusCreated, "POST", polGizmoPath("selector-warn"), polGizmo("five", nil, 5))
		polExpectWarnings(t, r, polWarning("max-size", "selector-warn", "size 5 exceeds 4"))
		r = k.do(t, "POST", polGizmoPath("selector"), polGizmo("five", nil, 5))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, "five", "max-size", "selector", "size 5 exceeds 4")
		polMust(t, k, http.StatusCreated, "POST", polGizmoPath("selector"), polGizmo("four", nil, 4))

		// A param's change takes effect.
		polMust(t, k, http.StatusOK, "PATCH", limits("by-name")+"/limit", []byte(`{"spec":{"size":7}}`), "Content-Type: application/merge-patch+json")
		polAwait(t, "param by-name/limit raised to 7", gizmo("by-name", 6), func(r httpResult) bool { return r.Code == http.StatusCreated })
		r = k.do(t, "POST", polGizmoPath("by-name"), polGizmo("eight", nil, 8))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, "eight", "max-size", "by-name", "size 8 exceeds 7")
	})

	t.Run("DeviceClassKind", func(t *testing.T) {
		t.Parallel()
		// A DeviceClass (cluster-scoped) parameterizes namespace names.
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("ns-prefix", polLabels("prefix", "team")))
		p := polPolicy("ns-prefix", polRules(polCreateOnly, "", "namespaces"), admissionregistrationv1.Validation{
			Expression:        `object.metadata.name.startsWith(params.metadata.labels["prefix"])`,
			MessageExpression: `"namespace names must start with " + params.metadata.labels["prefix"]`,
		})
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "resource.k8s.io/v1beta2", Kind: "DeviceClass"}
		bind := func(name string, ref admissionregistrationv1.ParamRef) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			b := polBinding(name, "ns-prefix")
			b.Spec.ParamRef = &ref
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: polSelector("dcparam", name)}
			return b
		}
		notFoundDeny, notFoundAllow := admissionregistrationv1.DenyAction, admissionregistrationv1.AllowAction
		polApply(t, k, p,
			// paramRef.namespace must not be set for a cluster-scoped kind.
			bind("dc-with-namespace", admissionregistrationv1.ParamRef{Name: "ns-prefix", Namespace: "default", ParameterNotFoundAction: &notFoundAllow}),
			bind("dc-by-name", admissionregistrationv1.ParamRef{Name: "ns-prefix", ParameterNotFoundAction: &notFoundDeny}),
		)
		r, i := polAwait(t, "param DeviceClass ns-prefix", func(i int) httpResult {
			return k.do(t, "POST", polNSPath, polNS(fmt.Sprintf("other-%d", i), polLabels("dcparam", "dc-by-name")))
		}, polRejectedWith("namespace names must start with team"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polNSRes, fmt.Sprintf("other-%d", i), "ns-prefix", "dc-by-name", "namespace names must start with team")
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("team-a", polLabels("dcparam", "dc-by-name")))

		r = k.do(t, "POST", polNSPath, polNS("team-b", polLabels("dcparam", "dc-with-namespace")))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polNSRes, "team-b", "ns-prefix", "dc-with-namespace",
			"failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	})

	t.Run("NamespaceKind", func(t *testing.T) {
		t.Parallel()
		// A Namespace (cluster-scoped) parameterizes DeviceClass names.
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("class-rules", polLabels("prefix", "gpu")))
		p := polPolicy("class-prefix", polRules(polCreateOnly, "resource.k8s.io", "deviceclasses"), admissionregistrationv1.Validation{
			Expression:        `object.metadata.name.startsWith(params.metadata.labels["prefix"])`,
			MessageExpression: `"device class names must start with " + params.metadata.labels["prefix"]`,
		})
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Namespace"}
		p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "class-prefix")
		bind := func(name string, ref *admissionregistrationv1.ParamRef) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			b := polBinding(name, "class-prefix")
			b.Spec.ParamRef = ref
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: polSelector("binding", name)}
			return b
		}
		polApply(t, k, p,
			// paramKind without paramRef: params is null.
			bind("ns-no-ref", nil),
			bind("ns-by-name", &admissionregistrationv1.ParamRef{Name: "class-rules", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}),
		)
		labels := func(binding string) map[string]string { return polLabels("case", "class-prefix", "binding", binding) }
		r, i := polAwait(t, "param Namespace class-rules", func(i int) httpResult {
			return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("cpu-%d", i), labels("ns-by-name")))
		}, polRejectedWith("device class names must start with gpu"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("cpu-%d", i), "class-prefix", "ns-by-name", "device class names must start with gpu")
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("gpu-1", labels("ns-by-name")))

		r = k.do(t, "POST", polDCPath, polDC("gpu-2", labels("ns-no-ref")))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "gpu-2", "class-prefix", "ns-no-ref",
			`expression 'object.metadata.name.startsWith(params.metadata.labels["prefix"])' resulted in error: no such key: metadata`)
	})

	t.Run("KindDefinedLater", func(t *testing.T) {
		t.Parallel()
		// A paramKind nobody serves makes the policy misconfigured
		// (failurePolicy Fail: denied, with no binding named); it recovers
		// once a CRD defines the kind.
		p := polPolicy("later", polRules(polCreateOnly, "resource.k8s.io", "deviceclasses"), admissionregistrationv1.Validation{
			Expression:        "size(object.metadata.name) <= params.spec.size",
			MessageExpression: `"names are limited to " + string(params.spec.size) + " characters"`,
		})
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: polGroup + "/v1", Kind: "Later"}
		p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "later")
		b := polBinding("later", "later")
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "later", Namespace: "later-params", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
		polApply(t, k, p, b)
		labels := polLabels("case", "later")
		send := func(i int) httpResult {
			return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("later-class-%d", i), labels))
		}
		r, i := polAwait(t, "policy later", send, polRejectedWith("ValidatingAdmissionPolicy 'later' denied request"))
		name := fmt.Sprintf("later-class-%d", i)
		inner := "ValidatingAdmissionPolicy 'later' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'vap.example.com/v1, Kind=Later'"
		st := expectStatus(t, r, 422, metav1.StatusReasonInvalid)
		if want := fmt.Sprintf("%s %q is forbidden: %s", polDCRes, name, inner); st.Message != want {
			t.Errorf("message\n %q\nwant\n %q", st.Message, want)
		}
		if want := (&metav1.StatusDetails{Name: name, Group: "resource.k8s.io", Kind: "deviceclasses", Causes: []metav1.StatusCause{{Message: inner}}}); !reflect.DeepEqual(st.Details, want) {
			t.Errorf("details\n %s\nwant\n %s", fmtJSON(st.Details), fmtJSON(want))
		}

		createCRD(t, k, newCRD("laters", polGroup))
		r, i = polAwait(t, "paramKind Later served", send, polDeniedBy("later", "later"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("later-class-%d", i), "later", "later",
			"failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("later-params", nil))
		polMust(t, k, http.StatusCreated, "POST", "/apis/"+polGroup+"/v1/namespaces/later-params/laters",
			polObject(polGroup+"/v1", "Later", "later", nil, map[string]any{"size": 8}))
		r, i = polAwait(t, "param later-params/later", send, polRejectedWith("names are limited to 8 characters"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("later-class-%d", i), "later", "later", "names are limited to 8 characters")
		polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("short", labels))
	})

	t.Run("NamespacedParamForClusterScoped", func(t *testing.T) {
		t.Parallel()
		// A namespaced paramKind, no paramRef.namespace, and a
		// cluster-scoped request: a configuration error.
		p := polPolicy("limit-for-classes", polRules(polCreateOnly, "resource.k8s.io", "deviceclasses"),
			admissionregistrationv1.Validation{Expression: "params.spec.size > 0"})
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: polGroup + "/v1", Kind: "Limit"}
		p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "namespaced-param")
		b := polBinding("limit-for-classes", "limit-for-classes")
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limit", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
		polApply(t, k, p, b)
		r, i := polAwait(t, "policy limit-for-classes", func(i int) httpResult {
			return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("np-%d", i), polLabels("case", "namespaced-param")))
		}, polDeniedBy("limit-for-classes", "limit-for-classes"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("np-%d", i), "limit-for-classes", "limit-for-classes",
			"failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
	})
}

// variables, and failurePolicy on a runtime error: Fail denies, Ignore
// admits, and neither changes what a false validation does.
func TestPolicyVariablesAndFailurePolicy(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	polCRDs(t, k, false)
	polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("vars", nil))
	path := polGizmoPath("vars")
	policy := func(name string, fail admissionregistrationv1.FailurePolicyType, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p := polPolicy(name, polRules(polWrites, polGroup, "gizmos"), validations...)
		p.Spec.MatchConstraints.ObjectSelector = polSelector("policy", name)
		p.Spec.FailurePolicy = &fail
		return p
	}
	labels := func(name string) map[string]string { return polLabels("policy", name) }

	t.Run("Variables", func(t *testing.T) {
		t.Parallel()
		p := policy("vars", admissionregistrationv1.Fail, admissionregistrationv1.Validation{
			Expression:        "!variables.big",
			MessageExpression: `"size " + string(variables.size) + " is over " + string(variables.max)`,
		})
		p.Spec.Variables = []admissionregistrationv1.Variable{
			{Name: "size", Expression: "object.spec.size"},
			{Name: "max", Expression: "10"},
			{Name: "big", Expression: "variables.size > variables.max"},
		}
		polApply(t, k, p, polBinding("vars", "vars"))
		r, i := polAwait(t, "policy vars", func(i int) httpResult {
			return k.do(t, "POST", path, polGizmo(fmt.Sprintf("vars-%d", i), labels("vars"), 11))
		}, polDeniedBy("vars", "vars"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, fmt.Sprintf("vars-%d", i), "vars", "vars", "size 11 is over 10")
		polMust(t, k, http.StatusCreated, "POST", path, polGizmo("vars-ten", labels("vars"), 10))
		// A variable failing to evaluate is a runtime error: failurePolicy Fail.
		r = k.do(t, "POST", path, polGizmo("vars-nospec", labels("vars"), -1))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, "vars-nospec", "vars", "vars",
			`expression '!variables.big' resulted in error: composited variable "big" fails to evaluate: composited variable "size" fails to evaluate: no such key: spec`)
	})

	t.Run("NamespaceObject", func(t *testing.T) {
		t.Parallel()
		polMust(t, k, http.StatusCreated, "POST", polNSPath, polNS("frozen", polLabels("tier", "frozen")))
		polApply(t, k, policy("ns-object", admissionregistrationv1.Fail, admissionregistrationv1.Validation{
			Expression:        `!("tier" in namespaceObject.metadata.labels) || namespaceObject.metadata.labels["tier"] != "frozen"`,
			MessageExpression: `"namespace " + namespaceObject.metadata.name + " is frozen"`,
		}), polBinding("ns-object", "ns-object"))
		r, i := polAwait(t, "policy ns-object", func(i int) httpResult {
			return k.do(t, "POST", polGizmoPath("frozen"), polGizmo(fmt.Sprintf("frozen-%d", i), labels("ns-object"), 1))
		}, polDeniedBy("ns-object", "ns-object"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, fmt.Sprintf("frozen-%d", i), "ns-object", "ns-object", "namespace frozen is frozen")
		polMust(t, k, http.StatusCreated, "POST", path, polGizmo("thawed", labels("ns-object"), 1))
	})

	t.Run("FailurePolicyFail", func(t *testing.T) {
		t.Parallel()
		polApply(t, k, policy("fail", admissionregistrationv1.Fail, admissionregistrationv1.Validation{Expression: "object.spec.size <= 10"}), polBinding("fail", "fail"))
		r, i := polAwait(t, "policy fail", func(i int) httpResult {
			return k.do(t, "POST", path, polGizmo(fmt.Sprintf("fail-%d", i), labels("fail"), -1))
		}, polDeniedBy("fail", "fail"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, fmt.Sprintf("fail-%d", i), "fail", "fail",
			"expression 'object.spec.size <= 10' resulted in error: no such key: spec")
		polExpectAbsent(t, k, path+fmt.Sprintf("/fail-%d", i))
		r = k.do(t, "POST", path, polGizmo("fail-big", labels("fail"), 11))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, "fail-big", "fail", "fail", "failed expression: object.spec.size <= 10")
	})

	t.Run("FailurePolicyIgnore", func(t *testing.T) {
		t.Parallel()
		// failurePolicy Ignore covers errors only: a false validation
		// still denies.
		polApply(t, k, policy("ignore", admissionregistrationv1.Ignore, admissionregistrationv1.Validation{Expression: "object.spec.size <= 10"}), polBinding("ignore", "ignore"))
		r, i := polAwait(t, "policy ignore", func(i int) httpResult {
			return k.do(t, "POST", path, polGizmo(fmt.Sprintf("ignore-%d", i), labels("ignore"), 11))
		}, polDeniedBy("ignore", "ignore"))
		polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polGizmoRes, fmt.Sprintf("ignore-%d", i), "ignore", "ignore", "failed expression: object.spec.size <= 10")
		r = polMust(t, k, http.StatusCreated, "POST", path, polGizmo("ignore-nospec", labels("ignore"), -1))
		polExpectWarnings(t, r)
	})
}

// A policy and binding written through admissionregistration.k8s.io/v1beta1
// act like v1 ones, and changes to them take effect.
func TestPolicyV1beta1(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	forbidden := metav1.StatusReasonForbidden
	fail := admissionregistrationv1beta1.Fail
	p := &admissionregistrationv1beta1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "beta"},
		Spec: admissionregistrationv1beta1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1beta1.MatchResources{
				ResourceRules: []admissionregistrationv1beta1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1beta1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"deviceclasses"}},
				}}},
			},
			Variables:   []admissionregistrationv1beta1.Variable{{Name: "name", Expression: "object.metadata.name"}},
			Validations: []admissionregistrationv1beta1.Validation{{Expression: `!variables.name.startsWith("beta-bad")`, Message: "beta says no", Reason: &forbidden}},
		},
	}
	if _, err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicies().Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "beta-binding"},
		Spec: admissionregistrationv1beta1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "beta",
			ValidationActions: []admissionregistrationv1beta1.ValidationAction{admissionregistrationv1beta1.Deny, admissionregistrationv1beta1.Audit},
		},
	}
	if _, err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicyBindings().Create(ctxT(t), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, i := polAwait(t, "v1beta1 policy beta", func(i int) httpResult {
		return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("beta-bad-%d", i), nil))
	}, polDeniedBy("beta", "beta-binding"))
	polExpectDenied(t, r, 403, metav1.StatusReasonForbidden, polDCRes, fmt.Sprintf("beta-bad-%d", i), "beta", "beta-binding", "beta says no")
	polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("beta-good", nil))

	// The same objects through v1.
	v1p, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctxT(t), "beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v1p.Spec.Validations) != 1 || v1p.Spec.Validations[0].Message != "beta says no" || len(v1p.Spec.Variables) != 1 {
		t.Errorf("v1 policy spec: %s", fmtJSON(v1p.Spec))
	}

	// A change through v1beta1 takes effect.
	cur, err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicies().Get(ctxT(t), "beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Validations[0].Message = "beta still says no"
	cur.Spec.Validations[0].Reason = nil
	if _, err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicies().Update(ctxT(t), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, i = polAwait(t, "updated v1beta1 policy beta", func(i int) httpResult {
		return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("beta-bad-again-%d", i), nil))
	}, polRejectedWith("beta still says no"))
	polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, fmt.Sprintf("beta-bad-again-%d", i), "beta", "beta-binding", "beta still says no")

	// Deleting the binding through v1beta1 ends the policy's effect.
	if err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicyBindings().Delete(ctxT(t), "beta-binding", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	polAwait(t, "binding beta-binding gone", func(i int) httpResult {
		return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("beta-bad-unbound-%d", i), nil))
	}, func(r httpResult) bool { return r.Code == http.StatusCreated })
}

// dryRun=All requests go through the policies like any other: creates,
// updates and deletes are denied the same way, and nothing is stored.
func TestPolicyDryRun(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	p := polPolicy("dry-run", polRules(polAllOps, "resource.k8s.io", "deviceclasses"),
		admissionregistrationv1.Validation{Expression: `object == null || !('bad' in object.metadata.labels)`, Message: "no bad label"},
		admissionregistrationv1.Validation{Expression: `request.operation != "DELETE" || !('protected' in oldObject.metadata.labels)`, Message: "protected"},
	)
	p.Spec.MatchConstraints.ObjectSelector = polSelector("case", "dry-run")
	polApply(t, k, p, polBinding("dry-run", "dry-run"))
	bad := polLabels("case", "dry-run", "bad", "yes")
	// Probe with real requests, so as not to rely on dry runs here.
	polAwait(t, "policy dry-run", func(i int) httpResult {
		return k.do(t, "POST", polDCPath, polDC(fmt.Sprintf("probe-%d", i), bad))
	}, polDeniedBy("dry-run", "dry-run"))

	r := k.do(t, "POST", polDCPath+"?dryRun=All", polDC("dry-bad", bad))
	polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "dry-bad", "dry-run", "dry-run", "no bad label")
	polExpectAbsent(t, k, polDCPath+"/dry-bad")
	polMust(t, k, http.StatusCreated, "POST", polDCPath+"?dryRun=All", polDC("dry-good", polLabels("case", "dry-run")))
	polExpectAbsent(t, k, polDCPath+"/dry-good")

	polMust(t, k, http.StatusCreated, "POST", polDCPath, polDC("kept", polLabels("case", "dry-run", "protected", "yes")))
	r = k.do(t, "PATCH", polDCPath+"/kept?dryRun=All", []byte(`{"metadata":{"labels":{"bad":"yes"}}}`), "Content-Type: application/merge-patch+json")
	polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "kept", "dry-run", "dry-run", "no bad label")
	r = k.do(t, "DELETE", polDCPath+"/kept?dryRun=All", nil)
	polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "kept", "dry-run", "dry-run", "protected")
	r = k.do(t, "DELETE", polDCPath+"/kept", nil)
	polExpectDenied(t, r, 422, metav1.StatusReasonInvalid, polDCRes, "kept", "dry-run", "dry-run", "protected")
	got := polMust(t, k, http.StatusOK, "GET", polDCPath+"/kept", nil)
	if strings.Contains(string(got.Body), `"bad"`) {
		t.Errorf("the dry-run patch was stored: %s", got.Body)
	}
}

// Policies see what kube-apiserver gives them: a namespace's own requests
// in that namespace (a namespaceSelector finds its labels), webhook
// configurations (only policies and bindings are exempt), and a paramKind
// whose version is not served is an error, not another version.
func TestPolicyScopeAsKube(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	adm := k.Client.AdmissionregistrationV1()

	// Protect one namespace; other namespaces still delete. (Not an
	// immortal one: kube's NamespaceLifecycle refuses its DELETE before
	// any policy sees it.)
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("guarded"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	protect := newVAP("protect-guarded")
	protect.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"guarded"}}}}
	protect.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	protect.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}
	protect.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: "guarded stays"}}
	bindPolicy(t, k, protect)
	// Guard webhook configurations.
	guard := newVAP("guard-webhooks")
	guard.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"admissionregistration.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"validatingwebhookconfigurations"}}
	guard.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: "guarded validatingwebhookconfigurations"}}
	bindPolicy(t, k, guard)
	eventually(t, 10*time.Second, "the webhook guard to apply", func() (bool, error) {
		_, err := adm.ValidatingWebhookConfigurations().Create(ctx, newVWC("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "guarded validatingwebhookconfigurations"), err
	})
	eventually(t, 10*time.Second, "the namespace guard to apply", func() (bool, error) {
		err := k.Client.CoreV1().Namespaces().Delete(ctx, "guarded", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "guarded stays"), err
	})
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("scratch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.Client.CoreV1().Namespaces().Delete(ctx, "scratch", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting namespace scratch under a policy selecting namespace guarded: %v, want it deleted", err)
	}

	// A paramKind at a version no resource serves.
	badver := newVAP("badver")
	badver.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "resource.k8s.io/v1beta1", Kind: "DeviceClass"}
	badver.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"v1beta2"}, Resources: []string{"deviceclasses"}}
	badver.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "true"}}
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, badver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := newVAPBinding("badver", "badver")
	binding.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "any", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the policy with an unserved paramKind version to fail", func() (bool, error) {
		_, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("p.example.com"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "failed to find resource referenced by paramKind"), err
	})
	if err := adm.ValidatingAdmissionPolicyBindings().Delete(ctx, "badver", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A paramKind served at a version the admission plugins' caches do not
	// hold (v1beta1 policies): the params are found, read from the store.
	holder := &admissionregistrationv1beta1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "param-holder"},
		Spec: admissionregistrationv1beta1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1beta1.MatchResources{ResourceRules: []admissionregistrationv1beta1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1beta1.RuleWithOperations{
				Operations: []admissionregistrationv1beta1.OperationType{admissionregistrationv1beta1.Create},
				Rule:       admissionregistrationv1beta1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
			}}}},
			Validations: []admissionregistrationv1beta1.Validation{{Expression: "true"}},
		},
	}
	if _, err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicies().Create(ctx, holder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	beta := newVAP("beta-params")
	beta.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "admissionregistration.k8s.io/v1beta1", Kind: "ValidatingAdmissionPolicy"}
	beta.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"v1beta2"}, Resources: []string{"deviceclasses"}}
	beta.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", MessageExpression: `"params from " + params.metadata.name`}}
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, beta, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding = newVAPBinding("beta-params", "beta-params")
	binding.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "param-holder", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the policy to read its v1beta1 params", func() (bool, error) {
		_, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("p.example.com"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "params from param-holder"), err
	})
}
