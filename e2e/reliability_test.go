package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Reliability: concurrent writers lose no update, an overloaded server
// answers 429 and recovers, and the size and complexity limits answer as
// kube-apiserver v1.33 does (its sources: k8s.io/apiserver,
// k8s.io/apimachinery and k8s.io/apiextensions-apiserver v0.33).

// relBlobCRDYAML is a cluster-scoped custom resource with a free-form
// string, a counter and a subtree that keeps whatever it is given.
const relBlobCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: blobs.rel.example.com
spec:
  group: rel.example.com
  scope: Cluster
  names:
    plural: blobs
    singular: blob
    kind: Blob
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              data:
                type: string
              count:
                type: integer
              tree:
                type: object
                x-kubernetes-preserve-unknown-fields: true
`

var gvrBlobs = schema.GroupVersionResource{Group: "rel.example.com", Version: "v1", Resource: "blobs"}

// relBlobJSON is a Blob whose spec is spec (raw JSON; none when empty).
func relBlobJSON(name, spec string) []byte {
	s := `{"apiVersion":"rel.example.com/v1","kind":"Blob","metadata":{"name":` + strconv.Quote(name) + `}`
	if spec != "" {
		s += `,"spec":` + spec
	}
	return []byte(s + "}")
}

// relCounter is one object whose counter concurrent writers increment.
type relCounter struct {
	// read returns the object and its counter.
	read func(ctx context.Context) (obj interface{}, n int64, err error)
	// write stores the object with the counter n (an update with the
	// resourceVersion read) and returns the new resourceVersion.
	write func(ctx context.Context, obj interface{}, n int64) (rv string, err error)
	// conflictMessage is kube-apiserver's message of a stale update.
	conflictMessage string
}

// 1. Concurrent read-modify-write loops with conflict retries lose no
// increment: every acknowledged update has its own value and a newer
// resourceVersion than the one before, and the final count is the number
// of increments.
func TestNoLostUpdate(t *testing.T) {
	t.Parallel()
	// The SQLite store on disk, as kapi runs for real.
	k := startKapi(t)
	createCRD(t, k, crdFromYAML(t, relBlobCRDYAML))
	const annotation = "rel.example.com/count"

	cases := []struct {
		name string
		make func(t *testing.T) relCounter
	}{
		{"DeviceClass annotation", func(t *testing.T) relCounter {
			dcs := k.Client.ResourceV1beta2().DeviceClasses()
			if _, err := dcs.Create(ctxT(t), newDeviceClass("counter"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return relCounter{
				read: func(ctx context.Context) (interface{}, int64, error) {
					dc, err := dcs.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return nil, 0, err
					}
					n, _ := strconv.ParseInt(dc.Annotations[annotation], 10, 64)
					return dc, n, nil
				},
				write: func(ctx context.Context, obj interface{}, n int64) (string, error) {
					dc := obj.(*resourcev1beta2.DeviceClass)
					if dc.Annotations == nil {
						dc.Annotations = map[string]string{}
					}
					dc.Annotations[annotation] = strconv.FormatInt(n, 10)
					out, err := dcs.Update(ctx, dc, metav1.UpdateOptions{})
					if err != nil {
						return "", err
					}
					return out.ResourceVersion, nil
				},
				conflictMessage: `Operation cannot be fulfilled on deviceclasses.resource.k8s.io "counter": the object has been modified; please apply your changes to the latest version and try again`,
			}
		}},
		{"custom resource field", func(t *testing.T) relCounter {
			blobs := k.Dyn.Resource(gvrBlobs)
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(relBlobJSON("counter", `{"count":0}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := blobs.Create(ctxT(t), u, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return relCounter{
				read: func(ctx context.Context) (interface{}, int64, error) {
					u, err := blobs.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return nil, 0, err
					}
					n, _, err := unstructured.NestedInt64(u.Object, "spec", "count")
					return u, n, err
				},
				write: func(ctx context.Context, obj interface{}, n int64) (string, error) {
					u := obj.(*unstructured.Unstructured)
					if err := unstructured.SetNestedField(u.Object, n, "spec", "count"); err != nil {
						return "", err
					}
					out, err := blobs.Update(ctx, u, metav1.UpdateOptions{})
					if err != nil {
						return "", err
					}
					return out.GetResourceVersion(), nil
				},
				conflictMessage: `Operation cannot be fulfilled on blobs.rel.example.com "counter": the object has been modified; please apply your changes to the latest version and try again`,
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			relCountConcurrently(t, tc.make(t))
		})
	}
}

