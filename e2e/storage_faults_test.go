package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A full disk (the --storage-quota-bytes cap: SQLite answers it as it
// answers ENOSPC) turns writes into a clear 503 Status while reads and
// watches go on; nothing acknowledged is lost, nothing refused is visible,
// and writes resume once there is room (here: a restart with a larger cap).
func TestFullStorage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startKapiIn(t, dir, "--storage-quota-bytes", "1500000")
	ctx := ctxT(t)
	acked := map[string]string{}
	padded := func(name string) *corev1.Namespace {
		ns := newNamespace(name)
		ns.Annotations = map[string]string{"pad": strings.Repeat("x", 200<<10)}
		return ns
	}
	var full error
	for i := 0; i < 50; i++ {
		got, err := k.Client.CoreV1().Namespaces().Create(ctx, padded(fmt.Sprintf("fill-%d", i)), metav1.CreateOptions{})
		if err != nil {
			full = err
			break
		}
		acked[got.Name] = got.ResourceVersion
	}
	if !apierrors.IsServiceUnavailable(full) || !strings.Contains(full.Error(), "storage is full") {
		t.Fatalf("filling the storage ended with %v, want 503 ServiceUnavailable saying the storage is full", full)
	}
	// The same for a write through kubectl and a plain request: a Status.
	r := k.do(t, "POST", "/api/v1/namespaces", mustJSON(t, padded("one-more")), "Content-Type: application/json")
	expectStatus(t, r, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "storage is full")
	byKubectl := padded("by-kubectl")
	byKubectl.APIVersion, byKubectl.Kind = "v1", "Namespace"
	manifest := writeFile(t, "ns.json", string(mustJSON(t, byKubectl)))
	if _, stderr, err := k.kubectl(t, "create", "-f", manifest); err == nil || !strings.Contains(stderr, "storage is full") {
		t.Errorf("kubectl create on a full storage: %v %s", err, stderr)
	}
	checkAll := func(k *kapi) {
		t.Helper()
		list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		got := map[string]string{}
		for _, ns := range list.Items {
			got[ns.Name] = ns.ResourceVersion
		}
		for name, rv := range acked {
			if got[name] != rv {
				t.Errorf("%s: resourceVersion %q, acknowledged %q", name, got[name], rv)
			}
		}
		for _, refused := range []string{"one-more", "by-kubectl"} {
			if _, ok := got[refused]; ok {
				t.Errorf("the refused %s is visible", refused)
			}
		}
	}
	// Reads go on.
	checkAll(k)
	if out := k.mustKubectl(t, "get", "namespace", "fill-0", "-o", "name"); strings.TrimSpace(out) != "namespace/fill-0" {
		t.Errorf("kubectl get on a full storage: %q", out)
	}
	w, err := k.Client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch on a full storage: %v", err)
	}
	if ev := <-w.ResultChan(); ev.Type != "ADDED" {
		t.Errorf("watch on a full storage: first event %v", ev.Type)
	}
	w.Stop()

	k.Stop(t)
	k = startKapiIn(t, dir, "--storage-quota-bytes", "50000000")
	checkAll(k)
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("with-room"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a write once there is room: %v", err)
	}
}

// A database file kapi may not write is served read-only: reads go on,
// writes answer a clear 503 Status, and the file is left as it was.
func TestReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startKapiIn(t, dir)
	ctx := ctxT(t)
	created, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("before"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.Stop(t)

	db := filepath.Join(dir, "kapi.db")
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// root writes any file: run kapi as nobody, who may write the data
		// dir (kubeconfig, SQLite's -shm) but not the database file.
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		for _, p := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	k = startKapiAs(t, dir, cred)
	got, err := k.Client.CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("read on a read-only database: %v, %v", got, err)
	}
	if out := k.mustKubectl(t, "get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/before") {
		t.Errorf("kubectl get namespaces: %q", out)
	}
	r := k.do(t, "POST", "/api/v1/namespaces", mustJSON(t, newNamespace("after")), "Content-Type: application/json")
	expectStatus(t, r, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "read-only")
	r = k.do(t, "DELETE", "/api/v1/namespaces/before", nil)
	expectStatus(t, r, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "read-only")
	if !strings.Contains(k.log.String(), "read-only") {
		t.Errorf("kapi did not log that it serves a read-only database; log:\n%s", k.log.String())
	}
	k.Stop(t)
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Error("the read-only database file changed")
	}
}
