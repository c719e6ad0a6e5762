// Package server is kapi's HTTP front: routing, content negotiation,
// discovery, the generic verb handlers over the registry of served
// resources, and the controllers that finish deletions.
package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/healthz"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/kapi-dev/kapi/admission"
	"github.com/kapi-dev/kapi/admission/webhook"
	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// KubernetesVersion is the Kubernetes release whose API kapi serves.
const KubernetesVersion = "v1.33.0"

// maxBodyBytes is kube-apiserver's limit on a request body (3 MiB).
const maxBodyBytes = 3 * 1024 * 1024

// Server serves the Kubernetes API from a Store.
type Server struct {
	store *storage.Store
	reg   *registry.Registry
	log   *slog.Logger
	opts  Options

	finalizer *finalizer
	// creating counts, per namespace, the creates admitted into it and
	// not yet stored: a deleted namespace is finalized only once none is
	// left (each would otherwise outlive it).
	creatingMu   sync.Mutex
	creating     map[string]int
	cascades     *cascades
	orphans      *orphans
	crds         *crdController
	policyStatus *policyStatusController
	webhooks     *admission.Webhooks
	// mutating is the webhooks' mutating half, wrapped as kube-apiserver
	// wraps its mutating admission (see mutate).
	mutating k8sadmission.MutationInterface
	// policies is set by Start, which then closes policiesSet: a
	// controller's write while Start runs waits for it.
	policies      *admission.Policies
	policiesSet   chan struct{}
	fieldManagers fieldManagers
	equivalentMu  sync.Mutex
	equivalent    byGeneration[runtime.EquivalentResourceMapper]
	// The OpenAPI documents, v3 by group version path, as JSON.
	openapiMu      sync.Mutex
	openapiV3      byGeneration[map[string]gvDocument]
	openapiV2      byGeneration[document]
	openapiV2Proto byGeneration[document]
	// The aggregated discovery documents, encoded.
	discoveryMu   sync.Mutex
	discoveryDocs map[discoveryKey]*byGeneration[document]
	auditMu       sync.Mutex
	// published shares the decoding and encoding of a write among the
	// watchers it is fanned out to.
	published lastPublished
	// started is set once the controllers and admission caches run.
	started atomic.Bool
	// stopping is closed when the server begins to shut down; long-running
	// requests (watches) end then.
	stopping     chan struct{}
	stoppingOnce sync.Once
}

// Options tune a Server.
type Options struct {
	// BookmarkInterval is how often a watch that allows bookmarks gets
	// one (kube-apiserver: about a minute).
	BookmarkInterval time.Duration
	// ServiceResolver resolves the service references of webhooks
	// (CRD conversion).
	ServiceResolver webhookutil.ServiceResolver
	// Metrics are served at /metrics (new ones when nil).
	Metrics *Metrics
	// AuditLog, when set, receives an audit event per resource request.
	AuditLog io.Writer
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the
	// read-only and the mutating requests served at once (429 above).
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// RequestTimeout bounds every request but watches (504 after it);
	// a request's ?timeout= may shorten it. 0 means no bound.
	RequestTimeout time.Duration
	// MinRequestTimeout is kube-apiserver's --min-request-timeout: a
	// watch without timeoutSeconds ends after a random time between one
	// and two of it. 0 means such watches do not end.
	MinRequestTimeout time.Duration
	// Profiling serves Go's profiles at /debug/pprof/ (kube-apiserver's
	// --profiling).
	Profiling bool
}

// New returns a Server over store serving the resources of reg.
func New(store *storage.Store, reg *registry.Registry, log *slog.Logger, opts Options) (*Server, error) {
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Minute
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.MaxRequestsInflight <= 0 {
		opts.MaxRequestsInflight = 400
	}
	if opts.MaxMutatingRequestsInflight <= 0 {
		opts.MaxMutatingRequestsInflight = 200
	}
	if opts.ServiceResolver == nil {
		opts.ServiceResolver, _ = webhook.ParseServiceResolver("")
	}
	s := &Server{store: store, reg: reg, log: log, opts: opts, stopping: make(chan struct{}), policiesSet: make(chan struct{}), discoveryDocs: map[discoveryKey]*byGeneration[document]{}}
	s.finalizer = newFinalizer(s)
	s.cascades = newCascades(s)
	s.orphans = newOrphans(s)
	var err error
	if s.crds, err = newCRDController(s, opts.ServiceResolver); err != nil {
		return nil, err
	}
	s.webhooks = admission.NewWebhooks(opts.ServiceResolver)
	s.webhooks.ReadNamespacesFrom(s.storedNamespace)
	s.mutating = fieldmanager.NewManagedFieldsValidatingAdmissionController(mutatingWebhooks{s.webhooks}).(k8sadmission.MutationInterface)
	s.policyStatus = newPolicyStatusController(s)
	return s, nil
}

