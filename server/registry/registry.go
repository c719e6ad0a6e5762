// Package registry describes the resources kapi serves: one Resource
// descriptor per resource, with the Strategy that holds its per-kind rules.
// Built-in kinds register at start; a CRD adds and removes resources at run
// time, so the Registry is safe for concurrent use.
package registry

import (
	"context"
	"slices"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
)

// Strategy holds the rules of one kind. Objects are passed in the version
// the request came through (registry.RequestVersion; the storage version
// for kapi's own writes), as kube-apiserver's handlers pass them; the
// handlers convert to the storage version to store.
type Strategy interface {
	// Decode parses a JSON request body sent to the given version. It
	// returns the object and the unknown or duplicate fields found (for
	// fieldValidation), or an error for a body that cannot be decoded.
	Decode(version string, body []byte) (*unstructured.Unstructured, []error, error)
	// Convert converts obj to version in place, as kube-apiserver's
	// storage codec converts what it reads (and what it stores, unless
	// the strategy is a WriteConverter).
	Convert(obj *unstructured.Unstructured, version string) error

	// PrepareForCreate sets defaults and clears what a client may not set
	// on create (e.g. status).
	PrepareForCreate(ctx context.Context, obj *unstructured.Unstructured)
	// PrepareForUpdate sets defaults and keeps what a client may not change
	// through the main resource (e.g. status) from old.
	PrepareForUpdate(ctx context.Context, obj, old *unstructured.Unstructured)
	Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList

	// AllowUnconditionalUpdate tells whether a PUT without
	// metadata.resourceVersion is allowed.
	AllowUnconditionalUpdate() bool
	// SpecChanged tells whether an update must bump metadata.generation;
	// kinds that do not track generation return false. ctx holds the JSON
	// obj was decoded from (DecodedJSON), for kinds that compare it as
	// sent.
	SpecChanged(ctx context.Context, obj, old *unstructured.Unstructured) bool
	// TracksGeneration is true for kinds whose metadata.generation starts
	// at 1 on create.
	TracksGeneration() bool
}

// AppliedDecodeStrategy is implemented by the strategies of kinds whose
// server-side apply result is decoded otherwise than a request body: a
// custom resource's keeps its explicit nulls, which kube-apiserver's
// decoder drops from a body but its field manager leaves in an applied
// object (validation then refuses them where the schema allows none).
type AppliedDecodeStrategy interface {
	DecodeApplied(version string, body []byte) (*unstructured.Unstructured, []error, error)
}

// WarningStrategy is implemented by the strategies of kinds that warn about
// a valid write (kube-apiserver's WarningsOnCreate and WarningsOnUpdate):
// the warnings reach the client as Warning headers.
type WarningStrategy interface {
	WarningsOnCreate(ctx context.Context, obj *unstructured.Unstructured) []string
	WarningsOnUpdate(ctx context.Context, obj, old *unstructured.Unstructured) []string
}

// StatusStrategy is implemented by the strategies of kinds with a /status
// subresource.
type StatusStrategy interface {
	// PrepareForStatusUpdate keeps everything but status from old.
	PrepareForStatusUpdate(ctx context.Context, obj, old *unstructured.Unstructured)
	ValidateStatusUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList
}

// FinalizeStrategy is implemented by the strategies of kinds with a
// /finalize subresource (Namespace).
type FinalizeStrategy interface {
	ValidateFinalizeUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList
}

// DeleteStrategy is implemented by kinds whose deletion is not immediate
// beyond metadata.finalizers (a namespace finalizes its contents, a CRD its
// custom resources).
type DeleteStrategy interface {
	// PrepareForDelete marks obj as being deleted (conditions, phase,
	// finalizers) by the DELETE with opts, and tells whether the deletion
	// must wait. A returned error refuses the deletion.
	PrepareForDelete(ctx context.Context, obj *unstructured.Unstructured, opts *metav1.DeleteOptions) (pending bool, err error)
	// HoldsDeletion tells whether the kind still holds an object being
	// deleted once its metadata.finalizers are gone (a namespace until its
	// spec.finalizers are).
	HoldsDeletion(obj *unstructured.Unstructured) bool
}

