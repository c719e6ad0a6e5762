package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kill -9 in the middle of a write load: after a restart every write the
// client saw acknowledged is there with its resourceVersion, and new
// writes get higher resourceVersions. Several rounds on one data dir.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	acked := map[string]string{} // name → resourceVersion the client was told
	var lastRV int64
	for round := 0; round < 3; round++ {
		k := startKapiIn(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		// Everything acknowledged before is still there, unchanged.
		list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]string{}
		for _, ns := range list.Items {
			stored[ns.Name] = ns.ResourceVersion
		}
		for name, rv := range acked {
			if stored[name] != rv {
				t.Errorf("round %d: acknowledged %s (rv %s) is %q after the crash", round, name, rv, stored[name])
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		prevMax := lastRV // every write of this round must be newer
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					name := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					ns, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace(name), metav1.CreateOptions{})
					if err != nil {
						return // the server is gone
					}
					if rv, _ := strconv.ParseInt(ns.ResourceVersion, 10, 64); rv <= prevMax {
						t.Errorf("round %d: %s got rv %d, not above the previous rounds' %d", round, name, rv, prevMax)
					}
					mu.Lock()
					acked[name] = ns.ResourceVersion
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(time.Duration(200+100*round) * time.Millisecond)
		// kill -9: no drain, no clean close.
		if err := k.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-k.exited
		cancel()
		wg.Wait()
		k.stopOnce.Do(func() {}) // it is gone; the cleanup has nothing to stop
		roundMax := int64(0)
		for _, rv := range acked {
			n, _ := strconv.ParseInt(rv, 10, 64)
			roundMax = max(roundMax, n)
		}
		if roundMax <= lastRV {
			t.Fatalf("round %d acknowledged no write", round)
		}
		lastRV = roundMax
	}
	// After the last crash: all there, and the next write is newer.
	k := startKapiIn(t, dir)
	ctx := ctxT(t)
	list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, ns := range list.Items {
		stored[ns.Name] = ns.ResourceVersion
	}
	for name, rv := range acked {
		if stored[name] != rv {
			t.Errorf("acknowledged %s (rv %s) is %q after the last crash", name, rv, stored[name])
		}
	}
	ns, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("after-crashes"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(ns.ResourceVersion, 10, 64); rv <= lastRV {
		t.Errorf("a write after the crashes got rv %d, not above %d", rv, lastRV)
	}
	t.Logf("%d acknowledged writes over 3 crashes", len(acked))
}
