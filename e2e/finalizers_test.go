package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

const holdFinalizer = "example.com/hold"

func TestFinalizerHoldsDeletion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	o := newVWC("held")
	o.Finalizers = []string{holdFinalizer}
	created, err := c.Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Finalizers) != 1 || created.Finalizers[0] != holdFinalizer || created.DeletionTimestamp != nil {
		t.Fatalf("created finalizers %v deletionTimestamp %v", created.Finalizers, created.DeletionTimestamp)
	}

	// DELETE only marks the object; the answer is the object itself.
	r := k.do(t, "DELETE", collectionPath(gvrVWCs)+"/held", nil)
	if r.Code != http.StatusOK && r.Code != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", r.Code, r.Body)
	}
	var marked metav1.PartialObjectMetadata
	if err := json.Unmarshal(r.Body, &marked); err != nil || marked.Kind != "ValidatingWebhookConfiguration" {
		t.Fatalf("DELETE answered %s, want the object (err %v)", r.Body, err)
	}
	if marked.DeletionTimestamp == nil {
		t.Errorf("DELETE answer has no deletionTimestamp")
	}

	got, err := c.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after DELETE: %v, want the object still there", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 0 {
		t.Errorf("deletionTimestamp %v deletionGracePeriodSeconds %v, want set and 0", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != holdFinalizer {
		t.Errorf("finalizers %v", got.Finalizers)
	}
	if rvInt(t, got.ResourceVersion) <= rvInt(t, created.ResourceVersion) {
		t.Errorf("marking did not write: rv %s -> %s", created.ResourceVersion, got.ResourceVersion)
	}
	// kube-apiserver bumps the generation of a kind without graceful
	// deletion when it marks it deleted (registry.markAsDeleting).
	if got.Generation != created.Generation+1 {
		t.Errorf("generation %d after DELETE marked it, want %d", got.Generation, created.Generation+1)
	}
	// The object still lists.
	l, err := c.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Errorf("list while held: %v %d items", err, len(l.Items))
	}
	// A second DELETE keeps it pending.
	if err := c.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Errorf("second DELETE: %v", err)
	}
	again, err := c.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || !again.DeletionTimestamp.Equal(got.DeletionTimestamp) || again.Generation != got.Generation {
		t.Errorf("after a second DELETE: err=%v deletionTimestamp %v generation %d, want unchanged %v %d", err, again.DeletionTimestamp, again.Generation, got.DeletionTimestamp, got.Generation)
	}

	// Removing the finalizer completes the deletion. As under
	// kube-apiserver, the answer is the object of the update (no
	// finalizer) at the resourceVersion it had; the DELETED event carries
	// the object as it was stored (its finalizer still listed) at the
	// deletion's resourceVersion.
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: again.ResourceVersion, FieldSelector: "metadata.name=held"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	again.Finalizers = nil
	last, err := c.Update(ctx, again, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	if len(last.Finalizers) != 0 || last.ResourceVersion != again.ResourceVersion {
		t.Errorf("the update that removed the last finalizer answered finalizers %v at %s, want none at %s", last.Finalizers, last.ResourceVersion, again.ResourceVersion)
	}
	select {
	case ev := <-w.ResultChan():
		deleted, _ := ev.Object.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		if ev.Type != watch.Deleted || deleted == nil || len(deleted.Finalizers) != 1 || rvInt(t, deleted.ResourceVersion) <= rvInt(t, again.ResourceVersion) {
			t.Errorf("watch event %s %v, want DELETED with the stored finalizer at a newer resourceVersion than %s", ev.Type, ev.Object, again.ResourceVersion)
		}
	case <-time.After(5 * time.Second):
		t.Error("no DELETED event")
	}
	if _, err := c.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the last finalizer went: %v, want NotFound", err)
	}

	// The same through a merge patch, on a DeviceClass.
	dcs := k.Client.ResourceV1beta2().DeviceClasses()
	dc := newDeviceClass("held.example.com")
	dc.Finalizers = []string{holdFinalizer, "example.com/second"}
	if _, err := dcs.Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dcs.Delete(ctx, dc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dcs.Patch(ctx, dc.Name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching out one finalizer: %v", err)
	}
	still, err := dcs.Get(ctx, dc.Name, metav1.GetOptions{})
	if err != nil || len(still.Finalizers) != 1 || still.DeletionTimestamp == nil {
		t.Fatalf("with one finalizer left: err=%v finalizers=%v", err, still)
	}
	patched, err := dcs.Patch(ctx, dc.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching out the last finalizer: %v", err)
	}
	if len(patched.Finalizers) != 0 || patched.ResourceVersion != still.ResourceVersion {
		t.Errorf("the patch that removed the last finalizer answered finalizers %v at %s, want none at %s", patched.Finalizers, patched.ResourceVersion, still.ResourceVersion)
	}
	if _, err := dcs.Get(ctx, dc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the last finalizer went: %v, want NotFound", err)
	}
}

