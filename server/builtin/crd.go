package builtin

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	crdregistry "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kapi-dev/kapi/server/registry"
)

// CRDCleanupFinalizer holds a deleted CRD until its custom resources are gone.
const CRDCleanupFinalizer = apiextensions.CustomResourceCleanupFinalizer

var apiextensionsScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

// The CRD rules are apiextensions-apiserver's own strategy and validation,
// run on the internal type.
var (
	crdStrategy       = crdregistry.NewStrategy(apiextensionsScheme)
	crdStatusStrategy = crdregistry.NewStatusStrategy(apiextensionsScheme)
)

func toInternalCRD(in *apiextensionsv1.CustomResourceDefinition) *apiextensions.CustomResourceDefinition {
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsScheme.Convert(in, out, nil); err != nil {
		panic(fmt.Sprintf("builtin: convert CRD to internal: %v", err))
	}
	return out
}

// fromInternalCRD sets out from in. It converts into a new object: in,
// converted from out, may point into out's fields (the conversion of a
// bool to a *bool, spec.preserveUnknownFields, takes its address), which
// clearing out first would change.
func fromInternalCRD(in *apiextensions.CustomResourceDefinition, out *apiextensionsv1.CustomResourceDefinition) {
	converted := &apiextensionsv1.CustomResourceDefinition{}
	if err := apiextensionsScheme.Convert(in, converted, nil); err != nil {
		panic(fmt.Sprintf("builtin: convert CRD from internal: %v", err))
	}
	*out = *converted
}

func crdResource() *registry.Resource {
	ctx := context.Background()
	s := &typed[apiextensionsv1.CustomResourceDefinition]{
		storageVersion:   "v1",
		groupVersion:     func(v string) string { return "apiextensions.k8s.io/" + v },
		tracksGeneration: true,
		defaults:         apiextensionsv1.SetObjectDefaults_CustomResourceDefinition,
		prepareCreate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			in := toInternalCRD(crd)
			crdStrategy.PrepareForCreate(ctx, in)
			fromInternalCRD(in, crd)
		},
		prepareUpdate: func(crd, old *apiextensionsv1.CustomResourceDefinition) {
			in := toInternalCRD(crd)
			crdStrategy.PrepareForUpdate(ctx, in, toInternalCRD(old))
			fromInternalCRD(in, crd)
		},
		validate: func(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			return crdStrategy.Validate(ctx, toInternalCRD(crd))
		},
		validateUpdate: func(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			return crdStrategy.ValidateUpdate(ctx, toInternalCRD(crd), toInternalCRD(old))
		},
		specChanged: func(crd, old *apiextensionsv1.CustomResourceDefinition) bool {
			return semanticChanged(crd.Spec, old.Spec)
		},
		prepareStatusUpdate: func(crd, old *apiextensionsv1.CustomResourceDefinition) {
			in := toInternalCRD(crd)
			crdStatusStrategy.PrepareForUpdate(ctx, in, toInternalCRD(old))
			fromInternalCRD(in, crd)
		},
		validateStatusUpdate: func(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			return crdStatusStrategy.ValidateUpdate(ctx, toInternalCRD(crd), toInternalCRD(old))
		},
		prepareDelete: func(crd *apiextensionsv1.CustomResourceDefinition, _ *metav1.DeleteOptions) (bool, error) {
			// As kube-apiserver: the CRD is held by a finalizer and marked
			// Terminating until its custom resources are deleted.
			if !hasString(crd.Finalizers, CRDCleanupFinalizer) {
				crd.Finalizers = append(crd.Finalizers, CRDCleanupFinalizer)
			}
			setCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
				Type:    apiextensionsv1.Terminating,
				Status:  apiextensionsv1.ConditionTrue,
				Reason:  "InstanceDeletionPending",
				Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
			})
			return true, nil
		},
	}
	return &registry.Resource{
		Group:          "apiextensions.k8s.io",
		Versions:       []string{"v1"},
		StorageVersion: "v1",
		Kind:           "CustomResourceDefinition",
		ListKind:       "CustomResourceDefinitionList",
		Plural:         "customresourcedefinitions",
		Singular:       "customresourcedefinition",
		ShortNames:     []string{"crd", "crds"},
		Categories:     []string{"api-extensions"},
		Status:         true,
		Strategy:       s,
		Table:          DefaultTable(),
		// kube-apiserver's CRD storage has a DELETE of its own: the
		// preconditions in its words, and a deletionTimestamp alone.
		CheckDelete: func(u *unstructured.Unstructured, opts *metav1.DeleteOptions) (bool, error) {
			return false, checkDeletePreconditions(apiextensionsv1.Resource("customresourcedefinitions"), u, opts)
		},
		StoredSize:           crdStoredSize,
		FirstDeleteOnlyMarks: true,
	}
}

// crdV1beta1Codec encodes a CRD as kube-apiserver stores it: v1beta1 JSON,
// which holds one copy of the schema, subresources and columns that every
// version shares (kube keeps that form "for objects whose v1 serialization
// is too big but whose v1beta1 serialization can be stored",
// https://issue.k8s.io/82292).
var crdV1beta1Codec = serializer.NewCodecFactory(apiextensionsScheme).LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion)

// crdStoredSize is the size of obj's v1beta1 JSON.
func crdStoredSize(obj *unstructured.Unstructured) int {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return math.MaxInt
	}
	data, err := runtime.Encode(crdV1beta1Codec, toInternalCRD(crd))
	if err != nil {
		return math.MaxInt
	}
	return len(data)
}

// setCRDCondition sets cond, keeping lastTransitionTime when the status
// does not change.
func setCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, cond apiextensionsv1.CustomResourceDefinitionCondition) {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	for i, c := range crd.Status.Conditions {
		if c.Type != cond.Type {
			continue
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		} else {
			cond.LastTransitionTime = now
		}
		crd.Status.Conditions[i] = cond
		return
	}
	cond.LastTransitionTime = now
	crd.Status.Conditions = append(crd.Status.Conditions, cond)
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
