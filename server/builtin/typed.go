// Package builtin declares the built-in kinds kapi serves: one Resource
// descriptor and one strategy per kind.
package builtin

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/json"

	"github.com/kapi-dev/kapi/server/registry"
)

// typed is the Strategy of a built-in kind, written against its Go type T
// (the storage version's type). Objects cross into T to be decoded,
// defaulted and validated, which also drops fields T does not know, as
// kube-apiserver's typed decoding does.
type typed[T any] struct {
	// decode turns a body sent in a non-storage version into T; nil when
	// the kind has one version.
	decode func(version string, body []byte) (*T, []error, error)
	// convert rewrites a storage-version object for another version; nil
	// when the versions share their fields.
	defaults       func(*T)
	prepareCreate  func(*T)
	prepareUpdate  func(obj, old *T)
	validate       func(*T) field.ErrorList
	validateUpdate func(obj, old *T) field.ErrorList
	specChanged    func(obj, old *T) bool
	// specAsDecoded has specChanged compare the object as the request's
	// JSON decodes (defaulted, its empty lists and maps as sent) rather
	// than as it is stored, which drops them: kube-apiserver's strategy
	// compares the object it decoded with the stored one.
	specAsDecoded    bool
	unconditional    bool
	tracksGeneration bool

	// status subresource (nil when the kind has none)
	prepareStatusUpdate  func(obj, old *T)
	validateStatusUpdate func(obj, old *T) field.ErrorList

	// finalize subresource (nil when the kind has none)
	validateFinalizeUpdate func(obj, old *T) field.ErrorList

	// prepareDelete marks a pending deletion (nil: none beyond finalizers).
	prepareDelete func(*T, *metav1.DeleteOptions) (bool, error)
	// holdsDeletion tells whether the kind holds an object being deleted
	// beyond its metadata.finalizers (nil: it does not).
	holdsDeletion func(*T) bool

	// rawExtensions returns the runtime.RawExtension fields of an object,
	// in a fixed order (nil where one is absent), for validation to see
	// the bytes they were decoded from; nil when the kind has none.
	rawExtensions func(*T) []*runtime.RawExtension

	storageVersion string
	groupVersion   func(version string) string
}

// decodeTyped decodes a body sent to version into T.
func (s *typed[T]) decodeTyped(version string, body []byte) (*T, []error, error) {
	if s.decode != nil && version != s.storageVersion {
		return s.decode(version, body)
	}
	obj := new(T)
	strictErr, err := json.UnmarshalStrict(body, obj, json.DisallowDuplicateFields, json.DisallowUnknownFields)
	return obj, strictErr, err
}

func (s *typed[T]) Decode(version string, body []byte) (*unstructured.Unstructured, []error, error) {
	obj, strictErr, err := s.decodeTyped(version, body)
	if err != nil {
		return nil, nil, err
	}
	// kube-apiserver defaults an object as it decodes it, so that what the
	// writer sent and the defaults are alike its own (managedFields).
	if s.defaults != nil {
		s.defaults(obj)
	}
	u, err := toUnstructured(obj)
	if err != nil {
		return nil, nil, err
	}
	// Keep the apiVersion and kind the client sent, so the handler can
	// check them against the endpoint.
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ManagedFields *[]any `json:"managedFields"`
		} `json:"metadata"`
	}
	_ = json.UnmarshalCaseSensitivePreserveInts(body, &tm)
	u.SetAPIVersion(tm.APIVersion)
	u.SetKind(tm.Kind)
	// An explicitly empty managedFields list asks to reset them; the Go
	// type cannot tell it from an absent one.
	if mf := tm.Metadata.ManagedFields; mf != nil && len(*mf) == 0 {
		_ = unstructured.SetNestedSlice(u.Object, []interface{}{}, "metadata", "managedFields")
	}
	return u, strictErr, nil
}

func (s *typed[T]) Convert(obj *unstructured.Unstructured, version string) error {
	obj.SetAPIVersion(s.groupVersion(version))
	return nil
}

// Default runs the kind's defaults on u, as kube-apiserver's scheme
// defaults a built-in object; one that does not fit T is left alone.
func (s *typed[T]) Default(u *unstructured.Unstructured) {
	if s.defaults == nil {
		return
	}
	obj := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return
	}
	s.defaults(obj)
	out, err := toUnstructured(obj)
	if err != nil {
		return
	}
	apiVersion, kind := u.GetAPIVersion(), u.GetKind()
	u.Object = out.Object
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
}

func (s *typed[T]) PrepareForCreate(ctx context.Context, u *unstructured.Unstructured) {
	s.with(u, func(obj *T) {
		if s.defaults != nil {
			s.defaults(obj)
		}
		if s.prepareCreate != nil {
			s.prepareCreate(obj)
		}
	})
}

func (s *typed[T]) PrepareForUpdate(ctx context.Context, u, oldU *unstructured.Unstructured) {
	old := mustTyped[T](oldU)
	s.with(u, func(obj *T) {
		if s.defaults != nil {
			s.defaults(obj)
		}
		if s.prepareUpdate != nil {
			s.prepareUpdate(obj, old)
		}
	})
}

func (s *typed[T]) Validate(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	return s.validate(s.asDecoded(ctx, u))
}

