package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	compbasemetrics "k8s.io/component-base/metrics"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
	"github.com/kapi-dev/kapi/storage"
)

const (
	// watchEndGrace is how long an ended watch may take to return before
	// a write blocked on its client is cut.
	watchEndGrace = time.Second
	// watchBuffer is how many events a watcher may fall behind before it
	// is closed (it then re-watches from its last resourceVersion).
	watchBuffer = 1024
)

// watchEvent is one frame of a watch stream.
type watchEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

// watch serves ?watch=true and the /watch/ paths: the changes of one
// resource as a JSON stream of events, from the requested resourceVersion.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := parseListOptions(r, true)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// A watch-list streams a list's items, which a Table cannot carry:
	// kube-apiserver takes the next form the client accepts.
	forms := []string{"Table", "PartialObjectMetadata"}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks {
		forms = forms[1:]
	}
	out, err := negotiate(r, hasProtobuf(req.res), forms...)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if _, err := parseResourceVersion(opts.ResourceVersion); err != nil {
		// kube-apiserver's watch cache refuses it before the stream
		// starts, and the error is no Status: a 500 with its message.
		writeError(w, r, err)
		return
	}
	if req.name != "" {
		// A watch of one object takes no field selector but its name's, as
		// kube-apiserver's.
		if opts.FieldSelector == nil || opts.FieldSelector.Empty() {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", req.name)
		} else if selected, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); !ok || selected != req.name {
			writeError(w, r, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name"))
			return
		}
	}
	sel, err := newSelection(req.res, req.version, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// As kube-apiserver's watch handler, once the watch is set up and
	// before its stream starts: a Table's options are checked (a 400, not
	// an ERROR event in the stream), then the media type must have a
	// stream form, which YAML has not (a 406 naming the stream types).
	if out.as == "Table" {
		if _, err := tableOptions(r); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if out.yaml {
		writeError(w, r, notAcceptableStream())
		return
	}
	// As kube-apiserver: timeoutSeconds, or else a random time between
	// one and two --min-request-timeout; 0 (no --min-request-timeout) is
	// a watch that does not time out.
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if timeout == 0 {
		timeout = time.Duration(float64(s.opts.MinRequestTimeout) * (1 + rand.Float64()))
	}
	if wsstream.IsWebSocketRequest(r) {
		// As kube-apiserver's watch: over a WebSocket (a browser's, or
		// one through kubectl proxy), each event is a message: a text one
		// of the event's JSON line, or a binary one of its protobuf.
		websocket.Handler(func(ws *websocket.Conn) {
			ws.PayloadType = websocket.TextFrame
			if out.protobuf {
				ws.PayloadType = websocket.BinaryFrame
			}
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			go func() {
				// The client sends nothing: its reads end when it goes.
				_, _ = io.Copy(io.Discard, ws)
				cancel()
			}()
			if timeout >= 0 {
				s.streamWatch(ctx, webSocketFrames{ws}, r, req, out, sel, opts, timeout)
			}
		}).ServeHTTP(w, r)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, r, apierrors.NewInternalError(errors.New("streaming is not supported")))
		return
	}
	frames := &responseFrames{w: w, flusher: flusher, contentType: "application/json"}
	if out.protobuf {
		// Each event's protobuf after its length, as kube-apiserver's
		// protobuf stream frames them.
		frames.contentType = protobufMediaType + ";stream=watch"
		frames.framer = protobuf.LengthDelimitedFramer.NewFrameWriter(w)
	}
	if timeout < 0 {
		// Already past its deadline: kube-apiserver's watch ends at once.
		w.Header().Set("Content-Type", frames.contentType)
		w.WriteHeader(http.StatusOK)
		return
	}
	s.streamWatch(r.Context(), frames, r, req, out, sel, opts, timeout)
}