// relCountConcurrently runs the writers on c and checks the outcome.
func relCountConcurrently(t *testing.T, c relCounter) {
	const workers, perWorker = 16, 25
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Many retries: 16 writers on one object conflict a lot, and
	// retry.DefaultRetry's 5 steps would give up.
	backoff := wait.Backoff{Steps: 100000, Duration: time.Millisecond, Factor: 1, Jitter: 1}

	var (
		mu        sync.Mutex
		acked     = map[int64][]string{} // counter value -> resourceVersions acknowledged
		conflicts atomic.Int64
		firstErr  error // the first conflict, to check its Status
	)
	// Every writer reads the object before any writes it: the first
	// writes all carry the same resourceVersion, so all but one of them
	// must be refused with 409.
	var allRead sync.WaitGroup
	allRead.Add(workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for i := 0; i < perWorker; i++ {
				err := retry.RetryOnConflict(backoff, func() error {
					obj, n, err := c.read(ctx)
					if first {
						first = false
						allRead.Done()
						allRead.Wait()
					}
					if err != nil {
						return err
					}
					rv, err := c.write(ctx, obj, n+1)
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
					if err == nil {
						mu.Lock()
						acked[n+1] = append(acked[n+1], rv)
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					t.Errorf("increment: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	const total = workers * perWorker
	_, n, err := c.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Errorf("final count %d, want %d (%d increments lost)", n, total, total-n)
	}
	// Each acknowledged update wrote its own value, 1..total, and a later
	// value has a later resourceVersion.
	values := make([]int64, 0, len(acked))
	for v := range acked {
		values = append(values, v)
	}
	sort.Slice(values, func(i, j int) bool { return values[i] < values[j] })
	var lastRV int64
	for i, v := range values {
		rvs := acked[v]
		if v != int64(i+1) {
			t.Errorf("acknowledged values skip %d (got %d)", i+1, v)
			break
		}
		if len(rvs) != 1 {
			t.Errorf("value %d was acknowledged %d times (resourceVersions %v): a lost update", v, len(rvs), rvs)
			continue
		}
		rv := rvInt(t, rvs[0])
		if rv <= lastRV {
			t.Errorf("value %d has resourceVersion %d, not after value %d's %d", v, rv, v-1, lastRV)
		}
		lastRV = rv
	}
	if len(values) != total {
		t.Errorf("%d distinct values acknowledged, want %d", len(values), total)
	}
	// At least the first round of writes conflicted.
	if got := conflicts.Load(); got < workers-1 {
		t.Errorf("%d conflicts seen, want at least %d", got, workers-1)
	}
	t.Logf("%d increments, %d conflicts retried", total, conflicts.Load())
	if firstErr != nil {
		st := statusOf(t, firstErr)
		if st.Code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || st.Message != c.conflictMessage {
			t.Errorf("conflict: %d %s %q, want 409 Conflict %q", st.Code, st.Reason, st.Message, c.conflictMessage)
		}
	}
}

// relResult is a raw exchange made off the test goroutine.
type relResult struct {
	Code int
	Body []byte
	Err  error
}

// relSend is k.do for other goroutines: it reports errors instead of
// failing the test.
func relSend(ctx context.Context, method, url string, body []byte) relResult {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return relResult{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return relResult{Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return relResult{Code: resp.StatusCode, Body: data, Err: err}
}

// relTooManyRequests checks kube-apiserver's answer over the in-flight
// bound. Its max-in-flight filter (k8s.io/apiserver/pkg/server/filters,
// maxinflight.go, and priority-and-fairness.go when APF is on) answers
// with tooManyRequests(): Retry-After and http.Error's plain-text body
// "Too many requests, please try again later.", not a JSON Status.
// client-go turns it into a TooManyRequests StatusError itself.
func relTooManyRequests(t testing.TB, what string, r httpResult) {
	t.Helper()
	if r.Code != http.StatusTooManyRequests {
		t.Errorf("%s: HTTP %d, want 429; body: %.300s", what, r.Code, r.Body)
		return
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want a number of seconds", what, r.Header.Get("Retry-After"))
	}
	const msg = "Too many requests, please try again later."
	if !strings.Contains(string(r.Body), msg) {
		t.Errorf("%s: body %.300q does not say %q", what, r.Body, msg)
	}
}

// relTooManyRequestsBody checks the wire form of kube-apiserver's 429.
func relTooManyRequestsBody(t testing.TB, what string, r httpResult) {
	t.Helper()
	const ct, body = "text/plain; charset=utf-8", "Too many requests, please try again later.\n"
	if got := r.Header.Get("Content-Type"); got != ct || string(r.Body) != body {
		t.Errorf("%s: answered Content-Type %q body %.300q; kube-apiserver answers Content-Type %q body %q",
			what, got, r.Body, ct, body)
	}
}

// relCount429 counts the 429 answers a client gets.
type relCount429 struct {
	next http.RoundTripper
	n    *atomic.Int32
}

func (c relCount429) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.n.Add(1)
	}
	return resp, err
}

// 2. Two creates held by a slow webhook fill --max-mutating-requests-inflight=2:
// other writes get 429 with Retry-After at once while reads, with their
// own budget, still pass; once the webhook answers, writes pass again.
func TestOverloadAnswers429ThenRecovers(t *testing.T) {
	t.Parallel()
	k := startKapi(t, "--in-memory", "--max-mutating-requests-inflight=2", "--max-requests-inflight=20")
	hs, releaseHook := holdingWebhook(t, k, "slow")

	dcs := collectionPath(gvrDevClasses)
	mustCode(t, "create existing", k.do(t, "POST", dcs, deviceClassJSON("existing", nil)), http.StatusCreated)
	existing := k.do(t, "GET", deviceClassPath("existing"), nil)
	mustCode(t, "get existing", existing, http.StatusOK)

	// Two creates wait in the webhook, holding both mutating slots.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := make(chan relResult, 2)
	for i := 1; i <= 2; i++ {
		body := deviceClassJSON(fmt.Sprintf("slow-%d", i), map[string]string{"slow": "true"})
		go func() { held <- relSend(ctx, "POST", k.URL+dcs, body) }()
	}
	eventually(t, 10*time.Second, "two creates in the slow webhook", func() (bool, error) {
		n := len(hs.callsTo("/slow", ""))
		return n == 2, fmt.Errorf("%d calls", n)
	})

	// Writes of every kind are refused at once.
	updated := decodeObj(t, existing)
	updated.SetLabels(map[string]string{"updated": "true"})
	writes := []struct {
		what, method, path string
		body               []byte
		header             []string
	}{
		{"create a namespace", "POST", "/api/v1/namespaces", mustJSON(t, newNamespace("refused")), nil},
		{"create a DeviceClass", "POST", dcs, deviceClassJSON("refused", nil), nil},
		{"update a DeviceClass", "PUT", deviceClassPath("existing"), mustJSON(t, updated.Object), nil},
		{"patch a DeviceClass", "PATCH", deviceClassPath("existing"), []byte(`{"metadata":{"labels":{"patched":"true"}}}`), []string{"Content-Type: application/merge-patch+json"}},
		{"delete a DeviceClass", "DELETE", deviceClassPath("existing"), nil, nil},
	}
	for i, w := range writes {
		r := k.do(t, w.method, w.path, w.body, w.header...)
		relTooManyRequests(t, w.what, r)
		if i == 0 {
			relTooManyRequestsBody(t, w.what, r)
		}
	}

	// client-go sees a TooManyRequests error that suggests a delay (with
	// its retries turned off: by default it retries a 429 itself).
	err := k.Client.CoreV1().RESTClient().Post().Resource("namespaces").Body(newNamespace("refused-client-go")).
		MaxRetries(0).Do(ctxT(t)).Error()
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("client-go create: %v, want TooManyRequests", err)
	} else if st := statusOf(t, err); st.Code != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests {
		t.Errorf("client-go create: status %d %q", st.Code, st.Reason)
	} else if delay, ok := apierrors.SuggestsClientDelay(err); !ok || delay < 1 {
		t.Errorf("client-go create: suggested delay %d %v, want at least 1s", delay, ok)
	}

	// Reads still pass.
	for _, p := range []string{deviceClassPath("existing"), dcs, "/api/v1/namespaces", "/api/v1/namespaces/default"} {
		mustCode(t, "GET "+p, k.do(t, "GET", p, nil), http.StatusOK)
	}
	list := k.do(t, "GET", dcs, nil)
	if strings.Contains(string(list.Body), `"slow-1"`) || !strings.Contains(string(list.Body), `"existing"`) {
		t.Errorf("list while the creates wait: %.500s", list.Body)
	}

	// A client-go create with its default retries, sent while overloaded.
	cfg := rest.CopyConfig(k.Config)
	var saw429 atomic.Int32
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return relCount429{next: rt, n: &saw429} })
	retrying, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	retried := make(chan error, 1)
	go func() {
		_, err := retrying.CoreV1().Namespaces().Create(ctx, newNamespace("retried"), metav1.CreateOptions{})
		retried <- err
	}()
	eventually(t, 10*time.Second, "client-go's create answered 429", func() (bool, error) {
		return saw429.Load() > 0, nil
	})

	// Recovery: the webhook answers, the held creates finish, writes
	// pass again.
	releaseHook()
	for i := 0; i < 2; i++ {
		r := <-held
		if r.Err != nil || r.Code != http.StatusCreated {
			t.Errorf("held create: %v %d %.300s", r.Err, r.Code, r.Body)
		}
	}
	if err := <-retried; err != nil {
		t.Errorf("client-go's retried create: %v", err)
	}
	mustCode(t, "create after recovery", k.do(t, "POST", "/api/v1/namespaces", mustJSON(t, newNamespace("after"))), http.StatusCreated)
	mustCode(t, "update after recovery", k.do(t, "PUT", deviceClassPath("existing"), mustJSON(t, updated.Object)), http.StatusOK)
	mustCode(t, "delete after recovery", k.do(t, "DELETE", deviceClassPath("slow-1"), nil), http.StatusOK)
	// The refused writes had no effect.
	for _, p := range []string{"/api/v1/namespaces/refused", "/api/v1/namespaces/refused-client-go", deviceClassPath("refused")} {
		mustCode(t, "GET "+p, k.do(t, "GET", p, nil), http.StatusNotFound)
	}
	got := decodeObj(t, k.do(t, "GET", deviceClassPath("existing"), nil))
	if _, ok := got.GetLabels()["patched"]; ok {
		t.Errorf("the refused patch was applied: %v", got.GetLabels())
	}
}

// relNest is depth levels of {"a": ... } around 1.
func relNest(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// relDepth is how many levels of "a" keys v has.
func relDepth(v interface{}) int {
	n := 0
	for {
		m, ok := v.(map[string]interface{})
		if !ok {
			return n
		}
		v, n = m["a"], n+1
	}
}

// relCause is the one cause of an Invalid Status about field.
func relCause(t testing.TB, st metav1.Status, field string) metav1.StatusCause {
	t.Helper()
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Field == field {
				return c
			}
		}
	}
	t.Errorf("no cause about %s: %s", field, fmtJSON(st.Details))
	return metav1.StatusCause{}
}

// relObject is a DeviceClass or Namespace body with the given metadata.
func relObject(kind string, meta map[string]interface{}) []byte {
	obj := map[string]interface{}{"metadata": meta}
	switch kind {
	case "DeviceClass":
		obj["apiVersion"], obj["kind"], obj["spec"] = "resource.k8s.io/v1beta2", "DeviceClass", map[string]interface{}{}
	case "Namespace":
		obj["apiVersion"], obj["kind"] = "v1", "Namespace"
	}
	data, _ := json.Marshal(obj)
	return data
}

// relCostCRDYAML has a rule whose estimated cost is over the budget: a
// nested all() over a list with no maxItems of strings with no maxLength.
const relCostCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: costlies.rel.example.com
spec:
  group: rel.example.com
  scope: Cluster
  names:
    plural: costlies
    singular: costly
    kind: Costly
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              names:
                type: array
                items:
                  type: string
                x-kubernetes-validations:
                - rule: self.all(x, self.all(y, x == y))
`

// 3. The size and complexity limits, as kube-apiserver answers them. (A
// body over 3 MiB is TestErrorsAsStatus's.)
func TestLimits(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, relBlobCRDYAML))
	blobs := collectionPath(gvrBlobs)
	dcs := collectionPath(gvrDevClasses)

	// kube-apiserver stores at most what etcd takes in one request
	// (--max-request-bytes, 1.5 MiB by default). kapi refuses a larger
	// object with 413 RequestEntityTooLarge; see the report for what
	// kube-apiserver answers (etcd's error).
	t.Run("stored object over 1.5 MiB", func(t *testing.T) {
		big := `{"data":"` + strings.Repeat("x", 1600*1024) + `"}`
		r := k.do(t, "POST", blobs, relBlobJSON("too-big", big))
		expectStatus(t, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		mustCode(t, "GET too-big", k.do(t, "GET", blobs+"/too-big", nil), http.StatusNotFound)

		// 1.4 MiB fits, and cannot grow past the limit by an update.
		fits := `{"data":"` + strings.Repeat("y", 1400*1024) + `"}`
		r = k.do(t, "POST", blobs, relBlobJSON("fits", fits))
		mustCode(t, "create a 1.4 MiB object", r, http.StatusCreated)
		cur := decodeObj(t, r)
		if err := unstructured.SetNestedField(cur.Object, strings.Repeat("x", 1600*1024), "spec", "data"); err != nil {
			t.Fatal(err)
		}
		r = k.do(t, "PUT", blobs+"/fits", mustJSON(t, cur.Object))
		expectStatus(t, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		got := decodeObj(t, k.do(t, "GET", blobs+"/fits", nil))
		if data, _, _ := unstructured.NestedString(got.Object, "spec", "data"); len(data) != 1400*1024 || data[0] != 'y' {
			t.Errorf("after the refused update, spec.data has %d bytes", len(data))
		}
		// client-go reports it as such.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(relBlobJSON("too-big-client-go", big)); err != nil {
			t.Fatal(err)
		}
		_, err := k.Dyn.Resource(gvrBlobs).Create(ctxT(t), u, metav1.CreateOptions{})
		if !apierrors.IsRequestEntityTooLargeError(err) {
			t.Errorf("client-go create: %v, want RequestEntityTooLarge", err)
		}
	})

	t.Run("name too long", func(t *testing.T) {
		for _, c := range []struct {
			kind, path string
			max        int
			body       func(name string) []byte
		}{
			{"DeviceClass", dcs, 253, func(n string) []byte { return relObject("DeviceClass", map[string]interface{}{"name": n}) }},
			{"Blob", blobs, 253, func(n string) []byte { return relBlobJSON(n, "") }},
			// Namespace names are DNS labels.
			{"Namespace", "/api/v1/namespaces", 63, func(n string) []byte { return relObject("Namespace", map[string]interface{}{"name": n}) }},
		} {
			long := strings.Repeat("a", c.max+1)
			r := k.do(t, "POST", c.path, c.body(long))
			msg := fmt.Sprintf("metadata.name: Invalid value: %q: must be no more than %d characters", long, c.max)
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg)
			if cause := relCause(t, st, "metadata.name"); cause.Type != metav1.CauseTypeFieldValueInvalid {
				t.Errorf("%s: cause %+v", c.kind, cause)
			}
			mustCode(t, c.kind+" of the longest name", k.do(t, "POST", c.path, c.body(strings.Repeat("b", c.max))), http.StatusCreated)
		}
		// Through client-go.
		_, err := k.Client.CoreV1().Namespaces().Create(ctxT(t), newNamespace(strings.Repeat("c", 64)), metav1.CreateOptions{})
		if st := statusOf(t, err); !apierrors.IsInvalid(err) || !strings.Contains(st.Message, "must be no more than 63 characters") {
			t.Errorf("client-go create: %v", err)
		}
		_, err = k.Client.ResourceV1beta2().DeviceClasses().Create(ctxT(t), newDeviceClass(strings.Repeat("d", 254)), metav1.CreateOptions{})
		if st := statusOf(t, err); !apierrors.IsInvalid(err) || !strings.Contains(st.Message, "must be no more than 253 characters") {
			t.Errorf("client-go create: %v", err)
		}
	})

	t.Run("labels", func(t *testing.T) {
		value := strings.Repeat("v", 64)
		r := k.do(t, "POST", dcs, relObject("DeviceClass", map[string]interface{}{"name": "long-label", "labels": map[string]string{"k": value}}))
		st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			fmt.Sprintf(`DeviceClass.resource.k8s.io "long-label" is invalid: metadata.labels: Invalid value: %q: must be no more than 63 characters`, value))
		relCause(t, st, "metadata.labels")

		key := "Example.COM/key"
		r = k.do(t, "POST", "/api/v1/namespaces", relObject("Namespace", map[string]interface{}{"name": "bad-label-key", "labels": map[string]string{key: "v"}}))
		st = expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			`Namespace "bad-label-key" is invalid: metadata.labels: Invalid value: "Example.COM/key": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`)
		relCause(t, st, "metadata.labels")

		// On a custom resource too, and through client-go.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(relBlobJSON("label-cr", "")); err != nil {
			t.Fatal(err)
		}
		u.SetLabels(map[string]string{"k": value})
		_, err := k.Dyn.Resource(gvrBlobs).Create(ctxT(t), u, metav1.CreateOptions{})
		if st := statusOf(t, err); !apierrors.IsInvalid(err) || !strings.Contains(st.Message, "metadata.labels: Invalid value") {
			t.Errorf("client-go create: %v", err)
		}
		// 63 characters are fine.
		mustCode(t, "63-character label value", k.do(t, "POST", dcs, relObject("DeviceClass", map[string]interface{}{"name": "label-63", "labels": map[string]string{"k": value[:63]}})), http.StatusCreated)
	})

	t.Run("annotations over 256 KiB", func(t *testing.T) {
		const limit = 262144
		const msg = "metadata.annotations: Too long: may not be more than 262144 bytes"
		over := map[string]string{"a": strings.Repeat("x", limit)} // key and value: limit+1 bytes
		atLimit := map[string]string{"a": strings.Repeat("x", limit-1)}
		for _, kind := range []string{"DeviceClass", "Namespace"} {
			path := dcs
			if kind == "Namespace" {
				path = "/api/v1/namespaces"
			}
			name := strings.ToLower(kind) + "-annotations"
			r := k.do(t, "POST", path, relObject(kind, map[string]interface{}{"name": name, "annotations": over}))
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg)
			if cause := relCause(t, st, "metadata.annotations"); cause.Type != metav1.CauseTypeTooLong || cause.Message != "Too long: may not be more than 262144 bytes" {
				t.Errorf("%s: cause %+v", kind, cause)
			}
			// Exactly the limit is allowed; an update past it is not.
			mustCode(t, kind+" at the limit", k.do(t, "POST", path, relObject(kind, map[string]interface{}{"name": name, "annotations": atLimit})), http.StatusCreated)
			cur := decodeObj(t, k.do(t, "GET", path+"/"+name, nil))
			cur.SetAnnotations(map[string]string{"a": atLimit["a"], "b": "y"})
			r = k.do(t, "PUT", path+"/"+name, mustJSON(t, cur.Object))
			expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg)
		}
		// Through client-go.
		ns := newNamespace("annotations-client-go")
		ns.Annotations = over
		_, err := k.Client.CoreV1().Namespaces().Create(ctxT(t), ns, metav1.CreateOptions{})
		if st := statusOf(t, err); !apierrors.IsInvalid(err) || !strings.Contains(st.Message, msg) {
			t.Errorf("client-go create: %v", err)
		}
	})

	// encoding/json and sigs.k8s.io/json stop at 10000 levels ("exceeded
	// max depth"); kube-apiserver answers 400 BadRequest from its decoder.
	// A few hundred levels in a preserve-unknown-fields subtree are kept.
	t.Run("deeply nested JSON", func(t *testing.T) {
		for _, depth := range []int{10001, 100000} {
			r := k.do(t, "POST", blobs, relBlobJSON(fmt.Sprintf("deep-%d", depth), `{"tree":`+relNest(depth)+`}`))
			expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "exceeded max depth")
			// In a built-in kind's unknown field.
			body := strings.Replace(string(relObject("DeviceClass", map[string]interface{}{"name": "deep"})), `"spec":{}`, `"spec":{},"extra":`+relNest(depth), 1)
			r = k.do(t, "POST", dcs, []byte(body))
			expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "exceeded max depth")
		}
		mustCode(t, "GET deep-10001", k.do(t, "GET", blobs+"/deep-10001", nil), http.StatusNotFound)

		const depth = 500
		r := k.do(t, "POST", blobs, relBlobJSON("nested", `{"tree":`+relNest(depth)+`}`))
		mustCode(t, "create 500 levels", r, http.StatusCreated)
		for _, r := range []httpResult{r, k.do(t, "GET", blobs+"/nested", nil)} {
			var obj struct {
				Spec struct {
					Tree interface{} `json:"tree"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(r.Body, &obj); err != nil {
				t.Fatalf("%v: %.300s", err, r.Body)
			}
			if got := relDepth(obj.Spec.Tree); got != depth {
				t.Errorf("the tree has %d levels, want %d", got, depth)
			}
		}
	})

	// kube-apiserver's CRD validation estimates each rule's cost
	// (apiextensions validation.go, StaticEstimatedCostLimit) and refuses
	// a rule over the budget.
	t.Run("CEL rule cost over budget", func(t *testing.T) {
		crd := crdFromYAML(t, relCostCRDYAML)
		_, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctxT(t), crd, metav1.CreateOptions{})
		st := statusOf(t, err)
		if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
			t.Fatalf("create: %v, want 422 Invalid", err)
		}
		const ruleMsg = "estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
		if !strings.Contains(st.Message, `CustomResourceDefinition.apiextensions.k8s.io "costlies.rel.example.com" is invalid: `) ||
			!strings.Contains(st.Message, "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: "+ruleMsg) {
			t.Errorf("message %q", st.Message)
		}
		cause := relCause(t, st, "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule")
		if cause.Type != metav1.CauseTypeForbidden || cause.Message != "Forbidden: "+ruleMsg {
			t.Errorf("cause %+v", cause)
		}
		// Raw HTTP sees the same Status.
		r := k.do(t, "POST", collectionPath(gvrCRDs), mustJSON(t, crd))
		expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, ruleMsg)
		mustCode(t, "GET the CRD", k.do(t, "GET", collectionPath(gvrCRDs)+"/costlies.rel.example.com", nil), http.StatusNotFound)

		// Bounded, the same rule is cheap enough.
		names := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["names"]
		names.MaxItems = ptrTo(int64(10))
		names.Items.Schema.MaxLength = ptrTo(int64(10))
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["names"] = names
		if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctxT(t), crd, metav1.CreateOptions{}); err != nil {
			t.Errorf("bounded rule: %v", err)
		}
	})

	// Neither kube-apiserver nor kapi bounds a webhook's response body
	// (client-go's rest.Result reads it whole): a large valid answer is
	// used, a large malformed one fails the request with a Status under
	// failurePolicy Fail, as any undecodable answer does.
	t.Run("large webhook response", func(t *testing.T) {
		hs := startHookServer(t, "localhost")
		const size = 10 << 20
		caPEM, cert := webhookCerts(t, "localhost")
		big := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
				http.Error(w, "bad review", http.StatusBadRequest)
				return
			}
			var obj metav1.PartialObjectMetadata
			_ = json.Unmarshal(review.Request.Object.Raw, &obj)
			w.Header().Set("Content-Type", "application/json")
			switch obj.Labels["big"] {
			case "allow":
				fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true},"padding":"%s"}`,
					review.Request.UID, strings.Repeat("p", size))
			case "deny":
				fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":false,"status":{"code":403,"message":"big no"}},"padding":"%s"}`,
					review.Request.UID, strings.Repeat("p", size))
			default:
				_, _ = w.Write(bytes.Repeat([]byte("x"), size))
			}
		}))
		big.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		big.StartTLS()
		t.Cleanup(big.Close)
		url := big.URL + "/big"
		hook := vhook("big.example.com", admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}, deviceClassRule(opCreate))
		hook.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "big", Operator: metav1.LabelSelectorOpExists}}}
		fail := admissionregistrationv1.Fail
		hook.FailurePolicy = &fail
		createVWC(t, k, hs, "big", hook)

		r := k.do(t, "POST", dcs, deviceClassJSON("big-allow", map[string]string{"big": "allow"}))
		mustCode(t, "create allowed by a 10 MiB answer", r, http.StatusCreated)
		r = k.do(t, "POST", dcs, deviceClassJSON("big-deny", map[string]string{"big": "deny"}))
		// The webhook's Status, which has no reason, with its message prefixed.
		expectStatus(t, r, http.StatusForbidden, "", `admission webhook "big.example.com" denied the request: big no`)
		r = k.do(t, "POST", dcs, deviceClassJSON("big-garbage", map[string]string{"big": "garbage"}))
		expectStatus(t, r, http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`Internal error occurred: failed calling webhook "big.example.com": failed to call webhook: `)
		for _, name := range []string{"big-deny", "big-garbage"} {
			mustCode(t, "GET "+name, k.do(t, "GET", deviceClassPath(name), nil), http.StatusNotFound)
		}
	})
}

