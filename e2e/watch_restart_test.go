package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// The cases of kube's integration tests on watch restarts
// (test/integration/apimachinery watch_timeout_test.go, watch_restart_test.go,
// watch_total_order_test.go, watchlist_test.go), on Namespaces and a custom
// resource where kube's use ConfigMaps and Secrets.

// An informer whose watch ends, because the server closes it at
// timeoutSeconds or because the client's HTTP timeout cuts it, watches
// again from where it was: it lists once (TestWatchClientTimeout), directly
// and through a reverse proxy.
func TestWatchRestartWithoutRelist(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	u, err := url.Parse(k.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(u))
	t.Cleanup(proxy.Close)
	for _, via := range []struct{ name, url string }{{"direct", k.URL}, {"reverse proxy", proxy.URL}} {
		for _, c := range []struct {
			name                    string
			timeout, timeoutSeconds time.Duration
		}{
			{"timeout", time.Second, 0},
			{"timeoutSeconds", 0, time.Second},
			{"timeout+timeoutSeconds", time.Second, time.Second},
		} {
			t.Run(via.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				client, err := kubernetes.NewForConfig(&rest.Config{Host: via.url, Timeout: c.timeout})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				lists, watches := 0, 0
				stop := make(chan struct{})
				var once sync.Once
				t.Cleanup(func() { once.Do(func() { close(stop) }) })
				lw := &cache.ListWatch{
					ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
						mu.Lock()
						lists++
						if lists > 1 {
							t.Errorf("listed again (resourceVersion %q)", o.ResourceVersion)
							once.Do(func() { close(stop) })
						}
						mu.Unlock()
						return client.CoreV1().Namespaces().List(context.Background(), o)
					},
					WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
						if c.timeoutSeconds != 0 {
							o.TimeoutSeconds = ptrTo(int64(c.timeoutSeconds / time.Second))
						}
						mu.Lock()
						watches++
						if watches > 1 {
							once.Do(func() { close(stop) }) // watched again: done
						}
						mu.Unlock()
						return client.CoreV1().Namespaces().Watch(context.Background(), o)
					},
				}
				_, informer := cache.NewIndexerInformer(lw, &corev1.Namespace{}, 30*time.Minute, cache.ResourceEventHandlerFuncs{}, cache.Indexers{})
				go informer.Run(stop)
				select {
				case <-stop:
				case <-time.After(time.Minute):
					t.Fatal("the informer did not watch again")
				}
			})
		}
	}
}

