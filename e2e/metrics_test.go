package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A scrape of /metrics after a known set of requests shows their counts
// under kube-apiserver's metric names; health checks are named.
func TestMetricsAndHealth(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	dcs := k.Client.ResourceV1beta2().DeviceClasses()
	for _, name := range []string{"m-1", "m-2", "m-3"} {
		if _, err := dcs.Create(ctx, newDeviceClass(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dcs.Get(ctx, "nope", metav1.GetOptions{}); err == nil {
		t.Fatal("get of a missing DeviceClass succeeded")
	}
	if _, err := dcs.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// A watch from resourceVersion 0 gets the three as ADDED events.
	w, err := dcs.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-w.ResultChan()
	}
	w.Stop()
	body := string(k.do(t, "GET", "/metrics", nil).Body)
	// kube-apiserver's build information: what /version says.
	v, err := k.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	buildInfo := fmt.Sprintf(`kubernetes_build_info{build_date=%q,compiler=%q,git_commit=%q,git_tree_state=%q,git_version=%q,go_version=%q,major=%q,minor=%q,platform=%q} 1`,
		v.BuildDate, v.Compiler, v.GitCommit, v.GitTreeState, v.GitVersion, v.GoVersion, v.Major, v.Minor, v.Platform)
	for _, want := range []string{
		buildInfo,
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="resource.k8s.io",resource="deviceclasses",scope="resource",subresource="",verb="POST",version="v1beta2"} 3`,
		`apiserver_request_total{code="404",component="apiserver",dry_run="",group="resource.k8s.io",resource="deviceclasses",scope="resource",subresource="",verb="GET",version="v1beta2"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="resource.k8s.io",resource="deviceclasses",scope="cluster",subresource="",verb="LIST",version="v1beta2"} 1`,
		`apiserver_storage_objects{resource="deviceclasses.resource.k8s.io"} 3`,
		`apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="resource.k8s.io",resource="deviceclasses",scope="resource",subresource="",verb="POST",version="v1beta2"} 3`,
		// What kube-apiserver's SLO rules and dashboards read.
		`apiserver_request_sli_duration_seconds_count{component="apiserver",group="resource.k8s.io",resource="deviceclasses",scope="resource",subresource="",verb="POST",version="v1beta2"} 3`,
		`apiserver_response_sizes_count{component="apiserver",group="resource.k8s.io",resource="deviceclasses",scope="cluster",subresource="",verb="LIST",version="v1beta2"} 1`,
		`apiserver_watch_events_total{group="resource.k8s.io",kind="DeviceClass",version="v1beta2"} 3`,
		"kapi_storage_commit_duration_seconds_count",
		"kapi_storage_db_size_bytes",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	verbose := string(k.do(t, "GET", "/readyz?verbose", nil).Body)
	for _, check := range []string{"[+]ping ok", "[+]database ok", "[+]poststarthook/crd-controller ok", "[+]poststarthook/admission-caches ok", "readyz check passed"} {
		if !strings.Contains(verbose, check) {
			t.Errorf("/readyz?verbose lacks %q:\n%s", check, verbose)
		}
	}
	// ?exclude skips a check; a name no check has gets a warning line.
	excluded := string(k.do(t, "GET", "/readyz?verbose&exclude=database&exclude=nonexist", nil).Body)
	for _, want := range []string{"[+]database excluded: ok", "[+]ping ok", `warn: some health checks cannot be excluded: no matches for "nonexist"`, "readyz check passed"} {
		if !strings.Contains(excluded, want) {
			t.Errorf("/readyz?verbose&exclude=database&exclude=nonexist lacks %q:\n%s", want, excluded)
		}
	}
	// Like every answer kube-apiserver gives that may not be cached.
	if r := k.do(t, "GET", "/readyz", nil); r.Header.Get("Cache-Control") != "no-cache, private" || r.Header.Get("Audit-Id") == "" {
		t.Errorf("/readyz: Cache-Control %q, Audit-Id %q", r.Header.Get("Cache-Control"), r.Header.Get("Audit-Id"))
	}
	if r := k.do(t, "GET", "/readyz/database", nil); r.Code != 200 || string(r.Body) != "ok" {
		t.Errorf("/readyz/database: %d %q", r.Code, r.Body)
	}
	if r := k.do(t, "GET", "/livez/no-such-check", nil); r.Code != 404 {
		t.Errorf("/livez/no-such-check: %d", r.Code)
	}
	// As kube-apiserver's health endpoints: any method (load balancers
	// probe with HEAD), kube's own checks and the shutdown check, no
	// trailing slash; and its profiling routes, without cmdline.
	for _, c := range []struct {
		method, path string
		code         int
	}{{"HEAD", "/readyz", 200}, {"POST", "/healthz", 200}, {"GET", "/readyz/", 404}, {"GET", "/readyz/shutdown", 200}, {"GET", "/livez/log", 200}, {"GET", "/debug/pprof/cmdline", 404}} {
		if r := k.do(t, c.method, c.path, nil); r.Code != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, r.Code, c.code)
		}
	}
}
