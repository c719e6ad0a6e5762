package server

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// orphans finishes background cascading deletions, as kube-controller-
// manager's garbage collector does: once an owner is gone, a dependent all
// of whose owners are gone is deleted (in the background too), and one
// that still has an owner loses its references to the owners that are
// gone. An object that names owners none of which exists is deleted as
// soon as it is written (or found at start).
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
}

var ownerReferencesKey = []byte(`"ownerReferences"`)

func newOrphans(s *Server) *orphans {
	return &orphans{s: s, dependents: map[types.UID]map[storage.Key]bool{}, refs: map[storage.Key][]types.UID{}, wake: make(chan struct{}, 1)}
}

// start indexes the stored objects' owner references as of now (and
// queues the cascading deletions left pending), then follows the store's
// events until ctx ends.
func (o *orphans) start(ctx context.Context) {
	rev, cancel := o.s.store.SubscribeAt(o.observe)
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
			o.collectLogged(ctx, key)
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
		o.collectLogged(ctx, key)
	}
}

func (o *orphans) collectLogged(ctx context.Context, key storage.Key) {
	if err := o.collect(ctx, key); err != nil && ctx.Err() == nil {
		o.s.log.Warn("collecting a dependent whose owners are gone", "resource", key.Resource, "namespace", key.Namespace, "name", key.Name, "err", err)
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

// collect deletes the dependent at key if none of its owners is left, or
// drops its references to the owners that are gone.
func (o *orphans) collect(ctx context.Context, key storage.Key) error {
	res := o.s.resourceOf(key.Resource)
	if res == nil {
		return nil
	}
	obj, _, err := o.s.getObject(ctx, res, key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var gone []types.UID
	refs := obj.GetOwnerReferences()
	for _, ref := range refs {
		present, err := o.ownerPresent(ctx, obj, ref)
		if err != nil {
			return err
		}
		if !present {
			gone = append(gone, ref.UID)
		}
	}
	switch {
	case len(gone) == 0:
		return nil
	case len(gone) == len(refs):
		if obj.GetDeletionTimestamp() != nil {
			return nil
		}
		// Through admission, as the collector's deletes are a client's.
		background := metav1.DeletePropagationBackground
		req := &resourceRequest{res: res, version: res.StorageVersion, namespace: key.Namespace, name: key.Name}
		_, _, err := o.s.deleteObject(ctx, req, &metav1.DeleteOptions{PropagationPolicy: &background})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	default:
		return o.s.cascades.rewrite(ctx, res, key, func(obj *unstructured.Unstructured) bool {
			return dropOwnerReferences(obj, func(uid types.UID) bool { return slices.Contains(gone, uid) })
		})
	}
}

// ownerPresent tells whether the owner ref names exists with its uid: in
// the dependent's namespace if the owner's kind is namespaced. An owner of
// a kind kapi does not serve, or a namespaced owner of a cluster-scoped
// dependent, is taken as present (kube's collector leaves such
// references unresolved).
func (o *orphans) ownerPresent(ctx context.Context, dependent *unstructured.Unstructured, ref metav1.OwnerReference) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return true, nil
	}
	var res *registry.Resource
	for _, r := range o.s.reg.All() {
		if r.Group == gv.Group && r.Kind == ref.Kind {
			res = r
			break
		}
	}
	if res == nil {
		return true, nil
	}
	namespace := ""
	if res.Namespaced {
		namespace = dependent.GetNamespace()
		if namespace == "" {
			// A cluster-scoped dependent's namespaced owner cannot be
			// resolved: kube's collector never collects it.
			return true, nil
		}
	}
	owner, _, err := o.s.getObject(ctx, res, namespace, ref.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return owner.GetUID() == ref.UID, nil
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