// A RetryWatcher resumes across watches the server closes and sees every
// change once, in order; a plain watch just ends (TestWatchRestartsIfTimeoutNotReached,
// with timeoutSeconds where kube lowers --min-request-timeout). From a
// compacted resourceVersion, the RetryWatcher hands on the 410 Expired
// event and stops.
func TestRetryWatcherAcrossClosedWatches(t *testing.T) {
	t.Parallel()
	k := startKapi(t, "--in-memory", "--compaction-interval", "100ms", "--history-retention", "0s", "--history-revisions", "20")
	ctx := ctxT(t)
	nss := k.Client.CoreV1().Namespaces()
	ns, err := nss.Create(ctx, newNamespace("retry-watch"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ns.Name).String()
		o.TimeoutSeconds = ptrTo(int64(1))
		return nss.Watch(ctx, o)
	}

	plain, err := watchFn(ctx, metav1.ListOptions{ResourceVersion: ns.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, ns.ResourceVersion, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		t.Fatal(err)
	}
	const patches = 8
	go func() {
		for i := 1; i <= patches; i++ {
			time.Sleep(300 * time.Millisecond)
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"count":"%d"}}}`, i)
			if _, err := nss.Patch(ctx, ns.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Errorf("patch %d: %v", i, err)
				return
			}
		}
	}()
	var got []string
	for len(got) < patches {
		select {
		case ev, ok := <-rw.ResultChan():
			if !ok {
				t.Fatalf("the RetryWatcher ended after %v", got)
			}
			n, isNS := ev.Object.(*corev1.Namespace)
			if ev.Type != watch.Modified || !isNS {
				t.Fatalf("event %s %T, want MODIFIED Namespace", ev.Type, ev.Object)
			}
			got = append(got, n.Annotations["count"])
		case <-ctx.Done():
			t.Fatalf("the RetryWatcher saw %v before the deadline", got)
		}
	}
	if want := "[1 2 3 4 5 6 7 8]"; fmt.Sprint(got) != want {
		t.Errorf("the RetryWatcher saw %v, want %s", got, want)
	}
	rw.Stop()
	// The plain watch ended at its timeoutSeconds (not at the test's
	// deadline).
	for range plain.ResultChan() {
	}
	if ctx.Err() != nil {
		t.Error("the plain watch went on past its timeoutSeconds")
	}

	// Past the history kept, a RetryWatcher from the namespace's first
	// resourceVersion gets the 410 and ends.
	for i := 0; i < 25; i++ {
		if _, err := nss.Create(ctx, newNamespace(fmt.Sprintf("retry-filler-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "compaction", func() (bool, error) {
		_, err := nss.List(ctx, metav1.ListOptions{ResourceVersion: ns.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), err
	})
	expired, err := watchtools.NewRetryWatcherWithContext(ctx, ns.ResourceVersion, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		t.Fatal(err)
	}
	defer expired.Stop()
	select {
	case ev := <-expired.ResultChan():
		if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
			t.Fatalf("from a compacted resourceVersion: event %s %v, want ERROR 410 Expired", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no event from a compacted resourceVersion")
	}
	select {
	case <-expired.Done():
	case <-ctx.Done():
		t.Fatal("the RetryWatcher went on after the 410")
	}
}

// Watchers of a custom resource, each reconnecting once at a different
// point from the last resourceVersion it saw, all see the same events
// (creates, updates, deletes) in the order they were written, each once
// (TestWatchEventsHaveATotalOrder).
func TestWatchTotalOrderAcrossReconnects(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createCRD(t, k, newCRD("orders", "watch.example.com"))
	gvr := schema.GroupVersionResource{Group: "watch.example.com", Version: "v1", Resource: "orders"}
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("total-order"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crs := k.Dyn.Resource(gvr).Namespace("total-order")
	list, err := crs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var live []*unstructured.Unstructured
	var written []string // each write's resourceVersion ("" for a delete: its response has none)
	create := func(name string) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "watch.example.com/v1", "kind": "Order",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"counter": "nil"}},
		}}
		got, err := crs.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, got)
		written = append(written, got.GetResourceVersion())
	}
	r := rand.New(rand.NewSource(1))
	updates := 0
	write := func(i int) {
		op := 0
		if len(live) > 0 {
			op = r.Intn(3)
		}
		switch op {
		case 0:
			create(fmt.Sprintf("cr-%03d", i))
		case 1:
			j := r.Intn(len(live))
			updates++
			patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{"counter":"%d"}}}`, live[j].GetResourceVersion(), updates)
			got, err := crs.Patch(ctx, live[j].GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			live[j] = got
			written = append(written, got.GetResourceVersion())
		default:
			j := r.Intn(len(live))
			obj := live[j]
			live = append(live[:j], live[j+1:]...)
			rv := obj.GetResourceVersion()
			if err := crs.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil {
				t.Fatal(err)
			}
			written = append(written, "")
		}
	}
	const iterations = 60
	for i := 0; i < iterations; i++ {
		write(i)
	}

	// Watcher i reconnects after its i-th event (0: never).
	const watchers = 2 * iterations
	observed := make([][]string, watchers)
	var wg sync.WaitGroup
	for i := 0; i < watchers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			observed[i] = observeUntil(ctx, t, crs, list.GetResourceVersion(), i, "final")
		}(i)
	}
	for i := iterations; i < 2*iterations-1; i++ {
		write(i)
	}
	create("final")
	wg.Wait()
	if t.Failed() {
		return
	}

	ref := observed[0]
	if len(ref) != len(written) {
		t.Fatalf("the watcher that never reconnected saw %d events, want the %d writes:\n%v\n%v", len(ref), len(written), ref, written)
	}
	seen := map[string]bool{}
	for i, rv := range ref {
		if seen[rv] {
			t.Fatalf("resourceVersion %s seen twice", rv)
		}
		seen[rv] = true
		if written[i] != "" && written[i] != rv {
			t.Fatalf("event %d at resourceVersion %s, the write's was %s", i, rv, written[i])
		}
	}
	for i := 1; i < watchers; i++ {
		if fmt.Sprint(observed[i]) != fmt.Sprint(ref) {
			t.Errorf("watcher %d (reconnected after %d events) saw\n%v\nwant\n%v", i, i, observed[i], ref)
		}
	}
}

