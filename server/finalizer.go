package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// finalizer finishes the deletions that wait on the server itself: a
// terminating namespace (its contents, then the "kubernetes" spec
// finalizer) and a deleted CRD (its custom resources, then the cleanup
// finalizer).
type finalizer struct {
	s     *Server
	queue *workQueue[storage.Key, *registry.Resource]
}

// finalizedHere tells whether the finalizer finishes deletions of res:
// core namespaces and CRDs.
func finalizedHere(res *registry.Resource) bool {
	return (res.Group == "" && res.Kind == "Namespace") ||
		(res.Group == "apiextensions.k8s.io" && res.Kind == "CustomResourceDefinition")
}

func newFinalizer(s *Server) *finalizer {
	return &finalizer{s: s, queue: newWorkQueue[storage.Key, *registry.Resource]()}
}

func (f *finalizer) enqueue(res *registry.Resource, namespace, name string) {
	if !finalizedHere(res) {
		return
	}
	f.queue.add(storageKey(res, namespace, name), res)
}

// start resumes deletions left pending by a previous run and works the
// queue until ctx ends.
func (f *finalizer) start(ctx context.Context) error {
	for _, res := range f.s.reg.All() {
		if !finalizedHere(res) {
			continue
		}
		items, _, err := f.s.listObjects(ctx, res, "", "", &metainternalversion.ListOptions{})
		if err != nil {
			return err
		}
		for _, obj := range items {
			if obj.GetDeletionTimestamp() != nil {
				f.enqueue(res, "", obj.GetName())
			}
		}
	}
	go f.queue.run(ctx, func(ctx context.Context, key storage.Key, res *registry.Resource) bool {
		done, err := f.finalize(ctx, res, key.Name)
		if err != nil && ctx.Err() == nil {
			f.s.log.Warn("finalizing deletion", "resource", key.Resource, "name", key.Name, "err", err)
		}
		return done
	})
	return nil
}

