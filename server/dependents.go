package server

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// cascades finishes the cascading deletions a client asks for with
// propagationPolicy Orphan or Foreground (or orphanDependents), whose
// finalizers the delete adds as kube-apiserver adds them, as
// kube-controller-manager's garbage collector does for them:
//   - orphan: the owner's reference is removed from every dependent, then
//     the finalizer from the owner;
//   - foregroundDeletion: every dependent is deleted (in the foreground
//     too, so that its own dependents go first), and the finalizer is
//     removed once no dependent that blocks its owner's deletion
//     (blockOwnerDeletion) is left.
//
// Dependents are the objects whose ownerReferences name the owner's uid:
// in the owner's namespace for a namespaced owner, anywhere for a
// cluster-scoped one. A background deletion's dependents are orphans'
// (orphans.go).
type cascades struct {
	s     *Server
	queue *workQueue[storage.Key, *registry.Resource]
}

func newCascades(s *Server) *cascades {
	return &cascades{s: s, queue: newWorkQueue[storage.Key, *registry.Resource]()}
}

// cascading tells whether obj waits on a cascading deletion.
func cascading(obj *unstructured.Unstructured) bool {
	fins := obj.GetFinalizers()
	return obj.GetDeletionTimestamp() != nil &&
		(slices.Contains(fins, metav1.FinalizerOrphanDependents) || slices.Contains(fins, metav1.FinalizerDeleteDependents))
}

// enqueue queues obj if it waits on a cascading deletion.
func (c *cascades) enqueue(res *registry.Resource, obj *unstructured.Unstructured) {
	if cascading(obj) {
		c.queue.add(storageKey(res, obj.GetNamespace(), obj.GetName()), res)
	}
}

// mayCascade tells, from an object's stored JSON, whether it may name one
// of the two finalizers (it is then decoded to know).
func mayCascade(data []byte) bool {
	return bytes.Contains(data, []byte(`"`+metav1.FinalizerOrphanDependents+`"`)) ||
		bytes.Contains(data, []byte(`"`+metav1.FinalizerDeleteDependents+`"`))
}

// start works the queue until ctx ends. The cascading deletions a previous
// run left pending are queued by the garbage collector's one read of the
// stored objects at start (orphans.start).
func (c *cascades) start(ctx context.Context) {
	go c.queue.run(ctx, func(ctx context.Context, key storage.Key, res *registry.Resource) bool {
		done, err := c.finish(ctx, res, key)
		if err != nil && ctx.Err() == nil {
			c.s.log.Warn("finishing a cascading deletion", "resource", key.Resource, "namespace", key.Namespace, "name", key.Name, "err", err)
		}
		return done
	})
}

