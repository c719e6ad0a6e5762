package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
)

// profileWindow is the length of each CPU profile taken of kapi: a phase's
// last window, cut short when the phase ends, is not kept.
const profileWindow = 5 // seconds

// profileKapi takes CPU profiles of k (its /debug/pprof/profile), one
// window after another, into dir as <name>-<n>.pprof until the returned
// function is called. With dir "" it does nothing. `go tool pprof -proto
// dir/*.pprof` merges them.
func profileKapi(k *kapiProc, dir, name string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			path := filepath.Join(dir, fmt.Sprintf("%s-%03d.pprof", name, n))
			if err := fetchProfile(ctx, k.URL, path); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
				return
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// fetchProfile writes one CPU profile window of the kapi at url to path.
func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, profileWindow), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
