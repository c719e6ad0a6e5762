package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// auditLog writes one audit.k8s.io/v1 Event per API resource request, at
// the Metadata level, as JSON lines: who did what to which object, the
// answer's code, and the annotations admission left (a policy's Audit
// action and auditAnnotations, webhooks' audit annotations).
type auditLog struct {
	mu *sync.Mutex // the server's: one line at a time
	w  io.Writer
}

// begin starts the audit event of a resource request: its metadata as
// kube-apiserver's audit filter logs them (source IPs, the user agent cut
// at 1 KiB, the user, the object's reference) and its authorizer's
// decision (every client is an admin, system:masters).
func (l *auditLog) begin(r *http.Request, req *resourceRequest, verb string) *http.Request {
	ctx := audit.WithAuditContext(r.Context())
	ac := audit.AuditContextFrom(ctx)
	ac.RequestAuditConfig.Level = auditinternal.LevelMetadata
	ac.Event = auditinternal.Event{
		AuditID: types.UID(r.Header.Get(auditIDHeader)), // logRequests sets it
		Stage:   auditinternal.StageResponseComplete,
	}
	audit.LogRequestMetadata(ctx, r, time.Now(), auditinternal.LevelMetadata, authorizer.AttributesRecord{
		User: req.actor(), Verb: verb, ResourceRequest: true,
		Namespace: req.namespace, Name: req.name, APIGroup: req.res.Group, APIVersion: req.version,
		Resource: req.res.Plural, Subresource: req.subresource,
	})
	audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "allow", "authorization.k8s.io/reason", "")
	return r.WithContext(ctx)
}

// logRequestObject completes the audit event's object reference from a
// decoded create or update body, as kube-apiserver's handlers log it (a
// generated name is not known yet).
func logRequestObject(ctx context.Context, req *resourceRequest, obj runtime.Object) {
	gvr := schema.GroupVersionResource{Group: req.res.Group, Version: req.version, Resource: req.res.Plural}
	audit.LogRequestObject(ctx, obj, gvr.GroupVersion(), gvr, req.subresource, nil) // Metadata: nothing is encoded
}

// end writes the event of a request with its answer: the Status of an
// error (or of a deletion) as the response writer logged it, else the
// answer's code.
func (l *auditLog) end(ctx context.Context, code int) {
	ev := audit.AuditEventFrom(ctx)
	if ev == nil {
		return
	}
	ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	if ev.ResponseStatus == nil {
		ev.ResponseStatus = &metav1.Status{Code: int32(code)}
	}
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
