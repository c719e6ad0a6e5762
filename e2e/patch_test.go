package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	acv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Tests of PATCH (JSON, merge and strategic merge patch), server-side
// apply and metadata.managedFields, through kubectl, client-go and raw
// HTTP. Every expected answer is kube-apiserver v1.33's.

// patchVWCYAML is a webhook configuration with one webhook, for kubectl.
const patchVWCYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: NAME
  labels:
    app: demo
webhooks:
- name: first.example.com
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 10
  clientConfig:
    url: https://first.example.com/hook
`

func patchVWC(name string) string { return strings.Replace(patchVWCYAML, "NAME", name, 1) }

// findManaged returns the managedFields entry of manager, operation and
// subresource, or nil.
func findManaged(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, subresource string) *metav1.ManagedFieldsEntry {
	for i := range entries {
		e := &entries[i]
		if e.Manager == manager && e.Operation == op && e.Subresource == subresource {
			return e
		}
	}
	return nil
}

// mustManaged is findManaged that fails the test when there is no such
// entry.
func mustManaged(t testing.TB, entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, subresource string) *metav1.ManagedFieldsEntry {
	t.Helper()
	e := findManaged(entries, manager, op, subresource)
	if e == nil {
		t.Errorf("no managedFields entry {manager %q, operation %q, subresource %q}; managedFields:\n%s", manager, op, subresource, describeManaged(entries))
	}
	return e
}

func describeManaged(entries []metav1.ManagedFieldsEntry) string {
	if len(entries) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, e := range entries {
		var fields string
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		fmt.Fprintf(&b, "  manager=%q operation=%q subresource=%q apiVersion=%q fields=%s\n", e.Manager, e.Operation, e.Subresource, e.APIVersion, fields)
	}
	return b.String()
}

// ownsField tells whether the entry's fieldsV1 holds the path, each
// element a fieldsV1 key such as `f:webhooks` or `k:{"name":"x"}`.
func ownsField(t testing.TB, e *metav1.ManagedFieldsEntry, path ...string) bool {
	t.Helper()
	if e == nil || e.FieldsV1 == nil {
		return false
	}
	var node map[string]any
	if err := json.Unmarshal(e.FieldsV1.Raw, &node); err != nil {
		t.Errorf("managedFields entry %q: fieldsV1 is not JSON: %v", e.Manager, err)
		return false
	}
	for _, p := range path {
		child, ok := node[p]
		if !ok {
			return false
		}
		if node, ok = child.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// expectOwns checks that the entry does (or does not) own the path.
func expectOwns(t testing.TB, e *metav1.ManagedFieldsEntry, want bool, path ...string) {
	t.Helper()
	if e == nil {
		return // already reported
	}
	if got := ownsField(t, e, path...); got != want {
		t.Errorf("manager %q (%s) owns %s: %v, want %v; fieldsV1: %s", e.Manager, e.Operation, strings.Join(path, "."), got, want, e.FieldsV1.Raw)
	}
}

// uaManager is the field manager kube-apiserver derives from client-go's
// default User-Agent: its product name, before the first "/".
func uaManager() string {
	product, _, _ := strings.Cut(rest.DefaultKubernetesUserAgent(), "/")
	return product
}

// kubectlEnv is kubectl with extra environment variables (KUBE_EDITOR).
func (k *kapi) kubectlEnv(t testing.TB, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	requireKubectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := append([]string{"--kubeconfig", k.Kubeconfig, "--cache-dir", k.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", argv...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "KUBE_EDITOR=") && !strings.HasPrefix(kv, "EDITOR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("kubectl %s timed out", strings.Join(args, " ")))
	}
	return out.String(), errOut.String(), err
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func getVWC(t testing.TB, k *kapi, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	v, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get validatingwebhookconfiguration %s: %v", name, err)
	}
	return v
}

func vwcWebhookNames(v *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
	var names []string
	for _, w := range v.Webhooks {
		names = append(names, w.Name)
	}
	return names
}

func mwcWebhookNames(v *admissionregistrationv1.MutatingWebhookConfiguration) []string {
	var names []string
	for _, w := range v.Webhooks {
		names = append(names, w.Name)
	}
	sort.Strings(names)
	return names
}

func timeoutOf(v *admissionregistrationv1.ValidatingWebhookConfiguration, webhook string) int32 {
	for _, w := range v.Webhooks {
		if w.Name == webhook && w.TimeoutSeconds != nil {
			return *w.TimeoutSeconds
		}
	}
	return -1
}

func TestKubectlLabelAnnotatePatch(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const res, name = "validatingwebhookconfigurations", "patch-e2e"
	k.mustKubectl(t, "create", "-f", writeFile(t, "vwc.yaml", patchVWC(name)))

	out := k.mustKubectl(t, "label", res, name, "team=a")
	if !strings.Contains(out, "validatingwebhookconfiguration.admissionregistration.k8s.io/"+name+" labeled") {
		t.Errorf("kubectl label output %q", out)
	}
	// An existing label needs --overwrite.
	if _, errOut, err := k.kubectl(t, "label", res, name, "team=b"); err == nil || !strings.Contains(errOut, "--overwrite is false") {
		t.Errorf("label without --overwrite: err=%v stderr=%q", err, errOut)
	}
	k.mustKubectl(t, "label", res, name, "team=b", "--overwrite")

	out = k.mustKubectl(t, "annotate", res, name, "example.com/note=one", "example.com/tmp=x")
	if !strings.Contains(out, name+" annotated") {
		t.Errorf("kubectl annotate output %q", out)
	}
	if _, errOut, err := k.kubectl(t, "annotate", res, name, "example.com/note=two"); err == nil || !strings.Contains(errOut, "--overwrite is false") {
		t.Errorf("annotate without --overwrite: err=%v stderr=%q", err, errOut)
	}
	k.mustKubectl(t, "annotate", res, name, "example.com/note=two", "--overwrite")
	k.mustKubectl(t, "annotate", res, name, "example.com/tmp-")

	v := getVWC(t, k, name)
	if l := v.Labels; len(l) != 2 || l["team"] != "b" || l["app"] != "demo" {
		t.Errorf("labels %v, want app=demo team=b", l)
	}
	if a := v.Annotations; len(a) != 1 || a["example.com/note"] != "two" {
		t.Errorf("annotations %v, want example.com/note=two", a)
	}
	if v.Generation != 1 {
		t.Errorf("metadata-only changes moved generation to %d", v.Generation)
	}
	mf := v.ManagedFields
	mustManaged(t, mf, "kubectl-create", metav1.ManagedFieldsOperationUpdate, "")
	expectOwns(t, mustManaged(t, mf, "kubectl-label", metav1.ManagedFieldsOperationUpdate, ""), true, "f:metadata", "f:labels", "f:team")
	annotate := mustManaged(t, mf, "kubectl-annotate", metav1.ManagedFieldsOperationUpdate, "")
	expectOwns(t, annotate, true, "f:metadata", "f:annotations", "f:example.com/note")
	expectOwns(t, annotate, false, "f:metadata", "f:annotations", "f:example.com/tmp")

	// JSON patch.
	out = k.mustKubectl(t, "patch", res, name, "--type", "json", "-p", `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":15}]`)
	if !strings.Contains(out, name+" patched") || strings.Contains(out, "no change") {
		t.Errorf("kubectl patch --type json output %q", out)
	}
	v = getVWC(t, k, name)
	if got := timeoutOf(v, "first.example.com"); got != 15 {
		t.Errorf("timeoutSeconds after JSON patch = %d, want 15", got)
	}
	if v.Generation != 2 {
		t.Errorf("generation after a webhook change = %d, want 2", v.Generation)
	}
	rv := v.ResourceVersion
	expectOwns(t, mustManaged(t, v.ManagedFields, "kubectl-patch", metav1.ManagedFieldsOperationUpdate, ""), true,
		"f:webhooks", `k:{"name":"first.example.com"}`, "f:timeoutSeconds")
	// The same patch again changes nothing: no write, and kubectl says so.
	out = k.mustKubectl(t, "patch", res, name, "--type", "json", "-p", `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":15}]`)
	if !strings.Contains(out, "patched (no change)") {
		t.Errorf("no-op patch output %q, want \"patched (no change)\"", out)
	}
	if v = getVWC(t, k, name); v.ResourceVersion != rv {
		t.Errorf("no-op patch moved resourceVersion %s -> %s", rv, v.ResourceVersion)
	}

	// A strategic merge patch merges webhooks by name: adding a second
	// one keeps the first (the patch's items come first, as
	// strategicpatch orders them).
	k.mustKubectl(t, "patch", res, name, "--type", "strategic", "-p",
		`{"webhooks":[{"name":"second.example.com","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://second.example.com/hook"}}]}`)
	v = getVWC(t, k, name)
	if got := strings.Join(vwcWebhookNames(v), ","); got != "second.example.com,first.example.com" {
		t.Errorf("webhooks after strategic merge patch: %s, want second.example.com,first.example.com", got)
	}
	if got := timeoutOf(v, "first.example.com"); got != 15 {
		t.Errorf("strategic merge patch changed the first webhook's timeoutSeconds to %d", got)
	}
	// The default patch type is strategic too, and a null deletes a key.
	k.mustKubectl(t, "patch", res, name, "-p", `{"metadata":{"labels":{"team":null}}}`)
	if l := getVWC(t, k, name).Labels; len(l) != 1 || l["app"] != "demo" {
		t.Errorf("labels after deleting team with a patch: %v", l)
	}

	// A JSON merge patch replaces lists whole.
	k.mustKubectl(t, "patch", res, name, "--type", "merge", "-p",
		`{"metadata":{"annotations":{"example.com/merged":"yes"}},"webhooks":[{"name":"third.example.com","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://third.example.com/hook"}}]}`)
	v = getVWC(t, k, name)
	if got := strings.Join(vwcWebhookNames(v), ","); got != "third.example.com" {
		t.Errorf("webhooks after merge patch: %s, want third.example.com", got)
	}
	if v.Annotations["example.com/merged"] != "yes" || v.Annotations["example.com/note"] != "two" {
		t.Errorf("annotations after merge patch %v", v.Annotations)
	}
	// Defaults apply to the webhook a patch brings in.
	if got := timeoutOf(v, "third.example.com"); got != 10 {
		t.Errorf("defaulted timeoutSeconds of a patched-in webhook = %d, want 10", got)
	}
}

