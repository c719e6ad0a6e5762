package server

import (
	"encoding/json"
	"runtime"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kapi-dev/kapi/server/unstructuredjson"
)

// encodeList renders a list as json.Marshal renders the map {apiVersion,
// items, kind, metadata}, the items encoded on every core.
func encodeList(apiVersion, kind string, lm metav1.ListMeta, items []*unstructured.Unstructured) (json.RawMessage, error) {
	encoded := make([][]byte, len(items))
	if err := onEveryCore(len(items), func(i int) (err error) {
		encoded[i], err = unstructuredjson.Marshal(items[i].Object)
		return err
	}); err != nil {
		return nil, err
	}
	head, err := json.Marshal(map[string]any{"apiVersion": apiVersion})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(map[string]any{"kind": kind, "metadata": lm})
	if err != nil {
		return nil, err
	}
	size := len(head) + len(tail) + len(items) + 16
	for _, e := range encoded {
		size += len(e)
	}
	out := make([]byte, 0, size)
	out = append(out, head[:len(head)-1]...) // {"apiVersion":"…"
	out = append(out, `,"items":[`...)
	for i, e := range encoded {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	out = append(out, "],"...)
	out = append(out, tail[1:]...) // "kind":"…","metadata":{…}}
	return out, nil
}

// onEveryCore runs fn(0)…fn(n-1) split across GOMAXPROCS goroutines (in
// this goroutine alone when n is small), and returns the first error.
func onEveryCore(n int, fn func(i int) error) error {
	workers := runtime.GOMAXPROCS(0)
	if n < 64 || workers == 1 {
		for i := 0; i < n; i++ {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for wkr := 0; wkr < workers; wkr++ {
		wg.Add(1)
		go func(wkr int) {
			defer wg.Done()
			for i := wkr * n / workers; i < (wkr+1)*n/workers; i++ {
				if err := fn(i); err != nil {
					errs[wkr] = err
					return
				}
			}
		}(wkr)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the earliest part's, as a loop would stop at it
		}
	}
	return nil
}
