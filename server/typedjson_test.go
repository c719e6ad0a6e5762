package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A built-in kind's object that does not fit its Go type (as a hand-edited
// database could hold) cannot be encoded as kube encodes it, in JSON field
// order or in protobuf: the answer is an InternalError Status, never a
// partial body.
func TestBuiltinObjectNotFittingItsGoType(t *testing.T) {
	bad := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "x"}, "spec": "not an object"}
	for _, c := range []struct {
		name string
		out  output
	}{
		{"JSON", output{builtin: true}},
		{"protobuf", output{builtin: true, protobuf: true}},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/x", nil)
		r.Header.Set("Accept", "application/json") // the error's form
		w := httptest.NewRecorder()
		writeObject(w, r, c.out, http.StatusOK, bad)
		var st metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusInternalServerError ||
			st.Reason != metav1.StatusReasonInternalError || !strings.Contains(st.Message, "spec") {
			t.Errorf("%s: %d %v %s, want a 500 InternalError naming spec", c.name, w.Code, err, w.Body)
		}
	}
	// The same object in the right shape encodes (the test's object is
	// what makes it fail).
	good := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "x"}}
	w := httptest.NewRecorder()
	writeObject(w, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/x", nil), output{builtin: true}, http.StatusOK, good)
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Body.String(), `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"`) {
		t.Errorf("a Namespace that fits: %d %s", w.Code, w.Body)
	}
}
