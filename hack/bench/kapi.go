package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
)

// kapiProc is one kapi process started by the benchmark, with a fresh data
// dir, and the clients that reach it.
type kapiProc struct {
	DataDir    string
	Kubeconfig string
	URL        string
	// Started is when the process was exec'd; Ready when /readyz first
	// answered 200.
	Started, Ready time.Time

	Client kubernetes.Interface
	Ext    apiextensionsclientset.Interface
	// REST sends requests with bodies we encode ourselves, so the load
	// generator spends little CPU of the machine it shares with kapi.
	REST rest.Interface

	cmd     *exec.Cmd
	log     *bytes.Buffer
	exited  chan struct{}
	exitErr error
}

// startKapi starts bin with a fresh data dir under parent and the extra
// args, and waits until /readyz answers 200. The readiness poll is tight (1
// ms) because the time to ready is one of the figures.
func startKapi(bin, parent string, args ...string) (*kapiProc, error) {
	dir, err := os.MkdirTemp(parent, "kapi-")
	if err != nil {
		return nil, err
	}
	return startKapiIn(bin, dir, args...)
}

// startKapiIn is startKapi on the data dir under dir, which may hold a
// stopped kapi's data.
func startKapiIn(bin, dir string, args ...string) (*kapiProc, error) {
	k := &kapiProc{
		DataDir:    filepath.Join(dir, "data"),
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		log:        &bytes.Buffer{},
		exited:     make(chan struct{}),
	}
	// The port is read from the kubeconfig kapi writes: not a stopped one's.
	if err := os.Remove(k.Kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	argv := append([]string{"--listen", "127.0.0.1:0", "--data-dir", k.DataDir, "--kubeconfig-out", k.Kubeconfig}, args...)
	k.cmd = exec.Command(bin, argv...)
	// kapi logs little at the default level; a bytes.Buffer is written
	// only by the exec package's copying goroutine, read after exit.
	k.cmd.Stdout, k.cmd.Stderr = k.log, k.log
	// kapi dies with the benchmark, even when it is killed.
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	k.Started = time.Now()
	if err := k.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		k.exitErr = k.cmd.Wait()
		close(k.exited)
	}()

	// The port is known once kapi writes its kubeconfig (it does so after
	// listening); then poll /readyz.
	deadline := k.Started.Add(30 * time.Second)
	for k.URL == "" {
		if data, err := os.ReadFile(k.Kubeconfig); err == nil {
			k.URL = serverURL(data)
		}
		if k.URL != "" {
			break
		}
		if err := k.waitTick(deadline, "its kubeconfig"); err != nil {
			return nil, err
		}
	}
	probe := &http.Client{Timeout: time.Second}
	for {
		resp, err := probe.Get(k.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				k.Ready = time.Now()
				break
			}
		}
		if err := k.waitTick(deadline, "/readyz 200"); err != nil {
			return nil, err
		}
	}
	probe.CloseIdleConnections()

	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		k.Stop()
		return nil, err
	}
	// No client-side throttling, and enough kept-alive connections for
	// every worker (client-go's default keeps 25 idle per host).
	cfg.QPS, cfg.Burst = 1e6, 1e6
	cfg.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	cfg.UserAgent = "kapi-bench"
	if k.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		k.Stop()
		return nil, err
	}
	if k.Ext, err = apiextensionsclientset.NewForConfig(cfg); err != nil {
		k.Stop()
		return nil, err
	}
	k.REST = k.Client.CoreV1().RESTClient()
	return k, nil
}

// waitTick sleeps a millisecond, or fails when kapi has exited or the
// deadline passed.
func (k *kapiProc) waitTick(deadline time.Time, what string) error {
	select {
	case <-k.exited:
		return fmt.Errorf("kapi exited (%v) before %s%s", k.exitErr, what, k.logTail())
	default:
	}
	if time.Now().After(deadline) {
		k.Stop()
		return fmt.Errorf("kapi: no %s within 30s", what)
	}
	time.Sleep(time.Millisecond)
	return nil
}

