package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkWatchDelivery: 100 watchers on namespaces while one writer
// creates 200 namespaces a second for 5 seconds against a durable,
// file-backed kapi. Reports the time from sending a create to each
// watcher receiving its ADDED event (p50, p99), the create latency alone,
// and lost and duplicated events (both must be 0). Run with -benchtime=1x.
func BenchmarkWatchDelivery(b *testing.B) {
	const watchers, rate, seconds = 100, 200, 5
	for i := 0; i < b.N; i++ {
		k := startKapi(b)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		list, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var (
			mu      sync.Mutex
			sent    = map[string]time.Time{}
			got     []time.Duration
			dups    int
			wg      sync.WaitGroup
			total   = rate * seconds
			ready   sync.WaitGroup
			streams []*http.Response
		)
		ready.Add(watchers)
		for w := 0; w < watchers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, "GET", k.URL+"/api/v1/namespaces?watch=true&resourceVersion="+list.ResourceVersion, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					ready.Done()
					b.Error(err)
					return
				}
				mu.Lock()
				streams = append(streams, resp)
				mu.Unlock()
				ready.Done()
				seen := map[string]bool{}
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 1<<22)
				for len(seen) < total && sc.Scan() {
					now := time.Now()
					var ev struct {
						Object struct {
							Metadata metav1.ObjectMeta `json:"metadata"`
						} `json:"object"`
					}
					if json.Unmarshal(sc.Bytes(), &ev) != nil {
						continue
					}
					name := ev.Object.Metadata.Name
					mu.Lock()
					if seen[name] {
						dups++
					} else if t0, ok := sent[name]; ok {
						seen[name] = true
						got = append(got, now.Sub(t0))
					}
					mu.Unlock()
				}
			}()
		}
		ready.Wait()
		var writeLat []time.Duration
		tick := time.NewTicker(time.Second / rate)
		b.ResetTimer()
		for n := 0; n < total; n++ {
			<-tick.C
			name := fmt.Sprintf("bench-%05d", n)
			t0 := time.Now()
			mu.Lock()
			sent[name] = t0
			mu.Unlock()
			if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace(name), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			writeLat = append(writeLat, time.Since(t0))
		}
		tick.Stop()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		b.StopTimer()
		cancel()
		mu.Lock()
		for _, s := range streams {
			s.Body.Close()
		}
		lost := watchers*total - len(got)
		b.ReportMetric(percentile(got, 50), "p50-delivery-ms")
		b.ReportMetric(percentile(got, 99), "p99-delivery-ms")
		b.ReportMetric(percentile(writeLat, 50), "p50-create-ms")
		b.ReportMetric(percentile(writeLat, 99), "p99-create-ms")
		b.ReportMetric(float64(lost), "lost-events")
		b.ReportMetric(float64(dups), "dup-events")
		mu.Unlock()
		wg.Wait()
		k.Stop(b)
	}
}

// BenchmarkIdleWatcherMemory: kapi's resident memory per open, idle watch
// (1,000 watches on namespaces), read from /proc.
func BenchmarkIdleWatcherMemory(b *testing.B) {
	const watchers = 1000
	for i := 0; i < b.N; i++ {
		k := startKapi(b)
		before := rssKiB(b, k.cmd.Process.Pid)
		transport := &http.Transport{MaxIdleConnsPerHost: watchers, MaxConnsPerHost: 0}
		client := &http.Client{Transport: transport}
		var bodies []*http.Response
		for w := 0; w < watchers; w++ {
			resp, err := client.Get(k.URL + "/api/v1/namespaces?watch=true&resourceVersion=0")
			if err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, resp)
		}
		// Let the initial events and goroutines settle.
		time.Sleep(time.Second)
		after := rssKiB(b, k.cmd.Process.Pid)
		b.ReportMetric(float64(after-before)/watchers, "KiB/idle-watcher")
		b.ReportMetric(float64(before)/1024, "MiB-rss-before")
		b.ReportMetric(float64(after)/1024, "MiB-rss-after")
		for _, r := range bodies {
			r.Body.Close()
		}
		transport.CloseIdleConnections()
		k.Stop(b)
	}
}

func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := (len(s)*p + 99) / 100
	if idx > 0 {
		idx--
	}
	return float64(s[idx].Microseconds()) / 1000
}

func rssKiB(b testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
