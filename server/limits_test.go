package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Over the in-flight bound, a request is answered 429 with Retry-After at
// once; a watch is not counted; once the slot frees, requests pass again.
func TestInflightLimit(t *testing.T) {
	ts := newTestServerWith(t, Options{MaxRequestsInflight: 1})
	const dropped = `apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"}`
	_, metricsBefore := call(t, ts, "GET", "/metrics", "", "")
	// A list for a resourceVersion the store has not reached holds its
	// slot for a few seconds.
	held := make(chan int, 1)
	hold := func() {
		go func() {
			code, _ := call(t, ts, "GET", "/api/v1/namespaces?resourceVersion=999999&resourceVersionMatch=NotOlderThan", "", "")
			held <- code
		}()
	}
	hold()
	deadline := time.Now().Add(10 * time.Second)
	var code int
	var body string
	for time.Now().Before(deadline) {
		select {
		case c := <-held:
			// The holder lost the race for the slot to a probe: again.
			if c != http.StatusTooManyRequests {
				t.Fatalf("the holding list answered %d", c)
			}
			hold()
		default:
		}
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/namespaces", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if code = resp.StatusCode; code == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") != "1" {
				t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != http.StatusTooManyRequests {
		t.Fatalf("second request while the slot is held: %d, want 429", code)
	}
	_, body = call(t, ts, "GET", "/api/v1/namespaces?watch=true&timeoutSeconds=1", "", "")
	if strings.Contains(body, "TooManyRequests") {
		t.Errorf("a watch was refused: %s", body)
	}
	if c := <-held; c != http.StatusGatewayTimeout {
		t.Errorf("the held list answered %d, want 504", c)
	}
	if code, _ := call(t, ts, "GET", "/api/v1/namespaces", "", ""); code != http.StatusOK {
		t.Errorf("after the slot freed: %d", code)
	}
	// Counted as kube-apiserver counts a request it drops.
	_, metricsAfter := call(t, ts, "GET", "/metrics", "", "")
	if grew := metricValues(metricsAfter)[dropped] - metricValues(metricsBefore)[dropped]; grew < 1 {
		t.Errorf("%s grew by %v, want the 429s counted", dropped, grew)
	}
}

func TestStoredObjectSizeLimit(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"data": strings.Repeat("x", maxObjectBytes)}}
	_, err := encoder(obj)(1)
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Fatalf("encoding a %d-byte object: %v, want 413", maxObjectBytes, err)
	}
	small := &unstructured.Unstructured{Object: map[string]interface{}{"data": "x"}}
	if _, err := encoder(small)(1); err != nil {
		t.Fatal(err)
	}
}