func TestKubectlClientSideApply(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const res, name = "validatingwebhookconfigurations", "csa-e2e"
	v1 := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: csa-e2e
  labels:
    app: demo
    tier: web
webhooks:
- name: one.example.com
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 10
  clientConfig:
    url: https://one.example.com/hook
- name: two.example.com
  sideEffects: None
  admissionReviewVersions: ["v1"]
  clientConfig:
    url: https://two.example.com/hook
`
	// v2 drops the tier label and the second webhook and changes a field.
	v2 := strings.Replace(strings.Replace(v1, "    tier: web\n", "", 1), "timeoutSeconds: 10", "timeoutSeconds: 20", 1)
	v2 = v2[:strings.Index(v2, "- name: two.example.com")]
	f1, f2 := writeFile(t, "v1.yaml", v1), writeFile(t, "v2.yaml", v2)

	out := k.mustKubectl(t, "apply", "-f", f1)
	if !strings.Contains(out, name+" created") {
		t.Errorf("first apply output %q", out)
	}
	v := getVWC(t, k, name)
	last := v.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
	if !strings.Contains(last, `"tier":"web"`) || !strings.Contains(last, "two.example.com") {
		t.Errorf("last-applied-configuration %q does not hold the applied manifest", last)
	}
	mustManaged(t, v.ManagedFields, "kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "")
	rv := v.ResourceVersion

	out = k.mustKubectl(t, "apply", "-f", f1)
	if !strings.Contains(out, name+" unchanged") {
		t.Errorf("second apply output %q, want unchanged", out)
	}
	if v = getVWC(t, k, name); v.ResourceVersion != rv {
		t.Errorf("an unchanged apply moved resourceVersion %s -> %s", rv, v.ResourceVersion)
	}

	// A label set outside the manifest is not the manifest's to remove.
	k.mustKubectl(t, "label", res, name, "extra=kept")

	out = k.mustKubectl(t, "apply", "-f", f2)
	if !strings.Contains(out, name+" configured") {
		t.Errorf("apply of v2 output %q, want configured", out)
	}
	v = getVWC(t, k, name)
	if l := v.Labels; len(l) != 2 || l["app"] != "demo" || l["extra"] != "kept" {
		t.Errorf("labels after apply without tier: %v, want app=demo extra=kept", l)
	}
	if got := strings.Join(vwcWebhookNames(v), ","); got != "one.example.com" {
		t.Errorf("webhooks after apply without the second: %s", got)
	}
	if got := timeoutOf(v, "one.example.com"); got != 20 {
		t.Errorf("timeoutSeconds after apply = %d, want 20", got)
	}
	if v.Generation != 2 {
		t.Errorf("generation = %d, want 2", v.Generation)
	}
	last = v.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
	var applied admissionregistrationv1.ValidatingWebhookConfiguration
	if err := json.Unmarshal([]byte(last), &applied); err != nil {
		t.Fatalf("last-applied-configuration is not JSON: %v: %q", err, last)
	}
	if _, ok := applied.Labels["tier"]; ok || len(applied.Webhooks) != 1 || *applied.Webhooks[0].TimeoutSeconds != 20 {
		t.Errorf("last-applied-configuration not updated to v2: %q", last)
	}

	// A manifest exported from the server (uid, resourceVersion...) then
	// the clean one again: kubectl's three-way patch clears the uid, which
	// kube-apiserver takes as the stored one, and the resourceVersion,
	// which a kind without unconditional updates refuses, as kube-apiserver
	// refuses it (a known kubectl pitfall).
	exported := writeFile(t, "exported.yaml", k.mustKubectl(t, "get", res, name, "-o", "yaml"))
	k.mustKubectl(t, "apply", "-f", exported)
	if _, errOut, err := k.kubectl(t, "apply", "-f", f2); err == nil || !strings.Contains(errOut, "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update") {
		t.Errorf("apply of the clean manifest after an exported one: %v %q, want the resourceVersion refused", err, errOut)
	}
	// A namespace takes unconditional updates: the same goes through.
	k.mustKubectl(t, "apply", "-f", writeFile(t, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: csa-e2e\n  labels: {app: demo}\n"))
	ns, err := k.Client.CoreV1().Namespaces().Get(ctxT(t), "csa-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.mustKubectl(t, "apply", "-f", writeFile(t, "ns-exported.yaml", k.mustKubectl(t, "get", "namespace", "csa-e2e", "-o", "yaml")))
	if out, errOut, err := k.kubectl(t, "apply", "-f", writeFile(t, "ns-clean.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: csa-e2e\n  labels: {app: other}\n")); err != nil || !strings.Contains(out, "csa-e2e configured") {
		t.Errorf("apply of a clean namespace manifest after an exported one: %v %q %q, want configured", err, out, errOut)
	}
	if got, err := k.Client.CoreV1().Namespaces().Get(ctxT(t), "csa-e2e", metav1.GetOptions{}); err != nil || got.UID != ns.UID || got.Labels["app"] != "other" {
		t.Errorf("namespace after the applies: %v, uid %s labels %v; want uid %s, app=other", err, got.UID, got.Labels, ns.UID)
	}
}

func TestKubectlServerSideApply(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const name = "ssa-e2e"
	manifest := strings.Replace(patchVWC(name), "first.example.com", "one.example.com", -1)
	f := writeFile(t, "ssa.yaml", manifest)

	out := k.mustKubectl(t, "apply", "--server-side", "-f", f)
	if !strings.Contains(out, name+" serverside-applied") {
		t.Errorf("apply --server-side output %q", out)
	}
	v := getVWC(t, k, name)
	if len(v.ManagedFields) != 1 {
		t.Errorf("managedFields after a create by apply:\n%s want one Apply entry", describeManaged(v.ManagedFields))
	}
	own := mustManaged(t, v.ManagedFields, "kubectl", metav1.ManagedFieldsOperationApply, "")
	if own != nil && (own.APIVersion != "admissionregistration.k8s.io/v1" || own.FieldsType != "FieldsV1" || own.Time == nil) {
		t.Errorf("apply entry %+v", *own)
	}
	expectOwns(t, own, true, "f:webhooks", `k:{"name":"one.example.com"}`, "f:timeoutSeconds")
	expectOwns(t, own, true, "f:metadata", "f:labels", "f:app")
	// Server-side apply keeps no last-applied annotation.
	if _, ok := v.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Errorf("server-side apply set the last-applied annotation")
	}
	rv := v.ResourceVersion
	// The same configuration again is a no-op.
	k.mustKubectl(t, "apply", "--server-side", "-f", f)
	if v = getVWC(t, k, name); v.ResourceVersion != rv {
		t.Errorf("re-applying the same configuration moved resourceVersion %s -> %s", rv, v.ResourceVersion)
	}

	// Another manager changing a field kubectl owns conflicts.
	changed := writeFile(t, "other.yaml", strings.Replace(manifest, "timeoutSeconds: 10", "timeoutSeconds: 20", 1))
	out, errOut, err := k.kubectl(t, "apply", "--server-side", "--field-manager", "other", "-f", changed)
	if err == nil {
		t.Fatalf("conflicting apply succeeded: %s", out)
	}
	for _, want := range []string{
		`Apply failed with 1 conflict: conflict with "kubectl": .webhooks[name="one.example.com"].timeoutSeconds`,
		"--force-conflicts",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("conflict stderr lacks %q:\n%s", want, errOut)
		}
	}
	if v = getVWC(t, k, name); v.ResourceVersion != rv || timeoutOf(v, "one.example.com") != 10 {
		t.Errorf("a conflicting apply changed the object: rv %s -> %s, timeoutSeconds %d", rv, v.ResourceVersion, timeoutOf(v, "one.example.com"))
	}

	// --force-conflicts takes the field over.
	k.mustKubectl(t, "apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", changed)
	v = getVWC(t, k, name)
	if got := timeoutOf(v, "one.example.com"); got != 20 {
		t.Errorf("timeoutSeconds after a forced apply = %d, want 20", got)
	}
	other := mustManaged(t, v.ManagedFields, "other", metav1.ManagedFieldsOperationApply, "")
	kubectl := mustManaged(t, v.ManagedFields, "kubectl", metav1.ManagedFieldsOperationApply, "")
	expectOwns(t, other, true, "f:webhooks", `k:{"name":"one.example.com"}`, "f:timeoutSeconds")
	expectOwns(t, kubectl, false, "f:webhooks", `k:{"name":"one.example.com"}`, "f:timeoutSeconds")
	// Fields both applied with the same value stay shared.
	expectOwns(t, kubectl, true, "f:webhooks", `k:{"name":"one.example.com"}`, "f:sideEffects")
	expectOwns(t, other, true, "f:webhooks", `k:{"name":"one.example.com"}`, "f:sideEffects")
}

func TestKubectlDiff(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const name = "diff-e2e"
	manifest := patchVWC(name)
	k.mustKubectl(t, "apply", "-f", writeFile(t, "v1.yaml", manifest))
	before := getVWC(t, k, name)

	out, errOut, err := k.kubectl(t, "diff", "-f", writeFile(t, "same.yaml", manifest))
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("diff without a change: exit %d, stdout %q, stderr %q; want exit 0 and no output", exitCode(err), out, errOut)
	}

	changed := strings.Replace(manifest, "timeoutSeconds: 10", "timeoutSeconds: 20", 1)
	changed = strings.Replace(changed, "    app: demo\n", "    app: demo\n    tier: web\n", 1)
	out, errOut, err = k.kubectl(t, "diff", "-f", writeFile(t, "changed.yaml", changed))
	if exitCode(err) != 1 {
		t.Errorf("diff with a change: exit %d (%v), want 1; stderr %q", exitCode(err), err, errOut)
	}
	for _, want := range []string{"-  timeoutSeconds: 10", "+  timeoutSeconds: 20", "+    tier: web"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "managedFields") {
		t.Errorf("diff shows managedFields:\n%s", out)
	}
	// kubectl diff is a dry run: the object is unchanged.
	after := getVWC(t, k, name)
	if after.ResourceVersion != before.ResourceVersion || timeoutOf(after, "first.example.com") != 10 || after.Labels["tier"] != "" || after.Generation != before.Generation {
		t.Errorf("diff changed the object: rv %s -> %s, timeoutSeconds %d, labels %v, generation %d",
			before.ResourceVersion, after.ResourceVersion, timeoutOf(after, "first.example.com"), after.Labels, after.Generation)
	}

	// An object that does not exist yet: the whole object is new, and the
	// dry-run create stores nothing.
	out, errOut, err = k.kubectl(t, "diff", "-f", writeFile(t, "new.yaml", patchVWC("diff-new")))
	if exitCode(err) != 1 || !strings.Contains(out, "+  name: diff-new") {
		t.Errorf("diff of a new object: exit %d, stdout:\n%s\nstderr: %s", exitCode(err), out, errOut)
	}
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctxT(t), "diff-new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("diff created the new object: %v", err)
	}
}

func TestKubectlEdit(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const res, name = "validatingwebhookconfigurations", "edit-e2e"
	k.mustKubectl(t, "create", "-f", writeFile(t, "vwc.yaml", patchVWC(name)))
	before := getVWC(t, k, name)

	out, errOut, err := k.kubectlEnv(t, []string{`KUBE_EDITOR=sed -i 's/timeoutSeconds: 10/timeoutSeconds: 20/'`}, "edit", res, name)
	if err != nil || !strings.Contains(out, name+" edited") {
		t.Fatalf("kubectl edit: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	v := getVWC(t, k, name)
	if got := timeoutOf(v, "first.example.com"); got != 20 {
		t.Errorf("timeoutSeconds after edit = %d, want 20", got)
	}
	if v.Generation != before.Generation+1 {
		t.Errorf("generation after edit = %d, want %d", v.Generation, before.Generation+1)
	}
	expectOwns(t, mustManaged(t, v.ManagedFields, "kubectl-edit", metav1.ManagedFieldsOperationUpdate, ""), true,
		"f:webhooks", `k:{"name":"first.example.com"}`, "f:timeoutSeconds")

	// An editor that changes nothing cancels the edit.
	out, errOut, err = k.kubectlEnv(t, []string{"KUBE_EDITOR=true"}, "edit", res, name)
	if err != nil || !strings.Contains(out+errOut, "Edit cancelled, no changes made.") {
		t.Errorf("edit without a change: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if after := getVWC(t, k, name); after.ResourceVersion != v.ResourceVersion {
		t.Errorf("a cancelled edit moved resourceVersion %s -> %s", v.ResourceVersion, after.ResourceVersion)
	}
}

// mwcApply is a MutatingWebhookConfiguration apply configuration.
func mwcApply(name string, webhooks ...*acv1.MutatingWebhookApplyConfiguration) *acv1.MutatingWebhookConfigurationApplyConfiguration {
	return acv1.MutatingWebhookConfiguration(name).WithWebhooks(webhooks...)
}

func mwcWebhookApply(name string, timeout int32) *acv1.MutatingWebhookApplyConfiguration {
	return acv1.MutatingWebhook().
		WithName(name).
		WithSideEffects(admissionregistrationv1.SideEffectClassNone).
		WithAdmissionReviewVersions("v1").
		WithClientConfig(acv1.WebhookClientConfig().WithURL("https://" + name + "/hook")).
		WithTimeoutSeconds(timeout)
}

func TestApplyConfigurationsManagers(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	mwcs := k.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	ctx := ctxT(t)
	aKey, bKey := `k:{"name":"a.example.com"}`, `k:{"name":"b.example.com"}`

	t.Run("two managers share a list-map", func(t *testing.T) {
		got, err := mwcs.Apply(ctx, mwcApply("shared", mwcWebhookApply("a.example.com", 10)), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatalf("apply by a: %v", err)
		}
		if got.UID == "" || got.Generation != 1 {
			t.Errorf("apply that creates: uid %q generation %d", got.UID, got.Generation)
		}
		got, err = mwcs.Apply(ctx, mwcApply("shared", mwcWebhookApply("b.example.com", 5)), metav1.ApplyOptions{FieldManager: "b"})
		if err != nil {
			t.Fatalf("apply by b: %v", err)
		}
		if names := strings.Join(mwcWebhookNames(got), ","); names != "a.example.com,b.example.com" {
			t.Errorf("webhooks after both applies: %s", names)
		}
		if len(got.ManagedFields) != 2 {
			t.Errorf("managedFields, want one Apply entry per manager:\n%s", describeManaged(got.ManagedFields))
		}
		a := mustManaged(t, got.ManagedFields, "a", metav1.ManagedFieldsOperationApply, "")
		b := mustManaged(t, got.ManagedFields, "b", metav1.ManagedFieldsOperationApply, "")
		expectOwns(t, a, true, "f:webhooks", aKey, "f:timeoutSeconds")
		expectOwns(t, a, false, "f:webhooks", bKey)
		expectOwns(t, b, true, "f:webhooks", bKey, "f:timeoutSeconds")
		expectOwns(t, b, false, "f:webhooks", aKey)
		rv := got.ResourceVersion

		// b changing a field a owns is a conflict naming a and the field.
		change := mwcApply("shared", mwcWebhookApply("b.example.com", 5), acv1.MutatingWebhook().WithName("a.example.com").WithTimeoutSeconds(20))
		_, err = mwcs.Apply(ctx, change, metav1.ApplyOptions{FieldManager: "b"})
		if !apierrors.IsConflict(err) {
			t.Fatalf("conflicting apply: %v, want a 409 Conflict", err)
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			t.Fatalf("error %T is not a Status", err)
		}
		st := status.Status()
		wantField := `.webhooks[name="a.example.com"].timeoutSeconds`
		if want := `Apply failed with 1 conflict: conflict with "a": ` + wantField; st.Message != want {
			t.Errorf("conflict message %q, want %q", st.Message, want)
		}
		if st.Details == nil || len(st.Details.Causes) != 1 {
			t.Fatalf("conflict details %+v, want one cause", st.Details)
		}
		if c := st.Details.Causes[0]; c.Type != "FieldManagerConflict" || c.Message != `conflict with "a"` || c.Field != wantField {
			t.Errorf("conflict cause %+v, want {FieldManagerConflict, conflict with \"a\", %s}", c, wantField)
		}
		cur, err := mwcs.Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.ResourceVersion != rv {
			t.Errorf("a conflicting apply wrote the object (rv %s -> %s)", rv, cur.ResourceVersion)
		}

		// Force takes the field over.
		got, err = mwcs.Apply(ctx, change, metav1.ApplyOptions{FieldManager: "b", Force: true})
		if err != nil {
			t.Fatalf("forced apply: %v", err)
		}
		for _, w := range got.Webhooks {
			if w.Name == "a.example.com" && (w.TimeoutSeconds == nil || *w.TimeoutSeconds != 20) {
				t.Errorf("a's webhook after the forced apply: timeoutSeconds %v, want 20", w.TimeoutSeconds)
			}
		}
		a = mustManaged(t, got.ManagedFields, "a", metav1.ManagedFieldsOperationApply, "")
		b = mustManaged(t, got.ManagedFields, "b", metav1.ManagedFieldsOperationApply, "")
		expectOwns(t, b, true, "f:webhooks", aKey, "f:timeoutSeconds")
		expectOwns(t, a, false, "f:webhooks", aKey, "f:timeoutSeconds")
		expectOwns(t, a, true, "f:webhooks", aKey, "f:sideEffects")
	})

	t.Run("fields a manager stops applying are removed", func(t *testing.T) {
		if _, err := mwcs.Apply(ctx, mwcApply("removal", mwcWebhookApply("a.example.com", 10), mwcWebhookApply("a2.example.com", 10)), metav1.ApplyOptions{FieldManager: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := mwcs.Apply(ctx, mwcApply("removal", mwcWebhookApply("b.example.com", 10)), metav1.ApplyOptions{FieldManager: "b"}); err != nil {
			t.Fatal(err)
		}
		got, err := mwcs.Apply(ctx, mwcApply("removal", mwcWebhookApply("a.example.com", 10)), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if names := strings.Join(mwcWebhookNames(got), ","); names != "a.example.com,b.example.com" {
			t.Errorf("webhooks after a stopped applying a2: %s, want a.example.com,b.example.com", names)
		}
		if got.Generation != 3 {
			t.Errorf("generation %d, want 3 (created, b's webhook added, a2 removed)", got.Generation)
		}
		got, err = mwcs.Apply(ctx, acv1.MutatingWebhookConfiguration("removal"), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if names := strings.Join(mwcWebhookNames(got), ","); names != "b.example.com" {
			t.Errorf("webhooks after a applied none: %s, want b.example.com", names)
		}
		if e := findManaged(got.ManagedFields, "a", metav1.ManagedFieldsOperationApply, ""); e != nil && ownsField(t, e, "f:webhooks") {
			t.Errorf("a still owns webhooks: %s", e.FieldsV1.Raw)
		}
	})

	t.Run("apply without a field manager", func(t *testing.T) {
		_, err := mwcs.Apply(ctx, mwcApply("no-manager", mwcWebhookApply("a.example.com", 10)), metav1.ApplyOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("apply without fieldManager: %v, want 422 Invalid", err)
		}
		if want := `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`; err.Error() != want {
			t.Errorf("error %q, want %q", err.Error(), want)
		}
		if _, err := mwcs.Get(ctx, "no-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the rejected apply created the object: %v", err)
		}
	})
}

const applyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: NAME
webhooks:
- name: a.example.com
  sideEffects: None
  admissionReviewVersions: ["v1"]
  clientConfig:
    url: https://a.example.com/hook
  timeoutSeconds: 7
`

func TestApplyRawHTTP(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	vwcs := collectionPath(gvrVWCs)
	applyCT := "Content-Type: " + string(types.ApplyYAMLPatchType)
	body := func(name string) []byte { return []byte(strings.Replace(applyYAML, "NAME", name, 1)) }

	t.Run("create on apply", func(t *testing.T) {
		r := k.do(t, "PATCH", vwcs+"/created?fieldManager=tester", body("created"), applyCT)
		if r.Code != http.StatusCreated {
			t.Fatalf("apply to a missing object: HTTP %d, want 201; body %s", r.Code, r.Body)
		}
		var got admissionregistrationv1.ValidatingWebhookConfiguration
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		if got.UID == "" || got.CreationTimestamp.IsZero() || got.Generation != 1 || got.ResourceVersion == "" {
			t.Errorf("created object metadata %+v", got.ObjectMeta)
		}
		if len(got.ManagedFields) != 1 {
			t.Errorf("managedFields:\n%s want one Apply entry", describeManaged(got.ManagedFields))
		}
		expectOwns(t, mustManaged(t, got.ManagedFields, "tester", metav1.ManagedFieldsOperationApply, ""), true,
			"f:webhooks", `k:{"name":"a.example.com"}`, "f:timeoutSeconds")
		stored := getVWC(t, k, "created")
		if stored.UID != got.UID || timeoutOf(stored, "a.example.com") != 7 {
			t.Errorf("stored object uid %s timeoutSeconds %d", stored.UID, timeoutOf(stored, "a.example.com"))
		}
		// Applying to an existing object answers 200.
		r = k.do(t, "PATCH", vwcs+"/created?fieldManager=tester", []byte(strings.Replace(string(body("created")), "timeoutSeconds: 7", "timeoutSeconds: 8", 1)), applyCT)
		if r.Code != http.StatusOK {
			t.Errorf("apply to an existing object: HTTP %d, want 200; body %.300s", r.Code, r.Body)
		}
		if got := timeoutOf(getVWC(t, k, "created"), "a.example.com"); got != 8 {
			t.Errorf("timeoutSeconds after the second apply = %d, want 8", got)
		}
	})

	t.Run("fieldManager is required", func(t *testing.T) {
		for _, name := range []string{"created-for-manager", "never-created"} {
			if name == "created-for-manager" {
				if r := k.do(t, "PATCH", vwcs+"/"+name+"?fieldManager=tester", body(name), applyCT); r.Code != http.StatusCreated {
					t.Fatalf("apply: %d %s", r.Code, r.Body)
				}
			}
			r := k.do(t, "PATCH", vwcs+"/"+name, body(name), applyCT)
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`)
			if st.Details == nil || st.Details.Kind != "PatchOptions" || st.Details.Group != "meta.k8s.io" ||
				len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "fieldManager" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueRequired {
				t.Errorf("%s: details %+v", name, st.Details)
			}
		}
		if r := k.do(t, "GET", vwcs+"/never-created", nil); r.Code != http.StatusNotFound {
			t.Errorf("a rejected apply created the object: %d", r.Code)
		}
	})

	t.Run("force only with apply", func(t *testing.T) {
		if r := k.do(t, "PATCH", vwcs+"/forced?fieldManager=tester", body("forced"), applyCT); r.Code != http.StatusCreated {
			t.Fatalf("apply: %d %s", r.Code, r.Body)
		}
		for _, q := range []string{"?force=true", "?force=false"} {
			r := k.do(t, "PATCH", vwcs+"/forced"+q, []byte(`{"metadata":{"labels":{"x":"y"}}}`), "Content-Type: application/merge-patch+json")
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				`PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`)
			if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "force" || st.Details.Causes[0].Type != metav1.CauseTypeForbidden {
				t.Errorf("%s: details %+v", q, st.Details)
			}
		}
		if l := getVWC(t, k, "forced").Labels; len(l) != 0 {
			t.Errorf("a rejected patch set labels %v", l)
		}
		// Force on an apply is fine.
		if r := k.do(t, "PATCH", vwcs+"/forced?fieldManager=tester&force=true", body("forced"), applyCT); r.Code != http.StatusOK {
			t.Errorf("forced apply: %d %.300s", r.Code, r.Body)
		}
	})

	t.Run("dryRun", func(t *testing.T) {
		r := k.do(t, "PATCH", vwcs+"/dry?fieldManager=tester&dryRun=All", body("dry"), applyCT)
		if r.Code != http.StatusCreated || !strings.Contains(string(r.Body), `"timeoutSeconds":7`) {
			t.Errorf("dry-run apply that creates: HTTP %d, want 201 with the object; body %.300s", r.Code, r.Body)
		}
		if g := k.do(t, "GET", vwcs+"/dry", nil); g.Code != http.StatusNotFound {
			t.Errorf("dry-run apply stored the object: GET %d", g.Code)
		}
		if r := k.do(t, "PATCH", vwcs+"/dry?fieldManager=tester", body("dry"), applyCT); r.Code != http.StatusCreated {
			t.Fatalf("apply: %d %s", r.Code, r.Body)
		}
		before := getVWC(t, k, "dry")
		r = k.do(t, "PATCH", vwcs+"/dry?fieldManager=other&dryRun=All&force=true", []byte(strings.Replace(string(body("dry")), "timeoutSeconds: 7", "timeoutSeconds: 9", 1)), applyCT)
		if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"timeoutSeconds":9`) {
			t.Errorf("dry-run apply: HTTP %d, want 200 with the change; body %.300s", r.Code, r.Body)
		}
		after := getVWC(t, k, "dry")
		if after.ResourceVersion != before.ResourceVersion || timeoutOf(after, "a.example.com") != 7 || findManaged(after.ManagedFields, "other", metav1.ManagedFieldsOperationApply, "") != nil {
			t.Errorf("dry-run apply persisted: rv %s -> %s, timeoutSeconds %d, managedFields:\n%s",
				before.ResourceVersion, after.ResourceVersion, timeoutOf(after, "a.example.com"), describeManaged(after.ManagedFields))
		}
	})
}

func TestPatchErrors(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	vwcs := collectionPath(gvrVWCs)
	path := vwcs + "/existing"
	created, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctxT(t), newVWC("existing"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		jsonPatch  = "Content-Type: application/json-patch+json"
		mergePatch = "Content-Type: application/merge-patch+json"
		smPatch    = "Content-Type: application/strategic-merge-patch+json"
	)
	unchanged := func(t *testing.T) {
		t.Helper()
		if cur := getVWC(t, k, "existing"); cur.ResourceVersion != created.ResourceVersion {
			t.Errorf("a rejected patch wrote the object (rv %s -> %s)", created.ResourceVersion, cur.ResourceVersion)
		}
	}

	t.Run("malformed JSON patch", func(t *testing.T) {
		for _, p := range []string{`[{"op":"replace","path":`, `{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}`} {
			expectStatus(t, k.do(t, "PATCH", path, []byte(p), jsonPatch), http.StatusBadRequest, metav1.StatusReasonBadRequest)
		}
		expectStatus(t, k.do(t, "PATCH", path, []byte(`{"metadata":`), mergePatch), http.StatusBadRequest, metav1.StatusReasonBadRequest)
		expectStatus(t, k.do(t, "PATCH", path, []byte(`{"metadata":`), smPatch), http.StatusBadRequest, metav1.StatusReasonBadRequest)
		unchanged(t)
	})

	t.Run("strategic merge patch directive the library panics on", func(t *testing.T) {
		// kube-apiserver's library panics on it (kube answers 500): a
		// malformed patch.
		if _, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctxT(t), newDeviceClass("smp.example.com"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := `{"spec":{"$setElementOrder/selectors":[{"cel":{"expression":"true"}}]}}`
		expectStatus(t, k.do(t, "PATCH", collectionPath(gvrDevClasses)+"/smp.example.com", []byte(p), smPatch), http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"the strategic merge patch cannot be applied")
	})

	t.Run("JSON patch test fails", func(t *testing.T) {
		p := `[{"op":"test","path":"/webhooks/0/timeoutSeconds","value":99},{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}]`
		expectStatus(t, k.do(t, "PATCH", path, []byte(p), jsonPatch), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			"the server rejected our request due to an error in our request")
		unchanged(t)
		// The same test on the right value passes and the patch applies.
		p = `[{"op":"test","path":"/webhooks/0/timeoutSeconds","value":10},{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}]`
		r := k.do(t, "PATCH", path+"?dryRun=All", []byte(p), jsonPatch)
		if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"timeoutSeconds":5`) {
			t.Errorf("passing test op: HTTP %d %.300s", r.Code, r.Body)
		}
	})

	t.Run("JSON patch replace of a missing member", func(t *testing.T) {
		// kube-apiserver's JSON patch (json-patch v4) replaces a member
		// an object lacks as it adds one.
		p := `[{"op":"replace","path":"/metadata/annotations","value":{"a":"b"}}]`
		r := k.do(t, "PATCH", path+"?dryRun=All", []byte(p), jsonPatch)
		if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"annotations":{"a":"b"}`) {
			t.Errorf("replace of a missing member: HTTP %d %.300s, want 200 with it set", r.Code, r.Body)
		}
	})

	t.Run("merge patch with a wrong type", func(t *testing.T) {
		for _, ct := range []string{mergePatch, smPatch} {
			r := k.do(t, "PATCH", path, []byte(`{"webhooks":"not-a-list"}`), ct)
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `"" is invalid: patch: Invalid value: `)
			if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "patch" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
				t.Errorf("%s: details %+v, want one FieldValueInvalid cause on field \"patch\"", ct, st.Details)
			}
		}
		unchanged(t)
	})

	t.Run("patch renames", func(t *testing.T) {
		for _, ct := range []string{mergePatch, smPatch} {
			expectStatus(t, k.do(t, "PATCH", path, []byte(`{"metadata":{"name":"renamed"}}`), ct), http.StatusBadRequest, metav1.StatusReasonBadRequest,
				"the name of the object (renamed) does not match the name on the URL (existing)")
		}
		expectStatus(t, k.do(t, "PATCH", path, []byte(`[{"op":"replace","path":"/metadata/name","value":"renamed"}]`), jsonPatch), http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"the name of the object (renamed) does not match the name on the URL (existing)")
		unchanged(t)
	})

	t.Run("stale resourceVersion", func(t *testing.T) {
		// A resourceVersion the patch sets is a precondition, whatever the
		// patch type: a JSON patch's replace (client-go's csaupgrade locks
		// so), a merge patch's metadata, an applied configuration's.
		const stale = "1"
		for _, tc := range []struct{ ct, body string }{
			{jsonPatch, `[{"op":"replace","path":"/metadata/resourceVersion","value":"` + stale + `"},{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":9}]`},
			{mergePatch, `{"metadata":{"resourceVersion":"` + stale + `"},"webhooks":[]}`},
			{"Content-Type: application/apply-patch+yaml", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"existing","resourceVersion":"` + stale + `"}}`},
		} {
			q := ""
			if strings.Contains(tc.ct, "apply") {
				q = "?fieldManager=stale"
			}
			expectStatus(t, k.do(t, "PATCH", path+q, []byte(tc.body), tc.ct), http.StatusConflict, metav1.StatusReasonConflict,
				"the object has been modified; please apply your changes to the latest version and try again")
		}
		unchanged(t)
	})

	t.Run("patch changes uid", func(t *testing.T) {
		// A patch carries no UID precondition: the changed uid fails the
		// update's metadata validation (rest.BeforeUpdate).
		const uid = "00000000-0000-0000-0000-000000000001"
		r := k.do(t, "PATCH", path, []byte(`{"metadata":{"uid":"`+uid+`"}}`), mergePatch)
		st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			`ValidatingWebhookConfiguration.admissionregistration.k8s.io "existing" is invalid: metadata.uid: Invalid value: "`+uid+`": field is immutable`)
		if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "metadata.uid" {
			t.Errorf("details %+v", st.Details)
		}
		// A PUT's uid is a precondition: a mismatch is a 409.
		put := created.DeepCopy()
		put.UID = uid
		put.APIVersion, put.Kind = "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
		r = k.do(t, "PUT", path, mustJSON(t, put))
		expectStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict,
			"Precondition failed: UID in precondition: "+uid+", UID in object meta: "+string(created.UID))
		unchanged(t)
	})

	t.Run("unsupported media type", func(t *testing.T) {
		for _, ct := range []string{"text/plain", "application/yaml", "application/json"} {
			expectStatus(t, k.do(t, "PATCH", path, []byte(`{"metadata":{"labels":{"a":"b"}}}`), "Content-Type: "+ct), http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType)
		}
		unchanged(t)
	})

	t.Run("fieldValidation Strict", func(t *testing.T) {
		p := []byte(`{"webhooks":[{"name":"validate.example.com","foo":1}]}`)
		r := k.do(t, "PATCH", path+"?fieldValidation=Strict", p, smPatch)
		// kube quotes a strategic merge patch as its Go map prints.
		st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			`"" is invalid: patch: Invalid value: "map[webhooks:[map[foo:1 name:validate.example.com]]]": strict decoding error: unknown field "webhooks[0].foo"`)
		if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "patch" {
			t.Errorf("details %+v, want one cause on field \"patch\"", st.Details)
		}
		r = k.do(t, "PATCH", path+"?fieldValidation=Strict", []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"x":1}}`), mergePatch)
		expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `strict decoding error: unknown field "spec"`)
		// The patch itself is decoded strictly too: its duplicate fields,
		// and a JSON patch operation's unknown ones.
		r = k.do(t, "PATCH", path+"?fieldValidation=Strict", []byte(`{"metadata":{"labels":{"a":"b","a":"c"}}}`), mergePatch)
		expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `strict decoding error: duplicate field "metadata.labels.a"`)
		r = k.do(t, "PATCH", path+"?fieldValidation=Strict", []byte(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"},"bogus":1}]`), jsonPatch)
		expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `strict decoding error: json patch unknown field "[0].bogus"`)
		// A merge patch that is not an object.
		r = k.do(t, "PATCH", path, []byte(`[1]`), mergePatch)
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}`)
		unchanged(t)
	})

	t.Run("fieldValidation Warn", func(t *testing.T) {
		p := []byte(`{"metadata":{"labels":{"warned":"yes"}},"webhooks":[{"name":"validate.example.com","foo":1}]}`)
		for _, q := range []string{"?fieldValidation=Warn", ""} { // Warn is the default
			r := k.do(t, "PATCH", path+q, p, smPatch)
			if r.Code != http.StatusOK {
				t.Fatalf("PATCH%s: HTTP %d %.300s", q, r.Code, r.Body)
			}
			if w := warnings(t, r.Header); len(w) != 1 || w[0] != `unknown field "webhooks[0].foo"` {
				t.Errorf("PATCH%s: warnings %q, want [unknown field \"webhooks[0].foo\"]", q, w)
			}
			if strings.Contains(string(r.Body), `"foo"`) {
				t.Errorf("the unknown field was kept: %s", r.Body)
			}
		}
		if l := getVWC(t, k, "existing").Labels; l["warned"] != "yes" {
			t.Errorf("labels %v: the warned patch did not apply", l)
		}
		// A patch's duplicate field is a warning by default.
		r := k.do(t, "PATCH", path, []byte(`{"metadata":{"labels":{"dup":"1","dup":"2"}}}`), mergePatch)
		if w := warnings(t, r.Header); r.Code != http.StatusOK || len(w) != 1 || w[0] != `duplicate field "metadata.labels.dup"` {
			t.Errorf("merge patch with a duplicate field: HTTP %d, warnings %q", r.Code, w)
		}
		// Ignore: no warning.
		r = k.do(t, "PATCH", path+"?fieldValidation=Ignore", p, smPatch)
		if r.Code != http.StatusOK || len(r.Header.Values("Warning")) != 0 {
			t.Errorf("fieldValidation=Ignore: HTTP %d, warnings %q", r.Code, r.Header.Values("Warning"))
		}
	})
}

func TestManagedFieldsTracking(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	vwcClient := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	ctx := ctxT(t)
	ua := uaManager()
	key := `k:{"name":"validate.example.com"}`

	created, err := vwcClient.Create(ctx, newVWC("tracked"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.ManagedFields) != 1 {
		t.Errorf("managedFields after create:\n%s want one entry", describeManaged(created.ManagedFields))
	}
	e := mustManaged(t, created.ManagedFields, ua, metav1.ManagedFieldsOperationUpdate, "")
	if e != nil && (e.APIVersion != "admissionregistration.k8s.io/v1" || e.FieldsType != "FieldsV1" || e.Time == nil) {
		t.Errorf("create entry %+v", *e)
	}
	expectOwns(t, e, true, "f:webhooks", key, "f:clientConfig", "f:url")
	// Defaults are applied before the field manager runs: their fields
	// belong to the writer.
	expectOwns(t, e, true, "f:webhooks", key, "f:timeoutSeconds")

	// An update by another manager takes the fields it changes.
	upd := created.DeepCopy()
	upd.Webhooks[0].TimeoutSeconds = ptrTo[int32](25)
	updated, err := vwcClient.Update(ctx, upd, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	expectOwns(t, mustManaged(t, updated.ManagedFields, "updater", metav1.ManagedFieldsOperationUpdate, ""), true, "f:webhooks", key, "f:timeoutSeconds")
	expectOwns(t, mustManaged(t, updated.ManagedFields, ua, metav1.ManagedFieldsOperationUpdate, ""), false, "f:webhooks", key, "f:timeoutSeconds")

	path := collectionPath(gvrVWCs) + "/tracked"
	// put sends the current object with a change and managedFields set by
	// edit (nil: the field left out).
	put := func(t *testing.T, manager string, edit func(m map[string]any)) *admissionregistrationv1.ValidatingWebhookConfiguration {
		t.Helper()
		cur := getVWC(t, k, "tracked")
		cur.APIVersion, cur.Kind = "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
		var obj map[string]any
		if err := json.Unmarshal(mustJSON(t, cur), &obj); err != nil {
			t.Fatal(err)
		}
		meta := obj["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels[manager] = "x"
		meta["labels"] = labels
		edit(meta)
		r := k.do(t, "PUT", path+"?fieldManager="+manager, mustJSON(t, obj))
		if r.Code != http.StatusOK {
			t.Fatalf("PUT: HTTP %d %s", r.Code, r.Body)
		}
		var out admissionregistrationv1.ValidatingWebhookConfiguration
		if err := json.Unmarshal(r.Body, &out); err != nil {
			t.Fatal(err)
		}
		if stored := getVWC(t, k, "tracked"); fmtJSON(stored.ManagedFields) != fmtJSON(out.ManagedFields) {
			t.Errorf("PUT answered managedFields\n%s but stored\n%s", describeManaged(out.ManagedFields), describeManaged(stored.ManagedFields))
		}
		return &out
	}

	// Without managedFields in the body the existing ones are kept (a
	// client unaware of them cannot drop them).
	got := put(t, "putter", func(m map[string]any) { delete(m, "managedFields") })
	for _, m := range []string{ua, "updater", "putter"} {
		mustManaged(t, got.ManagedFields, m, metav1.ManagedFieldsOperationUpdate, "")
	}
	if len(got.ManagedFields) != 3 {
		t.Errorf("managedFields after a PUT without them:\n%s want 3 entries", describeManaged(got.ManagedFields))
	}

	// An empty list resets them: kube-apiserver drops every entry and,
	// as the object then has none, does not track this update either.
	got = put(t, "resetter", func(m map[string]any) { m["managedFields"] = []any{} })
	if len(got.ManagedFields) != 0 {
		t.Errorf("managedFields after a PUT with managedFields: []:\n%s want none", describeManaged(got.ManagedFields))
	}
	if got.Labels["resetter"] != "x" {
		t.Errorf("the resetting PUT did not apply: labels %v", got.Labels)
	}
	// Later updates of an object without managedFields are not tracked.
	r := k.do(t, "PATCH", path+"?fieldManager=later", []byte(`{"metadata":{"labels":{"later":"x"}}}`), "Content-Type: application/merge-patch+json")
	if r.Code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", r.Code, r.Body)
	}
	if mf := getVWC(t, k, "tracked").ManagedFields; len(mf) != 0 {
		t.Errorf("managedFields after an update of an untracked object:\n%s want none", describeManaged(mf))
	}
	// An apply starts tracking again: the existing fields go to
	// "before-first-apply".
	applyBody := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"tracked","labels":{"applied":"x"}}}`
	r = k.do(t, "PATCH", path+"?fieldManager=applier", []byte(applyBody), "Content-Type: application/apply-patch+yaml")
	if r.Code != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Code, r.Body)
	}
	mf := getVWC(t, k, "tracked").ManagedFields
	if len(mf) != 2 {
		t.Errorf("managedFields after the first apply:\n%s want before-first-apply and applier", describeManaged(mf))
	}
	expectOwns(t, mustManaged(t, mf, "before-first-apply", metav1.ManagedFieldsOperationUpdate, ""), true, "f:webhooks", key, "f:timeoutSeconds")
	expectOwns(t, mustManaged(t, mf, "applier", metav1.ManagedFieldsOperationApply, ""), true, "f:metadata", "f:labels", "f:applied")

	// A list with one empty entry resets them too.
	got = put(t, "resetter2", func(m map[string]any) { m["managedFields"] = []any{map[string]any{}} })
	if len(got.ManagedFields) != 0 {
		t.Errorf("managedFields after a PUT with managedFields: [{}]:\n%s want none", describeManaged(got.ManagedFields))
	}
}

