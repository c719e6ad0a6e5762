package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
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
	_, err := encoder(&registry.Resource{}, obj)(1)
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Fatalf("encoding a %d-byte object: %v, want 413", maxObjectBytes, err)
	}
	small := &unstructured.Unstructured{Object: map[string]interface{}{"data": "x"}}
	if _, err := encoder(&registry.Resource{}, small)(1); err != nil {
		t.Fatal(err)
	}
}

// A CRD is measured against the stored-object limit as kube-apiserver
// stores it, as v1beta1 JSON: one copy of a schema its versions share.
// Versions with schemas of their own are stored one by one.
func TestCRDStoredSizeLimit(t *testing.T) {
	reg := registry.New()
	builtin.Register(reg)
	res, _ := reg.Get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
	crd := func(name string, sameSchemas bool) *unstructured.Unstructured {
		props := map[string]any{}
		for i := range 60 {
			props[fmt.Sprintf("field%02d", i)] = map[string]any{"type": "string", "description": strings.Repeat("a field of the widget. ", 8)}
		}
		var versions []any
		for i, v := range []string{"v1alpha1", "v1beta1", "v1"} {
			p := props
			if !sameSchemas {
				p = map[string]any{fmt.Sprintf("only%d", i): map[string]any{"type": "string"}}
				for k, v := range props {
					p[k] = v
				}
			}
			versions = append(versions, map[string]any{"name": v, "served": true, "storage": v == "v1",
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{"spec": map[string]any{"type": "object", "properties": p}}}}})
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets." + name},
			"spec":     map[string]any{"group": name, "scope": "Namespaced", "names": map[string]any{"plural": "widgets", "kind": "Widget"}, "versions": versions}}}
	}
	shared, own := crd("shared.example.com", true), crd("own.example.com", false)
	data, err := json.Marshal(shared.Object)
	if err != nil {
		t.Fatal(err)
	}
	// Over the limit as v1 JSON (three schemas), under it as v1beta1 (one).
	defer func(old int) { maxObjectBytes = old }(maxObjectBytes)
	maxObjectBytes = len(data) * 2 / 3
	if _, err := encoder(res, shared)(1); err != nil {
		t.Errorf("a CRD whose versions share a %d-byte schema, limit %d: %v", len(data)/3, maxObjectBytes, err)
	}
	if _, err := encoder(res, own)(1); !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("a CRD whose versions have schemas of their own, limit %d: %v, want 413", maxObjectBytes, err)
	}
}
