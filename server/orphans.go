package server

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// orphans finishes background cascading deletions, as kube-controller-
// manager's garbage collector does: once an owner is gone, its dependents
// are attempted (attemptToDelete): one that still has an owner loses its
// references to the owners that are gone, one whose owners are all gone is
// deleted (as its own finalizers ask, else in the background). An object
// that names owners none of which exists is deleted as soon as it is
// written (or found at start). A failed attempt is made again.
//
// It keeps an index of which objects reference which owner uids, built
// from the store at start and kept from its events: a write whose object
// names no ownerReferences costs two byte searches under the writer lock,
// and a deletion is looked at only while some object references an owner.
type orphans struct {
	s *Server

	mu sync.Mutex
	// dependents holds, per owner uid, the keys of the objects that
	// reference it; refs, per object key, the owner uids it references.
	dependents map[types.UID]map[storage.Key]bool
	refs       map[storage.Key][]types.UID
	// referenced counts the owners in dependents, read under the
	// store's writer lock.
	referenced atomic.Int64

	// pending are the store's events the worker has yet to look at, in
	// revision order.
	pendingMu sync.Mutex
	pending   []storage.Event
	wake      chan struct{}

	// attempts are the dependents to attempt to delete (attemptToDelete),
	// again every second while an attempt fails, as kube's collector
	// requeues them.
	attempts *workQueue[storage.Key, struct{}]

	// unresolved are the dependents left alone because an owner's kind
	// (or version) is not served; they are attempted again when the
	// served kinds change, as kube's collector retries them until its
	// discovery knows the kind.
	unresolvedMu sync.Mutex
	unresolved   map[storage.Key]bool
}

var ownerReferencesKey = []byte(`"ownerReferences"`)

func newOrphans(s *Server) *orphans {
	return &orphans{s: s, dependents: map[types.UID]map[storage.Key]bool{}, refs: map[storage.Key][]types.UID{}, wake: make(chan struct{}, 1),
		attempts: newWorkQueue[storage.Key, struct{}](), unresolved: map[storage.Key]bool{}}
}

// servedKindsChanged attempts again the dependents an owner's unserved
// kind left alone.
func (o *orphans) servedKindsChanged() {
	o.unresolvedMu.Lock()
	defer o.unresolvedMu.Unlock()
	for key := range o.unresolved {
		o.attempts.add(key, struct{}{})
	}
	clear(o.unresolved)
}

// start indexes the stored objects' owner references as of now (and
// queues the cascading deletions left pending), then follows the store's
// events until ctx ends.
func (o *orphans) start(ctx context.Context) {
	rev, cancel := o.s.store.SubscribeAt(o.observe)
	failing := map[storage.Key]bool{} // logged once until an attempt succeeds
	go o.attempts.run(ctx, func(ctx context.Context, key storage.Key, _ struct{}) bool {
		done, err := o.attemptToDelete(ctx, key)
		if err != nil && ctx.Err() == nil && !failing[key] {
			o.s.log.Warn("collecting a dependent whose owners are gone (tried again every second)", "resource", key.Resource, "namespace", key.Namespace, "name", key.Name, "err", err)
		}
		if done {
			delete(failing, key)
		} else {
			failing[key] = err != nil
		}
		return done
	})
	go func() {
		defer cancel()
		// One read of the stored objects for the whole collector: the
		// owner references to index, and the cascading deletions a
		// previous run left pending.
		relevant := func(obj *storage.Object) (bool, error) {
			return bytes.Contains(obj.Data, ownerReferencesKey) || mayCascade(obj.Data), nil
		}
		for _, res := range o.s.reg.All() {
			list, err := o.s.store.List(ctx, res.StorageResource(), storage.ListOptions{Rev: rev, Predicate: relevant})
			if err != nil {
				continue
			}
			for _, obj := range list.Items {
				if mayCascade(obj.Data) {
					if u, err := decodeStored(obj); err == nil {
						o.s.cascades.enqueue(res, u)
					}
				}
				o.indexAndCollect(ctx, obj.Key, obj.Data)
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-o.wake:
			}
			o.pendingMu.Lock()
			batch := o.pending
			o.pending = nil
			o.pendingMu.Unlock()
			for _, ev := range batch {
				o.handle(ctx, ev)
			}
		}
	}()
}