// watchFrames is where a watch's frames (one event each: its JSON line,
// or its protobuf) go.
type watchFrames interface {
	// begin starts the stream, once the watch is subscribed.
	begin()
	write(frame []byte) error
	// cut ends a write blocked on a client that stopped reading, and
	// the writes after it.
	cut()
}

// responseFrames are the chunks of a streamed response body.
type responseFrames struct {
	w           http.ResponseWriter
	flusher     http.Flusher
	contentType string
	// framer, when set, writes each frame after its length.
	framer io.Writer
}

func (f *responseFrames) begin() {
	f.w.Header().Set("Content-Type", f.contentType)
	f.w.WriteHeader(http.StatusOK)
	f.flusher.Flush()
}

func (f *responseFrames) write(frame []byte) error {
	to := io.Writer(f.w)
	if f.framer != nil {
		to = f.framer
	}
	if _, err := to.Write(frame); err != nil {
		return err
	}
	f.flusher.Flush()
	return nil
}

func (f *responseFrames) cut() { _ = http.NewResponseController(f.w).SetWriteDeadline(time.Now()) }

// webSocketFrames are a WebSocket's messages.
type webSocketFrames struct{ ws *websocket.Conn }

func (f webSocketFrames) begin() {} // the handshake did

func (f webSocketFrames) write(frame []byte) error {
	_, err := f.ws.Write(frame)
	return err
}

func (f webSocketFrames) cut() { _ = f.ws.SetWriteDeadline(time.Now()) }

// streamWatch sends the watch's events to frames until the watch ends:
// its timeout, the client going, the server stopping, the resource's CRD
// changing, or the client falling too far behind.
func (s *Server) streamWatch(parent context.Context, frames watchFrames, r *http.Request, req *resourceRequest, out output, sel *selection, opts *metainternalversion.ListOptions, timeout time.Duration) {
	var ctx context.Context
	var cancel context.CancelFunc
	if timeout == 0 { // a watch that does not time out
		ctx, cancel = context.WithCancel(parent)
	} else {
		ctx, cancel = context.WithTimeout(parent, timeout)
	}
	defer cancel()

	// Subscribe before reading the start state, so no write falls between.
	// Pointers keep an idle watcher's buffer small; the event they point
	// at is shared with the other watchers of the write.
	events := make(chan *sharedEvent, watchBuffer)
	overflow := make(chan struct{})
	resource := req.res.StorageResource()
	subRev, unsubscribe := s.store.SubscribeAt(func(ev storage.Event) {
		if ev.Object.Resource != resource {
			return
		}
		select {
		case events <- s.published.share(ev):
		default:
			select {
			case <-overflow:
			default:
				close(overflow)
				// A client that stopped reading holds the watch in a
				// write: end that write now, so that the events it pins
				// are freed, as kube-apiserver closes an unresponsive
				// watcher.
				frames.cut()
			}
		}
	})
	defer unsubscribe()

	// A write blocked on a client that stopped reading must not outlive
	// the watch or hold up shutdown: end it with a deadline. A watch that
	// is not blocked returns at once and ends its stream cleanly (the
	// final chunk), as kube-apiserver's does at timeoutSeconds.
	done, unblocked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(unblocked)
		select {
		case <-done:
			return
		case <-ctx.Done():
		case <-s.stopping:
		}
		select {
		case <-done:
		case <-time.After(watchEndGrace):
			frames.cut()
		}
	}()
	defer func() { close(done); <-unblocked }()

	ww := newWatchWriter(s, frames, r, req, out, sel)
	frames.begin()

	last, err := s.watchStart(ctx, ww, opts, subRev)
	if errors.Is(err, errWatchEnded) {
		return
	}
	if err != nil {
		ww.sendError(err)
		return
	}
	// A CRD's change or deletion ends the watches of its resource, as
	// kube-apiserver's: clients watch again, through what is served now.
	retired := s.reg.Retired(req.res)
	// Bookmarks come every BookmarkInterval and 2s before the watch's
	// deadline (if it has one), so the client resumes from there, as
	// kube-apiserver's watch cache schedules them.
	deadline := time.Now().Add(timeout)
	nextBookmark := func() <-chan time.Time {
		if !opts.AllowWatchBookmarks {
			return nil
		}
		now := time.Now()
		at := now.Add(s.opts.BookmarkInterval)
		if beforeEnd := deadline.Add(-2 * time.Second); timeout != 0 && beforeEnd.Before(at) {
			at = beforeEnd
		}
		if at.Before(now) {
			return nil
		}
		return time.After(at.Sub(now))
	}
	bookmarks := nextBookmark()
	send := func(ev *sharedEvent) bool {
		if ev.ev.Object.Rev <= last {
			return true
		}
		last = ev.ev.Object.Rev
		return ww.change(ev)
	}
	// drain sends the events queued now; false when the stream ended.
	drain := func() bool {
		for {
			select {
			case ev := <-events:
				if !send(ev) {
					return false
				}
			default:
				return true
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			return
		case <-retired:
			// What was queued before the CRD changed is sent first (its
			// last resources' deletions, say): the select may have picked
			// the retirement over them.
			drain()
			return
		case <-overflow:
			// Too slow: close the stream; the client re-watches from the
			// last resourceVersion it saw.
			return
		case <-bookmarks:
			// A bookmark says every change up to its revision was sent
			// (a client resumes from it): the revision is read first,
			// when every event up to it is queued (the store publishes
			// a commit before its revision shows), then what is queued
			// is sent, then the bookmark.
			rev := s.store.CurrentRev()
			if !drain() {
				return
			}
			select {
			case <-overflow:
				return // events were dropped: no bookmark may pass them
			default:
			}
			if !ww.bookmark(max(rev, last), false) {
				return
			}
			bookmarks = nextBookmark()
		case ev := <-events:
			if !send(ev) {
				return
			}
		}
	}
}

