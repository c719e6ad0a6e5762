package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/kapi-dev/kapi/server/customresource"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/storage"
)

const crdStorageResource = "apiextensions.k8s.io/customresourcedefinitions"

// crdController keeps CRDs and the registry in step, as kube-apiserver's
// naming and establishing controllers and its CRD handler do: it accepts
// the names of each CRD that do not conflict with another CRD of its group
// (NamesAccepted), serves its resource, then marks it Established; a CRD
// that goes stops being served.
type crdController struct {
	s          *Server
	converters *conversion.CRConverterFactory

	queue *workQueue[string, struct{}]

	mu     sync.Mutex
	served map[string]servedResource // CRD name → resource it serves
	// refused holds the CRDs whose names are not all accepted.
	refused map[string]bool
	// names holds every stored CRD's group and accepted names, kept from
	// the store's events (this controller's own status writes included,
	// as they commit): a CRD's conflicts are found without reading every
	// other CRD, as kube-apiserver's naming controller reads its cache.
	names map[string]groupNames
	// badCABundle holds the CRDs kube-apiserver's handler would try to
	// serve (names accepted) but cannot: their conversion webhook's
	// caBundle does not parse.
	badCABundle map[string]*apiextensionsv1.CustomResourceDefinition
}

// servedResource is the resource a CRD serves and what it was built from:
// a sync that finds the CRD unchanged (a status write, say) keeps it, and
// what it builds on first use (OpenAPI documents, the SSA type converter,
// field managers), instead of building another.
type servedResource struct {
	gr   schema.GroupResource
	from servedFrom
}

// servedFrom is what a CRD's resource is built from: as kube-apiserver
// keeps a CRD's storage, its spec and accepted names. Its deletion is
// not (it moves the generation, hence the spec itself): a CRD being
// deleted keeps serving the same resource, marked Terminating in place, so
// that its watches see its custom resources deleted; they end when the
// CRD is gone.
type servedFrom struct {
	uid   types.UID
	spec  string // as JSON
	names string // the accepted names, as JSON
}

func servedFromOf(crd *apiextensionsv1.CustomResourceDefinition) servedFrom {
	spec, _ := json.Marshal(crd.Spec)
	names, _ := json.Marshal(crd.Status.AcceptedNames)
	return servedFrom{uid: crd.UID, spec: string(spec), names: string(names)}
}

// groupNames is what the naming rules need of a CRD.
type groupNames struct {
	group    string
	accepted apiextensionsv1.CustomResourceDefinitionNames
}

// groupNamesOf reads a stored CRD's group and accepted names.
func groupNamesOf(data []byte) (groupNames, error) {
	var crd struct {
		Spec struct {
			Group string `json:"group"`
		} `json:"spec"`
		Status struct {
			AcceptedNames apiextensionsv1.CustomResourceDefinitionNames `json:"acceptedNames"`
		} `json:"status"`
	}
	err := json.Unmarshal(data, &crd)
	return groupNames{group: crd.Spec.Group, accepted: crd.Status.AcceptedNames}, err
}

// note records a stored CRD's group and accepted names (nil data: the CRD
// is gone). Called with mu held.
func (c *crdController) note(name string, data []byte) {
	if data == nil {
		delete(c.names, name)
		return
	}
	n, err := groupNamesOf(data)
	if err != nil {
		c.s.log.Warn("reading a stored CRD's names", "crd", name, "err", err)
		return
	}
	c.names[name] = n
}

// acceptedInGroup returns the names the CRDs of group have accepted (as
// kube's naming controller, it counts the CRD being synced too: a rename
// may not take a name it holds under another role).
func (c *crdController) acceptedInGroup(group string) []apiextensionsv1.CustomResourceDefinitionNames {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []apiextensionsv1.CustomResourceDefinitionNames
	for _, n := range c.names {
		if n.group == group {
			out = append(out, n.accepted)
		}
	}
	return out
}

