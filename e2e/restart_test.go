package e2e

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Objects written before a SIGTERM are there after a restart on the same
// data dir, and the resourceVersion counter carries on from where it was.
func TestRestartKeepsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1 := startKapiIn(t, dir)
	ctx := ctxT(t)

	nsBefore, err := k1.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vwc, err := k1.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("persist"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vwc.Labels = map[string]string{"updated": "yes"}
	vwc, err = k1.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	afterUpdate := vwc.ResourceVersion
	crd, err := k1.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, newCRD("persists", "example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vap, err := k1.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicies().Create(ctx, toV1beta1VAP(t, newVAP("persist")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := k1.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("gone.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k1.Client.ResourceV1beta2().DeviceClasses().Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held := newMWC("held")
	held.Finalizers = []string{holdFinalizer}
	if _, err := k1.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k1.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := k1.Client.CoreV1().Namespaces().Create(ctx, newNamespace("persisted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := k1.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastRV := rvInt(t, l.ResourceVersion)
	oldURL := k1.URL

	k1.Stop(t)
	if t.Failed() {
		t.FailNow()
	}

	k2 := startKapiIn(t, dir)
	if k2.URL == oldURL {
		t.Logf("restarted on the same port %s", oldURL)
	}

	got, err := k2.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "persist", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got.UID != vwc.UID || got.ResourceVersion != vwc.ResourceVersion || got.Labels["updated"] != "yes" || fmtJSON(got.Webhooks) != fmtJSON(vwc.Webhooks) {
		t.Errorf("webhook configuration changed across the restart:\nbefore %s\nafter  %s", fmtJSON(vwc), fmtJSON(got))
	}
	gotCRD, err := k2.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil || gotCRD.UID != crd.UID || gotCRD.Spec.Names.Plural != "persists" {
		t.Errorf("CRD after restart: %v %v", err, gotCRD)
	}
	gotVAP, err := k2.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "persist", metav1.GetOptions{})
	if err != nil || gotVAP.UID != vap.UID {
		t.Errorf("policy after restart: %v %v", err, gotVAP)
	}
	if _, err := k2.Client.ResourceV1beta2().DeviceClasses().Get(ctx, gone.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleted DeviceClass after restart: %v, want NotFound", err)
	}
	gotHeld, err := k2.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "held", metav1.GetOptions{})
	if err != nil || gotHeld.DeletionTimestamp == nil || len(gotHeld.Finalizers) != 1 {
		t.Errorf("held object after restart: %v %v", err, gotHeld)
	}
	gotNS, err := k2.Client.CoreV1().Namespaces().Get(ctx, "persisted", metav1.GetOptions{})
	if err != nil || gotNS.UID != ns.UID {
		t.Errorf("namespace after restart: %v %v", err, gotNS)
	}
	// The initial namespaces are not created again.
	nsAfter, err := k2.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil || nsAfter.UID != nsBefore.UID || nsAfter.ResourceVersion != nsBefore.ResourceVersion {
		t.Errorf("default namespace after restart: %v uid %s rv %s, want uid %s rv %s", err, nsAfter.UID, nsAfter.ResourceVersion, nsBefore.UID, nsBefore.ResourceVersion)
	}
	all, err := k2.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 5 {
		t.Errorf("namespaces after restart: %v, %d items, want 5", err, len(all.Items))
	}
	if rvInt(t, all.ResourceVersion) < lastRV {
		t.Errorf("list resourceVersion after restart %s, before %d", all.ResourceVersion, lastRV)
	}

	// A new write gets a higher resourceVersion than any before.
	newer, err := k2.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("after-restart"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rvInt(t, newer.ResourceVersion) <= lastRV {
		t.Errorf("first write after restart has resourceVersion %s, not above %d", newer.ResourceVersion, lastRV)
	}
	got.Labels["again"] = "yes"
	upd, err := k2.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || rvInt(t, upd.ResourceVersion) <= rvInt(t, newer.ResourceVersion) {
		t.Errorf("update after restart: %v rv %v", err, upd)
	}

	// A watch from a resourceVersion before the restart replays what
	// followed it.
	w, err := k2.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{ResourceVersion: afterUpdate})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	evs := collectEvents(t, w, 2)
	if len(evs) == 2 {
		e0 := evs[0].Object.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		e1 := evs[1].Object.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		if evs[0].Type != watch.Added || e0.Name != "after-restart" || evs[1].Type != watch.Modified || e1.Name != "persist" {
			t.Errorf("replayed events %s %s, %s %s; want ADDED after-restart, MODIFIED persist", evs[0].Type, e0.Name, evs[1].Type, e1.Name)
		}
	}
}

// Restarting an in-memory kapi starts from nothing.
func TestInMemoryIsThrowaway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1 := startKapiIn(t, dir, "--in-memory")
	ctx := ctxT(t)
	if _, err := k1.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("temp"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k1.Stop(t)
	k2 := startKapiIn(t, dir, "--in-memory")
	if _, err := k2.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "temp", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("in-memory object survived a restart: %v", err)
	}
	l, err := k2.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 4 {
		t.Errorf("namespaces of a fresh in-memory kapi: %v %d", err, len(l.Items))
	}
}