// ListConverter is implemented by the strategies of kinds whose objects
// are better converted together than one by one: a custom resource's
// conversion webhook gets one ConversionReview for a list, as
// kube-apiserver sends.
type ListConverter interface {
	// ConvertVersions converts the objects of objs it can take together
	// to version in place, entirely (as Convert would), and tells which it
	// converted; Convert is for the others.
	ConvertVersions(objs []*unstructured.Unstructured, version string) (converted []bool, err error)
}

// InMemoryConverter is implemented by the strategies whose conversion of
// an object differs away from storage: kube-apiserver's store converts a
// custom resource before it sets the resourceVersion it read, and after it
// clears the one it is given, so its conversion webhook is sent none
// there, while admission's and the field manager's conversions send the
// object as it is.
type InMemoryConverter interface {
	// ConvertInMemory converts obj to version in place, as it is.
	ConvertInMemory(obj *unstructured.Unstructured, version string) error
}

// ConvertInMemory converts obj to version in place, as kube-apiserver
// converts an object away from storage (admission, the field manager).
func ConvertInMemory(strategy Strategy, obj *unstructured.Unstructured, version string) error {
	if c, ok := strategy.(InMemoryConverter); ok {
		return c.ConvertInMemory(obj, version)
	}
	return strategy.Convert(obj, version)
}

// WriteConverter is implemented by the strategies whose conversion of an
// object being written differs from that of one read: kube-apiserver's
// storage defaults a custom resource it decodes by the version it was
// stored in, but encodes one it writes as it is.
type WriteConverter interface {
	// ConvertForWrite converts obj to version in place, for storage.
	ConvertForWrite(obj *unstructured.Unstructured, version string) error
}

// ConvertForWrite converts obj to version in place, as kube-apiserver's
// storage encodes an object it writes.
func ConvertForWrite(strategy Strategy, obj *unstructured.Unstructured, version string) error {
	if c, ok := strategy.(WriteConverter); ok {
		return c.ConvertForWrite(obj, version)
	}
	return strategy.Convert(obj, version)
}

// Defaulter is implemented by the strategies of kinds with defaults: the
// admission plugins default an object again after each mutating webhook's
// patch, as kube-apiserver's do.
type Defaulter interface {
	// Default sets the defaults of obj's version in obj; an object that
	// does not fit the kind is left as it is (its decoding reports it).
	Default(obj *unstructured.Unstructured)
}

// AdmissionConverter is implemented by the strategies of kinds whose
// objects admission converts otherwise than their codecs do (custom
// resources: kube-apiserver's request scope converts them with the CRD's
// converter alone, neither defaulted nor pruned by the version they are
// converted to, so that a webhook of another version sees, and hands
// back, what its version's schema does not know).
type AdmissionConverter interface {
	// ConvertForAdmission converts obj to version in place.
	ConvertForAdmission(obj *unstructured.Unstructured, version string) error
}

// AdmissionScheme is implemented by the strategies of built-in kinds: the
// objects of their requests reach the mutating webhooks as the Go types of
// kube-apiserver's scheme, as kube's request scope hands them over, so that
// a webhook's patch is decoded by that scheme's JSON serializer into the
// type of the webhook's version (what it leaves out of the object's
// apiVersion and kind is that version's), and a kind or version the scheme
// does not know is the serializer's error.
type AdmissionScheme interface {
	// AdmissionScheme returns the scheme kube-apiserver serves the kind
	// with and the name its errors give it.
	AdmissionScheme() (scheme *runtime.Scheme, name string)
}

// StorageCoercer is implemented by the strategies of kinds whose storage
// encoding prunes and coerces what it writes (custom resources: kube's
// storage codec prunes the fields the schema does not know, drops the nulls
// it allows none of, and coerces metadata). A body is coerced as it is
// decoded; what the mutating webhooks changed reaches validation and the
// validating admission as they left it, and is coerced only as it is
// written, as in kube-apiserver.
type StorageCoercer interface {
	// CoerceForStorage coerces obj, in the storage version, in place.
	CoerceForStorage(obj *unstructured.Unstructured) error
}

