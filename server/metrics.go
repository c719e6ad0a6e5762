package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/sets"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// Metrics are kapi's Prometheus metrics: kube-apiserver's own, recorded
// through its metrics package (k8s.io/apiserver/pkg/endpoints/metrics:
// apiserver_request_total, _duration_seconds, _sli_duration_seconds,
// response sizes, dropped and terminated requests, inflight and
// long-running requests, watch events, deprecated APIs requested), which
// keeps them in the Kubernetes libraries' registry with the admission
// plugins', CRD conversion's, Go's and the process's; and kapi's storage
// figures in a registry of the server's own.
type Metrics struct {
	registry   *prometheus.Registry
	commit     prometheus.Histogram
	compaction prometheus.Histogram
}

// NewMetrics registers kapi's metrics (kube-apiserver's once per process).
func NewMetrics() *Metrics {
	apimetrics.Register()
	registerBuildInfo.Do(func() {
		info := versionInfo()
		legacyregistry.MustRegister(buildInfo)
		buildInfo.WithLabelValues(info.Major, info.Minor, info.GitVersion, info.GitCommit, info.GitTreeState, info.BuildDate, info.GoVersion, info.Compiler, info.Platform).Set(1)
	})
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kapi_storage_commit_duration_seconds",
			Help:    "Time a write takes to commit to SQLite (one transaction, changelog row and object).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		compaction: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kapi_storage_compaction_duration_seconds",
			Help:    "Time a compaction of the changelog takes.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	m.registry.MustRegister(m.commit, m.compaction)
	return m
}

// buildInfo is kube-apiserver's kubernetes_build_info (component-base's
// metrics/prometheus/version registers it with the libraries' own version
// at init, not the one kapi reports at /version).
var (
	buildInfo = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "kubernetes_build_info",
		Help:           "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	registerBuildInfo sync.Once
)

// StorageHooks returns the store options that feed the storage metrics.
func (m *Metrics) StorageHooks(opts storage.Options) storage.Options {
	opts.OnCommit = func(d time.Duration) { m.commit.Observe(d.Seconds()) }
	opts.OnCompact = func(d time.Duration) { m.compaction.Observe(d.Seconds()) }
	return opts
}

// storeCollector reads the store's figures at scrape time.
type storeCollector struct {
	store *storage.Store
	reg   *registry.Registry
}

var (
	objectsDesc   = prometheus.NewDesc("apiserver_storage_objects", "Number of stored objects at the time of last check split by kind.", []string{"resource"}, nil)
	sizeDesc      = prometheus.NewDesc("kapi_storage_db_size_bytes", "Size of kapi's SQLite database.", nil, nil)
	changelogDesc = prometheus.NewDesc("kapi_storage_changelog_rows", "Rows of history the changelog keeps (watch and continue resume window).", nil, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- objectsDesc
	ch <- sizeDesc
	ch <- changelogDesc
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.store.Stats(ctx)
	if err != nil {
		return
	}
	// Every served resource, 0 when it has no object, as kube-apiserver
	// reports its storages (named "<plural>.<group>").
	for _, res := range c.reg.All() {
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(st.Objects[res.StorageResource()]), res.GroupResource().String())
	}
	ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, float64(st.SizeBytes))
	ch <- prometheus.MustNewConstMetric(changelogDesc, prometheus.GaugeValue, float64(st.ChangelogRows))
}

// requestInfo is what the handlers learn about a resource request, for
// its metrics (kube-apiserver's installer knows it per route).
type requestInfo struct {
	verb, group, version, resource, subresource string
	// deprecated: the request's version is; removedRelease is the release
	// that removes it, for a built-in kind.
	deprecated     bool
	removedRelease string
}

type requestInfoKey struct{}

// noteRequest records what a resource request is in the request's info.
func noteRequest(r *http.Request, req *resourceRequest, verb string) {
	info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if !ok {
		return
	}
	info.verb, info.group, info.version = verb, req.res.Group, req.version
	info.resource, info.subresource = req.res.Plural, req.subresource
	_, info.deprecated = req.res.DeprecationWarnings[req.version]
	info.removedRelease = req.res.RemovedReleases[req.version]
}

// requestInfoFactory reads a request's path as kube-apiserver does, for
// its metrics' labels.
var requestInfoFactory = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// instrument counts and times every API request with kube-apiserver's
// metrics: it gives the request kube's RequestInfo (read from the path)
// and latency trackers (the admission webhooks record their time in them,
// which the SLI latency leaves out).
func (m *Metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri, err := requestInfoFactory.NewRequestInfo(r)
		if err != nil {
			ri = &request.RequestInfo{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		}
		info := &requestInfo{}
		ctx := request.WithLatencyTrackers(request.WithRequestInfo(r.Context(), ri))
		r = r.WithContext(context.WithValue(ctx, requestInfoKey{}, info))
		rec, ok := w.(*statusRecorder)
		if !ok {
			rec = &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		}
		start := time.Now()
		next.ServeHTTP(rec, r)
		if info.verb == "" {
			return
		}
		apimetrics.MonitorRequest(r, info.verb, info.group, info.version, info.resource, info.subresource, apimetrics.CleanScope(ri),
			apimetrics.APIServerComponent, info.deprecated, info.removedRelease, rec.code, rec.size, time.Since(start))
	})
}

// handler serves kapi's metrics together with those the Kubernetes
// libraries record in their own registry: the admission plugins'
// (apiserver_admission_webhook_*, apiserver_validating_admission_policy_*),
// CRD conversion's, and Go's and the process's.
func (m *Metrics) handler(store *storage.Store, reg *registry.Registry) http.Handler {
	m.registry.MustRegister(storeCollector{store, reg})
	return promhttp.HandlerFor(prometheus.Gatherers{m.registry, legacyregistry.DefaultGatherer}, promhttp.HandlerOpts{})
}