// serverURL is the cluster server named in a kubeconfig kapi wrote, "" if
// the file is incomplete.
func serverURL(kubeconfig []byte) string {
	for _, line := range strings.Split(string(kubeconfig), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "server: "); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// Stop sends SIGTERM and waits for kapi to exit (killing it after 15s). It
// reports an exit other than a clean one.
func (k *kapiProc) Stop() error {
	select {
	case <-k.exited:
		return fmt.Errorf("kapi had exited on its own: %v%s", k.exitErr, k.logTail())
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(15 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
		return errors.New("kapi did not exit within 15s of SIGTERM")
	}
	if k.exitErr != nil {
		return fmt.Errorf("kapi exited with %v after SIGTERM%s", k.exitErr, k.logTail())
	}
	return nil
}

// rss is kapi's resident memory (/proc/<pid>/status) in MiB: all of it
// (VmRSS), its anonymous part (heap, stacks) and its file-backed part (the
// pages of the binary itself that are mapped in).
type rss struct{ Total, Anon, File float64 }

func (k *kapiProc) RSSMiB() (rss, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", k.cmd.Process.Pid))
	if err != nil {
		return rss{}, err
	}
	return parseRSS(data)
}

// libraryFloor runs hack/libfloor's binary, which prints its own
// /proc/self/status lines of resident memory once idle.
func libraryFloor(bin string) (rss, error) {
	out, err := exec.Command(bin).Output()
	if err != nil {
		return rss{}, fmt.Errorf("%s: %w", bin, err)
	}
	return parseRSS(out)
}

// parseRSS reads VmRSS, RssAnon and RssFile from /proc/<pid>/status text.
func parseRSS(data []byte) (rss, error) {
	var r rss
	found := 0
	for _, line := range strings.Split(string(data), "\n") {
		for _, f := range []struct {
			prefix string
			dst    *float64
		}{{"VmRSS:", &r.Total}, {"RssAnon:", &r.Anon}, {"RssFile:", &r.File}} {
			if rest, ok := strings.CutPrefix(line, f.prefix); ok {
				kib, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
				if err != nil {
					return rss{}, err
				}
				*f.dst = kib / 1024
				found++
			}
		}
	}
	if found != 3 {
		return rss{}, errors.New("no VmRSS, RssAnon and RssFile in /proc status")
	}
	return r, nil
}

// CPU is the user plus system CPU time kapi has used so far (utime and
// stime of /proc/<pid>/stat).
func (k *kapiProc) CPU() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", k.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses:
	// state is the first, utime and stime are fields 14 and 15 of the line.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / time.Duration(clockTicks), nil
}

// DataDirMiB is the size of every file in the data dir (the database, its
// -wal and -shm), and of the -wal alone.
func (k *kapiProc) DataDirMiB() (total, wal float64, err error) {
	var all, walBytes int64
	err = filepath.WalkDir(k.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		all += info.Size()
		if strings.HasSuffix(path, "-wal") {
			walBytes += info.Size()
		}
		return nil
	})
	return float64(all) / (1 << 20), float64(walBytes) / (1 << 20), err
}

// clockTicks is the kernel's clock ticks per second (getconf CLK_TCK),
// the unit of the CPU times in /proc/<pid>/stat.
var clockTicks int64 = 100

func initClockTicks() {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return // 100 on every Linux we know of
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
		clockTicks = n
	}
}

// logTail is "; log:" and the last lines of kapi's output, once it has
// exited ("" if it wrote nothing).
func (k *kapiProc) logTail() string {
	parts := strings.Split(strings.TrimSpace(k.log.String()), "\n")
	if len(parts) > 20 {
		parts = parts[len(parts)-20:]
	}
	if out := strings.Join(parts, "\n"); out != "" {
		return "; log:\n" + out
	}
	return ""
}

// withTimeout is a context for one phase.
func withTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