func newCRDController(s *Server, resolver webhookutil.ServiceResolver) (*crdController, error) {
	converters, err := conversion.NewCRConverterFactory(resolver, nil)
	if err != nil {
		return nil, err
	}
	return &crdController{s: s, converters: converters, queue: newWorkQueue[string, struct{}](), served: map[string]servedResource{}, refused: map[string]bool{}, names: map[string]groupNames{}, badCABundle: map[string]*apiextensionsv1.CustomResourceDefinition{}}, nil
}

func (c *crdController) enqueue(name string) { c.queue.add(name, struct{}{}) }

// start serves the CRDs stored so far, before the server takes requests,
// and then follows every CRD write.
func (c *crdController) start(ctx context.Context) error {
	c.s.store.Subscribe(func(ev storage.Event) {
		if ev.Object.Resource != crdStorageResource {
			return
		}
		c.enqueue(ev.Object.Name)
		// A change of one CRD may free names another one waits for, as
		// kube-apiserver's naming controller knows.
		c.mu.Lock()
		if ev.Op == storage.OpDeleted {
			c.note(ev.Object.Name, nil)
		} else {
			c.note(ev.Object.Name, ev.Object.Data)
		}
		refused := make([]string, 0, len(c.refused))
		for name := range c.refused {
			refused = append(refused, name)
		}
		c.mu.Unlock()
		for _, name := range refused {
			c.enqueue(name)
		}
	})
	stored, err := c.s.store.List(ctx, crdStorageResource, storage.ListOptions{})
	if err != nil {
		return err
	}
	c.mu.Lock()
	for _, o := range stored.Items {
		c.note(o.Name, o.Data)
	}
	c.mu.Unlock()
	// Served before the server takes requests; status writes wait for the
	// queue: a write goes through admission, whose caches start after this.
	for _, o := range stored.Items {
		if err := c.sync(ctx, o.Name, false); err != nil {
			c.s.log.Warn("serving a CRD", "crd", o.Name, "err", err)
		}
	}
	if len(stored.Items) > 0 {
		if err := c.s.policyStatus.recheckAll(ctx, true); err != nil {
			return err
		}
	}
	go c.queue.run(ctx, func(ctx context.Context, name string, _ struct{}) bool {
		if err := c.sync(ctx, name, true); err != nil {
			c.s.log.Warn("serving a CRD", "crd", name, "err", err)
			return false
		}
		return true
	})
	return nil
}

// sync brings one CRD's names, conditions and served resource up to date.
// Without writes, a status to write is left to the queue.
func (c *crdController) sync(ctx context.Context, name string, writes bool) error {
	res, _ := c.s.reg.Get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
	obj, _, err := c.s.getObject(ctx, res, "", name)
	if apierrors.IsNotFound(err) {
		c.unserve(name)
		c.mu.Lock()
		delete(c.refused, name)
		delete(c.badCABundle, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return err
	}
	updated := crd.DeepCopy()
	names, namesAccepted, established := acceptNames(crd, c.acceptedInGroup(crd.Spec.Group))
	updated.Status.AcceptedNames = names
	apihelpers.SetCRDCondition(updated, namesAccepted)
	apihelpers.SetCRDCondition(updated, established)

	c.mu.Lock()
	if namesAccepted.Status == apiextensionsv1.ConditionTrue {
		delete(c.refused, name)
	} else {
		c.refused[name] = true
	}
	c.mu.Unlock()
	if cond := apiApprovalCondition(updated); cond != nil {
		apihelpers.SetCRDCondition(updated, *cond)
	}
	// As kube-apiserver's handler: served once its names are accepted, and
	// for good once Established, even when a later change of its names is
	// refused (it is then served under its accepted names, with its
	// current spec).
	serve := namesAccepted.Status == apiextensionsv1.ConditionTrue || established.Status == apiextensionsv1.ConditionTrue
	invalidCABundle := false
	if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
		invalidCABundle = len(webhookutil.ValidateCABundle(field.NewPath(""), conv.Webhook.ClientConfig.CABundle)) > 0
	}
	c.mu.Lock()
	if serve && invalidCABundle {
		c.badCABundle[name] = updated
	} else {
		delete(c.badCABundle, name)
	}
	c.mu.Unlock()
	if invalidCABundle {
		// A conversion webhook kapi cannot verify: not served, and not
		// Established, as kube-apiserver's establishing controller says;
		// its resource's requests are answered 500 (unconvertible).
		c.unserve(name)
		if serve && !apihelpers.IsCRDConditionTrue(updated, apiextensionsv1.Established) {
			apihelpers.SetCRDCondition(updated, apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
				Reason: "InvalidCABundle", Message: "The conversion webhook CABundle is invalid",
			})
		}
		serve = false
	}
	if from := servedFromOf(updated); serve && !c.serves(name, from) {
		served, err := customresource.New(updated, c.converters)
		if err != nil {
			return fmt.Errorf("building the resource of %s: %w", name, err)
		}
		served.Terminating = updated.DeletionTimestamp != nil
		// Discovery lists it once the CRD is stored as Established.
		served.Unestablished = !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established)
		c.serve(name, served, from)
		// Policies may be type-checked against this schema (start does
		// it once for all the CRDs it serves).
		if writes {
			if err := c.s.policyStatus.recheckAll(ctx, true); err != nil {
				return err
			}
		}
	}
	if serve {
		c.setTerminating(name, updated.DeletionTimestamp != nil)
		c.setEstablished(name, apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established))
		// The endpoint is served: now the CRD is Established.
		if !apihelpers.IsCRDConditionTrue(updated, apiextensionsv1.Established) {
			apihelpers.SetCRDCondition(updated, apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
				Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
			})
		}
	}
	if equality.Semantic.DeepEqual(updated.Status, crd.Status) {
		return nil
	}
	if !writes {
		c.enqueue(name)
		return nil
	}
	written, err := c.writeStatus(ctx, res, updated)
	if err == nil && written && serve {
		// Stored as Established: discovery lists it from now on (the
		// sync the write's event brings would too, a moment later).
		c.setEstablished(name, apihelpers.IsCRDConditionTrue(updated, apiextensionsv1.Established))
	}
	return err
}