// observeUntil collects the resourceVersions of the events a RetryWatcher
// from rv sees until the object named last is added; after reconnectAfter
// events (if not 0) it stops and watches again from the last one.
func observeUntil(ctx context.Context, t *testing.T, crs interface {
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}, rv string, reconnectAfter int, last string) []string {
	var out []string
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return crs.Watch(ctx, o)
	}}
	for {
		w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			t.Error(err)
			return out
		}
		reconnect := false
		for !reconnect {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Errorf("watcher %d: closed after %d events", reconnectAfter, len(out))
					return out
				}
				obj, isObj := ev.Object.(metav1.Object)
				if !isObj || ev.Type == watch.Error {
					t.Errorf("watcher %d: event %s %v", reconnectAfter, ev.Type, ev.Object)
					w.Stop()
					return out
				}
				rv = obj.GetResourceVersion()
				out = append(out, rv)
				if ev.Type == watch.Added && obj.GetName() == last {
					w.Stop()
					return out
				}
				reconnect = len(out) == reconnectAfter
			case <-ctx.Done():
				t.Errorf("watcher %d: %d events before the deadline", reconnectAfter, len(out))
				w.Stop()
				return out
			}
		}
		w.Stop()
	}
}

// A reflector using watch-list (sendInitialEvents) fills its store with
// what a list returns (TestReflectorWatchListFallback's first half). Not
// parallel: the client feature gate is process-wide.
func TestReflectorWatchList(t *testing.T) {
	k := startMemKapi(t)
	ctx := ctxT(t)
	nss := k.Client.CoreV1().Namespaces()
	for i := 1; i <= 5; i++ {
		if _, err := nss.Create(ctx, newNamespace(fmt.Sprintf("watchlist-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var watchOpts []metav1.ListOptions
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			t.Errorf("the reflector listed (%+v): want a watch-list", o)
			return nss.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			mu.Lock()
			watchOpts = append(watchOpts, o)
			mu.Unlock()
			return nss.Watch(ctx, o)
		},
	}
	store := &replaceSignalStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), replaced: make(chan struct{})}
	var reflector *cache.Reflector
	func() {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
		defer clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
		reflector = cache.NewReflector(lw, &corev1.Namespace{}, store, 0)
	}()
	stop := make(chan struct{})
	go func() {
		select {
		case <-store.replaced:
		case <-ctx.Done():
		}
		close(stop)
	}()
	if err := reflector.ListAndWatch(stop); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(watchOpts) == 0 || watchOpts[0].SendInitialEvents == nil || !*watchOpts[0].SendInitialEvents {
		t.Errorf("the reflector's watches %+v: want a watch-list", watchOpts)
	}
	mu.Unlock()
	want, err := nss.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wantKeys, gotKeys []string
	for _, n := range want.Items {
		wantKeys = append(wantKeys, n.Name+"@"+n.ResourceVersion)
	}
	for _, o := range store.List() {
		n := o.(*corev1.Namespace)
		gotKeys = append(gotKeys, n.Name+"@"+n.ResourceVersion)
	}
	sort.Strings(wantKeys)
	sort.Strings(gotKeys)
	if fmt.Sprint(gotKeys) != fmt.Sprint(wantKeys) {
		t.Errorf("the watch-list store holds\n%v\nthe list\n%v", gotKeys, wantKeys)
	}
	if rv := reflector.LastSyncResourceVersion(); rvInt(t, rv) < rvInt(t, want.ResourceVersion) {
		t.Errorf("the reflector synced at resourceVersion %s, before the list's %s (nothing was written between)", rv, want.ResourceVersion)
	}
}