// statusCondition is a valid metav1.Condition in JSON.
func statusCondition(typ, message string) string {
	return `{"type":"` + typ + `","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"Tested","message":"` + message + `"}`
}

func TestStatusSubresourcePatch(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ua := uaManager()
	const mergePatch = "Content-Type: application/merge-patch+json"

	t.Run("ValidatingAdmissionPolicy", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t)
		vaps := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
		if _, err := vaps.Create(ctx, newVAP("status-vap"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// After kapi's type-checking controller has written its status.
		created := settledPolicy(ctx, t, k, "status-vap")
		path := collectionPath(gvrVAPs) + "/status-vap"
		hasCondition := func(p *admissionregistrationv1.ValidatingAdmissionPolicy, typ, message string) bool {
			for _, c := range p.Status.Conditions {
				if c.Type == typ && c.Message == message {
					return true
				}
			}
			return false
		}

		// The main resource ignores status.
		r := k.do(t, "PATCH", path+"?fieldManager=main-writer", []byte(`{"status":{"conditions":[`+statusCondition("Ready", "via main")+`]}}`), mergePatch)
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", r.Code, r.Body)
		}
		got, err := vaps.Get(ctx, "status-vap", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 0 || got.ResourceVersion != created.ResourceVersion || got.Generation != 1 {
			t.Errorf("a status change through the main resource: conditions %v, rv %s -> %s, generation %d",
				got.Status.Conditions, created.ResourceVersion, got.ResourceVersion, got.Generation)
		}
		if e := findManaged(got.ManagedFields, "main-writer", metav1.ManagedFieldsOperationUpdate, ""); e != nil {
			t.Errorf("a write that changed nothing has a managedFields entry: %s", e.FieldsV1.Raw)
		}

		// /status changes status only.
		r = k.do(t, "PATCH", path+"/status?fieldManager=status-writer",
			[]byte(`{"metadata":{"labels":{"via":"status"}},"spec":{"failurePolicy":"Ignore"},"status":{"conditions":[`+statusCondition("Ready", "via status")+`]}}`), mergePatch)
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH /status: %d %s", r.Code, r.Body)
		}
		got, err = vaps.Get(ctx, "status-vap", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasCondition(got, "Ready", "via status") {
			t.Errorf("conditions after PATCH /status: %+v", got.Status.Conditions)
		}
		if got.Labels["via"] != "" || *got.Spec.FailurePolicy != admissionregistrationv1.Fail || got.Generation != 1 {
			t.Errorf("PATCH /status changed more than status: labels %v, failurePolicy %s, generation %d", got.Labels, *got.Spec.FailurePolicy, got.Generation)
		}
		sw := mustManaged(t, got.ManagedFields, "status-writer", metav1.ManagedFieldsOperationUpdate, "status")
		expectOwns(t, sw, true, "f:status", "f:conditions", `k:{"type":"Ready"}`, "f:message")
		expectOwns(t, sw, false, "f:metadata")
		expectOwns(t, sw, false, "f:spec")
		mustManaged(t, got.ManagedFields, ua, metav1.ManagedFieldsOperationUpdate, "")

		// PUT /status.
		upd := got.DeepCopy()
		upd.Status.Conditions[0].Message = "via put"
		upd.Labels = map[string]string{"via": "put"}
		upd.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Ignore)
		put, err := vaps.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasCondition(put, "Ready", "via put") || put.Labels["via"] != "" || *put.Spec.FailurePolicy != admissionregistrationv1.Fail || put.Generation != 1 {
			t.Errorf("after PUT /status: conditions %+v labels %v failurePolicy %s generation %d", put.Status.Conditions, put.Labels, *put.Spec.FailurePolicy, put.Generation)
		}
		expectOwns(t, mustManaged(t, put.ManagedFields, ua, metav1.ManagedFieldsOperationUpdate, "status"), true, "f:status", "f:conditions", `k:{"type":"Ready"}`, "f:message")

		// A spec change moves generation and keeps status.
		r = k.do(t, "PATCH", path+"?fieldManager=spec-writer", []byte(`{"spec":{"failurePolicy":"Ignore"}}`), mergePatch)
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", r.Code, r.Body)
		}
		got, err = vaps.Get(ctx, "status-vap", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Generation != 2 || *got.Spec.FailurePolicy != admissionregistrationv1.Ignore || !hasCondition(got, "Ready", "via put") {
			t.Errorf("after a spec patch: generation %d failurePolicy %s conditions %+v", got.Generation, *got.Spec.FailurePolicy, got.Status.Conditions)
		}
		mustManaged(t, got.ManagedFields, "spec-writer", metav1.ManagedFieldsOperationUpdate, "")
		mustManaged(t, got.ManagedFields, "status-writer", metav1.ManagedFieldsOperationUpdate, "status")
	})

	t.Run("CustomResourceDefinition", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t)
		crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
		created, err := crds.Create(ctx, newCRD("gadgets", "example.com"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mustManaged(t, created.ManagedFields, ua, metav1.ManagedFieldsOperationUpdate, "")
		path := collectionPath(gvrCRDs) + "/gadgets.example.com"
		// The CRD controllers write status (names, Established) right
		// after the create; let them finish first.
		eventually(t, 10*time.Second, "the CRD to be Established", func() (bool, error) {
			c, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		hasCondition := func(c *apiextensionsv1.CustomResourceDefinition, typ, message string) bool {
			for _, cond := range c.Status.Conditions {
				if string(cond.Type) == typ && cond.Message == message {
					return true
				}
			}
			return false
		}

		// The main resource ignores status.
		r := k.do(t, "PATCH", path+"?fieldManager=main-writer", []byte(`{"status":{"conditions":[`+statusCondition("Example", "via main")+`]}}`), mergePatch)
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", r.Code, r.Body)
		}
		got, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hasCondition(got, "Example", "via main") || got.Generation != 1 {
			t.Errorf("a status change through the main resource: conditions %+v generation %d", got.Status.Conditions, got.Generation)
		}

		// /status changes status, not spec. (kube-apiserver v1.33's CRD
		// status strategy resets metadata against the new object itself,
		// kubernetes/kubernetes#137681, so a label set through /status
		// does stick.)
		r = k.do(t, "PATCH", path+"/status?fieldManager=status-writer",
			[]byte(`{"metadata":{"labels":{"via":"status"}},"spec":{"scope":"Cluster"},"status":{"conditions":[`+statusCondition("Example", "via status")+`]}}`), mergePatch)
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH /status: %d %s", r.Code, r.Body)
		}
		got, err = crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasCondition(got, "Example", "via status") {
			t.Errorf("conditions after PATCH /status: %+v", got.Status.Conditions)
		}
		if got.Spec.Scope != apiextensionsv1.NamespaceScoped || got.Generation != 1 {
			t.Errorf("PATCH /status changed spec: scope %s generation %d", got.Spec.Scope, got.Generation)
		}
		if got.Labels["via"] != "status" {
			t.Errorf("labels after PATCH /status %v; kube-apiserver v1.33 keeps a label set through a CRD's /status", got.Labels)
		}
		sw := mustManaged(t, got.ManagedFields, "status-writer", metav1.ManagedFieldsOperationUpdate, "status")
		expectOwns(t, sw, true, "f:status", "f:conditions", `k:{"type":"Example"}`, "f:message")
		expectOwns(t, sw, false, "f:spec")

		// PUT /status (retried: a controller may write status meanwhile).
		var put *apiextensionsv1.CustomResourceDefinition
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for i := range cur.Status.Conditions {
				if cur.Status.Conditions[i].Type == "Example" {
					cur.Status.Conditions[i].Message = "via put"
				}
			}
			cur.Spec.Scope = apiextensionsv1.ClusterScoped
			put, err = crds.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !hasCondition(put, "Example", "via put") || put.Spec.Scope != apiextensionsv1.NamespaceScoped || put.Generation != 1 {
			t.Errorf("after PUT /status: conditions %+v scope %s generation %d", put.Status.Conditions, put.Spec.Scope, put.Generation)
		}
		mustManaged(t, put.ManagedFields, ua, metav1.ManagedFieldsOperationUpdate, "status")

		// A spec change moves generation and keeps status.
		r = k.do(t, "PATCH", path+"?fieldManager=spec-writer", []byte(`[{"op":"add","path":"/spec/names/shortNames","value":["gd"]}]`), "Content-Type: application/json-patch+json")
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", r.Code, r.Body)
		}
		got, err = crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Generation != 2 || len(got.Spec.Names.ShortNames) != 1 || !hasCondition(got, "Example", "via put") {
			t.Errorf("after a spec patch: generation %d shortNames %v conditions %+v", got.Generation, got.Spec.Names.ShortNames, got.Status.Conditions)
		}
		expectOwns(t, mustManaged(t, got.ManagedFields, "spec-writer", metav1.ManagedFieldsOperationUpdate, ""), true, "f:spec", "f:names", "f:shortNames")
	})
}

