package server

import (
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A webhook configuration's generation moves when an update's webhooks
// differ from the stored ones as kube-apiserver's strategy compares them
// (reflect.DeepEqual of the decoded object with the stored one): an empty
// list or map the update sends where the stored object has none (it is
// stored without it) is a change, every time it is sent; the object sent
// back as it was read is not.
func TestWebhookConfigurationGenerationOnEmptyLists(t *testing.T) {
	ts := newTestServer(t)
	const path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
	meta := func(body string) metav1.ObjectMeta {
		t.Helper()
		var obj struct{ Metadata metav1.ObjectMeta }
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return obj.Metadata
	}
	step := func(what, method, contentType, body string, wantGeneration int64) string {
		t.Helper()
		p := path + "/empties"
		if method == http.MethodPost {
			p = path
		}
		code, out := call(t, ts, method, p, contentType, body)
		if code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("%s: %d %s", what, code, out)
		}
		if got := meta(out).Generation; got != wantGeneration {
			t.Errorf("%s: generation %d, want %d\n%s", what, got, wantGeneration, out)
		}
		return out
	}
	const hook = `{"name":"a.example.com","clientConfig":{"url":"https://127.0.0.1:1/x"},"admissionReviewVersions":["v1"],"sideEffects":"None"`
	step("create", http.MethodPost, "application/json",
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"empties"}}`, 1)
	// kube-apiserver: webhooks [] is not the stored nil.
	step("merge patch webhooks []", http.MethodPatch, "application/merge-patch+json", `{"webhooks":[]}`, 2)
	step("merge patch webhooks [] again", http.MethodPatch, "application/merge-patch+json", `{"webhooks":[]}`, 3)
	step("add a webhook", http.MethodPatch, "application/merge-patch+json", `{"webhooks":[`+hook+`}]}`, 4)
	read := step("the same webhook with rules []", http.MethodPatch, "application/merge-patch+json", `{"webhooks":[`+hook+`,"rules":[]}]}`, 5)
	// Sent back as read: no change.
	step("PUT as read", http.MethodPut, "application/json", read, 5)
	// A label alone: no change of the webhooks.
	step("label", http.MethodPatch, "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`, 5)
	// An empty matchLabels in the selector the webhook was defaulted with.
	step("matchLabels {}", http.MethodPatch, "application/json-patch+json", `[{"op":"add","path":"/webhooks/0/namespaceSelector/matchLabels","value":{}}]`, 6)
}