// Start serves the stored CRDs and runs the controllers until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.crds.start(ctx); err != nil {
		return err
	}
	if err := s.startAdmission(ctx); err != nil {
		return err
	}
	if err := s.finalizer.start(ctx); err != nil {
		return err
	}
	s.cascades.start(ctx)
	s.orphans.start(ctx)
	if err := s.policyStatus.start(ctx); err != nil {
		return err
	}
	s.started.Store(true)
	return nil
}

// creatingIn notes a create admitted into namespace until done is called.
func (s *Server) creatingIn(namespace string) (done func()) {
	s.creatingMu.Lock()
	defer s.creatingMu.Unlock()
	if s.creating == nil {
		s.creating = map[string]int{}
	}
	s.creating[namespace]++
	return func() {
		s.creatingMu.Lock()
		defer s.creatingMu.Unlock()
		if s.creating[namespace]--; s.creating[namespace] == 0 {
			delete(s.creating, namespace)
		}
	}
}

// createsPending tells whether creates admitted into namespace are still
// to be stored.
func (s *Server) createsPending(namespace string) bool {
	s.creatingMu.Lock()
	defer s.creatingMu.Unlock()
	return s.creating[namespace] > 0
}

// BeginShutdown ends the long-running requests (watches), so that an
// http.Server.Shutdown that follows only waits for short ones.
func (s *Server) BeginShutdown() {
	s.stoppingOnce.Do(func() { close(s.stopping) })
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(commonHeaders, s.logRequests, s.recoverPanics, s.opts.Metrics.instrument, s.limitInflight, s.limitDuration)
	r.Method(http.MethodGet, "/metrics", s.opts.Metrics.handler(s.store, s.reg))
	r.Get("/version", s.serveVersion)
	// As kube-apiserver: any method; /readyz fails once shutdown begins.
	health := &listedPaths{Router: r}
	healthz.InstallHandler(health, s.healthChecks()...)
	healthz.InstallLivezHandler(health, s.healthChecks()...)
	healthz.InstallReadyzHandler(health, append(s.healthChecks(), healthz.NewShutdownHealthz(s.stopping))...)
	// The index of paths, as kube-apiserver's (any method).
	index := func(w http.ResponseWriter, r *http.Request) { s.serveIndex(w, health.paths) }
	r.HandleFunc("/", index)
	r.HandleFunc("/index.html", index)
	if s.opts.Profiling {
		// kube-apiserver's routes: no cmdline (it would show the command
		// line), and /debug/pprof redirected to the index.
		r.Handle("/debug/pprof", http.RedirectHandler("/debug/pprof/", http.StatusFound))
		r.HandleFunc("/debug/pprof/*", pprof.Index)
		r.HandleFunc("/debug/pprof/profile", pprof.Profile)
		r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	r.Get("/api", s.serveAPIVersions)
	r.Get("/api/", s.serveAPIVersions)
	// As kube-apiserver's handlers of these (the aggregator's, kube-openapi's):
	// any method.
	r.HandleFunc("/apis", s.serveAPIGroups)
	r.HandleFunc("/apis/", s.serveAPIGroups)
	r.HandleFunc("/openapi/v3", s.serveOpenAPIV3Root)
	r.HandleFunc("/openapi/v3/*", s.serveOpenAPIV3)
	r.HandleFunc("/openapi/v2", s.serveOpenAPIV2)
	r.HandleFunc("/api/*", s.serveAPIPath)
	r.HandleFunc("/apis/*", s.serveAPIPath)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { writeError(w, r, notFoundPath(r)) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		// A method the router does not know (PROPFIND...) on a resource's
		// path is the resource's to refuse, as kube-apiserver's handlers do.
		if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/apis/") {
			s.serveAPIPath(w, r)
			return
		}
		writeError(w, r, methodNotAllowed(r))
	})
	return r
}

func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	writeObject(w, r, output{}, http.StatusOK, versionInfo())
}

