package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

const deviceClasses = "/apis/resource.k8s.io/v1beta2/deviceclasses"

// openWatch starts a watch and returns its stream of frames (one line
// each); the stream is closed when the test ends.
func openWatch(t *testing.T, ts *httptest.Server, query, accept string) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.URL+deviceClasses+"?watch=true&timeoutSeconds=30"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: %d", query, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return sc
}

// readFrames reads n frames of a watch, failing the test after a while.
func readFrames(t *testing.T, sc *bufio.Scanner, n int) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var frames []string
		for len(frames) < n && sc.Scan() {
			frames = append(frames, sc.Text())
		}
		got <- frames
	}()
	select {
	case frames := <-got:
		if len(frames) != n {
			t.Fatalf("got %d frames, want %d: %q", len(frames), n, frames)
		}
		return frames
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %d frames", n)
	}
	return nil
}

type frame struct {
	Type   string
	Object struct {
		Kind       string
		APIVersion string
		Metadata   struct {
			Name            string
			ResourceVersion string
			Labels          map[string]string
		}
		Rows []struct {
			Cells  []any
			Object json.RawMessage
		}
		Message string
	}
}

func parseFrame(t *testing.T, s string) frame {
	t.Helper()
	var f frame
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		t.Fatalf("frame %q: %v", s, err)
	}
	return f
}

func deviceClass(name, team, rv string) string {
	meta := fmt.Sprintf(`"name":%q,"labels":{"team":%q}`, name, team)
	if rv != "" {
		meta += fmt.Sprintf(`,"resourceVersion":%q`, rv)
	}
	return `{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{` + meta + `},"spec":{}}`
}

func writeRV(t *testing.T, ts *httptest.Server, method, path, body string, want int) string {
	t.Helper()
	code, resp := call(t, ts, method, path, "application/json", body)
	if code != want {
		t.Fatalf("%s %s: %d %s", method, path, code, resp)
	}
	var obj struct {
		Metadata struct{ ResourceVersion string }
	}
	_ = json.Unmarshal([]byte(resp), &obj)
	return obj.Metadata.ResourceVersion
}

