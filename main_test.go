package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A kubeconfig already holding the URL is left as it is: a restart on
// the same address writes nothing (it cannot on a full disk), one on
// another address writes it again.
func TestWriteKubeconfigOnlyWhenChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	inode := func() uint64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	if err := writeKubeconfig(path, "http://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	first := inode()
	if err := writeKubeconfig(path, "http://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	if inode() != first {
		t.Error("the same kubeconfig was written again")
	}
	if err := writeKubeconfig(path, "http://127.0.0.1:7443"); err != nil {
		t.Fatal(err)
	}
	if inode() == first {
		t.Error("a kubeconfig for another address was not written")
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "http://127.0.0.1:7443") {
		t.Errorf("kubeconfig:\n%s", data)
	}
}