// holdingWebhook registers a validating webhook that holds every create of
// a DeviceClass labelled <name>=true until release is called (or the test
// ends): a request that stays in flight as long as a test needs.
func holdingWebhook(t *testing.T, k *kapi, name string) (hs *hookServer, release func()) {
	hs = startHookServer(t, "localhost")
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	// Registered after the webhook server's cleanup, so it runs first.
	t.Cleanup(release)
	hs.handle("/"+name, func(c *hookCall) *admissionv1.AdmissionResponse {
		select {
		case <-held:
		case <-c.Ctx.Done():
		}
		return nil
	})
	hook := vhook(name+".example.com", hs.clientConfig("/"+name), deviceClassRule(opCreate))
	hook.ObjectSelector = labelSelector(name, "true")
	hook.TimeoutSeconds = ptrTo(int32(10))
	fail := admissionregistrationv1.Fail
	hook.FailurePolicy = &fail
	createVWC(t, k, hs, name, hook)
	return hs, release
}

// Every request but a watch has a deadline: --request-timeout, or the
// request's shorter ?timeout=. Past it the client gets 504 Timeout at once,
// whatever the handler is waiting for (here, a webhook that does not
// answer); watches outlive it.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	k := startKapi(t, "--in-memory", "--request-timeout=2s")
	holdingWebhook(t, k, "stuck")

	// A watch opened now must outlive the 2 s bound.
	w, err := k.Client.CoreV1().Namespaces().Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "0", TimeoutSeconds: ptrTo(int64(30))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	dcs := collectionPath(gvrDevClasses)
	body := deviceClassJSON("stuck", map[string]string{"stuck": "true"})
	// Which deadline cut a request shows in when it was answered: not
	// before its deadline, and well before the next one (the client's
	// 500 ms, the server's 2 s, the webhook's own 10 s).
	for _, c := range []struct {
		query    string
		at, upTo time.Duration
	}{
		{"?timeout=500ms", 500 * time.Millisecond, 1900 * time.Millisecond},
		{"", 2 * time.Second, 9 * time.Second},
		{"?timeout=1m", 2 * time.Second, 9 * time.Second}, // never beyond the server's bound
	} {
		start := time.Now()
		r := k.do(t, "POST", dcs+c.query, body)
		took := time.Since(start)
		expectStatus(t, r, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "request did not complete within the allotted timeout")
		if took < c.at || took > c.upTo {
			t.Errorf("POST%s answered after %v, want between %v and %v", c.query, took, c.at, c.upTo)
		}
	}
	expectStatus(t, k.do(t, "GET", dcs+"?timeout=soon", nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid timeout specified in the request URL")
	// kubectl's --request-timeout is the same ?timeout=.
	manifest := writeFile(t, "dc.json", string(body))
	if _, stderr, err := k.kubectl(t, "create", "-f", manifest, "--request-timeout=1s"); err == nil || !strings.Contains(stderr, "Timeout") {
		t.Errorf("kubectl --request-timeout=1s: %v %s", err, stderr)
	}

	// The watch, opened more than 2 s ago, still delivers.
	if _, err := k.Client.CoreV1().Namespaces().Create(ctxT(t), newNamespace("late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended with the request timeout")
			}
			if ns, _ := ev.Object.(*corev1.Namespace); ns != nil && ns.Name == "late" {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the watch delivered nothing for 10s")
		}
	}
}