// errWatchEnded: the stream is over (the client left, or an event could
// not be sent and an ERROR event said so); nothing more is to be written.
var errWatchEnded = errors.New("the watch ended")

// watchStart sends what precedes the live events: the current state as
// ADDED events, or the changes after the requested resourceVersion. It
// returns the revision the live events continue after.
func (s *Server) watchStart(ctx context.Context, ww *watchWriter, opts *metainternalversion.ListOptions, subRev int64) (int64, error) {
	rv := opts.ResourceVersion
	initial := rv == "" || rv == "0"
	if opts.SendInitialEvents != nil {
		initial = *opts.SendInitialEvents
		if !initial && (rv == "" || rv == "0") {
			// No initial state: changes from now on.
			return subRev, nil
		}
	}
	if initial {
		// The initial state is not older than the resourceVersion asked
		// for: wait for it, as kube-apiserver's watch cache waits (then a
		// 504 ERROR event).
		if err := s.waitForRV(ctx, rv); err != nil {
			return 0, err
		}
		items, lm, err := s.listObjects(ctx, ww.req.res, ww.req.version, ww.req.namespace, &metainternalversion.ListOptions{
			LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		})
		if err != nil {
			return 0, err
		}
		for _, obj := range items {
			if !ww.send("ADDED", obj) {
				return 0, errWatchEnded
			}
		}
		rev, _ := strconv.ParseInt(lm.ResourceVersion, 10, 64)
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks {
			if !ww.bookmark(rev, true) {
				return 0, errWatchEnded
			}
		}
		return rev, nil
	}
	from, err := parseResourceVersion(rv)
	if err != nil {
		return 0, err // checked before the stream started
	}
	// Replay the changelog up to where the subscription took over.
	for from < subRev {
		changes, err := s.store.Changes(ctx, ww.req.res.StorageResource(), from, 500)
		if errors.Is(err, storage.ErrCompacted) {
			compacted, _ := s.store.CompactedRev(ctx)
			return 0, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, compacted))
		}
		if err != nil {
			return 0, err
		}
		if len(changes) == 0 {
			break
		}
		for _, ev := range changes {
			if ev.Object.Rev > subRev {
				return from, nil
			}
			from = ev.Object.Rev
			// A replayed event is this watcher's own: not shared.
			if !ww.change(newSharedEvent(ev)) {
				return 0, errWatchEnded
			}
		}
	}
	return from, nil
}