// observe takes a committed write, under the store's writer lock: only
// what may change the index, or delete a referenced owner, is queued.
func (o *orphans) observe(ev storage.Event) {
	if !bytes.Contains(ev.Object.Data, ownerReferencesKey) && !bytes.Contains(ev.PrevData, ownerReferencesKey) &&
		(ev.Op != storage.OpDeleted || o.referenced.Load() == 0) {
		return
	}
	o.pendingMu.Lock()
	o.pending = append(o.pending, ev)
	o.pendingMu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// handle updates the index with a write and, for a deletion of a
// referenced owner, finishes its dependents.
func (o *orphans) handle(ctx context.Context, ev storage.Event) {
	if ev.Op == storage.OpDeleted {
		o.index(ev.Object.Key, nil)
		obj, err := decodeStored(&ev.Object)
		if err != nil {
			return
		}
		for _, key := range o.dependentsOf(obj.GetUID()) {
			o.attempts.add(key, struct{}{})
		}
		return
	}
	o.indexAndCollect(ctx, ev.Object.Key, ev.Object.Data)
}

// indexAndCollect indexes the object at key and, when it names an owner
// it did not name before, checks that owner is there: as kube's collector,
// an object whose owners are all missing from the start is deleted too.
func (o *orphans) indexAndCollect(ctx context.Context, key storage.Key, data []byte) {
	if o.index(key, data) {
		o.attempts.add(key, struct{}{})
	}
}

// index records the owner uids data (an object's stored JSON; nil for a
// deleted object) references; added tells whether one is new for key.
func (o *orphans) index(key storage.Key, data []byte) (added bool) {
	var owners []types.UID
	if bytes.Contains(data, ownerReferencesKey) {
		if obj, err := decodeStored(&storage.Object{Key: key, Data: data}); err == nil {
			for _, ref := range obj.GetOwnerReferences() {
				owners = append(owners, ref.UID)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	before := o.refs[key]
	for _, uid := range before {
		delete(o.dependents[uid], key)
		if len(o.dependents[uid]) == 0 {
			delete(o.dependents, uid)
		}
	}
	delete(o.refs, key)
	for _, uid := range owners {
		if o.dependents[uid] == nil {
			o.dependents[uid] = map[storage.Key]bool{}
		}
		o.dependents[uid][key] = true
		added = added || !slices.Contains(before, uid)
	}
	if len(owners) > 0 {
		o.refs[key] = owners
	}
	o.referenced.Store(int64(len(o.dependents)))
	return added
}

func (o *orphans) dependentsOf(uid types.UID) []storage.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []storage.Key
	for key := range o.dependents[uid] {
		keys = append(keys, key)
	}
	return keys
}

// errUnservedOwnerKind is an owner reference to a kind or version kapi
// does not serve (or an apiVersion that does not parse), and
// errNamespacedOwner one to a namespaced owner from a cluster-scoped
// dependent: kube's collector cannot resolve either, and leaves the
// dependent alone; it tries the first again later (its discovery may learn
// the kind), the second never.
var (
	errUnservedOwnerKind = errors.New("the owner's kind is not served")
	errNamespacedOwner   = errors.New("a cluster-scoped object cannot have a namespaced owner")
)

// attemptToDelete is kube's collector's attempt to delete the dependent at
// key (attemptToDeleteItem), its owner references classified as
//   - solid: the owner is there (not being deleted in the foreground);
//   - dangling: no such owner (none by that name, or another uid);
//   - waiting: the owner waits in the foreground for its dependents;
//
// then, with a solid owner, the dangling and waiting references are
// removed and the dependent stays; else it is deleted: in the foreground
// when an owner waits and it has dependents of its own, else as its own
// finalizers ask (orphan, foregroundDeletion), else in the background. An
// object being deleted is left to its deletion. done is false when the
// attempt should be made again (an error: admission refused the write,
// the store is full...).
func (o *orphans) attemptToDelete(ctx context.Context, key storage.Key) (done bool, err error) {
	res := o.s.resourceOf(key.Resource)
	if res == nil {
		return true, nil
	}
	obj, _, err := o.s.getObject(ctx, res, key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	refs := obj.GetOwnerReferences()
	if obj.GetDeletionTimestamp() != nil || len(refs) == 0 {
		return true, nil
	}
	var solid, gone []types.UID
	waiting := false
	for _, ref := range refs {
		owner, err := o.resolveOwner(ctx, obj, ref)
		switch {
		case errors.Is(err, errUnservedOwnerKind):
			// The whole dependent is left alone, as kube's, until
			// the served kinds change.
			o.unresolvedMu.Lock()
			o.unresolved[key] = true
			o.unresolvedMu.Unlock()
			return true, nil
		case errors.Is(err, errNamespacedOwner):
			return true, nil // left alone for good, as kube's
		case err != nil:
			return false, err
		case owner == nil: // dangling
			gone = append(gone, ref.UID)
		case owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents):
			gone = append(gone, ref.UID)
			waiting = true
		default:
			solid = append(solid, ref.UID)
		}
	}
	if len(solid) > 0 {
		if len(gone) == 0 {
			return true, nil
		}
		err := o.s.cascades.rewrite(ctx, res, key, func(obj *unstructured.Unstructured) bool {
			return dropOwnerReferences(obj, func(uid types.UID) bool { return slices.Contains(gone, uid) })
		})
		return err == nil, err
	}
	policy := metav1.DeletePropagationBackground
	fins := obj.GetFinalizers()
	switch {
	case waiting && len(o.dependentsOf(obj.GetUID())) > 0:
		policy = metav1.DeletePropagationForeground
		// A dependent of its own waiting in the foreground too may be
		// waiting for it (a cycle of owners): as kube's collector, its
		// references stop blocking their owners first, so that neither
		// waits for the other forever.
		if o.dependentWaits(ctx, obj.GetUID()) {
			err := o.s.cascades.rewrite(ctx, res, key, unblockOwnerReferences)
			if err != nil {
				return false, err
			}
		}
	case slices.Contains(fins, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(fins, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	// Through admission, as the collector's deletes are a client's; with
	// the uid as a precondition, as kube's.
	uid := obj.GetUID()
	req := &resourceRequest{res: res, version: res.Versions[0], namespace: key.Namespace, name: key.Name, user: collectorUser}
	_, _, err = o.s.deleteObject(ctx, req, &metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return true, nil // gone, or another object by that name now
	}
	return err == nil, err
}

// dependentWaits tells whether one of the objects referencing the owner
// uid is itself being deleted in the foreground.
func (o *orphans) dependentWaits(ctx context.Context, uid types.UID) bool {
	for _, key := range o.dependentsOf(uid) {
		res := o.s.resourceOf(key.Resource)
		if res == nil {
			continue
		}
		dep, _, err := o.s.getObject(ctx, res, key.Namespace, key.Name)
		if err == nil && dep.GetDeletionTimestamp() != nil && slices.Contains(dep.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			return true
		}
	}
	return false
}

// unblockOwnerReferences makes every reference of obj that blocks its
// owner's deletion stop blocking it; it tells whether obj changed.
func unblockOwnerReferences(obj *unstructured.Unstructured) bool {
	refs := obj.GetOwnerReferences()
	changed := false
	for i := range refs {
		if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
			refs[i].BlockOwnerDeletion = ptr.To(false)
			changed = true
		}
	}
	if changed {
		obj.SetOwnerReferences(refs)
	}
	return changed
}

// resolveOwner returns the owner ref names, in the dependent's namespace
// if the owner's kind is namespaced; nil when there is no such owner (none
// by that name, or one with another uid).
func (o *orphans) resolveOwner(ctx context.Context, dependent *unstructured.Unstructured, ref metav1.OwnerReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, errUnservedOwnerKind
	}
	var res *registry.Resource
	for _, r := range o.s.reg.All() {
		if r.Group == gv.Group && r.Kind == ref.Kind && slices.Contains(r.Versions, gv.Version) {
			res = r
			break
		}
	}
	if res == nil {
		return nil, errUnservedOwnerKind
	}
	namespace := ""
	if res.Namespaced {
		namespace = dependent.GetNamespace()
		if namespace == "" {
			return nil, errNamespacedOwner
		}
	}
	owner, _, err := o.s.getObject(ctx, res, namespace, ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if owner.GetUID() != ref.UID {
		return nil, nil
	}
	return owner, nil
}

// resourceOf returns the served resource stored under storageResource
// ("<group>/<plural>"), or nil.
func (s *Server) resourceOf(storageResource string) *registry.Resource {
	for _, r := range s.reg.All() {
		if r.StorageResource() == storageResource {
			return r
		}
	}
	return nil
}
