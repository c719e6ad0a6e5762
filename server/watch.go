package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kapi-dev/kapi/storage"
)

const (
	// minWatchTimeout is kube-apiserver's --min-request-timeout default: a
	// watch without timeoutSeconds lasts between one and two of it.
	minWatchTimeout = 30 * time.Minute
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
	out, err := negotiate(r, "Table", "PartialObjectMetadata")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if out.yaml {
		writeError(w, r, notAcceptable())
		return
	}
	opts, err := parseListOptions(r, true)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if req.name != "" {
		byName := fields.OneTermEqualSelector("metadata.name", req.name)
		if opts.FieldSelector == nil || opts.FieldSelector.Empty() {
			opts.FieldSelector = byName
		} else {
			opts.FieldSelector = fields.AndSelectors(opts.FieldSelector, byName)
		}
	}
	sel, err := newSelection(req.res, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, r, apierrors.NewInternalError(errors.New("streaming is not supported")))
		return
	}
	timeout := time.Duration(float64(minWatchTimeout) * (1 + rand.Float64()))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()

	// Subscribe before reading the start state, so no write falls between.
	// Pointers keep an idle watcher's buffer small.
	events := make(chan *storage.Event, watchBuffer)
	overflow := make(chan struct{})
	resource := req.res.StorageResource()
	subRev, unsubscribe := s.store.SubscribeAt(func(ev storage.Event) {
		if ev.Object.Resource != resource {
			return
		}
		select {
		case events <- &ev:
		default:
			select {
			case <-overflow:
			default:
				close(overflow)
			}
		}
	})
	defer unsubscribe()

	// A write blocked on a client that stopped reading must not outlive
	// the watch or hold up shutdown: end it with a deadline.
	done, unblocked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(unblocked)
		select {
		case <-done:
		case <-ctx.Done():
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now())
		case <-s.stopping:
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now())
		}
	}()
	defer func() { close(done); <-unblocked }()

	defer s.opts.Metrics.watchStarted(req)()
	ww := &watchWriter{s: s, w: w, r: r, flusher: flusher, req: req, out: out, sel: sel}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	last, err := s.watchStart(ctx, ww, opts, subRev)
	if err != nil {
		ww.sendError(err)
		return
	}
	var bookmarks <-chan time.Time
	if opts.AllowWatchBookmarks {
		t := time.NewTicker(s.opts.BookmarkInterval)
		defer t.Stop()
		bookmarks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			return
		case <-overflow:
			// Too slow: close the stream; the client re-watches from the
			// last resourceVersion it saw.
			return
		case <-bookmarks:
			if !ww.bookmark(s.store.CurrentRev(), false) {
				return
			}
		case ev := <-events:
			if ev.Object.Rev <= last {
				continue
			}
			last = ev.Object.Rev
			if !ww.change(*ev) {
				return
			}
		}
	}
}

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
		items, lm, err := s.listObjects(ctx, ww.req.res, ww.req.namespace, &metainternalversion.ListOptions{
			LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		})
		if err != nil {
			return 0, err
		}
		for _, obj := range items {
			if !ww.send("ADDED", obj) {
				return 0, ctx.Err()
			}
		}
		rev, _ := strconv.ParseInt(lm.ResourceVersion, 10, 64)
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks {
			if !ww.bookmark(rev, true) {
				return 0, ctx.Err()
			}
		}
		return rev, nil
	}
	from, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || from < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", rv))
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
			if !ww.change(ev) {
				return 0, ctx.Err()
			}
		}
	}
	return from, nil
}

// watchWriter writes the events of one watch.
type watchWriter struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	flusher http.Flusher
	req     *resourceRequest
	out     output
	sel     *selection
}

// change sends a committed write as the event this watcher sees: a change
// that moves an object into or out of the selection is ADDED or DELETED.
func (ww *watchWriter) change(ev storage.Event) bool {
	if ww.req.namespace != "" && ev.Object.Namespace != ww.req.namespace {
		return true
	}
	obj, err := decodeStored(&ev.Object)
	if err != nil {
		return ww.sendError(apierrors.NewInternalError(err))
	}
	matches := ww.sel.matches(obj)
	var old *unstructured.Unstructured
	if ev.PrevData != nil && ev.Op != storage.OpAdded {
		old, _ = decodeStored(&storage.Object{Key: ev.Object.Key, Data: ev.PrevData})
	}
	oldMatches := old != nil && ww.sel.matches(old)
	switch ev.Op {
	case storage.OpAdded:
		if matches {
			return ww.send("ADDED", obj)
		}
	case storage.OpModified:
		switch {
		case matches && oldMatches:
			return ww.send("MODIFIED", obj)
		case matches:
			return ww.send("ADDED", obj)
		case oldMatches:
			// As kube-apiserver: the previous content, at this revision.
			old.SetResourceVersion(strconv.FormatInt(ev.Object.Rev, 10))
			return ww.send("DELETED", old)
		}
	case storage.OpDeleted:
		if matches || oldMatches {
			obj.SetResourceVersion(strconv.FormatInt(ev.Object.Rev, 10))
			return ww.send("DELETED", obj)
		}
	}
	return true
}

func (ww *watchWriter) send(typ string, obj *unstructured.Unstructured) bool {
	if err := ww.req.res.Strategy.Convert(obj, ww.req.version); err != nil {
		return ww.sendError(err)
	}
	var payload any = obj.Object
	switch ww.out.as {
	case "Table":
		t, err := ww.s.table(ww.r, ww.req, ww.out.version, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()})
		if err != nil {
			return ww.sendError(err)
		}
		payload = t
	case "PartialObjectMetadata":
		payload = partialMetadata(obj, ww.out.version)
	}
	ww.s.opts.Metrics.watchEvents.WithLabelValues(ww.req.res.Group, ww.req.version, ww.req.res.Kind).Inc()
	return ww.write(watchEvent{Type: typ, Object: payload})
}

// bookmark sends a BOOKMARK carrying only the resourceVersion.
func (ww *watchWriter) bookmark(rev int64, initialEventsEnd bool) bool {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(ww.req.res.Group + "/" + ww.req.version)
	if ww.req.res.Group == "" {
		obj.SetAPIVersion(ww.req.version)
	}
	obj.SetKind(ww.req.res.Kind)
	obj.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEventsEnd {
		obj.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return ww.write(watchEvent{Type: "BOOKMARK", Object: obj.Object})
}

func (ww *watchWriter) sendError(err error) bool {
	ww.write(watchEvent{Type: "ERROR", Object: toStatus(err)})
	return false
}

func (ww *watchWriter) write(ev watchEvent) bool {
	data, err := json.Marshal(ev)
	if err != nil {
		return false
	}
	data = append(data, '\n')
	if _, err := ww.w.Write(data); err != nil {
		return false
	}
	ww.flusher.Flush()
	return true
}
