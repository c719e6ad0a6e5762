package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestTimeout(t *testing.T) {
	s := &Server{opts: Options{RequestTimeout: time.Minute}}
	release := make(chan struct{})
	defer close(release)
	handler := s.limitDuration(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-release:
			}
			w.Header().Set("X-Late", "1")
			w.Write([]byte("late"))
		case "/panic":
			panic("boom")
		default:
			dl, ok := r.Context().Deadline()
			w.Header().Set("X-Has-Deadline", map[bool]string{true: "yes", false: "no"}[ok])
			if ok {
				w.Header().Set("X-Deadline-In", time.Until(dl).Round(time.Minute).String())
			}
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte("fast"))
		}
	}))
	serve := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec
	}
	status := func(t *testing.T, rec *httptest.ResponseRecorder) metav1.Status {
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		return st
	}

	t.Run("a request that ends in time keeps its answer", func(t *testing.T) {
		rec := serve("/fast")
		if rec.Code != http.StatusCreated || rec.Body.String() != "fast" || rec.Header().Get("X-Deadline-In") != "1m0s" {
			t.Errorf("got %d %q headers %v", rec.Code, rec.Body, rec.Header())
		}
	})
	t.Run("?timeout= shortens the deadline, 0 leaves the server's", func(t *testing.T) {
		start := time.Now()
		rec := serve("/slow?timeout=100ms")
		if rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("got %d %q", rec.Code, rec.Body)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("answered after %v", took)
		}
		st := status(t, rec)
		if st.Reason != metav1.StatusReasonTimeout || !strings.Contains(st.Message, "did not complete within the allotted timeout") {
			t.Errorf("status %+v", st)
		}
		if rec.Header().Get("X-Late") != "" || strings.Contains(rec.Body.String(), "late") {
			t.Errorf("the late handler's output leaked: %v %q", rec.Header(), rec.Body)
		}
		if rec := serve("/fast?timeout=0"); rec.Header().Get("X-Deadline-In") != "1m0s" {
			t.Errorf("timeout=0: deadline in %q", rec.Header().Get("X-Deadline-In"))
		}
		if rec := serve("/fast?timeout=1h"); rec.Header().Get("X-Deadline-In") != "1m0s" {
			t.Errorf("timeout=1h: deadline in %q, want the server's bound", rec.Header().Get("X-Deadline-In"))
		}
	})
	t.Run("a malformed ?timeout= is a 400", func(t *testing.T) {
		rec := serve("/fast?timeout=soon")
		st := status(t, rec)
		if rec.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, "invalid timeout specified in the request URL") {
			t.Errorf("got %d %+v", rec.Code, st)
		}
	})
	t.Run("watches have no deadline", func(t *testing.T) {
		rec := serve("/fast?watch=true&timeout=1ms")
		if rec.Header().Get("X-Has-Deadline") != "no" {
			t.Errorf("a watch got a deadline: %v", rec.Header())
		}
	})
	t.Run("a panic reaches the caller", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		serve("/panic")
	})
}