func (s *typed[T]) ValidateUpdate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	return s.validateUpdate(s.asDecoded(ctx, u), mustTyped[T](old))
}

// asDecoded returns u as a T whose runtime.RawExtension fields hold the
// bytes the JSON u was decoded from holds there (registry.DecodedJSON),
// whitespace and key order as sent: kube-apiserver validates them so (the
// size limit of DeviceClass parameters counts those bytes), where u holds
// only their values. A field whose value is no longer the one decoded (a
// webhook changed it) keeps the bytes of its value.
func (s *typed[T]) asDecoded(ctx context.Context, u *unstructured.Unstructured) *T {
	obj := mustTyped[T](u)
	if s.rawExtensions == nil {
		return obj
	}
	sent := s.sentObject(ctx)
	if sent == nil {
		return obj
	}
	// The values as u would hold them, to compare with obj's.
	su, err := toUnstructured(sent)
	if err != nil {
		return obj
	}
	values := new(T)
	if runtime.DefaultUnstructuredConverter.FromUnstructured(su.Object, values) != nil {
		return obj
	}
	got, raw, was := s.rawExtensions(obj), s.rawExtensions(sent), s.rawExtensions(values)
	if len(got) != len(raw) || len(raw) != len(was) {
		return obj
	}
	for i := range got {
		if got[i] != nil && raw[i] != nil && was[i] != nil && bytes.Equal(got[i].Raw, was[i].Raw) {
			got[i].Raw = raw[i].Raw
		}
	}
	return obj
}

func (s *typed[T]) AllowUnconditionalUpdate() bool { return s.unconditional }
func (s *typed[T]) TracksGeneration() bool         { return s.tracksGeneration }

func (s *typed[T]) SpecChanged(ctx context.Context, u, old *unstructured.Unstructured) bool {
	if s.specChanged == nil {
		return false
	}
	obj := mustTyped[T](u)
	if s.specAsDecoded {
		if sent := s.sentIfUnchanged(ctx, u); sent != nil {
			obj = sent
		}
	}
	return s.specChanged(obj, mustTyped[T](old))
}

// sentObject returns what the JSON the request's object was decoded from
// (registry.DecodedJSON) decodes to; nil when none is recorded or it does
// not decode.
func (s *typed[T]) sentObject(ctx context.Context) *T {
	data := registry.DecodedJSON(ctx)
	if data == nil {
		return nil
	}
	sent, _, err := s.decodeTyped(registry.RequestVersion(ctx), data)
	if err != nil {
		return nil
	}
	return sent
}

// sentIfUnchanged returns sentObject defaulted, when that is u but for its
// metadata and the empty lists and maps u's storage form drops; nil
// otherwise (no JSON recorded, or u changed since).
func (s *typed[T]) sentIfUnchanged(ctx context.Context, u *unstructured.Unstructured) *T {
	sent := s.sentObject(ctx)
	if sent == nil {
		return nil
	}
	if s.defaults != nil {
		s.defaults(sent)
	}
	su, err := toUnstructured(sent)
	if err != nil {
		return nil
	}
	rest := maps.Clone(u.Object)
	for _, key := range []string{"metadata", "apiVersion", "kind"} {
		delete(su.Object, key)
		delete(rest, key)
	}
	if !equality.Semantic.DeepEqual(su.Object, rest) {
		return nil
	}
	return sent
}

func (s *typed[T]) PrepareForStatusUpdate(ctx context.Context, u, oldU *unstructured.Unstructured) {
	old := mustTyped[T](oldU)
	s.with(u, func(obj *T) { s.prepareStatusUpdate(obj, old) })
}

func (s *typed[T]) ValidateStatusUpdate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	return s.validateStatusUpdate(mustTyped[T](u), mustTyped[T](old))
}

func (s *typed[T]) ValidateFinalizeUpdate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	return s.validateFinalizeUpdate(mustTyped[T](u), mustTyped[T](old))
}

func (s *typed[T]) HoldsDeletion(u *unstructured.Unstructured) bool {
	return s.holdsDeletion != nil && s.holdsDeletion(mustTyped[T](u))
}

func (s *typed[T]) PrepareForDelete(ctx context.Context, u *unstructured.Unstructured, opts *metav1.DeleteOptions) (pending bool, err error) {
	if s.prepareDelete == nil {
		return false, nil
	}
	s.with(u, func(obj *T) { pending, err = s.prepareDelete(obj, opts) })
	return pending, err
}

// with runs fn on u as a T and writes the result back into u.
func (s *typed[T]) with(u *unstructured.Unstructured, fn func(*T)) {
	obj := mustTyped[T](u)
	fn(obj)
	out, err := toUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("builtin: %T does not round-trip: %v", obj, err))
	}
	apiVersion, kind := u.GetAPIVersion(), u.GetKind()
	u.Object = out.Object
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
}

func mustTyped[T any](u *unstructured.Unstructured) *T {
	obj := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		panic(fmt.Sprintf("builtin: object does not fit %T: %v", obj, err))
	}
	return obj
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// semanticChanged compares two values as kube-apiserver does to decide on
// a generation bump.
func semanticChanged(a, b any) bool { return !equality.Semantic.DeepEqual(a, b) }
