package server

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricValues reads a /metrics body's samples by their name and labels.
func metricValues(body string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// kube-apiserver's request metrics live in the Kubernetes libraries'
// registry, one per process: the test reads what its requests added.
func TestMetricsCountRequests(t *testing.T) {
	ts := newTestServer(t)
	_, before := call(t, ts, "GET", "/metrics", "", "")
	call(t, ts, "POST", vwcPath, "application/json", vwcBody)
	call(t, ts, "POST", vwcPath, "application/json", vwcBody) // 409
	call(t, ts, "GET", vwcPath, "", "")
	call(t, ts, "GET", vwcPath+"/p", "", "")
	call(t, ts, "GET", vwcPath+"/missing", "", "")
	_, after := call(t, ts, "GET", "/metrics", "", "")
	was, is := metricValues(before), metricValues(after)
	const labels = `component="apiserver",dry_run="",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations"`
	for sample, want := range map[string]float64{
		// kube's scopes: a create is of a "resource".
		`apiserver_request_total{code="201",` + labels + `,scope="resource",subresource="",verb="POST",version="v1"}`:                                                                                                 1,
		`apiserver_request_total{code="409",` + labels + `,scope="resource",subresource="",verb="POST",version="v1"}`:                                                                                                 1,
		`apiserver_request_total{code="200",` + labels + `,scope="cluster",subresource="",verb="LIST",version="v1"}`:                                                                                                  1,
		`apiserver_request_total{code="200",` + labels + `,scope="resource",subresource="",verb="GET",version="v1"}`:                                                                                                  1,
		`apiserver_request_total{code="404",` + labels + `,scope="resource",subresource="",verb="GET",version="v1"}`:                                                                                                  1,
		`apiserver_request_sli_duration_seconds_count{component="apiserver",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="cluster",subresource="",verb="LIST",version="v1"}`: 1,
		`apiserver_response_sizes_count{component="apiserver",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="cluster",subresource="",verb="LIST",version="v1"}`:               1,
	} {
		if got := is[sample] - was[sample]; got != want {
			t.Errorf("%s grew by %v, want %v", sample, got, want)
		}
	}
	// A watch is long-running: not an inflight request (the scrape is).
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		call(t, ts, "GET", vwcPath+"?watch=true&timeoutSeconds=2", "", "")
	}()
	const longRunning = `apiserver_longrunning_requests{component="apiserver",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="cluster",subresource="",verb="WATCH",version="v1"}`
	var during map[string]float64
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := call(t, ts, "GET", "/metrics", "", "")
		if during = metricValues(body); during[longRunning] == 1 || time.Now().After(deadline) {
			break
		}
	}
	if v := during[longRunning]; v != 1 {
		t.Errorf("long-running requests during a watch: %v, want 1", v)
	}
	if v := during[`apiserver_current_inflight_requests{request_kind="readOnly"}`]; v != 1 {
		t.Errorf("readOnly inflight requests during a watch and a scrape: %v, want 1 (the scrape)", v)
	}
	<-watching
	for _, sample := range []string{
		`apiserver_storage_objects{resource="validatingwebhookconfigurations.admissionregistration.k8s.io"} 1`,
		`apiserver_storage_objects{resource="namespaces"} 4`,
		`apiserver_storage_objects{resource="mutatingwebhookconfigurations.admissionregistration.k8s.io"} 0`,
		"kapi_storage_commit_duration_seconds_count",
		"go_goroutines",
	} {
		if !strings.Contains(after, sample) {
			t.Errorf("/metrics lacks %s", sample)
		}
	}
}