// A server-side apply body is read as kube-apiserver reads it: as YAML,
// its duplicate keys a 400 under fieldValidation=Strict (what kubectl apply
// --server-side sends) and a warning each otherwise; the configuration of
// a create must name the object, and cannot carry a uid.
func TestApplyBodyDecoding(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	path := collectionPath(gvrDevClasses)
	applyCT := "Content-Type: " + string(types.ApplyYAMLPatchType)
	const dup = "apiVersion: resource.k8s.io/v1beta2\nkind: DeviceClass\nmetadata:\n  name: dup.example.com\n  labels:\n    a: \"1\"\n    a: \"2\"\n"
	r := k.do(t, "PATCH", path+"/dup.example.com?fieldManager=t&fieldValidation=Strict", []byte(dup), applyCT)
	st := expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "error strict decoding YAML: ", `line 7: key "a" already set in map`)
	if !strings.HasPrefix(st.Message, "error strict decoding YAML: ") {
		t.Errorf("strict duplicate keys: message %q", st.Message)
	}
	r = k.do(t, "PATCH", path+"/dup.example.com?fieldManager=t", []byte(dup), applyCT)
	if r.Code != http.StatusCreated || !strings.Contains(r.Header.Get("Warning"), `line 7: key \"a\" already set in map`) {
		t.Errorf("duplicate keys under Warn: %d, Warning %q, want 201 and the duplicate warned", r.Code, r.Header.Get("Warning"))
	}
	r = k.do(t, "PATCH", path+"/bad.example.com?fieldManager=t", []byte("metadata: {name: x\n"), applyCT)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "error decoding YAML: error converting YAML to JSON: yaml: line ")
	r = k.do(t, "PATCH", path+"/empty.example.com?fieldManager=t", []byte(""), applyCT)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid object type: /, Kind=")
	noName := "apiVersion: resource.k8s.io/v1beta2\nkind: DeviceClass\nspec: {}\n"
	r = k.do(t, "PATCH", path+"/noname.example.com?fieldManager=t", []byte(noName), applyCT)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the name of the object (noname.example.com based on URL) was undeterminable: name must be provided")
	withUID := "apiVersion: resource.k8s.io/v1beta2\nkind: DeviceClass\nmetadata: {name: uid.example.com, uid: abc}\n"
	r = k.do(t, "PATCH", path+"/uid.example.com?fieldManager=t", []byte(withUID), applyCT)
	expectStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict, `Operation cannot be fulfilled on deviceclasses.resource.k8s.io "uid.example.com": uid mismatch: the provided object specified uid abc, and no existing object was found`)
	// A null merge patch is no patch, as kube's merge (json-patch v4) says.
	r = k.do(t, "PATCH", path+"/dup.example.com", []byte("null"), "Content-Type: application/merge-patch+json")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "Invalid JSON Patch")
}