// watchWriter writes the events of one watch.
type watchWriter struct {
	s      *Server
	frames watchFrames
	r      *http.Request
	req    *resourceRequest
	out    output
	sel    *selection
	// shape is the form this watcher's objects take, for sharing their
	// encoding with the other watchers of an event; shareable is false when
	// the form cannot be shared (invalid table options: each watcher then
	// fails on its own, as before).
	shape     watchShape
	shareable bool
	// buf is reused for the frames of the events.
	buf []byte
	// sent counts the events sent: the watch events metric of the
	// watch's group, version and kind, looked up at the first event.
	sent compbasemetrics.CounterMetric
}

// countEvent counts one event sent to the client.
func (ww *watchWriter) countEvent() {
	if ww.sent == nil {
		ww.sent = apimetrics.WatchEvents.WithContext(ww.r.Context()).WithLabelValues(ww.req.res.Group, ww.req.version, ww.req.res.Kind)
	}
	ww.sent.Inc()
}

func newWatchWriter(s *Server, frames watchFrames, r *http.Request, req *resourceRequest, out output, sel *selection) *watchWriter {
	ww := &watchWriter{s: s, frames: frames, r: r, req: req, out: out, sel: sel, shareable: true}
	ww.shape = watchShape{res: req.res, version: req.version, as: out.as, asVersion: out.version, protobuf: out.protobuf}
	if out.as == "Table" {
		// What s.table reads from the request: the only part of it that
		// shapes a Table beyond the fields above.
		var opts metav1.TableOptions
		if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
			ww.shareable = false
		} else if errs := metav1validation.ValidateTableOptions(&opts); len(errs) > 0 {
			ww.shareable = false
		}
		ww.shape.noHeaders, ww.shape.includeObject = opts.NoHeaders, opts.IncludeObject
	}
	return ww
}

// watchShape is everything that decides how an object is rendered for a
// watcher: the resource (its strategy converts, its printer makes Tables),
// the requested version, and the negotiated output form. Watchers with the
// same shape get the same bytes for the same object.
type watchShape struct {
	res           *registry.Resource
	version       string
	as, asVersion string
	protobuf      bool
	noHeaders     bool
	includeObject metav1.IncludeObjectPolicy
}

// sharedEvent is one committed write as every watcher of it sees it. Its
// decoded states and its renderings are computed once, by the first
// watcher that needs them, and reused by the others: a write costs one
// decode and one encode per shape instead of one per watcher. Everything
// it hands out is read-only: the decoded objects are only matched against
// selectors, and renderings start from a deep copy.
type sharedEvent struct {
	ev storage.Event

	objOnce sync.Once
	obj     *unstructured.Unstructured
	objErr  error

	oldOnce sync.Once
	old     *unstructured.Unstructured

	mu      sync.Mutex
	renders map[renderKey]*rendering
}

// renderKey names one rendering of an event: its new state (its final
// one for a deletion) or its previous state, in one shape.
type renderKey struct {
	shape watchShape
	old   bool
}

// rendering is the JSON of an event's object in one shape, or the error
// that rendering it gave.
type rendering struct {
	once sync.Once
	data []byte
	err  error
}

func newSharedEvent(ev storage.Event) *sharedEvent {
	return &sharedEvent{ev: ev}
}

// lastPublished is the shared form of the latest write fanned out to the
// watchers. The store hands a write to all its subscribers in turn, before
// the next write (under its writer lock), so the first watcher of a write
// puts it here and the others of the same write find it: one sharedEvent
// per write, with no cache to bound (only the latest is kept). The match is
// on the event's whole content, so a shared event is always one equal to
// the watcher's own; bytes.Equal returns at once on the Data slice the
// store gives every subscriber.
type lastPublished struct {
	mu sync.Mutex
	ev *sharedEvent
}

