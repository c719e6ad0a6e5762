package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Writers racing on one object without a resourceVersion all succeed, as
// kube-apiserver's store retries them: merge patches to one object, and
// server-side applies of managers that create it together.
func TestConcurrentWritesWithoutPreconditions(t *testing.T) {
	ts := newTestServer(t)
	do := func(method, path, contentType, body string) (int, string, error) {
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data), nil
	}
	if code, body := call(t, ts, "POST", vwcPath, "application/json", vwcBody); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var wg sync.WaitGroup
	failures := make(chan string, 1000)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"w%d":"%d"}}}`, g, i)
				if code, body, err := do("PATCH", vwcPath+"/p", "application/merge-patch+json", patch); err != nil || code != http.StatusOK {
					failures <- fmt.Sprintf("merge patch: %d %v %.200s", code, err, body)
				}
			}
		}()
	}
	for n := range 10 {
		for m := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := fmt.Sprintf(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"race-%d","labels":{"m%d":"x"}}}`, n, m)
				code, body, err := do("PATCH", fmt.Sprintf("%s/race-%d?fieldManager=m%d", vwcPath, n, m), "application/apply-patch+yaml", cfg)
				if err != nil || (code != http.StatusOK && code != http.StatusCreated) {
					failures <- fmt.Sprintf("apply creating race-%d: %d %v %.200s", n, code, err, body)
				}
			}()
		}
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
}
