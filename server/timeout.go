package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// limitDuration gives every request that ends (not a watch) a deadline, as
// kube-apiserver's --request-timeout does: the server's RequestTimeout, or
// the request's shorter ?timeout=. A request still running at its deadline
// is answered 504 Timeout at once; its handler, whose context is then
// cancelled, finishes in the background and its output is dropped.
func (s *Server) limitDuration(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLongRunning(r) || s.opts.RequestTimeout <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		timeout := s.opts.RequestTimeout
		if v := r.URL.Query().Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err)))
				return
			}
			// 0 means no timeout of the client's own: the server's applies.
			if d > 0 && d < timeout {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		tw := &timeoutWriter{w: w, header: http.Header{}, ctx: ctx}
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		select {
		case p := <-done:
			if p != nil {
				panic(p) // recoverPanics answers it
			}
		case <-ctx.Done():
		}
		tw.timeout(r)
	})
}

// timeoutWriter lets a handler write its response until the request's
// deadline; after that its writes fail with http.ErrHandlerTimeout. The handler
// has its own header map, copied out when it writes the status line, so the
// timeout answer never races with it.
type timeoutWriter struct {
	w      http.ResponseWriter
	header http.Header
	ctx    context.Context // the request's, with its deadline

	mu          sync.Mutex
	wroteHeader bool
	timedOut    bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(code)
}

func (tw *timeoutWriter) writeHeaderLocked(code int) {
	if tw.expiredLocked() || tw.wroteHeader {
		return
	}
	tw.wroteHeader = true
	dst := tw.w.Header()
	for k, v := range tw.header {
		dst[k] = v
	}
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(http.StatusOK)
	if !tw.wroteHeader {
		return 0, http.ErrHandlerTimeout
	}
	return tw.w.Write(p)
}

// expiredLocked tells whether the deadline has passed with no response
// begun: from then on only the 504 is written.
func (tw *timeoutWriter) expiredLocked() bool {
	if !tw.wroteHeader && errors.Is(tw.ctx.Err(), context.DeadlineExceeded) {
		tw.timedOut = true
	}
	return tw.timedOut
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(http.StatusOK)
	if f, ok := tw.w.(http.Flusher); ok && tw.wroteHeader {
		f.Flush()
	}
}

func (tw *timeoutWriter) Unwrap() http.ResponseWriter { return tw.w }

// timeout runs once the handler returned or the deadline passed: if the
// deadline passed before the handler began its response, it answers 504.
// Whatever the handler writes afterwards is dropped.
func (tw *timeoutWriter) timeout(r *http.Request) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	expired := tw.expiredLocked()
	tw.timedOut = true
	if expired {
		writeError(tw.w, r, apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0))
	}
}
