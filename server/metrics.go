package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kapi-dev/kapi/storage"
)

// Metrics are kapi's Prometheus metrics, under kube-apiserver's names
// where one exists.
type Metrics struct {
	registry    *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	inflight    *prometheus.GaugeVec
	watchEvents *prometheus.CounterVec
	commit      prometheus.Histogram
	compaction  prometheus.Histogram
}

// NewMetrics registers kapi's metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
		}, []string{"request_kind"}),
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Number of events sent in watch clients",
		}, []string{"group", "version", "kind"}),
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
	// Go and process metrics come with the Kubernetes libraries' registry
	// (see handler).
	m.registry.MustRegister(m.requests, m.duration, m.longRunning, m.inflight, m.watchEvents, m.commit, m.compaction)
	return m
}

// StorageHooks returns the store options that feed the storage metrics.
func (m *Metrics) StorageHooks(opts storage.Options) storage.Options {
	opts.OnCommit = func(d time.Duration) { m.commit.Observe(d.Seconds()) }
	opts.OnCompact = func(d time.Duration) { m.compaction.Observe(d.Seconds()) }
	return opts
}

// storeCollector reads the store's figures at scrape time.
type storeCollector struct{ store *storage.Store }

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
	for resource, n := range st.Objects {
		// kube-apiserver names the resource "<plural>.<group>".
		group, plural, _ := strings.Cut(resource, "/")
		name := plural
		if group != "" {
			name += "." + group
		}
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(n), name)
	}
	ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, float64(st.SizeBytes))
	ch <- prometheus.MustNewConstMetric(changelogDesc, prometheus.GaugeValue, float64(st.ChangelogRows))
}

// requestInfo is what the handlers learn about a request, for its metrics.
type requestInfo struct {
	verb, group, version, resource, subresource, scope string
	dryRun                                             bool
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
	switch {
	case req.name != "":
		info.scope = "resource"
	case req.namespace != "":
		info.scope = "namespace"
	default:
		info.scope = "cluster"
	}
	info.dryRun = r.URL.Query().Get("dryRun") != ""
}

// instrument counts and times every API request.
func (m *Metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := "readOnly"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			kind = "mutating"
		}
		m.inflight.WithLabelValues(kind).Inc()
		defer m.inflight.WithLabelValues(kind).Dec()
		info := &requestInfo{}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		rec, ok := w.(*statusRecorder)
		if !ok {
			rec = &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		}
		start := time.Now()
		next.ServeHTTP(rec, r)
		if info.verb == "" {
			return
		}
		dry := ""
		if info.dryRun {
			dry = "All"
		}
		m.requests.WithLabelValues(info.verb, dry, info.group, info.version, info.resource, info.subresource, info.scope, "apiserver", strconv.Itoa(rec.code)).Inc()
		if info.verb != "WATCH" {
			m.duration.WithLabelValues(info.verb, dry, info.group, info.version, info.resource, info.subresource, info.scope, "apiserver").Observe(time.Since(start).Seconds())
		}
	})
}

// longRunning counts an active watch until done is called.
func (m *Metrics) watchStarted(req *resourceRequest) (done func()) {
	scope := "cluster"
	if req.namespace != "" {
		scope = "namespace"
	}
	g := m.longRunning.WithLabelValues("WATCH", req.res.Group, req.version, req.res.Plural, req.subresource, scope, "apiserver")
	g.Inc()
	return g.Dec
}

// handler serves kapi's metrics together with those the Kubernetes
// libraries record in their own registry: the admission plugins'
// (apiserver_admission_webhook_*, apiserver_validating_admission_policy_*),
// CRD conversion's, and Go's and the process's.
func (m *Metrics) handler(store *storage.Store) http.Handler {
	m.registry.MustRegister(storeCollector{store})
	return promhttp.HandlerFor(prometheus.Gatherers{m.registry, legacyregistry.DefaultGatherer}, promhttp.HandlerOpts{})
}
