package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// kill -9 at random points of a write load, several rounds on one data
// dir: after each restart every write the client saw acknowledged is there
// with its resourceVersion, nothing else appears, new writes get higher
// resourceVersions, and a watcher that resumes from the last event it saw
// before the crash gets every later write exactly once, in order.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	acked := map[string]string{} // name → resourceVersion the client was told
	var lastRV int64
	// The watcher's view across crashes: name → resourceVersion of its
	// ADDED event, and the last resourceVersion it saw.
	watched := map[string]int64{}
	var watchedFrom, watchedUpTo int64
	const rounds = 5
	for round := 0; round <= rounds; round++ {
		k := startKapiIn(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		listRV := rvInt(t, list.ResourceVersion)
		stored := map[string]int64{}
		for _, ns := range list.Items {
			stored[ns.Name] = rvInt(t, ns.ResourceVersion)
		}
		// Everything acknowledged before is there, unchanged.
		for name, rv := range acked {
			if strconv.FormatInt(stored[name], 10) != rv {
				t.Errorf("round %d: acknowledged %s (rv %s) is %d after the crash", round, name, rv, stored[name])
			}
		}
		// The watcher resumes where it was cut off and catches up to the
		// list: every namespace created after the first round began.
		if round > 0 {
			catchUp(t, k, watched, &watchedUpTo, listRV)
			for name, rv := range stored {
				if rv > watchedFrom && watched[name] != rv {
					t.Errorf("round %d: the resumed watcher saw %s at rv %d, the store has %d", round, name, watched[name], rv)
				}
			}
		}
		if round == rounds {
			ns, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("after-crashes"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rv := rvInt(t, ns.ResourceVersion); rv <= lastRV {
				t.Errorf("a write after the crashes got rv %d, not above %d", rv, lastRV)
			}
			cancel()
			break
		}

		// The watcher follows this round's writes until the crash.
		w, err := k.Client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(max(watchedUpTo, listRV), 10)})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			watchedFrom, watchedUpTo = listRV, listRV
		}
		watcherDone := make(chan struct{})
		go func() {
			defer close(watcherDone)
			for ev := range w.ResultChan() {
				if !recordEvent(t, ev, watched, &watchedUpTo) {
					return
				}
			}
		}()

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
		// kill -9 at a random point: no drain, no clean close.
		time.Sleep(time.Duration(150+rand.IntN(600)) * time.Millisecond)
		if err := k.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-k.exited
		cancel()
		wg.Wait()
		<-watcherDone
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
	t.Logf("%d acknowledged writes over %d crashes; the watcher saw %d", len(acked), rounds, len(watched))
}

// recordEvent adds one watch event to the watcher's view; false ends the
// watch (an error, as when the server is killed).
func recordEvent(t *testing.T, ev watch.Event, watched map[string]int64, upTo *int64) bool {
	ns, ok := ev.Object.(*corev1.Namespace)
	if !ok || ev.Type == watch.Error {
		return false
	}
	rv, err := strconv.ParseInt(ns.ResourceVersion, 10, 64)
	if err != nil {
		t.Errorf("event rv %q", ns.ResourceVersion)
		return false
	}
	if rv <= *upTo {
		t.Errorf("event %s %s at rv %d after rv %d: out of order or repeated", ev.Type, ns.Name, rv, *upTo)
	}
	if ev.Type == watch.Added {
		if _, dup := watched[ns.Name]; dup {
			t.Errorf("ADDED %s twice", ns.Name)
		}
		watched[ns.Name] = rv
	}
	*upTo = rv
	return true
}

// catchUp resumes the watch from the last resourceVersion seen until it has
// reached rv.
func catchUp(t *testing.T, k *kapi, watched map[string]int64, upTo *int64, rv int64) {
	t.Helper()
	if *upTo >= rv {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := k.Client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(*upTo, 10)})
	if err != nil {
		t.Fatalf("resuming the watch at %d: %v", *upTo, err)
	}
	defer w.Stop()
	for *upTo < rv {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("the resumed watch ended at rv %d before reaching %d", *upTo, rv)
		}
		if !recordEvent(t, ev, watched, upTo) {
			t.Fatalf("the resumed watch failed: %v", ev.Object)
		}
	}
}
