package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// `kapi backup` copies a running kapi's database; a kapi started on the
// copy serves the same objects with the same resourceVersions.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startKapiIn(t, dir)
	ctx := ctxT(t)
	ns, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("kept"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir()
	out, err := exec.Command(kapiBinary, "backup", "--data-dir", dir, filepath.Join(copyDir, "kapi.db")).CombinedOutput()
	if err != nil {
		t.Fatalf("kapi backup: %v\n%s", err, out)
	}
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("after-backup"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kapiBinary, "backup", "--data-dir", dir, filepath.Join(copyDir, "kapi.db")).CombinedOutput(); err == nil {
		t.Errorf("a backup over an existing file succeeded: %s", out)
	}
	restored := startKapiIn(t, copyDir)
	got, err := restored.Client.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != ns.ResourceVersion || got.UID != ns.UID {
		t.Fatalf("restored namespace: %v rv %v uid %v, want rv %s uid %s", err, got.ResourceVersion, got.UID, ns.ResourceVersion, ns.UID)
	}
	if _, err := restored.Client.CoreV1().Namespaces().Get(ctx, "after-backup", metav1.GetOptions{}); err == nil {
		t.Error("a namespace created after the backup is in it")
	}
	if _, err := os.Stat(filepath.Join(copyDir, "kapi.db")); err != nil {
		t.Fatal(err)
	}
}