// A YAML body is read strictly as kube-apiserver's strict YAML decoder
// reads it: its duplicate keys are the first strict error (400 under
// Strict; a warning per line under Warn).
func TestYAMLBodyDuplicateKeys(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const body = "apiVersion: resource.k8s.io/v1beta2\nkind: DeviceClass\nmetadata:\n  name: y.example.com\n  labels:\n    a: \"1\"\n    a: \"2\"\nspec: {}\n"
	path := collectionPath(gvrDevClasses)
	r := k.do(t, "POST", path+"?fieldValidation=Strict", []byte(body), "Content-Type: application/yaml")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
		`DeviceClass in version "v1beta2" cannot be handled as a DeviceClass: strict decoding error: yaml: unmarshal errors:`, `line 7: key "a" already set in map`)
	r = k.do(t, "POST", path, []byte(body), "Content-Type: application/yaml")
	if r.Code != http.StatusCreated || !strings.Contains(r.Header.Get("Warning"), `line 7: key \"a\" already set in map`) {
		t.Errorf("duplicate keys under Warn: %d, Warning %q, want 201 and the duplicate warned", r.Code, r.Header.Values("Warning"))
	}
}

// An apply that changes nothing but the time of its manager's entry (the
// status it sends to the main resource is reset) writes nothing, as
// kube's store keeps the old times: the resourceVersion stays, watchers
// see no event.
func TestNoOpApplyWritesNothing(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	const path = "/apis/dyn.example.com/v1/namespaces/default/gadgets/noop"
	apply := func(body string) *unstructured.Unstructured {
		t.Helper()
		r := k.do(t, "PATCH", path+"?fieldManager=a", []byte(body), "Content-Type: application/apply-patch+yaml")
		if r.Code != http.StatusOK && r.Code != http.StatusCreated {
			t.Fatalf("apply: %d %s", r.Code, r.Body)
		}
		return decodeObj(t, r)
	}
	const spec = `{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"noop"},"spec":{"color":"red"}`
	first := apply(spec + `}`)
	time.Sleep(1100 * time.Millisecond) // managedFields times have seconds
	again := apply(spec + `,"status":{"replicas":3}}`)
	if again.GetResourceVersion() != first.GetResourceVersion() {
		t.Errorf("a no-op apply moved the resourceVersion %s → %s", first.GetResourceVersion(), again.GetResourceVersion())
	}
	if !reflect.DeepEqual(again.GetManagedFields(), first.GetManagedFields()) {
		t.Errorf("a no-op apply changed managedFields:\n%v\n%v", first.GetManagedFields(), again.GetManagedFields())
	}
	_, evs := rawWatch(t, k, "/apis/dyn.example.com/v1/namespaces/default/gadgets?watch=true&timeoutSeconds=1&resourceVersion="+first.GetResourceVersion())
	if len(evs) != 0 {
		t.Errorf("watch after the no-op apply: %+v, want no event", evs)
	}
}

