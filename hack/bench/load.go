package main

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// loadResult is what one run of operations measured.
type loadResult struct {
	Ops      int             // operations that succeeded
	Errors   int             // operations that failed
	FirstErr error           // the first failure
	Elapsed  time.Duration   // wall time of the whole run
	Lat      []time.Duration // latency of each successful operation
	CPU      time.Duration   // kapi's CPU time during the run
	SelfCPU  time.Duration   // the load generator's CPU time during the run
}

// PerSec is the throughput of successful operations.
func (r loadResult) PerSec() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// CPUPerOpMs is kapi's CPU time per successful operation, in ms.
func (r loadResult) CPUPerOpMs() float64 {
	if r.Ops == 0 {
		return 0
	}
	return ms(r.CPU) / float64(r.Ops)
}

// SelfCPUPerOpMs is the load generator's CPU time per successful
// operation, in ms: what the shared machine spent on the client side.
func (r loadResult) SelfCPUPerOpMs() float64 {
	if r.Ops == 0 {
		return 0
	}
	return ms(r.SelfCPU) / float64(r.Ops)
}

// Err summarises the failures, nil if there were none.
func (r loadResult) Err() error {
	if r.Errors == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d failed, first: %v", r.Errors, r.Errors+r.Ops, r.FirstErr)
}

// runLoad runs op(0) … op(n-1) on `workers` goroutines, each taking the
// next index, and stops early once maxDur has passed (0: no limit). It
// records each operation's latency and kapi's CPU time over the run.
func runLoad(k *kapiProc, n, workers int, maxDur time.Duration, op func(i int) error) loadResult {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		res      loadResult
		wg       sync.WaitGroup
		deadline time.Time
	)
	cpu0, cpuErr := k.CPU()
	self0 := selfCPU()
	start := time.Now()
	if maxDur > 0 {
		deadline = start.Add(maxDur)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var errs int
			var firstErr error
			for {
				i := int(next.Add(1) - 1)
				if i >= n || (maxDur > 0 && time.Now().After(deadline)) {
					break
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.Lat = append(res.Lat, lat...)
			res.Errors += errs
			if res.FirstErr == nil {
				res.FirstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Ops = len(res.Lat)
	res.SelfCPU = selfCPU() - self0
	cpu1, err := k.CPU()
	if cpuErr == nil && err == nil {
		res.CPU = cpu1 - cpu0
	} else {
		res.Errors++
		if res.FirstErr == nil {
			res.FirstErr = fmt.Errorf("reading kapi's CPU time: %w", errors.Join(cpuErr, err))
		}
	}
	return res
}

// percentile is the nearest-rank p-th percentile of ds, in ms.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s))+0.999999) - 1
	rank = max(0, min(rank, len(s)-1))
	return ms(s[rank])
}

// median of the durations, in ms.
func median(ds []time.Duration) float64 { return percentile(ds, 50) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// selfCPU is the user plus system CPU time of this process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
