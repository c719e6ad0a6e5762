package server

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// limitInflight bounds the requests served at once, as kube-apiserver's
// --max-requests-inflight and --max-mutating-requests-inflight do: a
// request over the bound is answered 429 with Retry-After at once, never
// queued. Watches, which last, are not counted.
func (s *Server) limitInflight(next http.Handler) http.Handler {
	readOnly := make(chan struct{}, max(s.opts.MaxRequestsInflight, 1))
	mutating := make(chan struct{}, max(s.opts.MaxMutatingRequestsInflight, 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		slots := readOnly
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			slots = mutating
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status:  metav1.StatusFailure,
				Code:    http.StatusTooManyRequests,
				Reason:  metav1.StatusReasonTooManyRequests,
				Message: "Too many requests, please try again later.",
				Details: &metav1.StatusDetails{RetryAfterSeconds: 1},
			}})
		}
	})
}

// isLongRunning tells a watch from a request that ends.
func isLongRunning(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(r.URL.Path, "/watch/")
}
