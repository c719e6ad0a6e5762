package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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

// A watcher that stops reading is ended once it falls a buffer behind,
// even while blocked writing to it, so that the events it holds are freed
// (kube-apiserver closes an unresponsive watcher).
func TestStuckWatcherEnds(t *testing.T) {
	ts := newTestServer(t)
	const watching = `apiserver_longrunning_requests{component="apiserver",group="",resource="namespaces",scope="cluster",subresource="",verb="WATCH",version="v1"}`
	gauge := func() float64 {
		_, body := call(t, ts, "GET", "/metrics", "", "")
		return metricValues(body)[watching]
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	// Never read past this request.
	if _, err := io.WriteString(conn, "GET /api/v1/namespaces?watch=true HTTP/1.1\r\nHost: kapi\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); gauge() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not start")
		}
	}
	big := strings.Repeat("x", 32000)
	for i := range watchBuffer + 300 {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"stuck-%d","annotations":{"pad":%q}}}`, i, big)
		if code, out := call(t, ts, "POST", "/api/v1/namespaces", "application/json", body); code != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, code, out)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); gauge() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a watcher that stopped reading still runs after falling a buffer behind")
		}
	}
}
