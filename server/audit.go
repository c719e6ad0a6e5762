package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
)

// auditLog writes one audit.k8s.io/v1 Event per API resource request, at
// the Metadata level, as JSON lines: who did what to which object, the
// answer's code, and the annotations admission left (a policy's Audit
// action and auditAnnotations, webhooks' audit annotations).
type auditLog struct {
	mu *sync.Mutex // the server's: one line at a time
	w  io.Writer
}

// begin starts the audit event of a resource request.
func (l *auditLog) begin(r *http.Request, req *resourceRequest, verb string) *http.Request {
	ctx := audit.WithAuditContext(r.Context())
	ac := audit.AuditContextFrom(ctx)
	ac.RequestAuditConfig.Level = auditinternal.LevelMetadata
	ac.Event = auditinternal.Event{
		Level:                    auditinternal.LevelMetadata,
		AuditID:                  types.UID(r.Header.Get(auditIDHeader)), // logRequests sets it
		Stage:                    auditinternal.StageResponseComplete,
		RequestURI:               r.URL.RequestURI(),
		Verb:                     verb,
		User:                     authnv1.UserInfo{Username: adminUser.Name, Groups: adminUser.Groups},
		UserAgent:                r.UserAgent(),
		RequestReceivedTimestamp: metav1.NewMicroTime(time.Now()),
		ObjectRef: &auditinternal.ObjectReference{
			Resource: req.res.Plural, Namespace: req.namespace, Name: req.name,
			APIGroup: req.res.Group, APIVersion: req.version, Subresource: req.subresource,
		},
	}
	return r.WithContext(ctx)
}

// end writes the event of a request with its answer's code.
func (l *auditLog) end(ctx context.Context, code int) {
	ev := audit.AuditEventFrom(ctx)
	if ev == nil {
		return
	}
	ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	ev.ResponseStatus = &metav1.Status{Code: int32(code)}
	out := &auditv1.Event{}
	if err := auditv1.Convert_audit_Event_To_v1_Event(ev, out, nil); err != nil {
		return
	}
	out.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"}
	line, err := json.Marshal(out)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(line, '\n'))
}
