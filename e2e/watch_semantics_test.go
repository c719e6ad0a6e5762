package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
)

// Bookmarks come when asked, on the server's schedule, and carry a
// resourceVersion that moves with the store; a watch-list ends its initial
// events with the annotated bookmark.
func TestWatchBookmarks(t *testing.T) {
	t.Parallel()
	k := startKapi(t, "--in-memory", "--watch-bookmark-interval", "200ms")
	ctx := ctxT(t)
	nss := k.Client.CoreV1().Namespaces()

	w, err := nss.Watch(ctx, metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := nss.Create(ctx, newNamespace("bm-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The initial ADDED events come in name order; a bookmark's
	// resourceVersion is never behind any event before it.
	var lastRV int64
	bookmarks := 0
	deadline := time.After(10 * time.Second)
	for bookmarks < 2 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			ns := ev.Object.(*corev1.Namespace)
			rv, _ := strconv.ParseInt(ns.ResourceVersion, 10, 64)
			if ev.Type == watch.Bookmark && rv < lastRV {
				t.Errorf("bookmark at resourceVersion %d after an event at %d", rv, lastRV)
			}
			lastRV = max(lastRV, rv)
			if ev.Type == watch.Bookmark {
				bookmarks++
				if ns.Name != "" {
					t.Errorf("bookmark carries an object: %q", ns.Name)
				}
			}
		case <-deadline:
			t.Fatalf("%d bookmarks within 10s at a 200ms interval", bookmarks)
		}
	}

	// A watch that does not ask gets none.
	w2, err := nss.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(lastRV, 10), TimeoutSeconds: ptr.To[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range w2.ResultChan() {
		if ev.Type == watch.Bookmark {
			t.Error("bookmark sent to a watch that did not allow them")
		}
	}

	// sendInitialEvents: the current objects, then the end-of-initial-events bookmark.
	w3, err := nss.Watch(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	var initial []string
	for ev := range w3.ResultChan() {
		ns := ev.Object.(*corev1.Namespace)
		if ev.Type == watch.Added {
			initial = append(initial, ns.Name)
			continue
		}
		if ev.Type != watch.Bookmark || ns.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("after the initial events: %s %v", ev.Type, ns.Annotations)
		}
		break
	}
	if got := strings.Join(initial, ","); got != "bm-1,default,kube-node-lease,kube-public,kube-system" {
		t.Errorf("initial events %s", got)
	}

	// sendInitialEvents needs resourceVersionMatch=NotOlderThan.
	_, err = nss.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	if !apierrors.IsInvalid(err) {
		t.Errorf("sendInitialEvents without resourceVersionMatch: err = %v, want Invalid", err)
	}
}

// History older than the compacted revision is gone: a watch from there
// gets a 410 Expired event, an Exact list a 410, and an informer whose
// watch falls behind it relists and catches up.
func TestWatchExpiredRelists(t *testing.T) {
	t.Parallel()
	compacting := []string{"--compaction-interval", "100ms", "--history-retention", "0s", "--history-revisions", "0"}
	dir := t.TempDir()
	k := startKapiIn(t, dir)
	ctx := ctxT(t)

	var lists atomic.Int32
	// The informer's watches wait at this gate while it is closed: across
	// the restart, until the new kapi has compacted its old revision (else
	// a watch that reconnects before the first compaction catches up
	// without a relist, and the test depends on who is faster).
	var gate sync.Mutex
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return currentClient(k).CoreV1().Namespaces().List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			gate.Lock()
			gate.Unlock()
			// Each watch uses the clientset of the kapi currently serving.
			return currentClient(k).CoreV1().Namespaces().Watch(ctx, o)
		},
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.Namespace{}, Handler: cache.ResourceEventHandlerFuncs{}})
	stop := make(chan struct{})
	defer close(stop)
	go informer.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	first, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("before"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "informer sees before", func() bool { _, ok, _ := store.GetByKey("before"); return ok })
	listsBefore := lists.Load()

	// Restart on the same address with aggressive compaction, then write
	// while the informer reconnects: its resourceVersion is compacted away.
	addr := strings.TrimPrefix(k.URL, "http://")
	gate.Lock()
	gated := true
	defer func() {
		if gated { // a failure below: let the informer go
			gate.Unlock()
		}
	}()
	k.Stop(t)
	k2 := startKapiIn(t, dir, append([]string{"--listen", addr}, compacting...)...)
	setCurrentClient(k, k2)
	for i := 0; i < 5; i++ {
		if _, err := k2.Client.CoreV1().Namespaces().Create(ctx, newNamespace(fmt.Sprintf("after-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "compaction past the informer's revision", func() bool {
		_, err := k2.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
	})
	gate.Unlock()
	gated = false
	waitFor(t, "informer relists and sees after-4", func() bool { _, ok, _ := store.GetByKey("after-4"); return ok })
	if lists.Load() == listsBefore {
		t.Error("the informer caught up without a relist: its old resourceVersion was not expired")
	}

	// The raw answers of the 410 path.
	waitFor(t, "compaction", func() bool {
		_, err := k2.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
	})
	_, evs := rawWatch(t, k2, "/api/v1/namespaces?watch=true&timeoutSeconds=2&resourceVersion="+first.ResourceVersion)
	if len(evs) != 1 || evs[0].Type != "ERROR" || evs[0].Object.Code != 410 || evs[0].Object.Reason != "Expired" {
		t.Errorf("watch from a compacted resourceVersion: %+v, want one ERROR 410 Expired", evs)
	}
}

var (
	currentMu      sync.Mutex
	currentClients = map[*kapi]*kapi{}
)

// currentClient returns the clientset of the kapi that replaced k (or k's).
func currentClient(k *kapi) kubernetes.Interface {
	currentMu.Lock()
	defer currentMu.Unlock()
	if n, ok := currentClients[k]; ok {
		return n.Client
	}
	return k.Client
}

func setCurrentClient(old, now *kapi) {
	currentMu.Lock()
	currentClients[old] = now
	currentMu.Unlock()
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Many watchers and many concurrent writers: every watcher sees every
// event exactly once, in resourceVersion order. Watchers resume from their
// last resourceVersion if the server closes them, as client-go does.
func TestWatchFanOut(t *testing.T) {
	t.Parallel()
	const watchers, writes, writers = 50, 2000, 32
	k := startMemKapi(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nss := k.Client.CoreV1().Namespaces()
	list, err := nss.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		names map[string]bool
		err   error
	}
	results := make(chan result, watchers)
	for i := 0; i < watchers; i++ {
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return nss.Watch(ctx, o)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer rw.Stop()
			seen := map[string]bool{}
			var last int64
			for len(seen) < writes {
				select {
				case ev, ok := <-rw.ResultChan():
					if !ok {
						results <- result{seen, fmt.Errorf("watch ended after %d events", len(seen))}
						return
					}
					ns, isNS := ev.Object.(*corev1.Namespace)
					if ev.Type != watch.Added || !isNS {
						results <- result{seen, fmt.Errorf("unexpected event %s %T", ev.Type, ev.Object)}
						return
					}
					rv, _ := strconv.ParseInt(ns.ResourceVersion, 10, 64)
					if rv <= last {
						results <- result{seen, fmt.Errorf("%s at resourceVersion %d after %d", ns.Name, rv, last)}
						return
					}
					last = rv
					if seen[ns.Name] {
						results <- result{seen, fmt.Errorf("%s seen twice", ns.Name)}
						return
					}
					seen[ns.Name] = true
				case <-ctx.Done():
					results <- result{seen, fmt.Errorf("%d of %d events before the deadline", len(seen), writes)}
					return
				}
			}
			results <- result{seen, nil}
		}()
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > writes {
					return
				}
				if _, err := nss.Create(ctx, newNamespace(fmt.Sprintf("fan-%04d", i)), metav1.CreateOptions{}); err != nil {
					t.Errorf("create %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < watchers; i++ {
		r := <-results
		if r.err != nil {
			t.Errorf("watcher: %v", r.err)
			continue
		}
		for j := 1; j <= writes; j++ {
			if !r.names[fmt.Sprintf("fan-%04d", j)] {
				t.Errorf("watcher missed fan-%04d", j)
				break
			}
		}
	}
}

// kubectl get -w prints the changes as they happen.
func TestKubectlGetWatch(t *testing.T) {
	t.Parallel()
	requireKubectl(t)
	k := startMemKapi(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", k.Kubeconfig, "--cache-dir", k.cacheDir, "get", "namespaces", "--watch")
	var out syncBuffer
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	waitFor(t, "the initial listing", func() bool { return strings.Contains(out.String(), "kube-system") })
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("watched"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new namespace in kubectl's output", func() bool { return strings.Contains(out.String(), "watched") })
	if err := k.Client.CoreV1().Namespaces().Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace turning Terminating", func() bool { return strings.Contains(out.String(), "Terminating") })
	if !strings.HasPrefix(out.String(), "NAME") {
		t.Errorf("output does not start with the header:\n%s", out.String())
	}
}

// Bookmarks take the watch's form, as kube-apiserver encodes them like any
// other event: a metadata-only watch (client-go's metadata client, which
// metadata informers use) gets PartialObjectMetadata bookmarks it can
// decode. A watch-list's closing bookmark carries the list blueprint
// client-go reads the list kind from; a Table cannot carry a watch-list.
func TestWatchBookmarkForms(t *testing.T) {
	t.Parallel()
	k := startKapi(t, "--in-memory", "--watch-bookmark-interval", "200ms")
	ctx := ctxT(t)
	list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	w, err := metadata.NewForConfigOrDie(k.Config).Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("metadata watch closed before its first bookmark")
		}
		m, isMeta := ev.Object.(*metav1.PartialObjectMetadata)
		if ev.Type != watch.Bookmark || !isMeta || m.ResourceVersion == "" {
			t.Errorf("metadata watch's first event: %s %T %v, want a PartialObjectMetadata BOOKMARK with a resourceVersion", ev.Type, ev.Object, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no bookmark within 10s at a 200ms interval")
	}

	// The closing bookmark of a watch-list, as JSON and as metadata. Its
	// blueprint is what kube-apiserver's JSON serializer writes of the
	// empty versioned list: a typed list's fields in their order with null
	// items, a custom resource's UnstructuredList with its keys sorted and
	// no metadata, a newline after it.
	createCRD(t, k, newCRD("blueprints", "bp.example.com"))
	const watchList = "/api/v1/namespaces?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
	for _, c := range []struct{ path, accept, bookmark, blueprint string }{
		{watchList, "application/json", `"kind":"Namespace"`, `{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":null}` + "\n"},
		{watchList, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", `"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1"`,
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":null}` + "\n"},
		{strings.Replace(watchList, "/api/v1/namespaces", "/apis/bp.example.com/v1/blueprints", 1), "application/json", `"kind":"Blueprint"`,
			`{"apiVersion":"bp.example.com/v1","items":[],"kind":"BlueprintList"}` + "\n"},
	} {
		r := k.do(t, "GET", c.path, nil, "Accept: "+c.accept)
		// The first bookmark closes the initial events (periodic ones
		// follow).
		var first string
		for _, line := range strings.Split(string(r.Body), "\n") {
			if strings.HasPrefix(line, `{"type":"BOOKMARK"`) {
				first = line
				break
			}
		}
		var ev struct {
			Object struct {
				Metadata struct{ Annotations map[string]string }
			}
		}
		if err := json.Unmarshal([]byte(first), &ev); err != nil || !strings.Contains(first, c.bookmark) {
			t.Errorf("watch-list (%s): first bookmark %q (%v), want one of %s", c.accept, first, err, c.bookmark)
			continue
		}
		blueprint, err := base64.StdEncoding.DecodeString(ev.Object.Metadata.Annotations[metav1.InitialEventsListBlueprintAnnotationKey])
		if err != nil || ev.Object.Metadata.Annotations[metav1.InitialEventsAnnotationKey] != "true" || string(blueprint) != c.blueprint {
			t.Errorf("watch-list (%s): closing bookmark's annotations %v (blueprint %s, %v), want the end of the initial events and a blueprint of %s", c.accept, ev.Object.Metadata.Annotations, blueprint, err, c.blueprint)
		}
	}
	r := k.do(t, "GET", watchList, nil, "Accept: application/json;as=Table;g=meta.k8s.io;v=v1")
	expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
	// With a form after the Table to fall back to (kubectl's Accept), that
	// form.
	r = k.do(t, "GET", watchList, nil, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"type":"ADDED","object":{"kind":"Namespace","apiVersion":"v1"`) {
		t.Errorf("watch-list accepting a Table or JSON: %d %.300s, want JSON events", r.Code, r.Body)
	}

	// A bookmark comes 2s before the watch's deadline, whatever the
	// interval, as kube-apiserver's watch cache sends it.
	k2 := startMemKapi(t) // bookmarks every minute
	list2, err := k2.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r = k2.do(t, "GET", "/api/v1/namespaces?watch=1&resourceVersion="+list2.ResourceVersion+"&allowWatchBookmarks=true&timeoutSeconds=3", nil)
	if !strings.Contains(string(r.Body), `"type":"BOOKMARK"`) {
		t.Errorf("a 3s watch allowing bookmarks: %q, want a bookmark before it ends", r.Body)
	}

	// A watch-list not older than a resourceVersion the store has not
	// reached waits for it, then ends with kube's 504 ERROR event.
	r = k2.do(t, "GET", "/api/v1/namespaces?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=99999", nil)
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"type":"ERROR"`) || !strings.Contains(string(r.Body), "Too large resource version: 99999") || strings.Contains(string(r.Body), `"type":"ADDED"`) {
		t.Errorf("watch-list not older than resourceVersion 99999: %d %s, want only a Too large resource version ERROR event", r.Code, r.Body)
	}

	// A negative timeoutSeconds is a deadline already past: the watch
	// ends at once, empty.
	start := time.Now()
	r = k2.do(t, "GET", "/api/v1/namespaces?watch=1&resourceVersion="+list2.ResourceVersion+"&timeoutSeconds=-1", nil)
	if r.Code != http.StatusOK || len(r.Body) != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("watch with timeoutSeconds=-1: %d %q after %v, want an empty stream ended at once", r.Code, r.Body, time.Since(start))
	}

	// A watch of one object takes no field selector but its name's.
	r = k.do(t, "GET", "/api/v1/watch/namespaces/default?fieldSelector=metadata.name%3Dkube-system", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "fieldSelector metadata.name doesn't match requested name")
	r = k.do(t, "GET", "/api/v1/watch/namespaces/default?fieldSelector=metadata.name%3Ddefault&timeoutSeconds=1", nil)
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"name":"default"`) {
		t.Errorf("watch of namespace default selecting its own name: %d %s", r.Code, r.Body)
	}

	// A watch from "" or "0" that allows bookmarks but does not ask for a
	// watch-list starts as kube-apiserver 1.33's (its WatchList feature
	// off by default): the current objects, and no closing bookmark.
	for _, rv := range []string{"", "0"} {
		r = k.do(t, "GET", "/api/v1/namespaces?watch=1&resourceVersion="+rv+"&allowWatchBookmarks=true&timeoutSeconds=1", nil)
		if !strings.Contains(string(r.Body), `"type":"ADDED"`) || strings.Contains(string(r.Body), metav1.InitialEventsAnnotationKey) {
			t.Errorf("watch from resourceVersion %q with bookmarks: %s, want the initial ADDED events and no closing bookmark", rv, r.Body)
		}
	}
	// Nor does it take a watch-list's rules: a continue token is no
	// resourceVersionMatch there.
	r = k.do(t, "GET", "/api/v1/namespaces?watch=1&continue=abc&timeoutSeconds=1", nil)
	if r.Code == http.StatusUnprocessableEntity {
		t.Errorf("watch with a continue token: %d %s, want no watch-list validation error", r.Code, r.Body)
	}
}

// A bookmark says every change up to its resourceVersion was sent: none
// that a writer committed before it comes after it (a client resuming from
// the bookmark would never see it), even while writes pour in.
func TestBookmarksNeverPassEvents(t *testing.T) {
	t.Parallel()
	k := startKapi(t, "--in-memory", "--watch-bookmark-interval", "20ms")
	list, err := k.Client.ResourceV1beta2().DeviceClasses().List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k.do(t, "POST", "/apis/resource.k8s.io/v1beta2/deviceclasses", deviceClassJSON(fmt.Sprintf("w%d-%d.example.com", w, i), nil))
			}
		}()
	}
	_, evs := rawWatch(t, k, "/apis/resource.k8s.io/v1beta2/deviceclasses?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion="+list.ResourceVersion)
	close(stop)
	wg.Wait()
	var bookmarks, events int
	var bookmarked int64
	for _, ev := range evs {
		rv := rvInt(t, ev.Object.Metadata.ResourceVersion)
		if ev.Type == "BOOKMARK" {
			bookmarks++
			bookmarked = max(bookmarked, rv)
			continue
		}
		events++
		if rv <= bookmarked {
			t.Errorf("%s %s at %d after a bookmark at %d", ev.Type, ev.Object.Metadata.Name, rv, bookmarked)
		}
	}
	if bookmarks < 5 || events < 50 {
		t.Errorf("%d bookmarks and %d events: the test did not interleave them", bookmarks, events)
	}
}
