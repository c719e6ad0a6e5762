package server

import (
	"net/http"
	"testing"
	"time"
)

// The aggregated discovery document's ETag follows the served kinds: a
// client revalidating after a CRD is served gets the new document.
func TestAggregatedDiscoveryETagFollowsCRDs(t *testing.T) {
	ts := newTestServer(t)
	etag := func() (string, int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/apis", nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("ETag"), resp.StatusCode
	}
	before, code := etag()
	if code != http.StatusOK || before == "" {
		t.Fatalf("aggregated /apis: %d, ETag %q", code, before)
	}
	if code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", gvCRD("a.example.com", "first")); code != http.StatusCreated {
		t.Fatalf("create a CRD: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := call(t, ts, http.MethodGet, "/apis/a.example.com/v1/things", "", ""); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CRD's resource is not served after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if after, _ := etag(); after == before {
		t.Errorf("the ETag stayed %s after a CRD's resource was served", after)
	}
}
