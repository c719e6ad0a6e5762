// Command kapi is a Kubernetes-compatible API server on SQLite.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/kapi-dev/kapi/admission/webhook"
	"github.com/kapi-dev/kapi/server"
	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

func main() {
	run := serve
	if len(os.Args) > 1 && os.Args[1] == "backup" {
		run = backupCommand
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kapi:", err)
		os.Exit(1)
	}
}

// backupCommand is `kapi backup [--data-dir DIR] FILE`: a consistent
// online copy of the database, from which kapi can start (--data-dir on a
// directory holding it as kapi.db).
func backupCommand() error {
	fs := flag.NewFlagSet("kapi backup", flag.ExitOnError)
	dataDir := fs.String("data-dir", "./kapi-data", "data directory of the kapi to back up")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: kapi backup [--data-dir DIR] FILE")
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[2:])
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("backup needs one file to write")
	}
	return storage.Backup(context.Background(), filepath.Join(*dataDir, "kapi.db"), fs.Arg(0))
}

func serve() error {
	listen := flag.String("listen", "127.0.0.1:6443", "address to serve the API on")
	dataDir := flag.String("data-dir", "./kapi-data", "directory of the SQLite database (and the default kubeconfig)")
	inMemory := flag.Bool("in-memory", false, "keep every object in memory only: a throwaway store")
	kubeconfigOut := flag.String("kubeconfig-out", "", "where to write a kubeconfig for this server (default <data-dir>/kubeconfig)")
	syncMode := flag.String("sync", "normal", "normal: an acknowledged write survives a crash or kill -9 of kapi; full: it survives a power loss too (an fsync per commit, shared by the writes committed together)")
	shutdownTimeout := flag.Duration("shutdown-timeout", 30*time.Second, "how long SIGTERM waits for in-flight requests")
	verbosity := flag.Int("v", 0, "log verbosity: 0 info, 1 and more debug")
	compactionInterval := flag.Duration("compaction-interval", 5*time.Minute, "how often old changelog history is compacted")
	historyAge := flag.Duration("history-retention", 10*time.Minute, "keep changelog history at least this long (watch and continue resume window)")
	bookmarkInterval := flag.Duration("watch-bookmark-interval", time.Minute, "how often a watch that allows bookmarks gets one")
	maxInflight := flag.Int("max-requests-inflight", 400, "the most read-only requests served at once (watches not counted); more get 429")
	maxMutatingInflight := flag.Int("max-mutating-requests-inflight", 200, "the most mutating requests served at once; more get 429")
	minRequestTimeout := flag.Int("min-request-timeout", 1800, "seconds: a watch without timeoutSeconds ends after a random time between one and two of it, as kube-apiserver's; 0: such watches do not time out")
	requestTimeout := flag.Duration("request-timeout", time.Minute, "the longest a request other than a watch may take (504 after it); a request's ?timeout= may shorten it")
	profiling := flag.Bool("profiling", true, "serve Go's CPU, heap and goroutine profiles at /debug/pprof/ (as kube-apiserver's --profiling)")
	auditLogPath := flag.String("audit-log-path", "", "append an audit event (JSON lines, audit.k8s.io/v1, Metadata level) per API request to this file (- for standard output)")
	serviceResolver := flag.String("service-resolver", "", "where webhook service references go, as namespace/name:port=host:port[,...] (kapi serves no Services)")
	storageQuota := flag.Int64("storage-quota-bytes", 0, "cap the database at this size: past it writes are refused (503) as on a full disk, reads go on; 0: no cap")
	historyRevisions := flag.Int64("history-revisions", 10000, "keep at least this many of the newest revisions")
	flag.Parse()

	level := slog.LevelInfo
	if *verbosity > 0 {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// The Kubernetes libraries log through klog: send it to the same place,
	// their chatter (informer syncs, policy refreshes) only with -v 1.
	libLevel := slog.LevelWarn
	if *verbosity > 0 {
		libLevel = slog.LevelDebug
	}
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: libLevel})))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if *minRequestTimeout < 0 {
		return errors.New("--min-request-timeout can not be negative value")
	}
	if *syncMode != "full" && *syncMode != "normal" {
		return fmt.Errorf("--sync must be full or normal, not %q", *syncMode)
	}
	// The built-in kinds first: their SSA type converter builds in the
	// background while the store opens.
	reg := registry.New()
	builtin.Register(reg)
	metrics := server.NewMetrics()
	opts := metrics.StorageHooks(storage.Options{InMemory: *inMemory, Durable: *syncMode == "full", QuotaBytes: *storageQuota, Log: log})
	if !*inMemory {
		if err := os.MkdirAll(*dataDir, 0o700); err != nil {
			return err
		}
		opts.Path = filepath.Join(*dataDir, "kapi.db")
	}
	store, err := storage.Open(ctx, opts)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	if store.ReadOnly() {
		log.Warn("the database file is read-only: reads are served, writes are refused (503)", "path", opts.Path)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error("closing the database", "err", err)
		}
	}()

	resolver, err := webhook.ParseServiceResolver(*serviceResolver)
	if err != nil {
		return err
	}
	srvOpts := server.Options{BookmarkInterval: *bookmarkInterval, ServiceResolver: resolver, Metrics: metrics,
		MaxRequestsInflight: *maxInflight, MaxMutatingRequestsInflight: *maxMutatingInflight, RequestTimeout: *requestTimeout,
		MinRequestTimeout: time.Duration(*minRequestTimeout) * time.Second, Profiling: *profiling}
	switch *auditLogPath {
	case "":
	case "-": // standard output, as kube-apiserver's --audit-log-path
		srvOpts.AuditLog = os.Stdout
	default:
		// As kube-apiserver: the file's directory is made if missing.
		if err := os.MkdirAll(filepath.Dir(*auditLogPath), 0o700); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		f, err := os.OpenFile(*auditLogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		defer f.Close()
		srvOpts.AuditLog = f
	}
	srv, err := server.New(store, reg, log, srvOpts)
	if err != nil {
		return err
	}
	ctrlCtx, stopControllers := context.WithCancel(context.Background())
	defer stopControllers()
	if err := srv.Start(ctrlCtx); err != nil {
		return err
	}
	if err := srv.Bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	go store.RunCompaction(ctrlCtx, storage.Retention{Age: *historyAge, Revisions: *historyRevisions}, *compactionInterval, log)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	kubeconfig := *kubeconfigOut
	if kubeconfig == "" {
		if *inMemory {
			kubeconfig = filepath.Join(*dataDir, "kubeconfig")
			if err := os.MkdirAll(*dataDir, 0o700); err != nil {
				return err
			}
		} else {
			kubeconfig = filepath.Join(*dataDir, "kubeconfig")
		}
	}
	if err := writeKubeconfig(kubeconfig, url); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	conns := &newConns{m: map[net.Conn]bool{}}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second, ConnState: conns.track}
	log.Info("kapi serving", "url", url, "kubeconfig", kubeconfig, "in-memory", *inMemory, "data-dir", *dataDir)

	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	go func() {
		kib, err := releaseStartupPages()
		log.Debug("released the mappings of start-up's pages of the binary", "resident-KiB", kib, "err", err)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests")
	srv.BeginShutdown()
	// http.Server.Shutdown waits up to 5s for connections that have not
	// sent a request yet (clients re-connecting their watches); they carry
	// nothing to drain, so close them.
	go func() {
		for i := 0; i < 100; i++ {
			conns.closeNew()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	stopControllers()
	log.Info("stopped")
	return nil
}

// newConns tracks the connections that have not started a request.
type newConns struct {
	mu sync.Mutex
	m  map[net.Conn]bool
}

func (c *newConns) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state == http.StateNew {
		c.m[conn] = true
	} else {
		delete(c.m, conn)
	}
}

func (c *newConns) closeNew() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.m {
		conn.Close()
		delete(c.m, conn)
	}
}

// writeKubeconfig writes a kubeconfig whose current context reaches url.
func writeKubeconfig(path, url string) error {
	const tmpl = `apiVersion: v1
kind: Config
clusters:
- name: kapi
  cluster:
    server: %s
users:
- name: kapi-admin
  user: {}
contexts:
- name: kapi
  context:
    cluster: kapi
    user: kapi-admin
current-context: kapi
`
	data := []byte(fmt.Sprintf(tmpl, url))
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		// Already there (a restart on the same address): nothing to
		// write, so a full disk does not keep kapi from starting.
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