func (p *lastPublished) share(ev storage.Event) *sharedEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	if se := p.ev; se != nil && sameEvent(se.ev, ev) {
		return se
	}
	se := newSharedEvent(ev)
	p.ev = se
	return se
}

func sameEvent(a, b storage.Event) bool {
	return a.Op == b.Op && a.Object.Key == b.Object.Key && a.Object.Rev == b.Object.Rev && a.PrevRev == b.PrevRev &&
		(a.Object.Data == nil) == (b.Object.Data == nil) && bytes.Equal(a.Object.Data, b.Object.Data) &&
		(a.PrevData == nil) == (b.PrevData == nil) && bytes.Equal(a.PrevData, b.PrevData)
}

// object is the event's object, decoded once; callers must not modify it.
func (se *sharedEvent) object() (*unstructured.Unstructured, error) {
	se.objOnce.Do(func() {
		se.obj, se.objErr = decodeStored(&se.ev.Object)
	})
	return se.obj, se.objErr
}

// previous is the object's previous state (nil if none, or not
// decodable), decoded once; callers must not modify it.
func (se *sharedEvent) previous() *unstructured.Unstructured {
	se.oldOnce.Do(func() {
		if se.ev.PrevData != nil && se.ev.Op != storage.OpAdded {
			se.old, _ = decodeStored(&storage.Object{Key: se.ev.Object.Key, Data: se.ev.PrevData})
		}
	})
	return se.old
}

// render returns the JSON of the event's object (old: its previous state)
// as ww's shape renders it, computing it once per shape. A deletion and a
// previous state carry the event's revision, as kube-apiserver sends them.
func (se *sharedEvent) render(ww *watchWriter, old bool) ([]byte, error) {
	encode := func() ([]byte, error) {
		src, err := se.object()
		if old {
			src, err = se.previous(), nil
		}
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if src == nil {
			return nil, apierrors.NewInternalError(errors.New("the event has no previous state"))
		}
		// Convert works in place: on a copy, the shared object stays as is.
		obj := src.DeepCopy()
		if old || se.ev.Op == storage.OpDeleted {
			obj.SetResourceVersion(strconv.FormatInt(se.ev.Object.Rev, 10))
		}
		return ww.encode(obj)
	}
	if !ww.shareable {
		return encode()
	}
	key := renderKey{shape: ww.shape, old: old}
	se.mu.Lock()
	if se.renders == nil {
		se.renders = map[renderKey]*rendering{}
	}
	rd := se.renders[key]
	if rd == nil {
		rd = &rendering{}
		se.renders[key] = rd
	}
	se.mu.Unlock()
	rd.once.Do(func() {
		// Should encode panic, the watchers that wait on it fail too.
		rd.err = apierrors.NewInternalError(errors.New("rendering the event failed"))
		rd.data, rd.err = encode()
	})
	return rd.data, rd.err
}

// change sends a committed write as the event this watcher sees: a change
// that moves an object into or out of the selection is ADDED or DELETED.
func (ww *watchWriter) change(se *sharedEvent) bool {
	ev := &se.ev
	if ww.req.namespace != "" && ev.Object.Namespace != ww.req.namespace {
		return true
	}
	obj, err := se.object()
	if err != nil {
		return ww.sendError(apierrors.NewInternalError(err))
	}
	// An empty selection matches everything: no need to look.
	matches, oldMatches := true, true
	old := se.previous()
	if !ww.sel.empty() {
		if matches, err = ww.sel.matches(obj); err != nil {
			return ww.sendError(err)
		}
		if old != nil {
			if oldMatches, err = ww.sel.matches(old); err != nil {
				return ww.sendError(err)
			}
		}
	}
	oldMatches = oldMatches && old != nil
	switch ev.Op {
	case storage.OpAdded:
		if matches {
			return ww.sendShared("ADDED", se, false)
		}
	case storage.OpModified:
		switch {
		case matches && oldMatches:
			return ww.sendShared("MODIFIED", se, false)
		case matches:
			return ww.sendShared("ADDED", se, false)
		case oldMatches:
			// As kube-apiserver: the previous content, at this revision.
			return ww.sendShared("DELETED", se, true)
		}
	case storage.OpDeleted:
		if matches || oldMatches {
			// The final content, at this revision.
			return ww.sendShared("DELETED", se, false)
		}
	}
	return true
}