// DELETE reads its options as kube-apiserver does: from the body when it
// has one, the query then being ignored; from the query otherwise.
func TestDeleteOptionsBodyOrQuery(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	c := k.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := c.Create(ctxT(t), newMWC("opts"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := collectionPath(gvrMWCs) + "/opts"
	exists := func() bool {
		t.Helper()
		_, err := c.Get(ctxT(t), "opts", metav1.GetOptions{})
		return err == nil
	}
	// The body's dryRun holds whatever the query says.
	if r := k.do(t, "DELETE", path+"?pretty=true", []byte(`{"dryRun":["All"]}`)); r.Code != http.StatusOK || !exists() {
		t.Errorf("DELETE ?pretty=true with a dry-run body: HTTP %d, exists %v; want 200 and still there", r.Code, exists())
	}
	if r := k.do(t, "DELETE", path+"?dryRun=All", nil); r.Code != http.StatusOK || !exists() {
		t.Errorf("DELETE ?dryRun=All: HTTP %d, exists %v; want 200 and still there", r.Code, exists())
	}
	// With a body, the query's dryRun is not read.
	if r := k.do(t, "DELETE", path+"?dryRun=All", []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions"}`)); r.Code != http.StatusOK || exists() {
		t.Errorf("DELETE ?dryRun=All with a body: HTTP %d, exists %v; want 200 and deleted", r.Code, exists())
	}
	// A body kube's decoder of meta.k8s.io options refuses is a 400 in
	// that decoder's words (kube's delete handlers answer it as no Status,
	// a 500; bad input is a 400 here), for a delete and a deletecollection
	// alike.
	for _, c := range []struct{ body, contentType, want string }{
		{`{"gracePeriodSeconds":"abc"}`, "application/json", "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"},
		{`not json`, "application/json", "couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u')"},
		{`{"apiVersion":"meta.k8s.io/v1","kind":"ListOptions"}`, "application/json", "converting (v1.ListOptions) to (v1.DeleteOptions): unknown conversion"},
		{"a: [", "application/yaml", "yaml: line 1: did not find expected node content"},
	} {
		for _, p := range []string{collectionPath(gvrMWCs) + "/missing", collectionPath(gvrMWCs)} {
			r := k.do(t, "DELETE", p, []byte(c.body), "Content-Type: "+c.contentType)
			var st metav1.Status
			if err := json.Unmarshal(r.Body, &st); err != nil || r.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != c.want {
				t.Errorf("DELETE %s with %s body %q: %d %s, want 400 BadRequest and %q", p, c.contentType, c.body, r.Code, r.Body, c.want)
			}
		}
	}
}

func TestDeletePreconditions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	created, err := c.Create(ctx, newMWC("precond"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrongUID := types.UID("6a1c4f8e-0000-4000-8000-000000000000")
	err = c.Delete(ctx, "precond", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
	// kube-apiserver's BeforeDelete words them under the kind.
	want := `Operation cannot be fulfilled on MutatingWebhookConfiguration.admissionregistration.k8s.io "precond": the UID in the precondition (` + string(wrongUID) + `) does not match the UID in record (` + string(created.UID) + `). The object might have been deleted and then recreated`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("delete with a wrong uid: %v, want Conflict %q", err, want)
	}
	staleRV := "1"
	err = c.Delete(ctx, "precond", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ("+created.ResourceVersion+"). The object might have been modified") {
		t.Errorf("delete with a wrong resourceVersion: %v, want kube's Conflict", err)
	}
	if _, err := c.Get(ctx, "precond", metav1.GetOptions{}); err != nil {
		t.Fatalf("object gone after failed preconditions: %v", err)
	}
	// The right preconditions.
	uid, rv := created.UID, created.ResourceVersion
	if err := c.Delete(ctx, "precond", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil {
		t.Fatalf("delete with matching preconditions: %v", err)
	}
	if _, err := c.Get(ctx, "precond", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
}

// A terminating namespace whose content waits on finalizers says so in its
// conditions, as kube's namespace controller reports it (kubectl describe).
func TestNamespaceDeletionConditions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	c := k.Client.CoreV1().Namespaces()
	if _, err := c.Create(ctx, newNamespace("busy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("busy")
	g := gadget("held", map[string]interface{}{"color": "red"})
	g.SetFinalizers([]string{holdFinalizer})
	if _, err := gadgets.Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "busy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "False ContentDeleted All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "True SomeResourcesRemain Some resources are remaining: gadgets.dyn.example.com has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:      "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: " + holdFinalizer + " in 1 resource instances",
	}
	eventually(t, 10*time.Second, "the namespace's deletion conditions", func() (bool, error) {
		ns, err := c.Get(ctx, "busy", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := map[corev1.NamespaceConditionType]string{}
		for _, cond := range ns.Status.Conditions {
			got[cond.Type] = fmt.Sprintf("%s %s %s", cond.Status, cond.Reason, cond.Message)
		}
		return reflect.DeepEqual(got, want), fmt.Errorf("conditions %v", got)
	})
	held, err := gadgets.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.SetFinalizers(nil)
	if _, err := gadgets.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "namespace busy to be gone", func() (bool, error) {
		_, err := c.Get(ctx, "busy", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// A Namespace's /status changes its metadata and status, not its spec, as
// kube-apiserver's namespace status strategy.
func TestNamespaceStatusUpdate(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	if _, err := k.Client.CoreV1().Namespaces().Create(ctxT(t), newNamespace("st"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := k.do(t, "PATCH", "/api/v1/namespaces/st/status", []byte(`{"metadata":{"labels":{"x":"1"}},"spec":{"finalizers":[]}}`), "Content-Type: application/merge-patch+json")
	if r.Code != http.StatusOK {
		t.Fatalf("patch /status: %d %s", r.Code, r.Body)
	}
	ns, err := k.Client.CoreV1().Namespaces().Get(ctxT(t), "st", metav1.GetOptions{})
	if err != nil || ns.Labels["x"] != "1" || len(ns.Spec.Finalizers) != 1 {
		t.Errorf("after /status: labels %v spec.finalizers %v (%v), want the label and the kubernetes finalizer kept", ns.Labels, ns.Spec.Finalizers, err)
	}
}

// Finalizer names on a Namespace are checked as kube-apiserver's core
// validation checks them: without a domain prefix, only standard names.
func TestNamespaceFinalizerNames(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	namespaces := k.Client.CoreV1().Namespaces()
	bad := newNamespace("bad-meta")
	bad.Finalizers = []string{"bad"}
	_, err := namespaces.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, `Namespace "bad-meta" is invalid: metadata.finalizers[0]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`,
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`, Field: "metadata.finalizers[0]"})
	bad = newNamespace("bad-spec")
	bad.Spec.Finalizers = []corev1.FinalizerName{"bad"}
	_, err = namespaces.Create(ctx, bad, metav1.CreateOptions{})
	// kube's ValidateNamespace reports spec.finalizers without an index
	// (its /finalize with one, below).
	expectInvalid(t, err, `Namespace "bad-spec" is invalid: spec.finalizers: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`,
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`, Field: "spec.finalizers"})
	good := newNamespace("good")
	good.Finalizers = []string{"example.com/hold", metav1.FinalizerOrphanDependents}
	good.Spec.Finalizers = []corev1.FinalizerName{"example.com/cleanup"}
	good.Generation = 5 // kube's namespace strategy keeps a client's generation
	created, err := namespaces.Create(ctx, good, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("namespace with qualified and standard finalizers: %v", err)
	}
	if created.Generation != 5 {
		t.Errorf("namespace created with generation 5 has %d", created.Generation)
	}
	// Through /finalize too.
	created.Spec.Finalizers = append(created.Spec.Finalizers, "bad")
	_, err = namespaces.Finalize(ctx, created, metav1.UpdateOptions{})
	expectInvalid(t, err, `Namespace "good" is invalid: spec.finalizers[2]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`,
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`, Field: "spec.finalizers[2]"})
	// And through /status, which checks metadata.finalizers as kube's core
	// object meta update rules do.
	created, err = namespaces.Get(ctx, "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Finalizers = append(created.Finalizers, "bad")
	_, err = namespaces.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	expectInvalid(t, err, `Namespace "good" is invalid: metadata.finalizers[2]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`,
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`, Field: "metadata.finalizers[2]"})
}

func TestNamespaceDeletion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.CoreV1().Namespaces()

	created, err := c.Create(ctx, newNamespace("doomed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Phase != corev1.NamespaceActive {
		t.Errorf("new namespace phase %q, want Active", created.Status.Phase)
	}
	if len(created.Spec.Finalizers) != 1 || created.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Errorf("new namespace spec.finalizers %v, want [kubernetes]", created.Spec.Finalizers)
	}
	if created.Labels[corev1.LabelMetadataName] != "doomed" {
		t.Errorf("labels %v", created.Labels)
	}

	// A watcher sees what kube's namespace controller writes: the
	// deletion conditions on their own, then the namespace gone.
	w, err := c.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=doomed", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// DELETE answers the namespace, now Terminating.
	r := k.do(t, "DELETE", "/api/v1/namespaces/doomed", nil)
	if r.Code != http.StatusOK && r.Code != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", r.Code, r.Body)
	}
	var ns corev1.Namespace
	if err := json.Unmarshal(r.Body, &ns); err != nil || ns.Kind != "Namespace" {
		t.Fatalf("DELETE answered %s", r.Body)
	}
	if ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Errorf("DELETE answer: phase %q deletionTimestamp %v, want Terminating and set", ns.Status.Phase, ns.DeletionTimestamp)
	}
	eventually(t, 10*time.Second, "namespace doomed to be gone", func() (bool, error) {
		_, err := c.Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	var seen []string
	for ev := range w.ResultChan() {
		ns := ev.Object.(*corev1.Namespace)
		seen = append(seen, fmt.Sprintf("%s conditions=%d", ev.Type, len(ns.Status.Conditions)))
		if ev.Type == watch.Deleted {
			break
		}
	}
	if want := []string{"MODIFIED conditions=0", "MODIFIED conditions=5", "DELETED conditions=5"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("watch of a namespace's deletion: %v, want %v", seen, want)
	}

	// With a metadata finalizer, the namespace stays Terminating until it
	// is removed.
	held := newNamespace("held")
	held.Finalizers = []string{holdFinalizer}
	if _, err := c.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The server's own "kubernetes" finalizer goes once the namespace
	// is empty; ours stays.
	var term *corev1.Namespace
	eventually(t, 10*time.Second, "spec.finalizers of held to be emptied", func() (bool, error) {
		var err error
		term, err = c.Get(ctx, "held", metav1.GetOptions{})
		return err == nil && len(term.Spec.Finalizers) == 0, err
	})
	if term.Status.Phase != corev1.NamespaceTerminating || term.DeletionTimestamp == nil {
		t.Errorf("held: phase %q deletionTimestamp %v, want Terminating", term.Status.Phase, term.DeletionTimestamp)
	}
	_, rows := parseTableIfKubectl(t, k, "get", "ns", "held")
	if rows != nil && rows[0]["STATUS"] != "Terminating" {
		t.Errorf("kubectl get ns held: STATUS %q, want Terminating", rows[0]["STATUS"])
	}
	term.Finalizers = nil
	if _, err := c.Update(ctx, term, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	eventually(t, 10*time.Second, "namespace held to be gone", func() (bool, error) {
		_, err := c.Get(ctx, "held", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	// The initial namespaces may not be deleted.
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		if err := c.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("delete %s: %v, want Forbidden", name, err)
		}
	}
}

// parseTableIfKubectl runs kubectl when it is available (nil rows when
// not).
func parseTableIfKubectl(t *testing.T, k *kapi, args ...string) ([]string, []map[string]string) {
	t.Helper()
	if !haveKubectl() {
		return nil, nil
	}
	return parseTable(t, k.mustKubectl(t, args...))
}

// An update cannot start a deletion: a deletionTimestamp a client adds is
// refused as immutable (kube-apiserver keeps only one already set), also
// through /status, where the phase is then judged by it.
func TestUpdateCannotSetDeletionTimestamp(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	namespaces := k.Client.CoreV1().Namespaces()
	ns, err := namespaces.Create(ctx, newNamespace("not-deleting"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	ns.DeletionTimestamp = &now
	_, err = namespaces.Update(ctx, ns, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.deletionTimestamp: Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("update adding a deletionTimestamp: %v, want Invalid metadata.deletionTimestamp: field is immutable", err)
	}
	ns.Status.Phase = corev1.NamespaceTerminating
	_, err = namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") || strings.Contains(err.Error(), "status.Phase") {
		t.Errorf("status update adding a deletionTimestamp with phase Terminating: %v, want only the immutable deletionTimestamp", err)
	}
	got, err := namespaces.Get(ctx, "not-deleting", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.Status.Phase != corev1.NamespaceActive {
		t.Errorf("after the refused updates: %v %v %s, want no deletionTimestamp and phase Active", err, got.DeletionTimestamp, got.Status.Phase)
	}
	grace := int64(30)
	got.DeletionGracePeriodSeconds = &grace
	_, err = namespaces.Update(ctx, got, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.deletionGracePeriodSeconds") {
		t.Errorf("update adding deletionGracePeriodSeconds: %v, want Invalid metadata.deletionGracePeriodSeconds", err)
	}
}

// /finalize changes all of a namespace but its status, as kube-apiserver's
// finalize strategy: spec.finalizers and metadata, recorded in
// managedFields with the subresource.
// The first DELETE of a namespace only marks it Terminating, as
// kube-apiserver's namespace storage does, even when its spec.finalizers
// are gone already (kube's namespace controller then leaves it: a second
// DELETE removes it); orphanDependents: false asks for the foreground.
func TestNamespaceFirstDelete(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	namespaces := k.Client.CoreV1().Namespaces()
	ns, err := namespaces.Create(ctx, newNamespace("unfinalized"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := k.do(t, "DELETE", "/api/v1/namespaces/unfinalized", nil)
	var got corev1.Namespace
	if err := json.Unmarshal(r.Body, &got); r.Code != http.StatusOK || err != nil || got.Kind != "Namespace" ||
		got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Fatalf("first DELETE: %d %s, want 200 and the namespace Terminating", r.Code, r.Body)
	}
	time.Sleep(time.Second) // the namespace controller has looked at it
	if still, err := namespaces.Get(ctx, "unfinalized", metav1.GetOptions{}); err != nil || still.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after the first DELETE: %v %v, want the namespace kept Terminating", err, still.Status.Phase)
	}
	// kube's namespace storage answers the deleted namespace
	// (ReturnDeletedObject), not a Status.
	if r := k.do(t, "DELETE", "/api/v1/namespaces/unfinalized", nil); r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"kind":"Namespace"`) {
		t.Errorf("second DELETE: %d %s, want 200 and the namespace", r.Code, r.Body)
	}
	if _, err := namespaces.Get(ctx, "unfinalized", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the second DELETE: %v, want NotFound", err)
	}

	if _, err := namespaces.Create(ctx, newNamespace("cascading"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = k.do(t, "DELETE", "/api/v1/namespaces/cascading", []byte(`{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":false}`))
	if err := json.Unmarshal(r.Body, &got); r.Code != http.StatusAccepted || err != nil || !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Errorf("DELETE with orphanDependents false: %d %s, want 202 and the foregroundDeletion finalizer", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the cascading namespace to go", func() (bool, error) {
		_, err := namespaces.Get(ctx, "cascading", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func TestNamespaceFinalizeKeepsMetadata(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	namespaces := k.Client.CoreV1().Namespaces()
	ns, err := namespaces.Create(ctx, newNamespace("fin-meta"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The create is compared with a new Namespace, whose empty spec is
	// nobody's, as kube-apiserver compares it.
	if len(ns.ManagedFields) != 1 || strings.Contains(string(ns.ManagedFields[0].FieldsV1.Raw), "f:spec") {
		t.Errorf("managedFields after create %s, want one entry without f:spec", fmtJSON(ns.ManagedFields))
	}
	ns.Labels["via"] = "finalize"
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "example.com/x")
	ns.Status.Phase = corev1.NamespaceTerminating
	out, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{FieldManager: "finalizer"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Labels["via"] != "finalize" || len(out.Spec.Finalizers) != 2 || out.Status.Phase != corev1.NamespaceActive {
		t.Errorf("after /finalize: labels %v spec.finalizers %v phase %s, want the label, both finalizers and phase Active", out.Labels, out.Spec.Finalizers, out.Status.Phase)
	}
	found := false
	for _, e := range out.ManagedFields {
		found = found || e.Manager == "finalizer" && e.Subresource == "finalize" && strings.Contains(string(e.FieldsV1.Raw), `"f:via"`)
	}
	if !found {
		t.Errorf("managedFields %s, want finalizer's Update through finalize owning the label", fmtJSON(out.ManagedFields))
	}
}

// A deletecollection answers the list it deleted from, as kube-apiserver's
// store reads it: objects as they were (one its finalizer holds has no
// deletionTimestamp there), a page with its continue token.
func TestDeleteCollectionAnswer(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	dcs := k.Client.ResourceV1beta2().DeviceClasses()
	var created []string
	for _, name := range []string{"a.example.com", "b.example.com", "c.example.com"} {
		dc := newDeviceClass(name)
		dc.Labels = map[string]string{"grp": "1"}
		if name == "a.example.com" {
			dc.Finalizers = []string{holdFinalizer}
		}
		got, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, got.ResourceVersion)
	}
	r := k.do(t, "DELETE", collectionPath(gvrDevClasses)+"?labelSelector=grp%3D1&limit=2", nil)
	var list struct {
		Kind     string
		Metadata metav1.ListMeta
		Items    []metav1.PartialObjectMetadata
	}
	if err := json.Unmarshal(r.Body, &list); err != nil || r.Code != http.StatusOK {
		t.Fatalf("deletecollection: %d %s (%v)", r.Code, r.Body, err)
	}
	if list.Kind != "DeviceClassList" || len(list.Items) != 2 || list.Metadata.Continue == "" {
		t.Fatalf("deletecollection with limit 2 answered %s with %d items, continue %q; want the page of 2 with its continue token", list.Kind, len(list.Items), list.Metadata.Continue)
	}
	for i, it := range list.Items {
		if it.DeletionTimestamp != nil || it.ResourceVersion != created[i] {
			t.Errorf("answered item %s: deletionTimestamp %v resourceVersion %s, want it as listed (no deletionTimestamp, %s)", it.Name, it.DeletionTimestamp, it.ResourceVersion, created[i])
		}
	}
	// The page's objects went (the held one is marked); the rest stayed.
	if got, err := dcs.Get(ctx, "a.example.com", metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
		t.Errorf("a.example.com after the deletecollection: %v, want it marked deleted", err)
	}
	if _, err := dcs.Get(ctx, "c.example.com", metav1.GetOptions{}); err != nil {
		t.Errorf("c.example.com (not in the page): %v, want it still there", err)
	}
	// ignoreStoreReadErrorWithClusterBreakingPotential is dropped before
	// validation, as by kube-apiserver 1.33 (its feature off): with dryRun
	// it is no invalid combination.
	r = k.do(t, "DELETE", collectionPath(gvrDevClasses)+"/c.example.com", []byte(`{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"dryRun":["All"]}`))
	mustCode(t, "dry-run delete with ignoreStoreReadErrorWithClusterBreakingPotential", r, http.StatusOK)
	// A ?watch= is read as a list option and otherwise ignored, as by
	// kube-apiserver: the rest is deleted.
	r = k.do(t, "DELETE", collectionPath(gvrDevClasses)+"?labelSelector=grp%3D1&watch=true", nil)
	mustCode(t, "deletecollection with watch=true", r, http.StatusOK)
	if _, err := dcs.Get(ctx, "c.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("c.example.com after a deletecollection with watch=true: %v, want it deleted", err)
	}
}

// A namespace's deletion deletes its contents as kube's namespace
// controller does: with background propagation, which also releases an
// object already held by a foreground (or orphan) deletion, so the
// namespace goes; contents an admission refuses to delete are reported in
// NamespaceDeletionContentFailure while the rest is deleted. A create into
// a terminating namespace is refused under the name it asked for.
func TestNamespaceContentDeletion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	namespaces := k.Client.CoreV1().Namespaces()

	// Deleted in the foreground (its cascade finishes at once: it has no
	// dependents).
	if _, err := namespaces.Create(ctx, newNamespace("fg"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("fg")
	if _, err := gadgets.Create(ctx, gadget("g", map[string]interface{}{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := gadgets.Delete(ctx, "g", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	// A cascading delete that did not happen at once is a 202.
	held := gadget("held", map[string]interface{}{})
	held.SetFinalizers([]string{holdFinalizer})
	if _, err := k.Dyn.Resource(gvrGadgets).Namespace("default").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := k.do(t, "DELETE", "/apis/dyn.example.com/v1/namespaces/default/gadgets/held", []byte(`{"orphanDependents":false}`))
	if r.Code != http.StatusAccepted {
		t.Errorf("DELETE with orphanDependents=false of an object held by a finalizer: %d, want 202", r.Code)
	}
	if err := namespaces.Delete(ctx, "fg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "namespace fg to go", func() (bool, error) {
		_, err := namespaces.Get(ctx, "fg", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	// Contents a policy keeps.
	bindPolicy(t, k, denyDeletesPolicy("keep-gadgets", "dyn.example.com", "gadgets", "gadgets stay"))
	if _, err := namespaces.Create(ctx, newNamespace("kept"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept := k.Dyn.Resource(gvrGadgets).Namespace("kept")
	if _, err := kept.Create(ctx, gadget("k", map[string]interface{}{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the policy to refuse deleting a gadget", func() (bool, error) {
		err := kept.Delete(ctx, "k", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "gadgets stay"), err
	})
	if err := namespaces.Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the content failure condition", func() (bool, error) {
		ns, err := namespaces.Get(ctx, "kept", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue {
				if c.Reason != "ContentDeletionFailed" || !strings.HasPrefix(c.Message, "Failed to delete all resource types, 1 remaining: ") || !strings.Contains(c.Message, "gadgets stay") {
					t.Errorf("NamespaceDeletionContentFailure %s %q", c.Reason, c.Message)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %s", fmtJSON(ns.Status.Conditions))
	})
	r = k.do(t, "POST", "/apis/dyn.example.com/v1/namespaces/kept/gadgets", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"generateName":"late-"},"spec":{}}`))
	if st := expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden, `gadgets.dyn.example.com "late-" is forbidden: unable to create new content in namespace kept because it is being terminated`); st.Details == nil || st.Details.Name != "late-" {
		t.Errorf("details %+v, want name late-", st.Details)
	}
}

// A terminating namespace whose contents admission keeps reports them as
// kube's namespace controller does: one error per resource whose
// deletecollection failed (their messages sorted), which stopped at the
// first item refused (those listed after it stay), and those resources
// not counted as remaining content (the controller does not list them
// again); the namespace stays until a pass deletes everything.
func TestNamespaceContentDeletionRefused(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	createCRD(t, k, newCRD("widgets", "dyn.example.com"))
	gvrWidgets := schema.GroupVersionResource{Group: "dyn.example.com", Version: "v1", Resource: "widgets"}
	namespaces := k.Client.CoreV1().Namespaces()
	if _, err := namespaces.Create(ctx, newNamespace("refusing"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := denyDeletesPolicy("keep-b", "dyn.example.com", "*", "b stays")
	policy.Spec.Validations[0].Expression = "!oldObject.metadata.name.startsWith('b-')"
	bindPolicy(t, k, policy)
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("refusing")
	widgets := k.Dyn.Resource(gvrWidgets).Namespace("refusing")
	for _, name := range []string{"a-1", "b-1", "c-1"} {
		if _, err := gadgets.Create(ctx, gadget(name, map[string]interface{}{}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "dyn.example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": "b-2"}}}
	if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the policy to refuse deleting b-1", func() (bool, error) {
		err := gadgets.Delete(ctx, "b-1", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "b stays"), err
	})
	if err := namespaces.Delete(ctx, "refusing", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	denied := func(resource string) string {
		return resource + `.dyn.example.com "Unknown" is forbidden: ValidatingAdmissionPolicy 'keep-b' with binding 'keep-b' denied request: b stays`
	}
	want := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "True ContentDeletionFailed Failed to delete all resource types, 2 remaining: " + denied("gadgets") + ", " + denied("widgets"),
		corev1.NamespaceContentRemaining:         "False ContentRemoved All content successfully removed",
		corev1.NamespaceFinalizersRemaining:      "False ContentHasNoFinalizers All content-preserving finalizers finished",
	}
	eventually(t, 10*time.Second, "the namespace's deletion conditions", func() (bool, error) {
		ns, err := namespaces.Get(ctx, "refusing", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := map[corev1.NamespaceConditionType]string{}
		for _, cond := range ns.Status.Conditions {
			got[cond.Type] = fmt.Sprintf("%s %s %s", cond.Status, cond.Reason, cond.Message)
		}
		return reflect.DeepEqual(got, want), fmt.Errorf("conditions %s", fmtJSON(got))
	})
	list, err := gadgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, g := range list.Items {
		left = append(left, g.GetName())
	}
	if !reflect.DeepEqual(left, []string{"b-1", "c-1"}) {
		t.Errorf("gadgets left %v, want [b-1 c-1]: the deletecollection stops at b-1", left)
	}
	if ns, err := namespaces.Get(ctx, "refusing", metav1.GetOptions{}); err != nil || len(ns.Spec.Finalizers) == 0 {
		t.Errorf("the namespace: %v %v, want it kept with its finalizer", err, ns.Spec.Finalizers)
	}
}

// Cascading deletions finish as kube-controller-manager's garbage
// collector finishes them: Orphan takes the owner's reference off its
// dependents, Foreground deletes the dependents (those blocking their
// owner first), and either then lets the owner go; kubectl's
// --cascade=orphan and --cascade=foreground return. Dependents are found
// by the owner's uid, in a namespaced owner's namespace only.
func TestCascadingDeletion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	create := func(namespace, name string, owner *unstructured.Unstructured, block bool) *unstructured.Unstructured {
		t.Helper()
		g := gadget(name, map[string]interface{}{})
		if owner != nil {
			g.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "dyn.example.com/v1", Kind: "Gadget", Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}})
		}
		out, err := k.Dyn.Resource(gvrGadgets).Namespace(namespace).Create(ctx, g, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gone := func(namespace, name string) {
		t.Helper()
		eventually(t, 10*time.Second, namespace+"/"+name+" to go", func() (bool, error) {
			_, err := k.Dyn.Resource(gvrGadgets).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	}

	// Orphan: the dependent stays, without its reference to the owner.
	owner := create("default", "orphaning", nil, false)
	create("default", "orphaned", owner, true)
	orphan := metav1.DeletePropagationOrphan
	if err := gadgets.Delete(ctx, "orphaning", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	gone("default", "orphaning")
	if got, err := gadgets.Get(ctx, "orphaned", metav1.GetOptions{}); err != nil || len(got.GetOwnerReferences()) != 0 {
		t.Errorf("the orphaned dependent: %v, ownerReferences %v", err, got.GetOwnerReferences())
	} else if refs, found, _ := unstructured.NestedFieldNoCopy(got.Object, "metadata", "ownerReferences"); found {
		// kube's collector patches the field away (null) with its last reference.
		t.Errorf("the orphaned dependent has metadata.ownerReferences %v, want the field gone", refs)
	} else if fields, _ := json.Marshal(got.GetManagedFields()); strings.Contains(string(fields), "f:ownerReferences") {
		t.Errorf("the orphaned dependent's managedFields still own ownerReferences: %s", fields)
	} else if fields, _ := json.Marshal(got.GetManagedFields()); strings.Contains(string(fields), string(owner.GetUID())) {
		// Written through the update path: the reference leaves its
		// manager's fields too.
		t.Errorf("the orphaned dependent's managedFields still name the owner: %s", fields)
	}

	// Foreground: the dependents go, then the owner.
	owner = create("default", "parent", nil, false)
	create("default", "blocking-child", owner, true)
	create("default", "child", owner, false)
	foreground := metav1.DeletePropagationForeground
	if err := gadgets.Delete(ctx, "parent", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	gone("default", "blocking-child")
	gone("default", "child")
	gone("default", "parent")

	// The cascade's deletes go through admission: a dependent a policy
	// keeps holds its owner; the others are deleted.
	policy := denyDeletesPolicy("keep-kept", "dyn.example.com", "gadgets", "kept stays")
	policy.Spec.Validations[0].Expression = "!oldObject.metadata.name.startsWith('kept-')"
	bindPolicy(t, k, policy)
	owner = create("default", "holder", nil, false)
	create("default", "kept-child", owner, true)
	create("default", "later-child", owner, true)
	eventually(t, 10*time.Second, "the policy to keep kept-child", func() (bool, error) {
		err := gadgets.Delete(ctx, "kept-child", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "kept stays"), nil
	})
	if err := gadgets.Delete(ctx, "holder", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	gone("default", "later-child") // the other dependents go all the same
	time.Sleep(2 * time.Second)    // two of the collector's tries
	if got, err := gadgets.Get(ctx, "holder", metav1.GetOptions{}); err != nil || got.GetDeletionTimestamp() == nil {
		t.Errorf("the owner of a kept dependent: %v %v, want it held, marked for deletion", err, got)
	}
	if got, err := gadgets.Get(ctx, "kept-child", metav1.GetOptions{}); err != nil || got.GetDeletionTimestamp() != nil {
		t.Errorf("the kept dependent: %v %v, want it untouched", err, got)
	}

	// kubectl waits for the deletion, which now ends.
	if haveKubectl() {
		create("default", "by-kubectl-orphan", nil, false)
		create("default", "by-kubectl-foreground", nil, false)
		k.mustKubectl(t, "delete", "gadget", "by-kubectl-orphan", "--cascade=orphan", "--timeout=20s")
		k.mustKubectl(t, "delete", "gadget", "by-kubectl-foreground", "--cascade=foreground", "--timeout=20s")
	}
}

// A background delete (kubectl's default) lets its dependents go after it,
// as kube's garbage collector does: a dependent all of whose owners are
// gone is deleted, in turn letting its own dependents go; one that still
// has an owner only loses its reference to the one deleted. A cluster-
// scoped owner's namespaced dependents go too.
func TestBackgroundCascade(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	create := func(name string, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		g := gadget(name, map[string]interface{}{})
		var refs []metav1.OwnerReference
		for _, o := range owners {
			refs = append(refs, metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID()})
		}
		g.SetOwnerReferences(refs)
		out, err := gadgets.Create(ctx, g, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gone := func(name string) {
		t.Helper()
		eventually(t, 10*time.Second, name+" to go", func() (bool, error) {
			_, err := gadgets.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	}
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("elsewhere"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root := create("root")
	other := create("other-owner")
	// A namespaced owner is looked for in its dependent's namespace only:
	// from another namespace, the reference is to an absent owner.
	stranger := gadget("stranger", map[string]interface{}{})
	stranger.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: root.GetAPIVersion(), Kind: root.GetKind(), Name: root.GetName(), UID: root.GetUID()}})
	if _, err := k.Dyn.Resource(gvrGadgets).Namespace("elsewhere").Create(ctx, stranger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	child := create("child", root)
	create("grandchild", child)
	create("shared", root, other)
	create("unrelated")
	if err := gadgets.Delete(ctx, "root", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("child")
	gone("grandchild")
	eventually(t, 10*time.Second, "elsewhere/stranger to go", func() (bool, error) {
		_, err := k.Dyn.Resource(gvrGadgets).Namespace("elsewhere").Get(ctx, "stranger", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	eventually(t, 10*time.Second, "shared to lose its reference to root", func() (bool, error) {
		got, err := gadgets.Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		refs := got.GetOwnerReferences()
		return len(refs) == 1 && refs[0].UID == other.GetUID(), nil
	})
	for _, name := range []string{"shared", "other-owner", "unrelated"} {
		if got, err := gadgets.Get(ctx, name, metav1.GetOptions{}); err != nil || got.GetDeletionTimestamp() != nil {
			t.Errorf("%s: %v %v, want it kept", name, err, got)
		}
	}

	// A cluster-scoped owner (a DeviceClass) of a namespaced custom
	// resource: deleting the owner lets it go.
	dc, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("owner-class"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dcOwner := &unstructured.Unstructured{}
	dcOwner.SetAPIVersion("resource.k8s.io/v1beta2")
	dcOwner.SetKind("DeviceClass")
	dcOwner.SetName(dc.Name)
	dcOwner.SetUID(dc.UID)
	create("of-a-class", dcOwner)
	if err := k.Client.ResourceV1beta2().DeviceClasses().Delete(ctx, dc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("of-a-class")

	// An object created naming only owners that do not exist is
	// collected at once; one naming a kind kapi does not serve is not.
	missing := &unstructured.Unstructured{}
	missing.SetAPIVersion("dyn.example.com/v1")
	missing.SetKind("Gadget")
	missing.SetName("never-was")
	missing.SetUID("00000000-0000-0000-0000-000000000001")
	create("of-no-one", missing)
	gone("of-no-one")
	unknownKind := &unstructured.Unstructured{}
	unknownKind.SetAPIVersion("apps/v1")
	unknownKind.SetKind("Deployment")
	unknownKind.SetName("web")
	unknownKind.SetUID("00000000-0000-0000-0000-000000000002")
	create("of-a-deployment", unknownKind)

	// A cluster-scoped object naming a namespaced owner: the reference
	// cannot be resolved, and kube's collector leaves the object alone.
	nsOwner := create("namespaced-owner")
	cluster := newDeviceClass("names-a-namespaced-owner")
	cluster.OwnerReferences = []metav1.OwnerReference{{APIVersion: nsOwner.GetAPIVersion(), Kind: nsOwner.GetKind(), Name: nsOwner.GetName(), UID: nsOwner.GetUID()}}
	if _, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gadgets.Delete(ctx, "namespaced-owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("namespaced-owner")
	time.Sleep(time.Second) // the collector sees the deletion at once; give it time
	if _, err := k.Client.ResourceV1beta2().DeviceClasses().Get(ctx, cluster.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("a cluster-scoped object naming a namespaced owner: %v, want it kept", err)
	}
	if _, err := gadgets.Get(ctx, "of-a-deployment", metav1.GetOptions{}); err != nil {
		t.Errorf("an object owned by a kind kapi does not serve: %v, want it kept", err)
	}

	// Once the owner's kind is served, the reference resolves, as kube's
	// collector retries it until its discovery knows the kind: the owner
	// does not exist, and the object goes.
	notYet := &unstructured.Unstructured{}
	notYet.SetAPIVersion("later.example.com/v1")
	notYet.SetKind("Gizmo")
	notYet.SetName("never-was")
	notYet.SetUID("00000000-0000-0000-0000-000000000003")
	create("of-a-later-kind", notYet)
	time.Sleep(time.Second)
	if _, err := gadgets.Get(ctx, "of-a-later-kind", metav1.GetOptions{}); err != nil {
		t.Fatalf("an object owned by a kind not served yet: %v, want it kept", err)
	}
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.later.example.com
spec:
  group: later.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`))
	gone("of-a-later-kind")
	if _, err := gadgets.Get(ctx, "of-a-deployment", metav1.GetOptions{}); err != nil {
		t.Errorf("an object owned by a kind kapi does not serve, after another kind is served: %v, want it kept", err)
	}
}

// The background collector knows the owner references stored before a
// restart.
func TestBackgroundCascadeAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1 := startKapiIn(t, dir)
	ctx := ctxT(t)
	createCRD(t, k1, crdFromYAML(t, gadgetCRDYAML))
	owner, err := k1.Dyn.Resource(gvrGadgets).Namespace("default").Create(ctx, gadget("owner", map[string]interface{}{}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := gadget("dependent", map[string]interface{}{})
	dependent.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID()}})
	if _, err := k1.Dyn.Resource(gvrGadgets).Namespace("default").Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k1.Stop(t)

	k2 := startKapiIn(t, dir)
	gadgets := k2.Dyn.Resource(gvrGadgets).Namespace("default")
	eventually(t, 10*time.Second, "the CRD to be served again", func() (bool, error) {
		_, err := gadgets.Get(ctx, "owner", metav1.GetOptions{})
		return err == nil, nil
	})
	if err := gadgets.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the dependent to go", func() (bool, error) {
		_, err := gadgets.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// A cascading deletion left pending (a foreground delete held by a
// dependent a policy keeps) is taken up again after a restart.
func TestCascadingDeletionAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1 := startKapiIn(t, dir)
	ctx := ctxT(t)
	createCRD(t, k1, crdFromYAML(t, gadgetCRDYAML))
	policy := denyDeletesPolicy("keep-kept", "dyn.example.com", "gadgets", "kept stays")
	policy.Spec.Validations[0].Expression = "!oldObject.metadata.name.startsWith('kept-')"
	bindPolicy(t, k1, policy)
	gadgets := k1.Dyn.Resource(gvrGadgets).Namespace("default")
	owner, err := gadgets.Create(ctx, gadget("owner", map[string]interface{}{}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block := true
	kept := gadget("kept-dependent", map[string]interface{}{})
	kept.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}})
	if _, err := gadgets.Create(ctx, kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the policy to keep kept-dependent", func() (bool, error) {
		err := gadgets.Delete(ctx, "kept-dependent", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "kept stays"), nil
	})
	foreground := metav1.DeletePropagationForeground
	if err := gadgets.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	k1.Stop(t)

	k2 := startKapiIn(t, dir)
	if err := k2.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "keep-kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gadgets = k2.Dyn.Resource(gvrGadgets).Namespace("default")
	for _, name := range []string{"kept-dependent", "owner"} {
		eventually(t, 15*time.Second, name+" to go", func() (bool, error) {
			_, err := gadgets.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
}

// The garbage collector attempts each dependent as kube's does
// (attemptToDeleteItem): a dependent with an owner left keeps it (also in
// a foreground deletion of another owner), one whose owners are gone is
// deleted as its own finalizers ask (else in the background: no
// foregroundDeletion finalizer is added to a leaf), an object being
// deleted is left alone, a reference to an unserved version is not
// resolved, and an attempt that admission refuses is made again.
func TestGarbageCollectorAttempts(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	ref := func(o *unstructured.Unstructured, block bool) metav1.OwnerReference {
		r := metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID()}
		if block {
			r.BlockOwnerDeletion = ptr.To(true)
		}
		return r
	}
	create := func(name string, finalizers []string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
		t.Helper()
		g := gadget(name, map[string]interface{}{})
		g.SetOwnerReferences(refs)
		g.SetFinalizers(finalizers)
		out, err := gadgets.Create(ctx, g, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	get := func(name string) *unstructured.Unstructured {
		t.Helper()
		got, err := gadgets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("GET %s: %v", name, err)
		}
		return got
	}
	refNames := func(o *unstructured.Unstructured) []string {
		var names []string
		for _, r := range o.GetOwnerReferences() {
			names = append(names, r.Name)
		}
		return names
	}
	gone := func(name string) {
		t.Helper()
		eventually(t, 10*time.Second, name+" to go", func() (bool, error) {
			_, err := gadgets.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}

	// A foreground deletion: the dependent with another owner stays.
	x, a := create("x", nil), create("a", nil)
	create("shared", nil, ref(a, true), ref(x, false))
	leaf := create("leaf", []string{holdFinalizer}, ref(a, false))
	if err := gadgets.Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the leaf to be deleted", func() (bool, error) {
		return get("leaf").GetDeletionTimestamp() != nil, nil
	})
	// The leaf was deleted in the background: its finalizers are its own.
	if got := get("leaf"); !reflect.DeepEqual(got.GetFinalizers(), []string{holdFinalizer}) || got.GetGeneration() != leaf.GetGeneration()+1 {
		t.Errorf("leaf of a foreground deletion: finalizers %v generation %d, want [%s] and %d", got.GetFinalizers(), got.GetGeneration(), holdFinalizer, leaf.GetGeneration()+1)
	}
	gone("a") // the leaf does not block it; shared loses its reference
	if got := get("shared"); !reflect.DeepEqual(refNames(got), []string{"x"}) || got.GetDeletionTimestamp() != nil {
		t.Errorf("shared after its owner a's foreground deletion: owners %v deletionTimestamp %v, want [x] and kept", refNames(got), got.GetDeletionTimestamp())
	}

	// A dependent's own orphan finalizer: its own dependents are orphaned.
	b := create("b", nil)
	mid := create("mid", []string{metav1.FinalizerOrphanDependents}, ref(b, false))
	create("bottom", nil, ref(mid, false))
	// Being deleted: left alone (its reference to b stays).
	dying := create("dying", []string{holdFinalizer}, ref(b, false), ref(x, false))
	if err := gadgets.Delete(ctx, "dying", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A reference at a version nobody serves: not resolved, not collected.
	unserved := ref(x, false)
	unserved.APIVersion, unserved.Name, unserved.UID = "dyn.example.com/v9", "ghost", "00000000-0000-0000-0000-000000000009"
	create("unserved", nil, unserved)
	// The sentinel: once it lost its reference to b, b's dependents were
	// attempted.
	create("sentinel", nil, ref(b, false), ref(x, false))
	if err := gadgets.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("mid")
	eventually(t, 10*time.Second, "the sentinel to lose its reference to b", func() (bool, error) {
		return reflect.DeepEqual(refNames(get("sentinel")), []string{"x"}), nil
	})
	if got := get("bottom"); len(got.GetOwnerReferences()) != 0 || got.GetDeletionTimestamp() != nil {
		t.Errorf("bottom after mid (orphan finalizer) went: owners %v deletionTimestamp %v, want orphaned and kept", refNames(got), got.GetDeletionTimestamp())
	}
	if got := get("dying"); !reflect.DeepEqual(refNames(got), []string{"b", "x"}) || !reflect.DeepEqual(dying.GetOwnerReferences(), got.GetOwnerReferences()) {
		t.Errorf("dying (being deleted) after its owner b went: owners %v, want them untouched", refNames(got))
	}
	if got := get("unserved"); got.GetDeletionTimestamp() != nil {
		t.Error("a dependent whose owner reference names an unserved version was collected")
	}

	// A cluster-scoped dependent of a namespaced owner (a reference that
	// cannot resolve): a foreground deletion does not wait for it, an
	// orphaning one takes the reference off.
	dcs := k.Client.ResourceV1beta2().DeviceClasses()
	for _, c := range []struct {
		owner  string
		policy metav1.DeletionPropagation
	}{{"fg-owner", metav1.DeletePropagationForeground}, {"or-owner", metav1.DeletePropagationOrphan}} {
		owner := create(c.owner, nil)
		dc := newDeviceClass(c.owner + ".example.com")
		dc.OwnerReferences = []metav1.OwnerReference{ref(owner, true)}
		if _, err := dcs.Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := gadgets.Delete(ctx, c.owner, metav1.DeleteOptions{PropagationPolicy: ptr.To(c.policy)}); err != nil {
			t.Fatal(err)
		}
		gone(c.owner)
		got, err := dcs.Get(ctx, dc.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Errorf("cluster-scoped dependent of %s after a %s deletion: %v %v, want it kept", c.owner, c.policy, err, got)
		} else if c.policy == metav1.DeletePropagationOrphan && len(got.OwnerReferences) != 0 {
			t.Errorf("cluster-scoped dependent after an orphaning deletion keeps %v", got.OwnerReferences)
		}
	}

	// An attempt admission refuses is made again once it allows it.
	deny := denyDeletesPolicy("keep-gadgets", "dyn.example.com", "gadgets", "gadgets stay")
	bindPolicy(t, k, deny)
	eventually(t, 10*time.Second, "the policy to refuse deleting a gadget", func() (bool, error) {
		err := gadgets.Delete(ctx, "x", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "gadgets stay"), err
	})
	create("orphan", nil, metav1.OwnerReference{APIVersion: x.GetAPIVersion(), Kind: x.GetKind(), Name: "never", UID: "00000000-0000-0000-0000-00000000000a"})
	time.Sleep(500 * time.Millisecond) // the collector's first attempt is refused
	if got := get("orphan"); got.GetDeletionTimestamp() != nil {
		t.Fatal("the orphan was collected while a policy refuses its deletion")
	}
	if err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, deny.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("orphan")
}

// The collector's removal of a foreground deletion's finalizer that fails
// (admission refuses it here; a write racing it would do as well) is made
// again, as kube's collector retries it, until the owner goes.
func TestForegroundFinalizerRemovalRetried(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	policy := newVAP("hold-for-collector")
	policy.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	policy.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"dyn.example.com"}, APIVersions: []string{"*"}, Resources: []string{"gadgets"}}
	policy.Spec.Validations = []admissionregistrationv1.Validation{{
		Expression: `!has(object.metadata.labels) || !('hold' in object.metadata.labels) ||
			(request.userInfo.username != 'system:serviceaccount:kube-system:generic-garbage-collector' && object.metadata.labels['hold'] != 'everyone')`,
		Message: "held",
	}}
	bindPolicy(t, k, policy)
	probe, err := gadgets.Create(ctx, gadget("probe", map[string]interface{}{}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probe.SetLabels(map[string]string{"hold": "everyone"})
	eventually(t, 10*time.Second, "the policy to apply", func() (bool, error) {
		_, err := gadgets.Update(ctx, probe, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "held"), err
	})

	owner := gadget("owner", map[string]interface{}{})
	owner.SetLabels(map[string]string{"hold": "collector"})
	o, err := gadgets.Create(ctx, owner, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := gadget("dependent", map[string]interface{}{})
	dependent.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: ptr.To(true)}})
	if _, err := gadgets.Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gadgets.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the dependent to go", func() (bool, error) {
		_, err := gadgets.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	time.Sleep(1500 * time.Millisecond) // the collector's removal of the finalizer is refused
	held, err := gadgets.Get(ctx, "owner", metav1.GetOptions{})
	if err != nil || !slices.Contains(held.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner while the policy refuses the collector: %v %v, want it kept with foregroundDeletion", err, held)
	}
	held.SetLabels(nil)
	if _, err := gadgets.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the owner to go", func() (bool, error) {
		got, err := gadgets.Get(ctx, "owner", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("finalizers %v", got.GetFinalizers())
	})
}

// Owners that own each other, blocking each other's deletion, are deleted
// in the foreground all the same: as kube's collector, the dependent that
// would wait for an owner waiting for it stops blocking its owners first.
func TestForegroundDeletionOfOwnerCycle(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	blockingRef := func(o *unstructured.Unstructured) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: ptr.To(true)}
	}
	a, err := gadgets.Create(ctx, gadget("a", map[string]interface{}{}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := gadget("b", map[string]interface{}{})
	b.SetOwnerReferences([]metav1.OwnerReference{blockingRef(a)})
	if b, err = gadgets.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.SetOwnerReferences([]metav1.OwnerReference{blockingRef(b)})
	if _, err := gadgets.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	foreground := metav1.DeletePropagationForeground
	if err := gadgets.Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		eventually(t, 10*time.Second, name+" to go", func() (bool, error) {
			got, err := gadgets.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			return false, fmt.Errorf("still there: finalizers %v, ownerReferences %s", got.GetFinalizers(), fmtJSON(got.GetOwnerReferences()))
		})
	}
}

// Creates racing a namespace's deletion never outlive it: what a create
// admitted before the namespace turned Terminating stores is deleted with
// the rest, as kube's namespace controller finds last-minute creates.
func TestNamespaceDeletionRacingCreates(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	for round := range 4 {
		ns := fmt.Sprintf("racy-%d", round)
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace(ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gadgets := k.Dyn.Resource(gvrGadgets).Namespace(ns)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := gadgets.Create(ctx, gadget(fmt.Sprintf("g-%d-%d", c, i), map[string]interface{}{}), metav1.CreateOptions{}); err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
						t.Errorf("create in %s: %v", ns, err)
						return
					}
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		if err := k.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, ns+" to be gone", func() (bool, error) {
			_, err := k.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		close(stop)
		wg.Wait()
		if left, err := gadgets.List(ctx, metav1.ListOptions{}); err != nil || len(left.Items) != 0 {
			t.Errorf("namespace %s is gone, yet holds %d gadgets (%v)", ns, len(left.Items), err)
		}
	}
}
