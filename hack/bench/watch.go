package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watchStream is one watcher's view of the run.
type watchStream struct {
	resp    *http.Response
	seen    []bool
	unique  int
	dups    int
	other   int // events that are not the ADDED of a created object
	lat     []time.Duration
	allSeen chan struct{} // closed when every object has been seen
}

// watch: 100 watch streams on the Widgets of a namespace while one writer
// creates 200 Widgets a second there for 5 seconds. Delivery latency runs
// from sending a create to a watcher decoding its ADDED event.
func (b *bench) watch(ctx context.Context, k *kapiProc) error {
	const watchers, rate, seconds = 100, 200, 5
	const total = rate * seconds
	const ns = "bench-watch"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	body, err := k.listWidgets(ctx, ns, 1, "", "")
	if err != nil {
		return err
	}
	var list listPage
	if err := json.Unmarshal(body, &list); err != nil {
		return err
	}

	// Raw HTTP streams: each watcher decodes the events' type and name.
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	transport := &http.Transport{MaxIdleConnsPerHost: watchers}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	url := fmt.Sprintf("%s%s?watch=true&resourceVersion=%s", k.URL, widgetsPath(ns), list.Metadata.ResourceVersion)
	streams := make([]*watchStream, watchers)
	for w := range streams {
		req, _ := http.NewRequestWithContext(watchCtx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("watch: %s", resp.Status)
		}
		streams[w] = &watchStream{resp: resp, seen: make([]bool, total), allSeen: make(chan struct{})}
	}

	// sent[i] is when the writer sent the create of object i (unix ns).
	sent := make([]atomic.Int64, total)
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.resp.Body.Close()
			dec := json.NewDecoder(s.resp.Body)
			for {
				var ev struct {
					Type   string `json:"type"`
					Object struct {
						Metadata struct {
							Name string `json:"name"`
						} `json:"metadata"`
					} `json:"object"`
				}
				if err := dec.Decode(&ev); err != nil {
					return // the stream is closed when the run is over
				}
				now := time.Now()
				i, err := strconv.Atoi(strings.TrimPrefix(ev.Object.Metadata.Name, "watch-"))
				if ev.Type != "ADDED" || err != nil || i < 0 || i >= total || sent[i].Load() == 0 {
					s.other++
					continue
				}
				if s.seen[i] {
					s.dups++
					continue
				}
				s.seen[i] = true
				s.unique++
				s.lat = append(s.lat, now.Sub(time.Unix(0, sent[i].Load())))
				if s.unique == total {
					close(s.allSeen)
				}
			}
		}()
	}

	// One writer at a steady rate.
	var createLat []time.Duration
	var createErrs []error
	tick := time.NewTicker(time.Second / rate)
	cpu0, cpuErr0 := k.CPU()
	for i := 0; i < total; i++ {
		<-tick.C
		t0 := time.Now()
		sent[i].Store(t0.UnixNano())
		if _, err := k.createWidget(ctx, ns, fmt.Sprintf("watch-%05d", i), nil); err != nil {
			createErrs = append(createErrs, err)
			continue
		}
		createLat = append(createLat, time.Since(t0))
	}
	tick.Stop()
	cpu1, cpuErr1 := k.CPU()

	// Wait for every watcher to see every object (at most 10 s), and a
	// little longer for duplicates, then close the streams.
	timeout := time.After(10 * time.Second)
	for _, s := range streams {
		select {
		case <-s.allSeen:
		case <-timeout:
		}
	}
	time.Sleep(200 * time.Millisecond)
	stopWatches()
	wg.Wait()

	var lat []time.Duration
	lost, dups, other := 0, 0, 0
	for _, s := range streams {
		lat = append(lat, s.lat...)
		lost += total - len(createErrs) - s.unique
		dups += s.dups
		other += s.other
	}
	name := fmt.Sprintf("watch, %d watchers, 1 writer at %d creates/s for %d s", watchers, rate, seconds)
	b.r.add(name+": delivery p50", percentile(lat, 50), "ms")
	b.r.atMost(name+": delivery p99", percentile(lat, 99), "ms", 5)
	b.r.add(name+": the create alone p50", percentile(createLat, 50), "ms")
	b.r.add(name+": the create alone p99", percentile(createLat, 99), "ms")
	if err := errors.Join(cpuErr0, cpuErr1); b.r.check(name+": kapi CPU", err) {
		b.r.add(name+": kapi CPU per create (incl. fan-out)", ms(cpu1-cpu0)/float64(total), "ms")
	}
	b.r.atMost(name+": lost events", float64(lost), "events", 0)
	b.r.atMost(name+": duplicated events", float64(dups), "events", 0)
	if other > 0 {
		b.r.fail(name+": unexpected events", fmt.Errorf("%d events that are not the ADDED of a created object", other))
	}
	if len(createErrs) > 0 {
		b.r.fail(name+": creates", fmt.Errorf("%d of %d creates failed, first: %v", len(createErrs), total, createErrs[0]))
	}
	return nil
}