// ResetFieldsStrategy is implemented by the strategies of kinds whose
// fields a write puts back per version and subresource (kube-apiserver's
// GetResetFields): the field managers let no manager own them by such a
// write.
type ResetFieldsStrategy interface {
	// ResetFields returns the fields a write through version and
	// subresource ("" for the main resource) does not change, or nil.
	ResetFields(version, subresource string) *fieldpath.Set
}

// TableConvertor prints a kind's objects as kube-apiserver's Table.
type TableConvertor struct {
	Columns []metav1.TableColumnDefinition
	// Cells returns the row's cells, one per column.
	Cells func(obj *unstructured.Unstructured) []interface{}
}

// Resource describes one served resource.
type Resource struct {
	Group string
	// Versions are the served versions in discovery order (preferred first).
	Versions       []string
	StorageVersion string
	Kind           string
	ListKind       string
	Plural         string
	Singular       string
	Namespaced     bool
	ShortNames     []string
	Categories     []string
	// Status is true when the resource has a /status subresource (for a
	// custom resource: in its storage version; see StatusIn).
	Status bool
	// StatusVersions and ScaleVersions, when set (custom resources), tell
	// per served version whether it has /status and which /scale: a CRD
	// may give its versions different subresources.
	StatusVersions map[string]bool
	ScaleVersions  map[string]*Scale
	// VersionTables, when set, holds the Table of each version (custom
	// resources print per-version columns); Table serves otherwise.
	VersionTables map[string]TableConvertor
	// OpenAPIV3 and OpenAPIV2 return, per served version, the published
	// OpenAPI documents of kinds that bring their own (custom resources),
	// built on first use; nil for the other kinds.
	OpenAPIV3 func(version string) (*spec3.OpenAPI, error)
	OpenAPIV2 func(version string) (*spec.Swagger, error)
	// Scale is set when the resource has a /scale subresource (for a
	// custom resource: in its storage version; see ScaleIn).
	Scale *Scale
	// ReplicasPaths holds, per API version ("group/version") of every
	// version of a CRD with /scale somewhere, the path of spec replicas in
	// the custom resource (nil for a version without /scale): a /scale
	// write maps managedFields between Scale and custom resource by it.
	ReplicasPaths managedfields.ResourcePathMappings
	// Custom is true for the resources of CRDs.
	Custom bool
	// Terminating is set while the resource's CRD is being deleted:
	// creates are refused.
	Terminating bool
	// Unestablished is set while the resource's CRD is served (its names
	// are accepted) but not yet stored as Established: its requests are
	// served, as by kube-apiserver's CRD handler, but discovery and the
	// OpenAPI documents leave it out, as kube-apiserver's discovery and
	// OpenAPI controllers list only Established CRDs.
	Unestablished bool
	// copyOf is the resource SetTerminating copied this one from.
	copyOf *Resource
	// DeprecationWarnings holds, per deprecated version, the Warning sent
	// with every request through it.
	DeprecationWarnings map[string]string
	// RemovedReleases holds, per deprecated built-in version, the release
	// that removes it (the apiserver_requested_deprecated_apis metric's).
	RemovedReleases map[string]string
	// NoDeleteCollection is true for resources without deletecollection
	// (namespaces).
	NoDeleteCollection bool
	// Finalize is true for the namespace's /finalize subresource.
	Finalize bool
	// StatusKeepsMetadata is true when a /status write may change
	// metadata as well as status, so that its manager owns what it sets
	// there (kube's namespace status strategy resets only spec).
	StatusKeepsMetadata bool
	// ReturnDeletedObject makes DELETE answer with the object, not a Status.
	ReturnDeletedObject bool
	// FirstDeleteOnlyMarks is true for kinds whose first DELETE only marks
	// the object with the kind's own finalizer, whatever the propagation
	// policy (kube-apiserver's CRD storage); later ones are the generic
	// store's.
	FirstDeleteOnlyMarks bool
	// StoredSize, when set, is the size in bytes kube-apiserver stores an
	// object in, where its storage form is not the served one: the 1.5
	// MiB limit on stored objects is measured on it.
	StoredSize func(obj *unstructured.Unstructured) int
	Strategy   Strategy
	Table      TableConvertor
	// TypeConverter turns objects into structured-merge-diff values for
	// managedFields and server-side apply (nil: neither is available).
	TypeConverter managedfields.TypeConverter
	// GoType returns a zero value of the kind's Go type in version, for
	// strategic merge patch; nil for kinds without one (custom resources).
	GoType func(version string) interface{}
	// FieldLabels returns the fields a fieldSelector through version may
	// use beyond metadata.name and metadata.namespace (nil for none).
	FieldLabels func(version string, obj *unstructured.Unstructured) fields.Set
	// CheckDelete, when set, replaces the generic checks of a DELETE with
	// the kind's own, as kube-apiserver's namespace and CRD storages do:
	// it checks (and fills in) the options against obj, the stored object,
	// and done says the DELETE is answered with obj as it is (no
	// admission, nothing written). Such a kind is marked deleted with a
	// deletionTimestamp alone (no deletionGracePeriodSeconds, the same
	// generation).
	CheckDelete func(obj *unstructured.Unstructured, opts *metav1.DeleteOptions) (done bool, err error)
	// OwnFieldLabelErrors is true for kinds kube-apiserver converts field
	// labels for with a function of their own (namespaces, custom
	// resources): a field they do not support is "field label not
	// supported: <field>", not the scheme's default message.
	OwnFieldLabelErrors bool
}

