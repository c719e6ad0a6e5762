// Command bench measures kapi's performance figures (issue 9): start-up,
// memory, disk, throughput and latency per verb, LIST, watch delivery,
// admission overhead and the raw SQLite ceiling. It starts the kapi binary
// itself, each phase on a fresh data dir, drives it with client-go from the
// same machine, prints one table and writes the same figures as JSON.
//
//	go build -o bin/kapi . && go run ./hack/bench -kapi bin/kapi -json bench.json
//
// It exits non-zero when a figure could not be measured (a missed target
// is reported in the table, not an error).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// bench holds the run's settings and the figures later phases combine.
type bench struct {
	bin     string // the kapi binary
	floor   string // hack/libfloor's binary ("": not measured)
	tmp     string // parent of every data dir
	sync    string // --sync of the main phases
	objects int    // objects of the main phase (10,000)
	profDir string // where kapi's CPU profiles go ("": none taken)
	r       *report

	// Create rates by phase, for the shares of the SQLite ceiling.
	create1, create32 float64            // main phase, b.sync
	fresh32           map[string]float64 // fresh kapi per --sync mode
	// storedObject is a Widget as kapi serves it: the row size of the
	// ceiling.
	storedObject []byte
}

func main() { os.Exit(run()) }

// run runs the benchmark and returns the exit code.
func run() int {
	bin := flag.String("kapi", "bin/kapi", "the kapi binary to benchmark")
	floor := flag.String("libfloor", "", "hack/libfloor built: its idle RSS, the libraries' own, is reported beside kapi's")
	jsonOut := flag.String("json", "bench.json", "where to write the figures as JSON (empty: nowhere)")
	syncMode := flag.String("sync", "normal", "kapi's --sync mode for the main phases (kapi's default is normal); the other mode gets its own create figure")
	objects := flag.Int("objects", 10000, "objects created in the main phase (the issue's figures are for 10,000)")
	profDir := flag.String("cpuprofile", "", "a directory: take CPU profiles of kapi during the main and admission phases into it")
	only := flag.String("phases", "", "comma-separated phases to run, of start-up,many-crds,main,admission,fresh,compaction,ceiling (default all)")
	flag.Parse()
	if *syncMode != "full" && *syncMode != "normal" {
		fmt.Fprintln(os.Stderr, "bench: -sync must be full or normal")
		return 2
	}
	if *objects < 1000 {
		fmt.Fprintln(os.Stderr, "bench: -objects must be at least 1000")
		return 2
	}
	absBin, err := filepath.Abs(*bin)
	if err == nil {
		err = flushToDisk(absBin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: kapi binary:", err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "kapi-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	initClockTicks()

	b := &bench{bin: absBin, floor: *floor, tmp: tmp, sync: *syncMode, objects: *objects, profDir: *profDir, r: &report{}, fresh32: map[string]float64{}}
	start := time.Now()
	b.r.Header = header{
		Note:     "the load generator and kapi share this machine",
		Load:     "load: client-go's REST client (QPS and Burst 1e6) with JSON bodies the benchmark encodes; watchers: raw HTTP watch streams",
		CPUs:     runtime.NumCPU(),
		MemTotal: memTotal(),
		Go:       runtime.Version(),
		Date:     start.UTC().Format(time.RFC3339),
		Sync:     b.sync,
		Commit:   gitCommit(),
		LoadAvg:  []string{loadAvg()},
	}
	phases := []struct {
		id, name string
		run      func() error
	}{
		{"start-up", "start-up", b.startup},
		{"many-crds", "restarts with many CRDs", b.manyCRDs},
		{"main", "main phase", b.mainPhase},
		{"admission", "admission", b.admission},
		{"fresh", "fresh creates per --sync mode", b.freshCreates},
		{"compaction", "sustained updates", b.sustainedUpdates},
		{"ceiling", "SQLite ceiling", b.ceilings},
	}
	for _, p := range phases {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), p.id) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s (%s so far)\n", p.name, time.Since(start).Round(time.Second))
		if err := p.run(); err != nil {
			b.r.fail(p.name, err)
		}
	}
	b.r.Header.Duration = time.Since(start).Round(time.Second).String()
	b.r.Header.LoadAvg = append(b.r.Header.LoadAvg, loadAvg())

	fmt.Println()
	b.r.print(os.Stdout)
	if *jsonOut != "" {
		if err := b.r.writeJSON(*jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	if n := b.r.errors(); n > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d figure(s) with errors\n", n)
		return 1
	}
	return 0
}

// flushToDisk writes out what of the file is still only in memory: `make
// bench` has just built the binary, and starts timed while the kernel
// writes its 100 MB back would time that too. Then it drops the file's
// pages from the page cache, so that kapi maps its binary as read from
// disk, as a deployed binary is after a boot: a kapi started from the
// pages the linker has just written measured 20–25 MiB more of its binary
// resident once idle (68–70 against 45–46 MiB in all) than one started
// from the same file read back from disk.
func flushToDisk(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// kapiArgs are the flags of a kapi in the given --sync mode.
func kapiArgs(syncMode string) []string { return []string{"--sync=" + syncMode} }

// memTotal is MemTotal of /proc/meminfo, in GiB.
func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kib float64
			if _, err := fmt.Sscan(rest, &kib); err == nil {
				return fmt.Sprintf("%.1f GiB", kib/(1<<20))
			}
		}
	}
	return "unknown"
}

// loadAvg is the 1, 5 and 15 minute load averages of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// gitCommit names the checked-out commit, "" outside a git clone.
func gitCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// thousands writes n with thousands separators: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