// finalize takes one step towards removing a terminating object; done is
// true when nothing is left to do for it.
func (f *finalizer) finalize(ctx context.Context, res *registry.Resource, name string) (done bool, err error) {
	obj, _, err := f.s.getObject(ctx, res, "", name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil || obj.GetDeletionTimestamp() == nil {
		return err == nil, err
	}
	switch res.Kind {
	case "Namespace":
		// A namespace whose spec.finalizers are gone already is left as
		// it is, as kube's namespace controller leaves it (a later DELETE
		// removes it).
		if fins, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers"); len(fins) == 0 {
			return true, nil
		}
		// Creates into it are refused once admission's namespace cache,
		// which its store events feed a moment after they commit, holds
		// it as Terminating; until then a create may still be admitted.
		// A create is noted as pending before it looks the namespace up,
		// so that from then on, every create admitted is among those
		// pending.
		if !f.awaitNamespaceInactive(ctx, name) {
			return false, nil
		}
		// A create admitted before the namespace turned Terminating may
		// still be on its way to the store: wait for it (kube's controller
		// waits a grace period for such last-minute creates).
		if f.s.createsPending(name) {
			return false, nil
		}
		// Passes until one finds nothing more to delete at once (what a
		// pass deleted may hide nothing, but a create that raced it is
		// found by the next; kube's controller lists again too).
		var contents namespaceContents
		for pass := 0; ; pass++ {
			var err error
			if contents, err = f.deleteNamespaceContents(ctx, name); err != nil {
				return false, err
			}
			if contents.remaining() || contents.found == 0 {
				break
			}
			if pass == 8 {
				return false, nil // still being written to: again later
			}
		}
		// As kube's namespace controller, through the API (admission sees
		// its service account): the conditions with an update of
		// namespaces/status (watchers see them in a MODIFIED event), then,
		// once the namespace is empty, its "kubernetes" finalizer removed
		// with an update of namespaces/finalize, which deletes it when no
		// finalizer is left.
		var condErr error
		if _, err := f.namespaceWrite(ctx, res, name, "status", func(ns *unstructured.Unstructured) {
			_, condErr = setNamespaceDeletionConditions(ns, contents)
		}); err != nil || condErr != nil {
			return false, errors.Join(err, condErr)
		}
		if contents.remaining() {
			return false, nil
		}
		finalized, err := f.namespaceWrite(ctx, res, name, "finalize", func(ns *unstructured.Unstructured) {
			fins, _, _ := unstructured.NestedStringSlice(ns.Object, "spec", "finalizers")
			fins = withoutFinalizer(fins, builtin.FinalizerKubernetes)
			if len(fins) == 0 {
				unstructured.RemoveNestedField(ns.Object, "spec", "finalizers")
			} else {
				unstructured.SetNestedStringSlice(ns.Object, fins, "spec", "finalizers")
			}
		})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return len(finalized.GetFinalizers()) == 0, nil
	case "CustomResourceDefinition":
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
			return false, err
		}
		// The Terminating condition as kube-apiserver's CRD finalizer
		// sets it: in progress (written before it deletes anything),
		// failed if a delete failed, then why it ended.
		inProgress := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
			Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"}
		if c := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating); c == nil || (c.Reason != inProgress.Reason && c.Reason != instanceDeletionCheck) {
			apihelpers.SetCRDCondition(crd, inProgress)
			if err := f.writeCRD(ctx, res, crd); err != nil {
				return false, err
			}
		}
		remaining, err := f.deleteCustomResources(ctx, crd)
		if err != nil {
			apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
				Reason: "InstanceDeletionFailed", Message: fmt.Sprintf("could not issue all deletes: %v", err)})
			if werr := f.writeCRD(ctx, res, crd); werr != nil {
				return false, werr
			}
			return false, err
		}
		before := crd.Status.DeepCopy()
		switch {
		case remaining && crd.DeletionTimestamp != nil && time.Since(crd.DeletionTimestamp.Time) >= instanceDeletionCheckAfter:
			// kube's finalizer waits a minute for the instances to go,
			// then says it could not confirm they did.
			apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
				Reason: instanceDeletionCheck, Message: "could not confirm zero CustomResources remaining: context deadline exceeded"})
		case remaining:
			apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
				Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"})
		case apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
			apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
				Reason: "InstanceDeletionCompleted", Message: "removed all instances"})
		default:
			apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
				Reason: "NeverEstablished", Message: "resource was never established"})
		}
		if remaining && equality.Semantic.DeepEqual(before, &crd.Status) {
			return false, nil
		}
		if !remaining {
			crd.Finalizers = withoutFinalizer(crd.Finalizers, builtin.CRDCleanupFinalizer)
		}
		// The last write removes the finalizer: with no other left, the
		// CRD goes.
		if err := f.writeCRD(ctx, res, crd); err != nil {
			return false, err
		}
		return !remaining && len(crd.Finalizers) == 0, nil
	}
	return true, nil // no other kind is finalized here
}

