package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// limitDuration gives every request that ends (not a watch) a deadline, as
// kube-apiserver's --request-timeout does: the server's RequestTimeout, or
// the request's shorter ?timeout=. A request still running at its deadline
// is answered 504 Timeout at once, a complete response; its handler, whose
// context is then cancelled, winds down and its output is dropped.
//
// The handler runs on the request's own goroutine (kube-apiserver starts
// one more per request: its stack, growing through the libraries' deep
// calls, cost a twentieth of a create's CPU); a timer writes the 504.
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
		tw := &timeoutWriter{w: w, header: http.Header{}, r: r, ctx: ctx}
		timer := time.AfterFunc(timeout, tw.expire)
		defer func() {
			timer.Stop()
			tw.finish()
		}()
		next.ServeHTTP(tw, r.WithContext(ctx))
	})
}

// timeoutWriter lets a handler write its response until the request's
// deadline; if the deadline comes first, the 504 is the response and the
// handler's writes fail with http.ErrHandlerTimeout. The handler has its
// own header map, copied out when it writes the status line, so the 504
// never races with it.
type timeoutWriter struct {
	w      http.ResponseWriter
	header http.Header
	r      *http.Request
	ctx    context.Context // the request's, with its deadline

	mu          sync.Mutex
	wroteHeader bool // the handler began its response
	expired     bool // the deadline came first: the 504 is written
	done        bool // the handler returned
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(code)
}

// writeHeaderLocked begins the handler's response unless the deadline has
// taken it; it tells whether the handler may write. A handler that answers
// past its deadline (the error of a call its context cut short, say) before
// the timer runs gets the 504 written instead.
func (tw *timeoutWriter) writeHeaderLocked(code int) bool {
	if !tw.wroteHeader && errors.Is(tw.ctx.Err(), context.DeadlineExceeded) {
		tw.expireLocked()
	}
	if tw.expired {
		return false
	}
	if !tw.wroteHeader {
		tw.wroteHeader = true
		dst := tw.w.Header()
		for k, v := range tw.header {
			dst[k] = v
		}
		tw.w.WriteHeader(code)
	}
	return true
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.writeHeaderLocked(http.StatusOK) {
		return 0, http.ErrHandlerTimeout
	}
	return tw.w.Write(p)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if f, ok := tw.w.(http.Flusher); ok && tw.writeHeaderLocked(http.StatusOK) {
		f.Flush()
	}
}

func (tw *timeoutWriter) Unwrap() http.ResponseWriter { return tw.w }

// expire runs at the deadline, while the handler may still be running.
func (tw *timeoutWriter) expire() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.expireLocked()
}

// expireLocked answers 504 unless the handler has begun its response (or
// returned): written and flushed, a complete response with its length, so
// that the client has it now.
func (tw *timeoutWriter) expireLocked() {
	if tw.wroteHeader || tw.expired || tw.done {
		return
	}
	tw.expired = true
	// apiserver_request_terminations_total, as kube's timeout filter.
	ri, _ := request.RequestInfoFrom(tw.r.Context())
	apimetrics.RecordRequestTermination(tw.r, ri, apimetrics.APIServerComponent, http.StatusGatewayTimeout)
	writeError(tw.w, tw.r, apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0))
	if f, ok := tw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish runs when the handler returned: from then on nothing is written
// through tw. A handler that returned past its deadline without answering
// (its timer not run yet) still gets the 504.
func (tw *timeoutWriter) finish() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if errors.Is(tw.ctx.Err(), context.DeadlineExceeded) {
		tw.expireLocked()
	}
	tw.done = true
}
