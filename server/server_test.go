package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// newTestServer serves the built-in kinds from an in-memory store.
func newTestServer(t testing.TB) *httptest.Server {
	t.Helper()
	return newTestServerWith(t, Options{})
}

// memStore is an in-memory store, closed when the test ends.
func memStore(t testing.TB) *storage.Store {
	t.Helper()
	store, err := storage.Open(context.Background(), storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// newServer is a server of the built-in kinds over store, not started.
func newServer(t testing.TB, store *storage.Store, opts Options) (*Server, *registry.Registry) {
	t.Helper()
	reg := registry.New()
	builtin.Register(reg)
	s, err := New(store, reg, slog.New(slog.NewTextHandler(io.Discard, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func newTestServerWith(t testing.TB, opts Options) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	s, _ := newServer(t, memStore(t), opts)
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	if err := s.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.BeginShutdown()
		ts.Close()
	})
	return ts
}

// call sends a request and returns the status code and body.
func call(t testing.TB, ts *httptest.Server, method, path, contentType, body string) (int, string) {
	t.Helper()
	code, data, _ := callFull(t, ts, method, path, contentType, body)
	return code, data
}

// callFull is call with the answer's headers.
func callFull(t testing.TB, ts *httptest.Server, method, path, contentType, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Header
}