// TestWatchSharedRendering runs several watchers of each shape through
// the same writes: watchers of one shape get byte-identical frames, and each
// sees the events its selectors make of the writes.
func TestWatchSharedRendering(t *testing.T) {
	ts := newTestServer(t)
	const (
		partial = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
		table   = "application/json;as=Table;g=meta.k8s.io;v=v1"
	)
	type watcher struct {
		name, query, accept string
		sc                  *bufio.Scanner
		want                []string // "TYPE name rvIndex team"
	}
	ws := []*watcher{
		{name: "plain1"}, {name: "plain2"},
		{name: "partial1", accept: partial}, {name: "partial2", accept: partial},
		{name: "table1", accept: table}, {name: "table2", accept: table},
		{name: "tableObject", accept: table, query: "&includeObject=Object"},
		{name: "team-a1", query: "&labelSelector=team%3Da"}, {name: "team-a2", query: "&labelSelector=team%3Da"},
		{name: "x1", query: "&fieldSelector=metadata.name%3Dx1"},
	}
	for _, w := range ws {
		w.sc = openWatch(t, ts, w.query, w.accept)
	}

	var rvs []string
	rvs = append(rvs, writeRV(t, ts, "POST", deviceClasses, deviceClass("x1", "a", ""), 201))          // 0
	rvs = append(rvs, writeRV(t, ts, "POST", deviceClasses, deviceClass("x2", "b", ""), 201))          // 1
	rvs = append(rvs, writeRV(t, ts, "PUT", deviceClasses+"/x1", deviceClass("x1", "b", rvs[0]), 200)) // 2
	rvs = append(rvs, writeRV(t, ts, "PUT", deviceClasses+"/x2", deviceClass("x2", "a", rvs[1]), 200)) // 3
	rvs = append(rvs, writeRV(t, ts, "DELETE", deviceClasses+"/x1", "", 200))                          // 4
	rvs = append(rvs, writeRV(t, ts, "DELETE", deviceClasses+"/x2", "", 200))                          // 5
	all := []string{"ADDED x1 0 a", "ADDED x2 1 b", "MODIFIED x1 2 b", "MODIFIED x2 3 a", "DELETED x1 4 b", "DELETED x2 5 a"}
	for _, w := range ws {
		switch {
		case strings.HasPrefix(w.name, "team-a"):
			// x1 leaves the selection (its old content at the new
			// revision), x2 enters it.
			w.want = []string{"ADDED x1 0 a", "DELETED x1 2 a", "ADDED x2 3 a", "DELETED x2 5 a"}
		case w.name == "x1":
			w.want = []string{"ADDED x1 0 a", "MODIFIED x1 2 b", "DELETED x1 4 b"}
		default:
			w.want = all
		}
	}

	frames := map[string][]string{}
	for _, w := range ws {
		got := readFrames(t, w.sc, len(w.want))
		frames[w.name] = got
		for i, s := range got {
			f := parseFrame(t, s)
			var typ, name, team string
			var rv int
			fmt.Sscanf(w.want[i], "%s %s %d %s", &typ, &name, &rv, &team)
			if f.Type != typ {
				t.Errorf("%s frame %d: type %s, want %s", w.name, i, f.Type, typ)
			}
			switch w.accept {
			case table:
				if f.Object.Kind != "Table" || len(f.Object.Rows) != 1 || f.Object.Rows[0].Cells[0] != name {
					t.Errorf("%s frame %d: not a Table row of %s: %s", w.name, i, name, s)
				}
				var inner struct {
					Kind     string
					Metadata struct {
						Name, ResourceVersion string
						Labels                map[string]string
					}
				}
				_ = json.Unmarshal(f.Object.Rows[0].Object, &inner)
				wantKind := "PartialObjectMetadata"
				if w.name == "tableObject" {
					wantKind = "DeviceClass"
				}
				if inner.Kind != wantKind || inner.Metadata.ResourceVersion != rvs[rv] || inner.Metadata.Labels["team"] != team {
					t.Errorf("%s frame %d: row object %s, want a %s at %s with team %s", w.name, i, f.Object.Rows[0].Object, wantKind, rvs[rv], team)
				}
				if f.Object.Metadata.ResourceVersion != rvs[rv] {
					t.Errorf("%s frame %d: table resourceVersion %s, want %s", w.name, i, f.Object.Metadata.ResourceVersion, rvs[rv])
				}
				// The column definitions come with the first event only,
				// as kube-apiserver sends them.
				if first := i == 0; first != strings.Contains(s, `"columnDefinitions":[{`) || !first && !strings.Contains(s, `"columnDefinitions":null`) {
					t.Errorf("%s frame %d: columnDefinitions in %s, want them in the first frame only", w.name, i, s)
				}
			default:
				wantKind := "DeviceClass"
				if w.accept == partial {
					wantKind = "PartialObjectMetadata"
				}
				m := f.Object.Metadata
				if f.Object.Kind != wantKind || m.Name != name || m.ResourceVersion != rvs[rv] || m.Labels["team"] != team {
					t.Errorf("%s frame %d: got %s, want %s %s %s at %s with team %s", w.name, i, s, typ, wantKind, name, rvs[rv], team)
				}
			}
		}
	}
	for _, pair := range [][2]string{{"plain1", "plain2"}, {"partial1", "partial2"}, {"table1", "table2"}, {"team-a1", "team-a2"}} {
		if !reflect.DeepEqual(frames[pair[0]], frames[pair[1]]) {
			t.Errorf("%s and %s differ:\n%q\n%q", pair[0], pair[1], frames[pair[0]], frames[pair[1]])
		}
	}
	// A selecting watcher shares the rendering of the others.
	if frames["team-a1"][0] != frames["plain1"][0] {
		t.Errorf("team-a1 and plain1 differ on the same event:\n%s\n%s", frames["team-a1"][0], frames["plain1"][0])
	}
}

