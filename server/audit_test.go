package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// lockedBuffer is an audit log the test reads while the server writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) events(t *testing.T) []auditv1.Event {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []auditv1.Event
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var ev auditv1.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// The audit events carry what kube-apiserver's audit filter and handlers
// log at the Metadata level: source IPs, the authorizer's decision, an
// error's Status, the object a create or update body names (a generated
// name is not known yet), a HEAD read as a get.
func TestAuditEventsAsKubeLogsThem(t *testing.T) {
	log := &lockedBuffer{}
	ts := newTestServerWith(t, Options{AuditLog: log})
	call(t, ts, http.MethodGet, "/api/v1/namespaces/missing", "", "")
	call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"name":"default"}}`)
	call(t, ts, http.MethodPost, nsPath, "application/json", `{"metadata":{"generateName":"gen-"}}`)
	call(t, ts, http.MethodHead, "/api/v1/namespaces/default", "", "")
	evs := log.events(t)
	if len(evs) != 4 {
		t.Fatalf("%d audit events, want 4", len(evs))
	}
	for _, ev := range evs {
		if len(ev.SourceIPs) != 1 || ev.SourceIPs[0] != "127.0.0.1" || ev.Annotations["authorization.k8s.io/decision"] != "allow" {
			t.Errorf("%s %s: sourceIPs %v, annotations %v, want 127.0.0.1 and the authorizer's allow", ev.Verb, ev.RequestURI, ev.SourceIPs, ev.Annotations)
		}
	}
	if st := evs[0].ResponseStatus; st == nil || st.Code != 404 || st.Reason != "NotFound" || st.Message != `namespaces "missing" not found` {
		t.Errorf("a GET of a missing namespace: responseStatus %+v, want the NotFound Status", st)
	}
	if ref := evs[1].ObjectRef; ref == nil || ref.Name != "default" || evs[1].ResponseStatus.Reason != "AlreadyExists" {
		t.Errorf("a create of a taken name: objectRef %+v, responseStatus %+v, want the body's name and AlreadyExists", ref, evs[1].ResponseStatus)
	}
	if ref := evs[2].ObjectRef; ref == nil || ref.Name != "" || evs[2].ResponseStatus.Code != 201 {
		t.Errorf("a create with generateName: objectRef %+v, responseStatus %+v, want no name and 201", ref, evs[2].ResponseStatus)
	}
	if evs[3].Verb != "get" {
		t.Errorf("HEAD of a namespace: verb %q, want get", evs[3].Verb)
	}
}