// StatusIn tells whether version serves the /status subresource.
func (r *Resource) StatusIn(version string) bool {
	if r.StatusVersions != nil {
		return r.StatusVersions[version]
	}
	return r.Status
}

// ScaleIn returns the /scale subresource version serves, nil for none.
func (r *Resource) ScaleIn(version string) *Scale {
	if r.ScaleVersions != nil {
		return r.ScaleVersions[version]
	}
	return r.Scale
}

// Scale says where a resource keeps what its autoscaling/v1 Scale shows.
type Scale struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string
	// Table prints the Scale objects of /scale.
	Table TableConvertor
}

// TableFor returns the Table convertor of version.
func (r *Resource) TableFor(version string) TableConvertor {
	if t, ok := r.VersionTables[version]; ok {
		return t
	}
	return r.Table
}

// StorageResource is the store's resource name: "<group>/<plural>".
func (r *Resource) StorageResource() string { return r.Group + "/" + r.Plural }

// GroupResource returns the group and plural.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// GroupKind returns the group and kind.
func (r *Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// Serves tells whether version is served.
func (r *Resource) Serves(version string) bool {
	for _, v := range r.Versions {
		if v == version {
			return true
		}
	}
	return false
}

// Verbs are the verbs of the main resource, as discovery lists them:
// a built-in kind's sorted, a custom resource's in kube-apiserver's own
// order, and only those that read or delete while its CRD is Terminating.
func (r *Resource) Verbs() []string {
	if r.Custom && r.Terminating {
		return []string{"delete", "deletecollection", "get", "list", "watch"}
	}
	if r.Custom {
		return []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
	}
	if r.NoDeleteCollection {
		return []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	}
	return []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// Registry is the set of served resources.
type Registry struct {
	mu        sync.RWMutex
	resources map[schema.GroupResource]*Resource
	// generation counts the changes, for views derived from the registry.
	generation int64
	// retired holds, per served resource someone waits on, the channel
	// closed when it stops being served (replaced or removed).
	retired map[*Resource]chan struct{}
	// builtin counts, per group version, the built-in resources served
	// in it.
	builtin map[schema.GroupVersion]int
}

// Generation changes whenever a resource is added or removed.
func (g *Registry) Generation() int64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.generation
}

// New returns an empty Registry.
func New() *Registry {
	return &Registry{resources: map[schema.GroupResource]*Resource{}, builtin: map[schema.GroupVersion]int{}}
}

// countBuiltinLocked adds n to the count of built-in resources of every
// version r serves, if r is built-in.
func (g *Registry) countBuiltinLocked(r *Resource, n int) {
	if r.Custom {
		return
	}
	for _, v := range r.Versions {
		gv := schema.GroupVersion{Group: r.Group, Version: v}
		g.builtin[gv] += n
		if g.builtin[gv] == 0 {
			delete(g.builtin, gv)
		}
	}
}

// shadowedLocked is true when r is a custom resource in a group version
// kapi serves built-in kinds in. kube-apiserver serves such a group
// version with its built-in handler alone: the CRD's resource is not in
// its discovery (legacy nor aggregated), and its requests there find
// nothing (404), though the CRD stays Established.
func (g *Registry) shadowedLocked(r *Resource, version string) bool {
	return r.Custom && g.builtin[schema.GroupVersion{Group: r.Group, Version: version}] > 0
}

// Add registers r, replacing a resource with the same group and plural.
func (g *Registry) Add(r *Resource) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := r.GroupResource()
	if old, ok := g.resources[gr]; ok {
		if old != r {
			g.retireLocked(old)
		}
		g.countBuiltinLocked(old, -1)
	}
	g.resources[gr] = r
	g.countBuiltinLocked(r, 1)
	g.generation++
}