// TestWatchFrameEncoding checks that the frames built around a shared
// rendering are byte for byte json.Marshal's.
func TestWatchFrameEncoding(t *testing.T) {
	objs := []any{
		map[string]any{"kind": "X", "metadata": map[string]any{"name": "a<b>&c", "annotations": map[string]any{"u": "é\u2028\"\\"}}, "n": int64(3), "f": 1.5},
		&metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, Rows: []metav1.TableRow{{Cells: []any{"<x>"}}}},
		partialMetadata(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p&q"}}}, "v1"),
	}
	for _, typ := range []string{"ADDED", "MODIFIED", "DELETED"} {
		for _, obj := range objs {
			want, err := json.Marshal(watchEvent{Type: typ, Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			data, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			ww := &watchWriter{frames: &responseFrames{w: rec, flusher: rec}}
			ww.writeObjectEvent(typ, data)
			if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("frame:\n got %s\nwant %s", got, want)
			}
		}
	}
}

// TestSharedEventConcurrent renders and matches one event from many
// goroutines (run with -race): every watcher of a shape gets the same
// bytes, and the shared decoded objects are left as they were.
func TestSharedEventConcurrent(t *testing.T) {
	reg := registry.New()
	builtin.Register(reg)
	res, ok := reg.Get("resource.k8s.io", "v1beta2", "deviceclasses")
	if !ok {
		t.Fatal("no deviceclasses")
	}
	data := []byte(`{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{"name":"x","resourceVersion":"7","labels":{"team":"a"}},"spec":{}}`)
	prev := []byte(`{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{"name":"x","resourceVersion":"5","labels":{"team":"b"}},"spec":{}}`)
	ev := storage.Event{Op: storage.OpModified, Object: storage.Object{Key: storage.Key{Resource: res.StorageResource(), Name: "x"}, Rev: 7, Data: data}, PrevRev: 5, PrevData: prev}
	var published lastPublished
	se := published.share(ev)
	if again := published.share(ev); again != se {
		t.Fatal("the same event is not shared")
	}
	other := ev
	other.Object.Rev = 8
	if published.share(other) == se {
		t.Fatal("another event is shared with the first")
	}

	s := &Server{opts: Options{Metrics: NewMetrics()}}
	outs := []output{{}, {as: "PartialObjectMetadata", version: "v1"}, {as: "PartialObjectMetadata", version: "v1beta1"}}
	type result struct {
		out  int
		old  bool
		data string
	}
	results := make(chan result, 300)
	var wg sync.WaitGroup
	for i := 0; i < 150; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := httptest.NewRequest(http.MethodGet, deviceClasses+"?watch=true", nil)
			sel, _ := newSelection(res, "", &metainternalversion.ListOptions{})
			rec := httptest.NewRecorder()
			ww := newWatchWriter(s, &responseFrames{w: rec, flusher: rec}, r, &resourceRequest{res: res, version: "v1beta2"}, outs[i%len(outs)], sel)
			obj, err := se.object()
			if err != nil {
				t.Error(err)
				return
			}
			ww.sel.matches(obj)
			ww.sel.matches(se.previous())
			for _, old := range []bool{false, true} {
				b, err := se.render(ww, old)
				if err != nil {
					t.Error(err)
					return
				}
				results <- result{i % len(outs), old, string(b)}
			}
		}(i)
	}
	wg.Wait()
	close(results)
	first := map[[2]any]string{}
	for r := range results {
		k := [2]any{r.out, r.old}
		if f, ok := first[k]; ok && f != r.data {
			t.Errorf("shape %v: %s and %s", k, f, r.data)
		}
		first[k] = r.data
	}
	if !strings.Contains(first[[2]any{0, true}], `"team":"b"`) || !strings.Contains(first[[2]any{0, true}], `"resourceVersion":"7"`) {
		t.Errorf("previous state: %s, want team b at revision 7", first[[2]any{0, true}])
	}
	if !strings.Contains(first[[2]any{1, false}], `"kind":"PartialObjectMetadata"`) || !strings.Contains(first[[2]any{2, false}], `"apiVersion":"meta.k8s.io/v1beta1"`) {
		t.Errorf("partial metadata: %s / %s", first[[2]any{1, false}], first[[2]any{2, false}])
	}
	wantObj, _ := decodeStored(&ev.Object)
	wantOld, _ := decodeStored(&storage.Object{Data: prev})
	if obj, _ := se.object(); !reflect.DeepEqual(obj, wantObj) {
		t.Errorf("the shared object changed: %v", obj)
	}
	if !reflect.DeepEqual(se.previous(), wantOld) {
		t.Errorf("the shared previous object changed: %v", se.previous())
	}
}

// A Table watch with a bad includeObject is refused before its stream
// starts, as kube-apiserver's watch handler checks the Table options
// (optionsForTransform) before it serves any event.
func TestWatchBadTableOptionsRefused(t *testing.T) {
	ts := newTestServer(t)
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/namespaces?watch=true&resourceVersion=0&includeObject=Bogus&timeoutSeconds=2", nil)
	req.Header.Set("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), `"type":"ERROR"`) || !strings.Contains(string(body), `"reason": "BadRequest"`) {
		t.Errorf("HTTP %d %s, want a 400 BadRequest Status", resp.StatusCode, body)
	}
}
