package server

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
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
	return watchRequested(r.URL.Query()) || strings.Contains(r.URL.Path, "/watch/")
}

// watchRequested tells whether a request's ?watch= asks for a watch, as
// kube-apiserver reads the parameter: present with any value but "0" or
// "false" (in any case).
func watchRequested(q url.Values) bool {
	values, ok := q["watch"]
	if !ok {
		return false
	}
	var watch bool
	_ = runtime.Convert_Slice_string_To_bool(&values, &watch, nil)
	return watch
}