// finish takes one step of the cascading deletion of the object at key;
// done is true when nothing is left to do for it.
func (c *cascades) finish(ctx context.Context, res *registry.Resource, key storage.Key) (done bool, err error) {
	owner, _, err := c.s.getObject(ctx, res, key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !cascading(owner) {
		return true, nil
	}
	dependents, err := c.dependents(ctx, res, owner)
	if err != nil {
		return false, err
	}
	fins := owner.GetFinalizers()
	var finalizer string
	if slices.Contains(fins, metav1.FinalizerOrphanDependents) {
		finalizer = metav1.FinalizerOrphanDependents
		for _, d := range dependents {
			if err := c.orphan(ctx, d, owner.GetUID()); err != nil {
				return false, err
			}
		}
	} else {
		finalizer = metav1.FinalizerDeleteDependents
		blocked := false
		var refused error
		for _, d := range dependents {
			if res.Namespaced && !d.res.Namespaced {
				// A cluster-scoped object cannot depend on a namespaced
				// owner: the collector leaves it, and it holds nothing.
				continue
			}
			current := d.obj
			if d.obj.GetDeletionTimestamp() == nil {
				// As kube's collector attempts each dependent of an owner
				// waiting for them: one with another owner left only loses
				// its reference; else it is deleted (through admission: a
				// webhook or policy that refuses holds the owner if the
				// dependent blocks it, tried again every second; the other
				// dependents go all the same).
				key := storageKey(d.res, d.obj.GetNamespace(), d.obj.GetName())
				if _, err := c.s.orphans.attemptToDelete(ctx, key); err != nil && refused == nil {
					refused = fmt.Errorf("deleting %s %s/%s: %w", d.res.Kind, d.obj.GetNamespace(), d.obj.GetName(), err)
				}
				// What the attempt left: gone, no longer referencing the
				// owner, or being deleted.
				got, _, err := c.s.getObject(ctx, d.res, d.obj.GetNamespace(), d.obj.GetName())
				if apierrors.IsNotFound(err) {
					continue
				}
				if err == nil {
					current = got
				}
			}
			blocked = blocked || blocksOwner(current, owner.GetUID())
		}
		if blocked {
			// Checked again as the dependents go (the queue retries).
			return false, refused
		}
	}
	// A failed removal (a write that raced it, admission) is made again.
	err = c.removeFinalizer(ctx, res, key, finalizer)
	return err == nil, err
}

// dependent is an object with an owner reference to the owner at hand.
type dependent struct {
	res *registry.Resource
	obj *unstructured.Unstructured
}

// dependents lists the objects whose ownerReferences name owner's uid: for
// a namespaced owner, those of its namespace, and cluster-scoped ones
// (kube's collector finds them by uid: it orphans them, though it never
// deletes them for such an owner, nor waits for them).
func (c *cascades) dependents(ctx context.Context, ownerRes *registry.Resource, owner *unstructured.Unstructured) ([]dependent, error) {
	var out []dependent
	for _, res := range c.s.reg.All() {
		namespace := ""
		if ownerRes.Namespaced && res.Namespaced {
			namespace = owner.GetNamespace()
		}
		items, _, err := c.s.listObjects(ctx, res, "", namespace, &metainternalversion.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, obj := range items {
			for _, ref := range obj.GetOwnerReferences() {
				if ref.UID == owner.GetUID() {
					out = append(out, dependent{res: res, obj: obj})
					break
				}
			}
		}
	}
	return out, nil
}

// blocksOwner tells whether obj's reference to owner blocks the owner's
// foreground deletion.
func blocksOwner(obj *unstructured.Unstructured, owner types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// orphan removes d's references to owner.
func (c *cascades) orphan(ctx context.Context, d dependent, owner types.UID) error {
	return c.rewrite(ctx, d.res, storageKey(d.res, d.obj.GetNamespace(), d.obj.GetName()), func(obj *unstructured.Unstructured) bool {
		return dropOwnerReferences(obj, func(uid types.UID) bool { return uid == owner })
	})
}

// dropOwnerReferences removes obj's references to the owners gone names,
// and the field itself with the last one, as kube's collector patches it
// (ownerReferences: null). It tells whether obj changed.
func dropOwnerReferences(obj *unstructured.Unstructured, gone func(types.UID) bool) bool {
	refs := obj.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool { return gone(ref.UID) })
	if len(kept) == len(refs) {
		return false
	}
	if len(kept) == 0 {
		kept = nil
	}
	obj.SetOwnerReferences(kept)
	return true
}

// removeFinalizer removes finalizer from the object at key, which is then
// deleted if no finalizer is left.
func (c *cascades) removeFinalizer(ctx context.Context, res *registry.Resource, key storage.Key, finalizer string) error {
	return c.rewrite(ctx, res, key, func(obj *unstructured.Unstructured) bool {
		fins := obj.GetFinalizers()
		if !slices.Contains(fins, finalizer) {
			return false
		}
		obj.SetFinalizers(withoutFinalizer(fins, finalizer))
		return true
	})
}

// rewrite applies change to the object at key through the update path,
// as kube's garbage collector patches through the API: admission,
// validation, and a managedFields entry of its manager; an object marked
// for deletion that is left without finalizers is deleted.
func (c *cascades) rewrite(ctx context.Context, res *registry.Resource, key storage.Key, change func(*unstructured.Unstructured) bool) error {
	// Through the preferred version, as kube's collector reads and writes
	// objects through discovery's preferred versions; with the
	// resourceVersion read, made again on a conflict as kube's collector
	// retries its patches (retry.RetryOnConflict).
	req := &resourceRequest{res: res, version: res.Versions[0], namespace: key.Namespace, name: key.Name, user: collectorUser}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		_, err := c.s.updateObject(ctx, req, false, false, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			obj := current.DeepCopy()
			if !change(obj) {
				return obj, nil // nothing to write: the update path skips it
			}
			return c.s.trackUpdate(req, current, obj, controllerManager), nil
		})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// controllerManager is the field manager of the writes of kapi's garbage
// collector and namespace controller, as kube's run in
// kube-controller-manager.
const controllerManager = "kube-controller-manager"
