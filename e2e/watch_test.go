package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func toV1beta1VAP(t testing.TB, p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1beta1.ValidatingAdmissionPolicy {
	t.Helper()
	out := &admissionregistrationv1beta1.ValidatingAdmissionPolicy{}
	if err := json.Unmarshal(mustJSON(t, p), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// collectEvents reads n events from w, failing the test when they do not
// arrive within 10 seconds.
func collectEvents(t testing.TB, w watch.Interface, n int) []watch.Event {
	t.Helper()
	var out []watch.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Errorf("watch closed after %d of %d events", len(out), n)
				return out
			}
			if ev.Type == watch.Error {
				t.Errorf("watch error: %v", ev.Object)
				return out
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			out = append(out, ev)
		case <-timeout:
			t.Errorf("got %d of %d events within 10s", len(out), n)
			return out
		}
	}
	return out
}

// rawEvent is one frame of a JSON watch stream.
type rawEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
		// Status fields of an ERROR event.
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	} `json:"object"`
}

// rawWatch opens a watch with net/http and returns its frames as they come
// until the server ends the stream (use timeoutSeconds).
func rawWatch(t testing.TB, k *kapi, path string) (*http.Response, []rawEvent) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), "GET", k.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []rawEvent
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev rawEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("watch frame %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return resp, evs
}

func eventSummary(evs []rawEvent) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.Type+" "+e.Object.Metadata.Name)
	}
	return strings.Join(parts, ", ")
}

