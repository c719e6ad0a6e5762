package server

import (
	"net/http"
	"strings"
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
			// kube-apiserver's answer, word for word: plain text, not a
			// Status (clients read the code and Retry-After).
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
		}
	})
}

// isLongRunning tells a watch from a request that ends.
func isLongRunning(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(r.URL.Path, "/watch/")
}
