// Package e2e holds kapi's black-box end-to-end tests: each test starts the
// real binary and talks to it only as a Kubernetes client would, with
// client-go, kubectl and plain HTTP. The expected behaviour is
// kube-apiserver's (v1.33).
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kapiBinary is the binary TestMain builds from the module root.
var kapiBinary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kapi-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Other users may run the binary (a test runs kapi as nobody).
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	kapiBinary = filepath.Join(dir, "kapi")
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	build := exec.Command("go", "build", "-o", kapiBinary, ".")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building kapi:", err)
		return 1
	}
	return m.Run()
}

// kapi is one running kapi process and the clients that reach it.
type kapi struct {
	// Kubeconfig is the path of the kubeconfig kapi wrote.
	Kubeconfig string
	// DataDir is the --data-dir kapi was started with.
	DataDir string
	// URL is the server URL from the kubeconfig (http://127.0.0.1:<port>).
	URL string
	// Config is loaded only from Kubeconfig.
	Config *rest.Config
	Client kubernetes.Interface
	Ext    apiextensionsclientset.Interface
	Dyn    dynamic.Interface

	cacheDir string
	cmd      *exec.Cmd
	log      *syncBuffer
	exited   chan struct{}
	exitErr  error
	stopOnce sync.Once
}

// syncBuffer is a bytes.Buffer safe for the process's writes and our reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startKapi starts kapi with a fresh data dir and the extra args (for
// example "--in-memory"), waits until it is ready and stops it when the
// test ends.
func startKapi(t testing.TB, args ...string) *kapi {
	t.Helper()
	return startKapiIn(t, t.TempDir(), args...)
}

// startMemKapi starts an in-memory kapi, the usual fixture of a test.
func startMemKapi(t testing.TB) *kapi {
	t.Helper()
	return startKapi(t, "--in-memory")
}

// startKapiIn starts kapi on dataDir (which may hold a previous run's
// database) and the extra args.
func startKapiIn(t testing.TB, dataDir string, args ...string) *kapi {
	t.Helper()
	var lastErr error
	// The free port may be taken between our probe and kapi's listen; try
	// a few ports before giving up.
	for attempt := 0; attempt < 3; attempt++ {
		k, err := tryStart(t, dataDir, nil, args)
		if err == nil {
			return k
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting kapi: %v", lastErr)
	return nil
}

// startKapiAs is startKapiIn with kapi running as another user (cred).
func startKapiAs(t testing.TB, dataDir string, cred *syscall.Credential, args ...string) *kapi {
	t.Helper()
	k, err := tryStart(t, dataDir, cred, args)
	if err != nil {
		t.Fatalf("starting kapi: %v", err)
	}
	return k
}

func tryStart(t testing.TB, dataDir string, cred *syscall.Credential, args []string) (*kapi, error) {
	// kapi picks a free port itself (port 0) and names it in the
	// kubeconfig it writes, so parallel tests never race for a port. A
	// test may pin the address (to restart kapi where clients expect it).
	addr := "127.0.0.1:0"
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	k := &kapi{
		Kubeconfig: filepath.Join(dataDir, "kubeconfig"),
		DataDir:    dataDir,
		cacheDir:   filepath.Join(t.TempDir(), "kube-cache"),
		log:        &syncBuffer{},
		exited:     make(chan struct{}),
	}
	// A kubeconfig left by an earlier run in this data dir is not ours.
	if err := os.Remove(k.Kubeconfig); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	argv := append([]string{"--listen", addr, "--data-dir", dataDir, "--kubeconfig-out", k.Kubeconfig}, args...)
	k.cmd = exec.Command(kapiBinary, argv...)
	k.cmd.Stdout, k.cmd.Stderr = k.log, k.log
	if cred != nil {
		k.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := k.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		k.exitErr = k.cmd.Wait()
		close(k.exited)
	}()
	// kapi writes the kubeconfig once it listens.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig); err == nil {
			k.URL = cfg.Host
			break
		}
		select {
		case <-k.exited:
			return nil, fmt.Errorf("kapi exited before writing its kubeconfig: %v; log:\n%s", k.exitErr, k.log.String())
		default:
		}
		if time.Now().After(deadline) {
			k.kill()
			return nil, fmt.Errorf("kapi wrote no kubeconfig within 10s; log:\n%s", k.log.String())
		}
	}
	if err := k.waitReady(10 * time.Second); err != nil {
		k.kill()
		return nil, fmt.Errorf("%v; kapi log:\n%s", err, k.log.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kapi log (%s):\n%s", k.URL, tail(k.log.String(), 80))
		}
		k.Stop(t)
	})

	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", k.Kubeconfig, err)
	}
	if cfg.Host != k.URL {
		return nil, fmt.Errorf("kubeconfig server is %q, want %q", cfg.Host, k.URL)
	}
	// The tests issue many requests; client-side throttling only slows
	// them down.
	cfg.QPS, cfg.Burst = 1000, 1000
	k.Config = cfg
	if k.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if k.Ext, err = apiextensionsclientset.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if k.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return k, nil
}

// waitReady polls /readyz until it answers "ok".
func (k *kapi) waitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-k.exited:
			return fmt.Errorf("kapi exited before it was ready: %v", k.exitErr)
		default:
		}
		resp, err := client.Get(k.URL + "/readyz")
		if err == nil {
			body := readAll(resp)
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(body) == "ok" {
				return nil
			}
			last = fmt.Sprintf("%d %q", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("kapi not ready after %v (last /readyz: %s)", timeout, last)
}

// Stop sends SIGTERM and checks that kapi exits 0 within a few seconds.
// It is safe to call more than once.
func (k *kapi) Stop(t testing.TB) {
	t.Helper()
	k.stopOnce.Do(func() {
		select {
		case <-k.exited:
			t.Errorf("kapi exited on its own: %v; log:\n%s", k.exitErr, tail(k.log.String(), 40))
			return
		default:
		}
		if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
		}
		select {
		case <-k.exited:
			if k.exitErr != nil {
				t.Errorf("kapi exited with %v after SIGTERM; log:\n%s", k.exitErr, tail(k.log.String(), 40))
			}
		case <-time.After(5 * time.Second):
			k.kill()
			t.Errorf("kapi did not exit within 5s of SIGTERM; log:\n%s", tail(k.log.String(), 40))
		}
	})
}

func (k *kapi) kill() {
	_ = k.cmd.Process.Kill()
	<-k.exited
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// requireKubectl skips the test when kubectl is missing, except on CI
// where that is a failure.
func requireKubectl(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kubectl is not on PATH")
		}
		t.Skip("kubectl is not on PATH")
	}
}

// haveKubectl tells whether optional kubectl checks should run: when
// kubectl is on PATH, and always on CI (where its absence then fails).
func haveKubectl() bool {
	_, err := exec.LookPath("kubectl")
	return err == nil || os.Getenv("CI") != ""
}

// kubectl runs kubectl against this kapi (and only through its
// kubeconfig).
func (k *kapi) kubectl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return k.kubectlIn(t, "", args...)
}

// kubectlIn is kubectl with stdin.
func (k *kapi) kubectlIn(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	requireKubectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := append([]string{"--kubeconfig", k.Kubeconfig, "--cache-dir", k.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", argv...)
	// Only the --kubeconfig flag may choose the cluster.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err = cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("kubectl %s timed out", strings.Join(args, " ")))
	}
	return out.String(), errOut.String(), err
}

// mustKubectl runs kubectl and fails the test when it fails.
func (k *kapi) mustKubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, err := k.kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}