func TestInformerNamespaces(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)

	added := make(chan string, 100)
	updated := make(chan *corev1.Namespace, 100)
	deleted := make(chan string, 100)
	factory := informers.NewSharedInformerFactory(k.Client, 0)
	inf := factory.Core().V1().Namespaces().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			added <- obj.(*corev1.Namespace).Name
		},
		UpdateFunc: func(_, obj interface{}) {
			ns := obj.(*corev1.Namespace)
			updated <- ns
		},
		DeleteFunc: func(obj interface{}) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			deleted <- obj.(*corev1.Namespace).Name
		},
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatal("namespace informer did not sync")
	}
	lister := factory.Core().V1().Namespaces().Lister()
	initial, err := lister.List(labels.Everything())
	if err != nil || len(initial) != 4 {
		t.Fatalf("informer cache after sync: %v %d namespaces", err, len(initial))
	}
	for i := 0; i < 4; i++ {
		<-added
	}

	waitFor := func(what string, f func() bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !f() {
			select {
			case <-deadline:
				t.Fatalf("informer did not see %s", what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("informed"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-added:
		if name != "informed" {
			t.Errorf("added %q, want informed", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no add event for namespace informed")
	}

	ns, err := k.Client.CoreV1().Namespaces().Get(ctx, "informed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["seen"] = "update"
	if _, err := k.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the label update", func() bool {
		select {
		case u := <-updated:
			return u.Name == "informed" && u.Labels["seen"] == "update"
		default:
			return false
		}
	})
	if cached, err := lister.Get("informed"); err != nil || cached.Labels["seen"] != "update" {
		t.Errorf("lister after update: %v %v", err, cached)
	}

	if err := k.Client.CoreV1().Namespaces().Delete(ctx, "informed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sawTerminating := false
	drainUpdates := func() {
		for {
			select {
			case u := <-updated:
				if u.Name == "informed" && u.Status.Phase == corev1.NamespaceTerminating {
					sawTerminating = true
				}
			default:
				return
			}
		}
	}
	waitFor("the deletion", func() bool {
		// The handlers run in order: the updates before the delete are
		// already queued when the delete arrives.
		select {
		case name := <-deleted:
			drainUpdates()
			return name == "informed"
		default:
			drainUpdates()
			return false
		}
	})
	if !sawTerminating {
		t.Errorf("no update to phase Terminating before the delete event")
	}
	if _, err := lister.Get("informed"); err == nil {
		t.Errorf("lister still has informed after the delete event")
	}
}

func TestWatchFromResourceVersion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()

	a, err := c.Create(ctx, newVWC("watch-a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv1 := a.ResourceVersion
	a.Labels = map[string]string{"step": "2"}
	a, err = c.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Create(ctx, newVWC("watch-b"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Writes to other kinds are not this watch's events.
	if _, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("noise.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "watch-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("client-go", func(t *testing.T) {
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv1})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		evs := collectEvents(t, w, 3)
		if len(evs) != 3 {
			return
		}
		type summary struct {
			typ  watch.EventType
			name string
		}
		var got []summary
		for _, e := range evs {
			got = append(got, summary{e.Type, e.Object.(*admissionregistrationv1.ValidatingWebhookConfiguration).Name})
		}
		want := []summary{{watch.Modified, "watch-a"}, {watch.Added, "watch-b"}, {watch.Deleted, "watch-a"}}
		if fmtJSON(got) != fmtJSON(want) {
			t.Errorf("events %v, want %v", got, want)
		}
		mod := evs[0].Object.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		if mod.ResourceVersion != a.ResourceVersion || mod.Labels["step"] != "2" {
			t.Errorf("MODIFIED carries rv %s labels %v, want rv %s", mod.ResourceVersion, mod.Labels, a.ResourceVersion)
		}
		del := evs[2].Object.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		if rvInt(t, del.ResourceVersion) <= rvInt(t, b.ResourceVersion) {
			t.Errorf("DELETED carries rv %s, want the deletion's (after %s)", del.ResourceVersion, b.ResourceVersion)
		}

		// A live change arrives on the open watch.
		if _, err := c.Create(ctx, newVWC("watch-c"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		live := collectEvents(t, w, 1)
		if len(live) == 1 && (live[0].Type != watch.Added || live[0].Object.(*admissionregistrationv1.ValidatingWebhookConfiguration).Name != "watch-c") {
			t.Errorf("live event %s %v", live[0].Type, live[0].Object)
		}
		if err := c.Delete(ctx, "watch-c", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	// The rest reads streams that end after timeoutSeconds=1: run them
	// side by side.
	t.Run("streams", func(t *testing.T) {
		t.Run("raw HTTP", func(t *testing.T) {
			t.Parallel()
			resp, evs := rawWatch(t, k, collectionPath(gvrVWCs)+"?watch=true&timeoutSeconds=1&resourceVersion="+rv1)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("watch answered %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			// watch-c was created and deleted by the client-go subtest.
			want := "MODIFIED watch-a, ADDED watch-b, DELETED watch-a, ADDED watch-c, DELETED watch-c"
			if got := eventSummary(evs); got != want {
				t.Errorf("events [%s], want [%s]", got, want)
			}
			for _, e := range evs {
				if e.Object.Kind != "ValidatingWebhookConfiguration" {
					t.Errorf("event object kind %q", e.Object.Kind)
				}
			}
		})

		t.Run("from now", func(t *testing.T) {
			t.Parallel()
			// resourceVersion "" (or 0) starts with the current objects as
			// ADDED.
			for _, q := range []string{"", "&resourceVersion=0"} {
				_, evs := rawWatch(t, k, collectionPath(gvrVWCs)+"?watch=1&timeoutSeconds=1"+q)
				if got := eventSummary(evs); got != "ADDED watch-b" {
					t.Errorf("watch%s: events [%s], want [ADDED watch-b]", q, got)
				}
			}
		})

		t.Run("watch values", func(t *testing.T) {
			t.Parallel()
			// kube-apiserver reads any value but 0 and false as true.
			for _, v := range []string{"True", "yes"} {
				_, evs := rawWatch(t, k, collectionPath(gvrVWCs)+"?watch="+v+"&timeoutSeconds=1")
				if got := eventSummary(evs); got != "ADDED watch-b" {
					t.Errorf("watch=%s: events [%s], want [ADDED watch-b]", v, got)
				}
			}
			for _, v := range []string{"0", "FALSE"} {
				r := k.do(t, "GET", collectionPath(gvrVWCs)+"?watch="+v, nil)
				if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"kind":"ValidatingWebhookConfigurationList"`) {
					t.Errorf("watch=%s: HTTP %d %.200s, want the list", v, r.Code, r.Body)
				}
			}
			// On a named object the parameter is ignored: a get.
			r := k.do(t, "GET", collectionPath(gvrVWCs)+"/watch-b?watch=true", nil)
			if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"kind":"ValidatingWebhookConfiguration"`) {
				t.Errorf("GET watch-b?watch=true: HTTP %d %.200s, want the object", r.Code, r.Body)
			}
		})

		t.Run("selectors", func(t *testing.T) {
			t.Parallel()
			_, evs := rawWatch(t, k, collectionPath(gvrVWCs)+"?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dwatch-a&resourceVersion="+rv1)
			if got := eventSummary(evs); got != "MODIFIED watch-a, DELETED watch-a" {
				t.Errorf("field-selected events [%s]", got)
			}
			// A label added by an update brings the object into the
			// selection: it is ADDED for this watcher.
			_, evs = rawWatch(t, k, collectionPath(gvrVWCs)+"?watch=true&timeoutSeconds=1&labelSelector=step%3D2&resourceVersion="+rv1)
			if got := eventSummary(evs); got != "ADDED watch-a, DELETED watch-a" {
				t.Errorf("label-selected events [%s], want [ADDED watch-a, DELETED watch-a]", got)
			}
		})

		t.Run("timeout ends the stream", func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			resp, _ := rawWatch(t, k, collectionPath(gvrDevClasses)+"?watch=true&timeoutSeconds=1")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if d := time.Since(start); d < 900*time.Millisecond || d > 5*time.Second {
				t.Errorf("a 1s watch lasted %v", d)
			}
		})
	})
}

// A watch asked for over a WebSocket, as a browser or a dashboard asks
// for it (through kubectl proxy, say), gets each event as a text message
// of the event's JSON line, as from kube-apiserver.
func TestWatchOverWebSocket(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	// kubectl proxy passes the upgrade through: kapi must switch
	// protocols for it to (it answers 500 to a watch that does not).
	requireKubectl(t)
	proxy := exec.CommandContext(ctx, "kubectl", "--kubeconfig", k.Kubeconfig, "--cache-dir", k.cacheDir, "proxy", "--port=0")
	stdout, err := proxy.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Process.Kill(); _ = proxy.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	_, proxyAddr, found := strings.Cut(strings.TrimSpace(line), "Starting to serve on ")
	if err != nil || !found {
		t.Fatalf("kubectl proxy said %q (%v)", line, err)
	}

	for _, base := range []string{strings.TrimPrefix(k.URL, "http://"), proxyAddr} {
		list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ws, err := websocket.Dial("ws://"+base+"/api/v1/namespaces?watch=true&resourceVersion="+list.ResourceVersion, "", "http://localhost/")
		if err != nil {
			t.Fatalf("WebSocket watch through %s: %v", base, err)
		}
		name := "ws-" + strings.NewReplacer(".", "-", ":", "-").Replace(base)
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var msg string
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			t.Fatalf("reading the watch through %s: %v", base, err)
		}
		var ev struct {
			Type   string           `json:"type"`
			Object corev1.Namespace `json:"object"`
		}
		if err := json.Unmarshal([]byte(msg), &ev); err != nil || !strings.HasSuffix(msg, "}\n") {
			t.Fatalf("message through %s is not an event's JSON line: %q (%v)", base, msg, err)
		}
		if ev.Type != "ADDED" || ev.Object.Name != name || ev.Object.Kind != "Namespace" {
			t.Errorf("event through %s: %s %s %s, want ADDED Namespace %s", base, ev.Type, ev.Object.Kind, ev.Object.Name, name)
		}
		ws.Close()
	}
}

// TestWatchTransformRefusedBeforeStream replays the error cases of kube's
// integration test TestTransform on a custom resource and on namespaces: a
// watch's Table options and its media type are refused with an HTTP error
// before the stream starts, as kube-apiserver's watch handler checks them
// (a 400 for an includeObject it does not know, a 406 naming the media types
// a watch can be streamed in for YAML), not as an ERROR event.
func TestWatchTransformRefusedBeforeStream(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, newCRD("foos", "cr.bar.com"))
	const (
		table     = "Accept: application/json;as=Table;g=meta.k8s.io;v=v1"
		tableYAML = "Accept: application/yaml;as=Table;g=meta.k8s.io;v=v1"
		badInc    = `Unable to convert to Table as requested: includeObject: Invalid value: "unrecognized": must be 'Metadata', 'Object', 'None', or empty`
		noStream  = "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
	)
	for _, coll := range []string{"/api/v1/namespaces", "/apis/cr.bar.com/v1/namespaces/default/foos"} {
		watch := coll + "?watch=true&resourceVersion=0&timeoutSeconds=1"
		r := k.do(t, "GET", watch+"&includeObject=unrecognized", nil, table)
		st := expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if st.Message != badInc {
			t.Errorf("%s: a Table watch with includeObject=unrecognized: message %q, want %q", coll, st.Message, badInc)
		}
		for _, accept := range []string{tableYAML, "Accept: application/yaml;as=Table;g=meta.k8s.io;v=v1beta1", "Accept: application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"} {
			r = k.do(t, "GET", watch, nil, accept)
			st = expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
			if st.Message != noStream {
				t.Errorf("%s: a watch with %s: message %q, want %q", coll, accept, st.Message, noStream)
			}
		}
		// In plain YAML the Status is YAML.
		r = k.do(t, "GET", watch, nil, "Accept: application/yaml")
		if r.Code != http.StatusNotAcceptable || !strings.Contains(string(r.Body), "message: 'only the following media types are accepted: application/json;stream=watch,\n  application/vnd.kubernetes.protobuf;stream=watch'") {
			t.Errorf("%s: a watch in YAML: %d %s, want a 406 naming the stream media types", coll, r.Code, r.Body)
		}
		// YAML asked for as a stream is no media type of kube's: the next
		// one the client accepts streams.
		r = k.do(t, "GET", watch, nil, "Accept: application/yaml;stream=watch, application/json;stream=watch")
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/json" || (coll == "/api/v1/namespaces" && !strings.HasPrefix(string(r.Body), `{"type":"ADDED"`)) {
			t.Errorf("%s: a watch accepting YAML then JSON as streams: %d %q %.100s, want a JSON stream", coll, r.Code, r.Header.Get("Content-Type"), r.Body)
		}
		// The Table options are checked first, as kube-apiserver's.
		r = k.do(t, "GET", watch+"&includeObject=unrecognized", nil, tableYAML)
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "includeObject")
		// A valid Table watch streams (the namespaces' first event: default).
		r = k.do(t, "GET", watch+"&includeObject=None", nil, table)
		if r.Code != http.StatusOK {
			t.Errorf("%s: a Table watch: %d %.200s", coll, r.Code, r.Body)
		} else if coll == "/api/v1/namespaces" && !strings.HasPrefix(string(r.Body), `{"type":"ADDED","object":{"kind":"Table"`) {
			t.Errorf("%s: a Table watch: %.200s, want Table events", coll, r.Body)
		}
	}
}