// awaitNamespaceInactive waits a moment for admission's namespace cache
// to stop holding namespace name as Active; false if it still does (the
// queue tries again later).
func (f *finalizer) awaitNamespaceInactive(ctx context.Context, name string) bool {
	for deadline := time.Now().Add(200 * time.Millisecond); f.s.webhooks.ActiveNamespace(name); {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// namespaceWrite updates namespace name through its subresource (status or
// finalize) as kube's namespace controller does, through admission as its
// service account; change edits a copy of the current namespace.
func (f *finalizer) namespaceWrite(ctx context.Context, res *registry.Resource, name, subresource string, change func(*unstructured.Unstructured)) (*unstructured.Unstructured, error) {
	req := &resourceRequest{res: res, version: "v1", name: name, subresource: subresource, user: namespaceUser}
	return f.s.updateObject(ctx, req, false, false, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		obj := current.DeepCopy()
		change(obj)
		return f.s.trackUpdate(req, current, obj, controllerManager), nil
	})
}

// namespaceContents is what a terminating namespace still holds: its
// objects per resource ("<plural>.<group>") and per finalizer.
type namespaceContents struct {
	// found counts the objects the pass found (deleted or not).
	found      int
	resources  map[string]int
	finalizers map[string]int
	// deleteErrs holds, per resource whose contents could not all be
	// deleted, the error that stopped its deletion; such a resource is
	// not counted in resources and finalizers (kube's controller does not
	// list what its failed deletecollection left).
	deleteErrs []error
}

// remaining tells whether the namespace still holds content, or may: a
// failed deletion leaves it unfinalized, as kube's controller finalizes
// a namespace only after a pass without errors.
func (c namespaceContents) remaining() bool { return len(c.resources) > 0 || len(c.deleteErrs) > 0 }

// deleteNamespaceContents deletes every object of every namespaced
// resource in namespace, as kube's namespace controller does (a
// deletecollection with background propagation, which also releases an
// object already being deleted from the orphan and foregroundDeletion
// finalizers no garbage collector will remove), and tells what remains
// (objects waiting on their finalizers) and which resources failed (the
// others are still deleted).
func (f *finalizer) deleteNamespaceContents(ctx context.Context, namespace string) (namespaceContents, error) {
	contents := namespaceContents{resources: map[string]int{}, finalizers: map[string]int{}}
	background := metav1.DeletePropagationBackground
	for _, res := range f.s.reg.All() {
		if !res.Namespaced {
			continue
		}
		items, _, err := f.s.listObjects(ctx, res, "", namespace, &metainternalversion.ListOptions{})
		if err != nil {
			return contents, err
		}
		contents.found += len(items)
		var left []*unstructured.Unstructured
		var failed error
		for _, obj := range items {
			// As the items of kube's deletecollection: unnamed to admission.
			req := &resourceRequest{res: res, version: res.Versions[0], namespace: namespace, name: obj.GetName(), user: namespaceUser, inCollection: true}
			pending, deleted, err := f.s.deleteObject(ctx, req, &metav1.DeleteOptions{PropagationPolicy: &background})
			if apierrors.IsNotFound(err) || (err == nil && deleted) {
				continue
			}
			if err != nil {
				// kube's deletecollection stops at an item's failed
				// delete (its one worker returns the error), and its
				// namespace controller then reports the error without
				// counting what the resource still holds.
				failed = err
				break
			}
			left = append(left, pending)
		}
		if failed != nil {
			contents.deleteErrs = append(contents.deleteErrs, failed)
			continue
		}
		for _, obj := range left {
			// As kube's namespace controller names them: "<plural>.<group>".
			contents.resources[res.Plural+"."+res.Group]++
			for _, fin := range obj.GetFinalizers() {
				contents.finalizers[fin]++
			}
		}
	}
	return contents, nil
}

// namespaceDeletionConditions are the conditions kube's namespace controller
// keeps on a terminating namespace, with what each says when all is well.
var namespaceDeletionConditions = []corev1.NamespaceCondition{
	{Type: corev1.NamespaceDeletionDiscoveryFailure, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
	{Type: corev1.NamespaceDeletionGVParsingFailure, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
	{Type: corev1.NamespaceDeletionContentFailure, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
	{Type: corev1.NamespaceContentRemaining, Reason: "ContentRemoved", Message: "All content successfully removed"},
	{Type: corev1.NamespaceFinalizersRemaining, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
}

// setNamespaceDeletionConditions sets the deletion conditions of a
// terminating namespace from what it still holds, as kube's namespace
// controller reports them (kubectl describe shows them), and tells whether
// they changed.
func setNamespaceDeletionConditions(obj *unstructured.Unstructured, contents namespaceContents) (bool, error) {
	var status corev1.NamespaceStatus
	if st, ok := obj.Object["status"].(map[string]interface{}); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(st, &status); err != nil {
			return false, err
		}
	}
	counted := func(counts map[string]int, format string) string {
		parts := make([]string, 0, len(counts))
		for name, n := range counts {
			parts = append(parts, fmt.Sprintf(format, name, n))
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	}
	now := metav1.Now()
	changed := false
	for _, want := range namespaceDeletionConditions {
		want.Status = corev1.ConditionFalse
		switch {
		case want.Type == corev1.NamespaceContentRemaining && len(contents.resources) > 0:
			want.Status, want.Reason = corev1.ConditionTrue, "SomeResourcesRemain"
			want.Message = "Some resources are remaining: " + counted(contents.resources, "%s has %d resource instances")
		case want.Type == corev1.NamespaceFinalizersRemaining && len(contents.finalizers) > 0:
			want.Status, want.Reason = corev1.ConditionTrue, "SomeFinalizersRemain"
			want.Message = "Some content in the namespace has finalizers remaining: " + counted(contents.finalizers, "%s in %d resource instances")
		case want.Type == corev1.NamespaceDeletionContentFailure && len(contents.deleteErrs) > 0:
			// kube's controller reports one error per failed resource,
			// their messages sorted.
			msgs := make([]string, 0, len(contents.deleteErrs))
			for _, err := range contents.deleteErrs {
				msgs = append(msgs, err.Error())
			}
			sort.Strings(msgs)
			want.Status, want.Reason = corev1.ConditionTrue, "ContentDeletionFailed"
			want.Message = fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", "))
		}
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == want.Type })
		switch {
		case i < 0:
			want.LastTransitionTime = now
			status.Conditions = append(status.Conditions, want)
		case status.Conditions[i].Status != want.Status || status.Conditions[i].Reason != want.Reason || status.Conditions[i].Message != want.Message:
			want.LastTransitionTime = status.Conditions[i].LastTransitionTime
			if status.Conditions[i].Status != want.Status {
				want.LastTransitionTime = now
			}
			status.Conditions[i] = want
		default:
			continue
		}
		changed = true
	}
	if !changed {
		return false, nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return false, err
	}
	obj.Object["status"] = st
	return true, nil
}

// instanceDeletionCheck is the Terminating reason of a CRD whose instances
// are still there a minute (instanceDeletionCheckAfter) after its deletion.
const (
	instanceDeletionCheck      = "InstanceDeletionCheck"
	instanceDeletionCheckAfter = time.Minute
)

// writeCRD writes crd's Terminating condition, and the removal of the
// cleanup finalizer once crd has none, as kube-apiserver's CRD finalizer
// does: an update of customresourcedefinitions/status through its
// loopback client (admission sees system:apiserver); a CRD being deleted
// left without finalizers goes. Only those two change: the rest of the
// current CRD (other finalizers, names accepted meanwhile) stays.
func (f *finalizer) writeCRD(ctx context.Context, res *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition) error {
	terminating := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating)
	req := &resourceRequest{res: res, version: "v1", name: crd.Name, subresource: "status", user: apiserverUser}
	_, err := f.s.updateObject(ctx, req, false, false, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, cur); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if terminating != nil {
			apihelpers.SetCRDCondition(cur, *terminating)
		}
		if !slices.Contains(crd.Finalizers, builtin.CRDCleanupFinalizer) {
			cur.Finalizers = withoutFinalizer(cur.Finalizers, builtin.CRDCleanupFinalizer)
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return f.s.trackUpdate(req, current, &unstructured.Unstructured{Object: u}, "kube-apiserver"), nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteCustomResources deletes every custom resource of crd, as
// kube-apiserver's CRD finalizer does: through the resource's own delete
// without admission (an object with finalizers is only marked), so
// remaining is true until the last one is gone. A resource that is not served (its names were never
// accepted) has its stored objects removed directly.
func (f *finalizer) deleteCustomResources(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (remaining bool, err error) {
	var res *registry.Resource
	served := false
	for _, v := range crd.Spec.Versions {
		if r, ok := f.s.reg.Get(crd.Spec.Group, v.Name, crd.Status.AcceptedNames.Plural); ok && r.Custom {
			res, served = r, true
			break
		}
	}
	if served {
		items, _, err := f.s.listObjects(ctx, res, "", "", &metainternalversion.ListOptions{})
		if err != nil {
			return false, err
		}
		background := metav1.DeletePropagationBackground
		for _, obj := range items {
			remaining = true
			if obj.GetDeletionTimestamp() != nil {
				continue
			}
			req := &resourceRequest{res: res, version: res.StorageVersion, namespace: obj.GetNamespace(), name: obj.GetName(), noAdmission: true}
			if _, _, err := f.s.deleteObject(ctx, req, &metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
				return true, err
			}
		}
		return remaining, nil
	}
	storageResource := crd.Spec.Group + "/" + crd.Spec.Names.Plural
	for {
		page, err := f.s.store.List(ctx, storageResource, storage.ListOptions{Limit: 500})
		if err != nil {
			return false, err
		}
		for _, o := range page.Items {
			if _, err := f.s.store.Delete(ctx, o.Key, o.Rev, func(int64) ([]byte, error) { return o.Data, nil }); err != nil && err != storage.ErrNotFound && err != storage.ErrConflict {
				return false, err
			}
		}
		if !page.More {
			return false, nil
		}
	}
}