// Remove unregisters the resource.
func (g *Registry) Remove(gr schema.GroupResource) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.resources[gr]; ok {
		g.retireLocked(old)
		g.countBuiltinLocked(old, -1)
	}
	delete(g.resources, gr)
	g.generation++
}

// SetTerminating marks the resource gr as being deleted (its CRD is) or
// not. The resource goes on being served, as a copy with the mark: those
// reading the old one are not raced, and watches waiting for its
// retirement wait for the copy's.
func (g *Registry) SetTerminating(gr schema.GroupResource, terminating bool) {
	g.mark(gr, func(r *Resource) bool {
		changed := r.Terminating != terminating
		r.Terminating = terminating
		return changed
	})
}

// SetEstablished marks the resource gr as listed by discovery (its CRD is
// stored as Established) or not, as SetTerminating marks it.
func (g *Registry) SetEstablished(gr schema.GroupResource, established bool) {
	g.mark(gr, func(r *Resource) bool {
		changed := r.Unestablished == established
		r.Unestablished = !established
		return changed
	})
}

// mark serves, in place of the resource gr, a copy that set changed.
func (g *Registry) mark(gr schema.GroupResource, set func(*Resource) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, ok := g.resources[gr]
	if !ok {
		return
	}
	marked := *old
	if !set(&marked) {
		return
	}
	marked.copyOf = old.original()
	g.resources[gr] = &marked
	if ch, ok := g.retired[old]; ok {
		delete(g.retired, old)
		g.retired[&marked] = ch
	}
	g.generation++
}

// original is the resource r is a copy of (SetTerminating's,
// SetEstablished's), or r.
func (r *Resource) original() *Resource {
	if r.copyOf != nil {
		return r.copyOf
	}
	return r
}

// Retired returns a channel closed once r is no longer served: a CRD's
// change serves a new resource in its place, its deletion none. (Watches
// end then, as kube-apiserver ends them when it replaces a CRD's storage.)
func (g *Registry) Retired(r *Resource) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur := g.resources[r.GroupResource()]; cur != r {
		// A copy SetTerminating made since is the same resource: a watch
		// that began before its CRD's deletion goes on until the CRD is
		// gone.
		if cur == nil || cur.original() != r.original() {
			return closedChan
		}
		r = cur
	}
	ch, ok := g.retired[r]
	if !ok {
		if g.retired == nil {
			g.retired = map[*Resource]chan struct{}{}
		}
		ch = make(chan struct{})
		g.retired[r] = ch
	}
	return ch
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (g *Registry) retireLocked(r *Resource) {
	if ch, ok := g.retired[r]; ok {
		close(ch)
		delete(g.retired, r)
	}
}

// Get returns the resource group/plural if it is served in version (a
// custom resource in a group version of built-in kinds is not).
func (g *Registry) Get(group, version, plural string) (*Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.resources[schema.GroupResource{Group: group, Resource: plural}]
	if !ok || !r.Serves(version) || g.shadowedLocked(r, version) {
		return nil, false
	}
	return r, true
}