// A namespace's /status writes metadata too (kube's namespace status
// strategy resets only spec), so an apply through it owns the labels it
// sets.
func TestNamespaceStatusApplyOwnsMetadata(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createNamespace(t, k, "ns-status-apply", nil)
	r := k.do(t, "PATCH", "/api/v1/namespaces/ns-status-apply/status?fieldManager=s1", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-status-apply","labels":{"l2":"v2"}}}`), "Content-Type: application/apply-patch+yaml")
	mustCode(t, "apply to /status", r, http.StatusOK)
	obj := decodeObj(t, r)
	if obj.GetLabels()["l2"] != "v2" {
		t.Fatalf("labels %v, want l2=v2", obj.GetLabels())
	}
	var owned bool
	for _, e := range obj.GetManagedFields() {
		if e.Manager == "s1" && e.Subresource == "status" && e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"f:l2"`) {
			owned = true
		}
	}
	if !owned {
		t.Errorf("managedFields %+v, want s1 (status) owning metadata.labels.l2", obj.GetManagedFields())
	}
	// Applied again without it, the label goes.
	r = k.do(t, "PATCH", "/api/v1/namespaces/ns-status-apply/status?fieldManager=s1", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns-status-apply"}}`), "Content-Type: application/apply-patch+yaml")
	mustCode(t, "apply to /status again", r, http.StatusOK)
	if l := decodeObj(t, r).GetLabels(); l["l2"] != "" {
		t.Errorf("labels after the apply without l2: %v, want it removed", l)
	}
}