// unconvertible tells whether a request for plural in group and version
// (in a namespace, or not) reaches a CRD whose names are accepted but
// whose conversion webhook's caBundle does not parse: kube-apiserver's
// handler fails to build its converter and answers 500 "error resolving
// resource", after checking the request's scope and version as for any
// CRD (else 404). Only a namespaced CRD's lists and watches go without a
// namespace.
func (c *crdController) unconvertible(group, version, plural string, namespaced, collection bool, method string) bool {
	c.mu.Lock()
	crd := c.badCABundle[plural+"."+group]
	c.mu.Unlock()
	if crd == nil {
		return false
	}
	namespacedCRD := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	if namespaced && !namespacedCRD || namespacedCRD && !namespaced && !(collection && method == http.MethodGet) {
		return false
	}
	return apihelpers.HasServedCRDVersion(crd, version)
}

// apiApprovalCondition is the KubernetesAPIApprovalPolicyConformant
// condition kube-apiserver's API approval controller sets on a CRD of a
// protected group (*.k8s.io, *.kubernetes.io), from its
// api-approved.kubernetes.io annotation; nil for other groups.
func apiApprovalCondition(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return nil
	}
	cond := &apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.KubernetesAPIApprovalPolicyConformant, Status: apiextensionsv1.ConditionFalse}
	state, message := apihelpers.GetAPIApprovalState(crd.Annotations)
	cond.Message = message
	switch state {
	case apihelpers.APIApprovalInvalid:
		cond.Reason = "InvalidAnnotation"
	case apihelpers.APIApprovalMissing:
		cond.Reason = "MissingAnnotation"
	case apihelpers.APIApproved:
		cond.Status, cond.Reason = apiextensionsv1.ConditionTrue, "ApprovedAnnotation"
	case apihelpers.APIApprovalBypassed:
		cond.Reason = "UnapprovedAnnotation"
	default:
		cond.Status, cond.Reason = apiextensionsv1.ConditionUnknown, "UnknownAnnotation"
	}
	return cond
}

