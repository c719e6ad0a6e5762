package server

import (
	"strings"
	"testing"
)

func TestMetricsCountRequests(t *testing.T) {
	ts := newTestServer(t)
	call(t, ts, "POST", vwcPath, "application/json", vwcBody)
	call(t, ts, "POST", vwcPath, "application/json", vwcBody) // 409
	call(t, ts, "GET", vwcPath, "", "")
	call(t, ts, "GET", vwcPath+"/p", "", "")
	call(t, ts, "GET", vwcPath+"/missing", "", "")
	_, body := call(t, ts, "GET", "/metrics", "", "")
	for _, want := range []string{
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="cluster",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="409",component="apiserver",dry_run="",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="cluster",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="cluster",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="404",component="apiserver",dry_run="",group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_storage_objects{resource="validatingwebhookconfigurations.admissionregistration.k8s.io"} 1`,
		`apiserver_storage_objects{resource="namespaces"} 4`,
		"kapi_storage_commit_duration_seconds_count",
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