// The first apply to an object without managedFields credits what was
// there to "before-first-apply", compared with a new object of the kind
// as kube-apiserver compares it: a built-in kind's empty spec is nobody's.
func TestBeforeFirstApplyOfBuiltinKind(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	path := deviceClassPath("bfa.example.com")
	mustCode(t, "create", k.do(t, "POST", collectionPath(gvrDevClasses), []byte(`{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{"name":"bfa.example.com"},"spec":{"selectors":[{"cel":{"expression":"true"}}]}}`)), http.StatusCreated)
	mustCode(t, "reset managedFields", k.do(t, "PATCH", path, []byte(`{"metadata":{"managedFields":[{}]}}`), "Content-Type: application/merge-patch+json"), http.StatusOK)
	r := k.do(t, "PATCH", path+"?fieldManager=m", []byte(`{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{"name":"bfa.example.com","labels":{"a":"b"}}}`), "Content-Type: application/apply-patch+yaml")
	mustCode(t, "apply", r, http.StatusOK)
	var before string
	for _, e := range decodeObj(t, r).GetManagedFields() {
		if e.Manager == "before-first-apply" && e.FieldsV1 != nil {
			before = string(e.FieldsV1.Raw)
		}
	}
	if !strings.Contains(before, `"f:spec":{"f:selectors":{}}`) {
		t.Errorf("before-first-apply fields %s, want spec.selectors without spec itself", before)
	}
}