// writeStatus stores the CRD's new status as kube-apiserver's controllers
// do, through the /status rules.
func (c *crdController) writeStatus(ctx context.Context, res *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition) (written bool, err error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return false, err
	}
	want := &unstructured.Unstructured{Object: u}
	req := &resourceRequest{res: res, version: "v1", name: crd.Name, subresource: "status", user: apiserverUser}
	_, err = c.s.updateObject(ctx, req, false, false, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if current.GetResourceVersion() != want.GetResourceVersion() {
			// Changed meanwhile: the next sync recomputes from it.
			return nil, apierrors.NewConflict(res.GroupResource(), crd.Name, fmt.Errorf("changed while syncing"))
		}
		return c.s.trackUpdate(req, current, want.DeepCopy(), "kube-apiserver"), nil
	})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.enqueue(crd.Name)
		return false, nil
	}
	return err == nil, err
}

// serves tells whether the CRD name serves a resource built from from.
func (c *crdController) serves(name string, from servedFrom) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.served[name]
	return ok && old.from == from
}

func (c *crdController) serve(name string, res *registry.Resource, from servedFrom) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.served[name]; ok && old.gr != res.GroupResource() {
		c.s.reg.Remove(old.gr)
	}
	c.served[name] = servedResource{gr: res.GroupResource(), from: from}
	c.s.reg.Add(res)
	c.s.orphans.servedKindsChanged()
}

// setTerminating marks the resource the CRD name serves as being deleted
// or not.
func (c *crdController) setTerminating(name string, terminating bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if served, ok := c.served[name]; ok {
		c.s.reg.SetTerminating(served.gr, terminating)
	}
}

// setEstablished marks the resource the CRD name serves as listed by
// discovery (the CRD is stored as Established) or not.
func (c *crdController) setEstablished(name string, established bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if served, ok := c.served[name]; ok {
		c.s.reg.SetEstablished(served.gr, established)
	}
}

func (c *crdController) unserve(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.served[name]; ok {
		c.s.reg.Remove(old.gr)
		delete(c.served, name)
	}
}

// acceptNames decides, as kube-apiserver's naming controller does, which of
// the CRD's requested names it may use: a name a CRD of the group has
// accepted (inGroup, the CRD itself included) is refused, unless the CRD
// holds it in the same role, with a condition naming the conflict.
func acceptNames(in *apiextensionsv1.CustomResourceDefinition, inGroup []apiextensionsv1.CustomResourceDefinitionNames) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	// The names are scanned for each requested name rather than gathered
	// into sets: with many CRDs in a group, building the sets for each
	// CRD's sync was most of a restart's naming work.
	resources := func(name string) bool {
		return slices.ContainsFunc(inGroup, func(n apiextensionsv1.CustomResourceDefinitionNames) bool {
			return n.Plural == name || n.Singular == name || slices.Contains(n.ShortNames, name)
		})
	}
	kinds := func(name string) bool {
		return slices.ContainsFunc(inGroup, func(n apiextensionsv1.CustomResourceDefinitionNames) bool {
			return n.Kind == name || n.ListKind == name
		})
	}
	fresh := func(requested, accepted string, used func(string) bool) error {
		if requested == accepted || requested == "" || !used(requested) {
			return nil
		}
		return fmt.Errorf("%q is already in use", requested)
	}
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	req, acc := in.Spec.Names, in.Status.AcceptedNames
	names := acc
	if err := fresh(req.Plural, acc.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = req.Plural
	}
	if err := fresh(req.Singular, acc.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = req.Singular
	}
	// Every short name in use is reported, as kube's aggregate error.
	var shortErrs []error
	had := sets.New(acc.ShortNames...)
	for _, sn := range req.ShortNames {
		if !had.Has(sn) {
			if err := fresh(sn, "", resources); err != nil {
				shortErrs = append(shortErrs, err)
			}
		}
	}
	if shortErr := utilerrors.NewAggregate(shortErrs); shortErr != nil {
		conflict("ShortNamesConflict", shortErr)
	} else {
		names.ShortNames = req.ShortNames
	}
	if err := fresh(req.Kind, acc.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = req.Kind
	}
	if err := fresh(req.ListKind, acc.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = req.ListKind
	}
	names.Categories = req.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
		Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := apihelpers.FindCRDCondition(in, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: "Installing", Message: "the initial names have been accepted",
		}
	}
	return names, cond, established
}