// sendShared sends an event whose object is rendered once for all the
// watchers of the same shape. An event that cannot be converted to the
// watched version (a conversion webhook failing) ends the watch with no
// ERROR event: kube-apiserver's watch cache of that version converts as it
// reads, and a conversion that fails ends its ListAndWatch, which ends all
// its watchers' streams (clients watch again).
func (ww *watchWriter) sendShared(typ string, se *sharedEvent, old bool) bool {
	data, err := se.render(ww, old)
	if cf := (*conversionFailure)(nil); errors.As(err, &cf) {
		ww.s.log.Warn("ending a watch: its event could not be converted", "path", ww.r.URL.Path, "err", cf.err)
		return false
	}
	if err != nil {
		return ww.sendError(err)
	}
	ww.countEvent()
	return ww.writeObjectEvent(typ, data)
}

// send sends an event of an object the watcher owns (converted in place):
// the events before the live ones. (One that cannot be converted is an
// ERROR: kube-apiserver's watch cache of a version that cannot convert
// refuses new watches, 429, before their stream starts.)
func (ww *watchWriter) send(typ string, obj *unstructured.Unstructured) bool {
	data, err := ww.encode(obj)
	if cf := (*conversionFailure)(nil); errors.As(err, &cf) {
		err = cf.err
	}
	if err != nil {
		return ww.sendError(err)
	}
	ww.countEvent()
	return ww.writeObjectEvent(typ, data)
}

// encode renders obj, which it converts in place, as the watcher's
// requested version and form; a conversion's error is a
// *conversionFailure.
func (ww *watchWriter) encode(obj *unstructured.Unstructured) ([]byte, error) {
	if err := ww.req.res.Strategy.Convert(obj, ww.req.version); err != nil {
		return nil, &conversionFailure{err}
	}
	return ww.render(obj)
}

// conversionFailure is the error of converting a watched object to the
// watched version.
type conversionFailure struct{ err error }

func (e *conversionFailure) Error() string { return e.err.Error() }
func (e *conversionFailure) Unwrap() error { return e.err }

