package server

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
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
		isMutating := r.Method != http.MethodGet && r.Method != http.MethodHead
		if isMutating {
			slots = mutating
		}
		// apiserver_current_inflight_requests: the requests served now
		// (kube's gauge, fed as its filter feeds it).
		inflight := func() {
			apimetrics.UpdateInflightRequestMetrics(apimetrics.ExecutingPhase, len(readOnly), len(mutating))
		}
		select {
		case slots <- struct{}{}:
			inflight()
			defer func() {
				<-slots
				inflight()
			}()
			next.ServeHTTP(w, r)
		default:
			// Counted as kube-apiserver counts it (apiserver_request_total
			// with code 429, apiserver_dropped_requests).
			ri, _ := request.RequestInfoFrom(r.Context())
			apimetrics.RecordDroppedRequest(r, ri, apimetrics.APIServerComponent, isMutating)
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