// replaceSignalStore closes replaced at the first Replace: the reflector
// has its initial state.
type replaceSignalStore struct {
	cache.Store
	replaced chan struct{}
	once     sync.Once
}

func (s *replaceSignalStore) Replace(items []any, rv string) error {
	err := s.Store.Replace(items, rv)
	s.once.Do(func() { close(s.replaced) })
	return err
}

// --min-request-timeout, as kube-apiserver's: a watch without
// timeoutSeconds (or with 0) ends cleanly after a random time between one
// and two of it; a watch's own timeoutSeconds is kept, longer or not; 0
// is a watch that does not time out; a negative value does not start.
func TestMinRequestTimeout(t *testing.T) {
	t.Parallel()
	// ended opens a watch of namespaces with timeoutSeconds (nil: none)
	// and returns how long it lasted, or false if it was still open
	// after wait.
	ended := func(t *testing.T, k *kapi, timeoutSeconds *int64, wait time.Duration) (time.Duration, bool) {
		t.Helper()
		start := time.Now()
		w, err := k.Client.CoreV1().Namespaces().Watch(ctxT(t), metav1.ListOptions{TimeoutSeconds: timeoutSeconds})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return time.Since(start), true
				}
				if ev.Type == watch.Error {
					t.Fatalf("the watch ended with an error: %v", ev.Object)
				}
			case <-timer.C:
				return 0, false
			}
		}
	}
	t.Run("seconds", func(t *testing.T) {
		t.Parallel()
		k := startKapi(t, "--in-memory", "--min-request-timeout=2")
		var wg sync.WaitGroup
		for _, c := range []struct {
			name            string
			timeoutSeconds  *int64
			atLeast, within time.Duration
		}{
			{"no timeoutSeconds", nil, 2 * time.Second, 4 * time.Second},
			{"timeoutSeconds=0", ptrTo(int64(0)), 2 * time.Second, 4 * time.Second},
			{"timeoutSeconds=6", ptrTo(int64(6)), 6 * time.Second, 6 * time.Second},
			{"timeoutSeconds=1", ptrTo(int64(1)), 1 * time.Second, 1 * time.Second},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				took, ok := ended(t, k, c.timeoutSeconds, c.within+3*time.Second)
				if !ok || took < c.atLeast || took > c.within+2*time.Second {
					t.Errorf("%s: the watch ended %v (%v), want between %v and %v", c.name, took, ok, c.atLeast, c.within)
				}
			}()
		}
		wg.Wait()
	})
	t.Run("zero", func(t *testing.T) {
		t.Parallel()
		k := startKapi(t, "--in-memory", "--min-request-timeout=0")
		if took, ok := ended(t, k, nil, 4*time.Second); ok {
			t.Errorf("with --min-request-timeout=0 a watch without timeoutSeconds ended after %v", took)
		}
		if took, ok := ended(t, k, ptrTo(int64(1)), 4*time.Second); !ok || took < time.Second {
			t.Errorf("with --min-request-timeout=0 a watch of timeoutSeconds=1 ended after %v (%v)", took, ok)
		}
	})
	t.Run("negative", func(t *testing.T) {
		t.Parallel()
		out, err := exec.Command(kapiBinary, "--in-memory", "--listen", "127.0.0.1:0", "--min-request-timeout=-1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--min-request-timeout can not be negative value") {
			t.Errorf("--min-request-timeout=-1: %v, %s", err, out)
		}
	})
}