// GroupVersions returns every group discovery lists with its served versions (an
// Unestablished resource counts for none), in
// kube-apiserver's discovery order: groups by priority (groupPriority),
// then by name; in a group, the versions only CRDs serve first (kube
// registers their API services at version priority 100, above the
// built-in ones, and a CRD's version a built-in kind is served in keeps
// the built-in API service), then kube-aware version order (preferred
// first). A group none of whose resources serves a version is left out.
func (g *Registry) GroupVersions() []GroupVersions {
	g.mu.RLock()
	defer g.mu.RUnlock()
	byName := map[string]*GroupVersions{}
	priority := map[string]int{}
	custom := map[schema.GroupVersion]bool{}
	for _, r := range g.resources {
		if r.Unestablished {
			continue
		}
		gv := byName[r.Group]
		if gv == nil {
			gv = &GroupVersions{Group: r.Group}
			byName[r.Group] = gv
		}
		priority[r.Group] = max(priority[r.Group], groupPriority(r))
		for _, v := range r.Versions {
			if !slices.Contains(gv.Versions, v) {
				gv.Versions = append(gv.Versions, v)
			}
			if r.Custom && !g.shadowedLocked(r, v) {
				custom[schema.GroupVersion{Group: r.Group, Version: v}] = true
			}
		}
	}
	var out []GroupVersions
	for _, gv := range byName {
		if len(gv.Versions) == 0 {
			continue
		}
		SortVersions(gv.Versions)
		sort.SliceStable(gv.Versions, func(i, j int) bool {
			return custom[schema.GroupVersion{Group: gv.Group, Version: gv.Versions[i]}] && !custom[schema.GroupVersion{Group: gv.Group, Version: gv.Versions[j]}]
		})
		out = append(out, *gv)
	}
	sort.Slice(out, func(i, j int) bool {
		if pi, pj := priority[out[i].Group], priority[out[j].Group]; pi != pj {
			return pi > pj
		}
		return out[i].Group < out[j].Group
	})
	return out
}

// groupPriority is the priority of r's group in discovery, as
// kube-apiserver registers its API services (GroupPriorityMinimum): the
// built-in groups kapi serves at kube's figures, a CRD's group at 1000.
func groupPriority(r *Resource) int {
	if p, ok := builtinGroupPriority[r.Group]; ok && !r.Custom {
		return p
	}
	return 1000
}

var builtinGroupPriority = map[string]int{
	"":                             18000,
	"apiextensions.k8s.io":         16700,
	"admissionregistration.k8s.io": 16700,
	"resource.k8s.io":              16200,
}

// GroupVersions is one API group with its served versions.
type GroupVersions struct {
	Group    string
	Versions []string
}

// Resources returns the resources discovery lists in group/version (an
// Unestablished one is left out, and a custom resource shadowed by the
// built-in kinds of the group version), sorted by plural.
func (g *Registry) Resources(group, version string) []*Resource {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*Resource
	for _, r := range g.sortedLocked() {
		if r.Group == group && r.Serves(version) && !r.Unestablished && !g.shadowedLocked(r, version) {
			out = append(out, r)
		}
	}
	return out
}

// All returns every served resource, sorted by group and plural.
func (g *Registry) All() []*Resource {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.sortedLocked()
}

func (g *Registry) sortedLocked() []*Resource {
	out := make([]*Resource, 0, len(g.resources))
	for _, r := range g.resources {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Plural < out[j].Plural
	})
	return out
}

type requestVersionKey struct{}

// WithRequestVersion records the API version a request came through, for
// strategies whose rules differ by version (custom resources validate by
// the request version's schema).
func WithRequestVersion(ctx context.Context, version string) context.Context {
	return context.WithValue(ctx, requestVersionKey{}, version)
}

// RequestVersion returns the version WithRequestVersion recorded, or "".
func RequestVersion(ctx context.Context) string {
	v, _ := ctx.Value(requestVersionKey{}).(string)
	return v
}

type decodedJSONKey struct{}

// WithDecodedJSON records the JSON the object being written was decoded
// from (the request body, a patch's result, or the object as a mutating
// webhook left it), for strategies whose rules measure what was sent
// rather than the object: kube-apiserver's runtime.RawExtension fields keep
// the bytes they were decoded from, where an unstructured object holds
// their values only.
func WithDecodedJSON(ctx context.Context, data []byte) context.Context {
	return context.WithValue(ctx, decodedJSONKey{}, data)
}

// DecodedJSON returns the JSON WithDecodedJSON recorded, or nil.
func DecodedJSON(ctx context.Context) []byte {
	data, _ := ctx.Value(decodedJSONKey{}).([]byte)
	return data
}