// serveAPIPath routes /api/... and /apis/... to discovery or a resource.
func (s *Server) serveAPIPath(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(path, "/")
	if len(parts) < 2 {
		// /api/ by a method its route does not take.
		writeError(w, r, methodNotAllowed(r))
		return
	}
	var group, version string
	var rest []string
	if parts[0] == "api" {
		version, rest = parts[1], parts[2:]
		if version != "v1" {
			writeError(w, r, notFoundPath(r))
			return
		}
	} else {
		group = parts[1]
		if len(parts) == 2 {
			s.serveAPIGroup(w, r, group) // any method, as kube's aggregator
			return
		}
		version, rest = parts[2], parts[3:]
	}
	if len(rest) == 0 {
		if r.Method != http.MethodGet {
			writeError(w, r, methodNotAllowed(r))
			return
		}
		s.serveAPIResources(w, r, group, version)
		return
	}
	req, err := s.parseResourcePath(r.Method, group, version, rest)
	if err != nil {
		if req != nil {
			// A custom resource's NotFound for a subresource its version
			// lacks comes with the version's deprecation warning, as
			// kube-apiserver's handler adds it first.
			r = r.WithContext(withWarnings(r.Context(), w))
			if text, ok := req.res.DeprecationWarnings[req.version]; ok {
				addWarning(r.Context(), text)
			}
		}
		writeError(w, r, err)
		return
	}
	s.serveResource(w, r, req)
}

// resourceRequest is a request for a served resource, parsed from its path.
type resourceRequest struct {
	res         *registry.Resource
	version     string
	namespace   string
	name        string
	subresource string
	// watchPath is true for the deprecated /watch/ paths.
	watchPath bool
	// isPatch is true while a PATCH decodes its result; applied while
	// that result is a server-side apply's.
	isPatch, applied bool
	// serverSideApply is set for the whole of a server-side apply (of the
	// object or its scale): a write of it too large to store fails, where
	// any other write is made again without managedFields, as
	// kube-apiserver's patch handler retries every patch type but apply.
	serverSideApply bool
	// patchQuote, when set, is what an error of a patch's result quotes
	// as the invalid patch (a strategic merge patch's: the patch itself,
	// as a Go map prints, as kube-apiserver quotes it); else the patched
	// object is.
	patchQuote string
	// inCollection is set for the objects a deletecollection deletes:
	// kube-apiserver names none of them to admission.
	inCollection bool
	// unnamedCreate is set for the validating admission of a create whose
	// client named no object (a generateName): admission names the
	// request as the object is named then, but kube-apiserver put a
	// namespace's own request in the namespace the client named, none.
	unnamedCreate bool
	// noAdmission is set for the deletes of kapi's CRD finalizer, which
	// kube-apiserver's makes through its storage, without admission.
	noAdmission bool
	// options are the write's options as the client sent them, for the
	// AdmissionReview (nil: the handler's own).
	options runtime.Object
	// sent is a create's or update's body as the client sent it (YAML or
	// protobuf before kapi converted it to JSON), which kube-apiserver
	// summarizes in a decoding error.
	sent []byte
	// decodedFrom is the JSON the object being written was decoded from
	// (the body, a patch's result, or what the mutating webhooks left),
	// for the kind's validation (registry.WithDecodedJSON).
	decodedFrom []byte
	// mutated is set when the mutating webhooks changed a custom
	// resource: it is coerced for storage as it is written
	// (registry.StorageCoercer).
	mutated bool
	// scales are the Scales a /scale write's mutating webhooks see: the
	// client's (after its field manager) and the current one.
	scales *scaleWrite
	// user is who admission sees making the request: kapi's own
	// controllers are who kube's are (nil: a client, adminUser).
	user user.Info
}

// actor is who admission sees making req.
func (req *resourceRequest) actor() user.Info {
	if req.user != nil {
		return req.user
	}
	return adminUser
}

