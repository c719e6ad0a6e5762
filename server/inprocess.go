package server

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

// The admission policy plugin reads param objects (of any served kind)
// through a dynamic client and maps paramKinds with a RESTMapper. Both
// answer from kapi's registry and store in process: no HTTP loopback.

// paramsClient is a read-only dynamic client over the store.
type paramsClient struct{ s *Server }

func (c paramsClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &paramsResource{s: c.s, gvr: gvr}
}

type paramsResource struct {
	// The write methods are not offered: calling one panics, and the
	// policy plugin only lists and watches.
	dynamic.ResourceInterface
	s         *Server
	gvr       schema.GroupVersionResource
	namespace string
}

func (r *paramsResource) Namespace(ns string) dynamic.ResourceInterface {
	return &paramsResource{s: r.s, gvr: r.gvr, namespace: ns}
}

func (r *paramsResource) resource() (*registry.Resource, error) {
	res, ok := r.s.reg.Get(r.gvr.Group, r.gvr.Version, r.gvr.Resource)
	if !ok {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), "")
	}
	return res, nil
}

func (r *paramsResource) Get(ctx context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	res, err := r.resource()
	if err != nil {
		return nil, err
	}
	obj, _, err := r.s.getObject(ctx, res, r.namespace, name)
	if err != nil {
		return nil, err
	}
	return obj, res.Strategy.Convert(obj, r.gvr.Version)
}

func (r *paramsResource) listOptions(opts metav1.ListOptions) (*metainternalversion.ListOptions, error) {
	internal := &metainternalversion.ListOptions{}
	err := metainternalversionscheme.Scheme.Convert(&opts, internal, nil)
	return internal, err
}

func (r *paramsResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	res, err := r.resource()
	if err != nil {
		return nil, err
	}
	internal, err := r.listOptions(opts)
	if err != nil {
		return nil, err
	}
	items, lm, err := r.s.listObjects(ctx, res, r.gvr.Version, r.namespace, internal)
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(r.gvr.GroupVersion().String())
	list.SetKind(res.ListKind)
	list.SetResourceVersion(lm.ResourceVersion)
	list.SetContinue(lm.Continue)
	for _, obj := range items {
		if err := res.Strategy.Convert(obj, r.gvr.Version); err != nil {
			return nil, err
		}
		list.Items = append(list.Items, *obj)
	}
	return list, nil
}

// Watch follows the resource from opts.ResourceVersion (as a list left it).
func (r *paramsResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	res, err := r.resource()
	if err != nil {
		return nil, err
	}
	internal, err := r.listOptions(opts)
	if err != nil {
		return nil, err
	}
	sel, err := newSelection(res, r.gvr.Version, internal)
	if err != nil {
		return nil, err
	}
	from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		from = r.s.store.CurrentRev()
	}
	live := make(chan *storage.Event, watchBuffer)
	overflow := make(chan struct{})
	subRev, cancel := r.s.store.SubscribeAt(func(ev storage.Event) {
		if ev.Object.Resource != res.StorageResource() {
			return
		}
		select {
		case live <- &ev:
		default:
			select {
			case <-overflow:
			default:
				close(overflow)
			}
		}
	})
	out := make(chan watch.Event)
	w := watch.NewProxyWatcher(out)
	send := func(ev storage.Event) bool {
		if r.namespace != "" && ev.Object.Namespace != r.namespace {
			return true
		}
		obj, err := decodeStored(&ev.Object)
		if err != nil {
			return true
		}
		if in, err := sel.matches(obj); err != nil || !in || res.Strategy.Convert(obj, r.gvr.Version) != nil {
			return true
		}
		typ := watch.Modified
		switch ev.Op {
		case storage.OpAdded:
			typ = watch.Added
		case storage.OpDeleted:
			typ = watch.Deleted
		}
		select {
		case out <- watch.Event{Type: typ, Object: obj}:
			return true
		case <-w.StopChan():
			return false
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(out)
		defer cancel()
		last := from
		for last < subRev {
			changes, err := r.s.store.Changes(ctx, res.StorageResource(), last, 500)
			if err != nil || len(changes) == 0 {
				return // the caller re-lists
			}
			for _, ev := range changes {
				if ev.Object.Rev > subRev {
					break
				}
				last = ev.Object.Rev
				if !send(ev) {
					return
				}
			}
		}
		for {
			select {
			case ev := <-live:
				if ev.Object.Rev <= last {
					continue
				}
				last = ev.Object.Rev
				if !send(*ev) {
					return
				}
			case <-overflow:
				return
			case <-w.StopChan():
				return
			case <-ctx.Done():
				return
			case <-r.s.stopping:
				return
			}
		}
	}()
	return w, nil
}

// restMapper maps kinds and resources through the registry.
type restMapper struct{ s *Server }

func (m restMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	for _, res := range m.s.reg.All() {
		if res.Group != gk.Group || res.Kind != gk.Kind {
			continue
		}
		// As kube's RESTMapper: the first of the versions asked for that
		// is served, the preferred one when none is asked for, no match
		// when none asked for is served.
		version, asked, found := res.Versions[0], false, false
		for _, v := range versions {
			if v == "" {
				continue
			}
			asked = true
			if res.Serves(v) {
				version, found = v, true
				break
			}
		}
		if asked && !found {
			return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
		}
		scope := meta.RESTScopeRoot
		if res.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		return &meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Group: res.Group, Version: version, Resource: res.Plural},
			GroupVersionKind: schema.GroupVersionKind{Group: res.Group, Version: version, Kind: res.Kind},
			Scope:            scope,
		}, nil
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func (m restMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	mapping, err := m.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	return []*meta.RESTMapping{mapping}, nil
}

func (m restMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	for _, res := range m.s.reg.All() {
		if res.Group == input.Group && (res.Plural == input.Resource || res.Singular == input.Resource) {
			v := input.Version
			if v == "" {
				v = res.Versions[0]
			} else if !res.Serves(v) {
				break // as kube's RESTMapper: no such version, no match
			}
			return schema.GroupVersionResource{Group: res.Group, Version: v, Resource: res.Plural}, nil
		}
	}
	return schema.GroupVersionResource{}, &meta.NoResourceMatchError{PartialResource: input}
}

func (m restMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	gvr, err := m.ResourceFor(input)
	if err != nil {
		return nil, err
	}
	return []schema.GroupVersionResource{gvr}, nil
}

func (m restMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	gvr, err := m.ResourceFor(resource)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	res, _ := m.s.reg.Get(gvr.Group, gvr.Version, gvr.Resource)
	return gvr.GroupVersion().WithKind(res.Kind), nil
}

func (m restMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	gvk, err := m.KindFor(resource)
	if err != nil {
		return nil, err
	}
	return []schema.GroupVersionKind{gvk}, nil
}

func (m restMapper) ResourceSingularizer(resource string) (string, error) {
	for _, res := range m.s.reg.All() {
		if res.Plural == resource {
			return res.Singular, nil
		}
	}
	return "", fmt.Errorf("no resource %q", resource)
}