// render encodes obj, in the requested version, in the watcher's form.
func (ww *watchWriter) render(obj *unstructured.Unstructured) ([]byte, error) {
	var payload any = obj.Object
	switch ww.out.as {
	case "Table":
		t, err := ww.s.table(ww.r, ww.req, ww.out.version, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		if ww.shape.noHeaders {
			t.ColumnDefinitions = nil
		}
		payload = t
	case "PartialObjectMetadata":
		payload = partialMetadata(obj, ww.out.version)
	}
	data, err := unstructuredjson.Marshal(payload)
	switch {
	case err != nil:
		return nil, err
	case ww.out.protobuf:
		return protobufOf(payload, data)
	case ww.out.builtin && ww.out.as == "":
		return builtinJSON(data)
	}
	return data, nil
}

// writeObjectEvent writes the frame of an event of type typ (one of
// ADDED, MODIFIED, DELETED, BOOKMARK: nothing to escape) around the object's JSON,
// byte for byte what json.Marshal(watchEvent{typ, object}) gives.
func (ww *watchWriter) writeObjectEvent(typ string, object []byte) bool {
	// A Table watch sends its column definitions with the first event only,
	// as kube-apiserver's.
	if ww.out.as == "Table" {
		ww.shape.noHeaders = true
	}
	if ww.out.protobuf {
		event, err := protobufWatchEvent(typ, object)
		if err != nil {
			return ww.sendError(apierrors.NewInternalError(err))
		}
		return ww.writeFrame(event)
	}
	buf := append(ww.buf[:0], `{"type":"`...)
	buf = append(buf, typ...)
	buf = append(buf, `","object":`...)
	buf = append(buf, object...)
	buf = append(buf, "}\n"...)
	ww.buf = buf
	return ww.writeFrame(buf)
}

// bookmark sends a BOOKMARK carrying only the resourceVersion, in the
// watcher's form (a PartialObjectMetadata, a Table), as kube-apiserver
// encodes bookmarks like any other object. The one that ends the initial
// events of a watch-list (initialEventsEnd) says so, and carries the list's
// blueprint that client-go's watch-list reads the list's kind from.
func (ww *watchWriter) bookmark(rev int64, initialEventsEnd bool) bool {
	obj := &unstructured.Unstructured{}
	gv := schema.GroupVersion{Group: ww.req.res.Group, Version: ww.req.version}
	obj.SetAPIVersion(gv.String())
	obj.SetKind(ww.req.res.Kind)
	obj.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEventsEnd {
		blueprint, err := ww.listBlueprint(gv)
		if err != nil {
			return ww.sendError(err)
		}
		obj.SetAnnotations(map[string]string{
			metav1.InitialEventsAnnotationKey:              "true",
			metav1.InitialEventsListBlueprintAnnotationKey: base64.StdEncoding.EncodeToString(blueprint),
		})
	}
	data, err := ww.render(obj)
	if err != nil {
		return ww.sendError(err)
	}
	return ww.writeObjectEvent("BOOKMARK", data)
}

// listBlueprint is an empty list of the watch's kind and form, encoded as
// kube-apiserver's watch encodes it: the versioned empty list of the
// resource (a built-in kind's typed list, whose items are null in JSON; a
// custom resource's UnstructuredList, with only its apiVersion, kind and
// empty items), or for a metadata watch its PartialObjectMetadataList; its
// JSON as the JSON serializer writes it, ending with a newline.
func (ww *watchWriter) listBlueprint(gv schema.GroupVersion) ([]byte, error) {
	var list any
	switch {
	case ww.out.as == "PartialObjectMetadata":
		typeMeta := metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + ww.out.version}
		if ww.out.version == "v1beta1" {
			list = &metav1beta1.PartialObjectMetadataList{TypeMeta: typeMeta}
		} else {
			list = &metav1.PartialObjectMetadataList{TypeMeta: typeMeta}
		}
	case ww.req.res.Custom:
		list = map[string]interface{}{"apiVersion": gv.String(), "kind": ww.req.res.ListKind, "items": []interface{}{}}
	default:
		typed, err := builtin.Scheme.New(gv.WithKind(ww.req.res.ListKind))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		typed.GetObjectKind().SetGroupVersionKind(gv.WithKind(ww.req.res.ListKind))
		list = typed
	}
	if ww.out.protobuf {
		return protobufOf(list, nil)
	}
	data, err := json.Marshal(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return append(data, '\n'), nil
}

func (ww *watchWriter) sendError(err error) bool {
	ww.write(watchEvent{Type: "ERROR", Object: toStatus(err)})
	return false
}

func (ww *watchWriter) write(ev watchEvent) bool {
	if ww.out.protobuf {
		object, err := protobufOf(ev.Object, nil)
		if err != nil {
			return false
		}
		event, err := protobufWatchEvent(ev.Type, object)
		if err != nil {
			return false
		}
		return ww.writeFrame(event)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return false
	}
	return ww.writeFrame(append(data, '\n'))
}

func (ww *watchWriter) writeFrame(data []byte) bool {
	return ww.frames.write(data) == nil
}