// parseResourcePath parses [watch/][namespaces/<ns>/]<plural>[/<name>[/<sub>]].
// With an error it returns the request too when the path named a custom
// resource's version (its answer carries the version's warnings).
func (s *Server) parseResourcePath(method, group, version string, parts []string) (*resourceRequest, error) {
	req := &resourceRequest{version: version}
	if parts[0] == "watch" {
		req.watchPath = true
		parts = parts[1:]
		if len(parts) == 0 {
			return nil, s.notFoundIn(group, version)
		}
	}
	// namespaces/<ns>/<plural>/... addresses a namespaced resource, but
	// namespaces/<name>[/status|/finalize] is the namespace itself.
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		req.namespace = parts[1]
		parts = parts[2:]
	}
	for _, p := range parts {
		if p == "" {
			return nil, apierrors.NewNotFound(schema.GroupResource{}, "")
		}
	}
	res, ok := s.reg.Get(group, version, parts[0])
	if !ok {
		if s.crds.unconvertible(group, version, parts[0], req.namespace != "", len(parts) == 1, method) {
			return nil, apierrors.NewInternalError(errors.New("error resolving resource"))
		}
		return nil, s.notFoundIn(group, version)
	}
	if len(parts) > 3 {
		if !res.Custom {
			return nil, s.notFoundIn(group, version)
		}
		// kube-apiserver's custom resource handler reads the third part
		// as a subresource, and finds none.
		req.res = res
		return req, apierrors.NewNotFound(schema.GroupResource{Group: res.Group, Resource: res.Plural}, parts[1])
	}
	req.res = res
	if req.namespace != "" && !res.Namespaced {
		return nil, s.notFoundIn(group, version)
	}
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2]
		known := (req.subresource == "status" && res.StatusIn(req.version)) || (req.subresource == "finalize" && res.Finalize) ||
			(req.subresource == "scale" && res.ScaleIn(req.version) != nil)
		if !known && res.Custom && !req.watchPath && (!res.Namespaced || req.namespace != "") {
			// As kube-apiserver's custom resource handler: a subresource
			// the version does not serve is the object's NotFound (a
			// namespaced one's path without a namespace never reaches it).
			return req, apierrors.NewNotFound(schema.GroupResource{Group: res.Group, Resource: res.Plural}, req.name)
		}
		if !known || req.watchPath {
			return nil, s.notFoundIn(group, version)
		}
	}
	return req, nil
}

// methodNotAllowed is kube-apiserver's answer to a method a built-in path
// has no route for (its go-restful container's).
func methodNotAllowed(r *http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
}

// serveResource dispatches a resource request to its verb.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	r = r.WithContext(registry.WithRequestVersion(withWarnings(r.Context(), w), req.version))
	if r.Method == http.MethodHead && req.res.Custom {
		// As kube-apiserver's custom resource handler: HEAD is a get or a
		// list (the response writer of the HEAD request drops the body).
		r.Method = http.MethodGet
	}
	if text, ok := req.res.DeprecationWarnings[req.version]; ok {
		addWarning(r.Context(), text)
	}
	q := r.URL.Query()
	// As kube-apiserver: ?watch= on a named object is a get.
	isWatch := req.watchPath || (req.name == "" && watchRequested(q))
	verb := metricVerb(r, req, isWatch)
	noteRequest(r, req, verb)
	if s.opts.AuditLog != nil {
		log := &auditLog{w: s.opts.AuditLog, mu: &s.auditMu}
		auditVerb := auditVerbs[verb]
		if r.Method == http.MethodHead { // kube's request info reads a HEAD as a read
			auditVerb = map[bool]string{true: "get", false: "list"}[req.name != ""]
		}
		r = log.begin(r, req, auditVerb)
		defer func() {
			log.end(r.Context(), responseCode(w))
		}()
	}
	if req.subresource == "finalize" && r.Method != http.MethodPut {
		writeError(w, r, methodNotAllowed(r))
		return
	}
	if req.res.Namespaced && req.namespace == "" && (r.Method != http.MethodGet || req.name != "") {
		// A namespaced resource is only listed and watched across
		// namespaces; everything else needs a namespace in the path.
		writeError(w, r, s.notFoundIn(req.res.Group, req.version))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// As kube-apiserver's write handlers: the response's form is
		// negotiated before anything is written, so that a 406 changes
		// nothing.
		if _, err := negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadata", "PartialObjectMetadataList"); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if req.subresource == "scale" {
		s.serveScale(w, r, req)
		return
	}
	switch {
	case r.Method == http.MethodGet && isWatch:
		// apiserver_longrunning_requests counts it while it lasts.
		ri, _ := request.RequestInfoFrom(r.Context())
		apimetrics.RecordLongRunning(r, ri, apimetrics.APIServerComponent, func() { s.watch(w, r, req) })
	case r.Method == http.MethodGet && req.name != "":
		s.get(w, r, req)
	case r.Method == http.MethodGet:
		s.list(w, r, req)
	case req.watchPath:
		writeError(w, r, methodNotAllowed(r))
	case r.Method == http.MethodPost && (req.name == "" || req.res.Custom && req.subresource == ""):
		// kube-apiserver's custom resource handler creates from a POST
		// to an object's path too: the object named in the body (the
		// path's name is the one admission sees).
		s.create(w, r, req)
	case r.Method == http.MethodPut && req.name != "":
		s.update(w, r, req)
	case r.Method == http.MethodPatch && req.name != "":
		s.patch(w, r, req)
	case r.Method == http.MethodDelete && req.name != "" && req.subresource == "":
		s.delete(w, r, req)
	case r.Method == http.MethodDelete && req.name == "" && !req.res.NoDeleteCollection:
		s.deleteCollection(w, r, req)
	case (r.Method == http.MethodPut || r.Method == http.MethodPatch) && req.res.Custom:
		// kube-apiserver's custom resource handler takes the update and
		// finds no name to update.
		writeError(w, r, apierrors.NewBadRequest("name must be provided"))
	case req.res.Custom:
		// kube-apiserver's custom resource handler names the verb.
		writeError(w, r, apierrors.NewMethodNotSupported(req.res.GroupResource(), verbOf(r.Method)))
	default:
		writeError(w, r, methodNotAllowed(r))
	}
}