// A server-side apply whose object is too large to store with its
// managedFields fails (413), where a create or another patch is stored
// without them: kube-apiserver's patch handler retries every patch type
// but apply without managedFields (kube's integration tests
// TestCreateVeryLargeObject, TestPatchVeryLargeObject). The same holds for
// an apply that creates.
func TestTooLargeApplyIsNotShed(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bulks.big.example.com
spec:
  group: big.example.com
  scope: Cluster
  names: {plural: bulks, singular: bulk, kind: Bulk}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`))
	const coll = "/apis/big.example.com/v1/bulks"
	// About 0.8 MB of keys: storable once, not twice (as managedFields).
	var spec strings.Builder
	for i := 0; i < 9999; i++ {
		if i > 0 {
			spec.WriteString(",")
		}
		fmt.Fprintf(&spec, `"this-key-is-very-long-so-as-to-create-a-very-large-serialized-fieldset-%v":"A"`, i)
	}
	body := func(name string) []byte {
		return []byte(`{"apiVersion":"big.example.com/v1","kind":"Bulk","metadata":{"name":"` + name + `"},"spec":{` + spec.String() + `}}`)
	}

	r := k.do(t, "POST", coll+"?fieldManager=creator", body("large"))
	if r.Code != http.StatusCreated {
		t.Fatalf("create: %d %.300s", r.Code, r.Body)
	}
	created := decodeObj(t, r)
	if mf := created.GetManagedFields(); len(mf) != 0 {
		t.Fatalf("a create too large with its managedFields kept %d entries", len(mf))
	}

	// The apply would record every field the object has (before-first-apply).
	r = k.do(t, "PATCH", coll+"/large?fieldManager=apply_test", []byte(`{"apiVersion":"big.example.com/v1","kind":"Bulk","metadata":{"name":"large","labels":{"a":"b"}}}`), "Content-Type: application/apply-patch+yaml")
	expectStatus(t, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	r = k.do(t, "GET", coll+"/large", nil)
	if got := decodeObj(t, r); got.GetResourceVersion() != created.GetResourceVersion() || len(got.GetLabels()) != 0 {
		t.Errorf("a refused apply changed the object: resourceVersion %s → %s, labels %v", created.GetResourceVersion(), got.GetResourceVersion(), got.GetLabels())
	}

	// A merge patch is stored, without managedFields.
	r = k.do(t, "PATCH", coll+"/large?fieldManager=patcher", []byte(`{"metadata":{"labels":{"a":"b"}}}`), "Content-Type: application/merge-patch+json")
	if r.Code != http.StatusOK {
		t.Fatalf("merge patch: %d %.300s", r.Code, r.Body)
	}
	if got := decodeObj(t, r); got.GetLabels()["a"] != "b" || len(got.GetManagedFields()) != 0 {
		t.Errorf("merge patch: labels %v, %d managedFields entries, want the label and none", got.GetLabels(), len(got.GetManagedFields()))
	}

	// An apply that creates an object as large is refused, nothing created.
	r = k.do(t, "PATCH", coll+"/large-apply?fieldManager=apply_test", body("large-apply"), "Content-Type: application/apply-patch+yaml")
	expectStatus(t, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	if r = k.do(t, "GET", coll+"/large-apply", nil); r.Code != http.StatusNotFound {
		t.Errorf("get after the refused create-on-apply: %d, want 404", r.Code)
	}
}
