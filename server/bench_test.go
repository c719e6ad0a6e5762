package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// benchCRD is a namespaced custom resource with a structural schema, as
// `make bench` uses.
const benchCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.bench.kapi.dev"},
"spec":{"group":"bench.kapi.dev","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,
  "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
   "size":{"type":"integer"},"color":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"data":{"type":"string"}}}}}}}]}}`

// BenchmarkCreateCustomResource measures one create of a ~1 KiB custom
// resource through the whole handler chain into an on-disk store with
// kapi's default durability, without the network. Its allocs/op and B/op
// are exact; ns/op and cpu-ns/op move with the host (`make bench` has
// the end-to-end figures).
func BenchmarkCreateCustomResource(b *testing.B) {
	serve := newBenchServer(b)
	benchCreates(b, serve)
}

// BenchmarkCreateCustomResourceWithPolicy is BenchmarkCreateCustomResource
// with one ValidatingAdmissionPolicy bound to the creates, as `make bench`
// binds it: the policy's cost is the difference.
func BenchmarkCreateCustomResourceWithPolicy(b *testing.B) {
	serve := newBenchServer(b)
	for _, obj := range []struct{ path, body string }{
		{"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
"metadata":{"name":"bench"},"spec":{"failurePolicy":"Fail",
 "matchConstraints":{"resourceRules":[{"apiGroups":["bench.kapi.dev"],"apiVersions":["*"],"operations":["CREATE"],"resources":["widgets"]}]},
 "validations":[{"expression":"!has(object.metadata.labels) || !('deny' in object.metadata.labels)"}]}}`},
		{"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
"metadata":{"name":"bench"},"spec":{"policyName":"bench","validationActions":["Deny"]}}`},
	} {
		if rec := serve(http.MethodPost, obj.path, obj.body); rec.Code != http.StatusCreated {
			b.Fatalf("POST %s: %d %s", obj.path, rec.Code, rec.Body)
		}
	}
	// The plugin takes a new binding within a second.
	denied := `{"apiVersion":"bench.kapi.dev/v1","kind":"Widget","metadata":{"name":"denied","labels":{"deny":"yes"}}}`
	for deadline := time.Now().Add(10 * time.Second); serve(http.MethodPost, benchWidgets, denied).Code != http.StatusUnprocessableEntity; {
		if time.Now().After(deadline) {
			b.Fatal("the policy does not apply after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	benchCreates(b, serve)
}

// BenchmarkGetCustomResource measures one GET by name of a ~1 KiB custom
// resource, as BenchmarkCreateCustomResource does a create.
func BenchmarkGetCustomResource(b *testing.B) {
	serve := newBenchServer(b)
	const n = 100
	for i := 0; i < n; i++ {
		if rec := serve(http.MethodPost, benchWidgets, benchWidget(i)); rec.Code != http.StatusCreated {
			b.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if rec := serve(http.MethodGet, fmt.Sprintf("%s/w-%d", benchWidgets, i%n), ""); rec.Code != http.StatusOK {
			b.Fatalf("get %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// benchCreates times b.N creates of widgets through serve.
func benchCreates(b *testing.B, serve func(method, path, body string) *httptest.ResponseRecorder) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if rec := serve(http.MethodPost, benchWidgets, benchWidget(i)); rec.Code != http.StatusCreated {
			b.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

const benchWidgets = "/apis/bench.kapi.dev/v1/namespaces/default/widgets"

// benchWidget is the body of widget i: ~1 KiB of spec.
func benchWidget(i int) string {
	return fmt.Sprintf(`{"apiVersion":"bench.kapi.dev/v1","kind":"Widget","metadata":{"name":"w-%d"},"spec":{"size":3,"color":"blue","tags":["bench","kapi","widget"],"data":%q}}`, i, strings.Repeat("x", 1000))
}

// newBenchServer starts a server on an on-disk store (kapi's defaults)
// with benchCRD established, and returns a function that serves one
// request through its handler, as client-go would send it.
func newBenchServer(b *testing.B) func(method, path, body string) *httptest.ResponseRecorder {
	b.Helper()
	// The Kubernetes libraries' informer chatter would split go test's
	// result lines.
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	store, err := storage.Open(ctx, storage.Options{Path: filepath.Join(b.TempDir(), "kapi.db")})
	if err != nil {
		b.Fatal(err)
	}
	reg := registry.New()
	builtin.Register(reg)
	s, err := New(store, reg, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{RequestTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	b.Cleanup(func() {
		stop()
		s.BeginShutdown()
		store.Close()
	})
	if err := s.Start(runCtx); err != nil {
		b.Fatal(err)
	}
	if err := s.Bootstrap(ctx); err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	serve := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "bench/v0.0.0 (linux/amd64) kubernetes/$Format")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := serve(http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", benchCRD); rec.Code != http.StatusCreated {
		b.Fatalf("creating the CRD: %d %s", rec.Code, rec.Body)
	}
	for deadline := time.Now().Add(10 * time.Second); serve(http.MethodGet, benchWidgets, "").Code != http.StatusOK; {
		if time.Now().After(deadline) {
			b.Fatal("the custom resource is not served after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	return serve
}

// processCPU is the user plus system CPU time of this process so far:
// all of the server's goroutines, the garbage collector's included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkListCustomResources times a LIST of 1,000 widgets in one
// request.
func BenchmarkListCustomResources(b *testing.B) {
	serve := newBenchServer(b)
	const n = 1000
	for i := 0; i < n; i++ {
		if rec := serve(http.MethodPost, benchWidgets, benchWidget(i)); rec.Code != http.StatusCreated {
			b.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if rec := serve(http.MethodGet, benchWidgets, ""); rec.Code != http.StatusOK {
			b.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