func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodGet, http.MethodHead:
		return "get"
	}
	return "" // kube-apiserver's request info has no verb for other methods
}

// Bootstrap creates the namespaces a new cluster has.
func (s *Server) Bootstrap(ctx context.Context) error {
	res, _ := s.reg.Get("", "v1", "namespaces")
	for _, name := range builtin.InitialNamespaces {
		// Only missing ones are written: a read-only store still starts.
		if _, err := s.store.Get(ctx, storageKey(res, "", name)); err == nil {
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind("Namespace")
		obj.SetName(name)
		_, err := s.createObject(ctx, &resourceRequest{res: res, version: "v1", user: apiserverUser}, obj, false, "kube-apiserver")
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// statusRecorder remembers the status code a handler wrote, and the size
// of its body.
type statusRecorder struct {
	http.ResponseWriter
	code int
	size int
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

func (w *statusRecorder) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection to a WebSocket watch (golang.org/x/net's
// handshake takes it from the writer itself, not through Unwrap).
func (w *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.code = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// responseCode is the status code written through w, as the statusRecorder
// under it saw it (200 when there is none).
func responseCode(w http.ResponseWriter) int {
	for {
		if rec, ok := w.(*statusRecorder); ok {
			return rec.code
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return http.StatusOK
		}
		w = u.Unwrap()
	}
}

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logRequests logs one debug line per request: verb, path, code, latency
// and user agent (never bodies).
// auditIDHeader is kube's Audit-ID header, in Go's canonical form.
var auditIDHeader = http.CanonicalHeaderKey(auditinternal.HeaderAuditID)

// noCache is the Cache-Control of every answer but those that may be cached
// (a handler replaces it, never changes it in place).
var noCache = []string{"no-cache, private"}

// commonHeaders sets the headers every answer of kube-apiserver carries:
// the request's Audit-Id (the client's if it sent one), as its audit init
// filter, and Cache-Control: no-cache, private, as its cache-control
// filter (handlers of what may be cached replace it: discovery, hashed
// OpenAPI). The headers' canonical keys are used as is: that spares their
// canonicalization on every request.
func commonHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids := r.Header[auditIDHeader]
		if len(ids) == 0 || ids[0] == "" {
			ids = []string{string(uuid.NewUUID())}
			r.Header[auditIDHeader] = ids // for the audit log
		}
		w.Header()[auditIDHeader] = ids[:1:1]
		w.Header()["Cache-Control"] = noCache[:1:1]
		next.ServeHTTP(w, r)
	})
}

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		// Checked first: the arguments would be boxed even when off.
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "code", rec.code,
				"latency", time.Since(start), "userAgent", r.UserAgent())
		}
	})
}

// recoverPanics answers a request whose handler panicked with a 500 Status
// (a bug of kapi, logged with its stack) instead of a dropped connection.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeError(w, r, apierrors.NewInternalError(fmt.Errorf("kapi failed to serve the request: %v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// metricVerb is the verb label kube-apiserver's request metrics use.
func metricVerb(r *http.Request, req *resourceRequest, isWatch bool) string {
	switch {
	case r.Method == http.MethodGet && isWatch:
		return "WATCH"
	case r.Method == http.MethodGet && req.name == "":
		return "LIST"
	case r.Method == http.MethodPatch && strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch"):
		return "APPLY"
	case r.Method == http.MethodDelete && req.name == "":
		return "DELETECOLLECTION"
	}
	return r.Method
}

// auditVerbs maps the metrics' verbs to the audit log's.
var auditVerbs = map[string]string{
	"GET": "get", "LIST": "list", "WATCH": "watch", "POST": "create", "PUT": "update",
	"PATCH": "patch", "APPLY": "patch", "DELETE": "delete", "DELETECOLLECTION": "deletecollection",
}
