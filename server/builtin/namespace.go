package builtin

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kapiadmission "github.com/kapi-dev/kapi/admission"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/validation/core"
)

// FinalizerKubernetes is the spec finalizer every namespace carries until
// its contents are deleted.
const FinalizerKubernetes = "kubernetes"

// LabelMetadataName is set on every namespace to its name.
const LabelMetadataName = "kubernetes.io/metadata.name"

func namespaceResource() *registry.Resource {
	s := &typed[corev1.Namespace]{
		storageVersion: "v1",
		groupVersion:   func(v string) string { return v },
		unconditional:  true,
		// kube-apiserver defaults a namespace as it decodes it (the
		// label with its name, phase Active where none is given), so
		// mutating webhooks see both.
		defaults: defaultNamespace,
		prepareCreate: func(ns *corev1.Namespace) {
			ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			if !hasFinalizer(ns.Spec.Finalizers, FinalizerKubernetes) {
				ns.Spec.Finalizers = append(ns.Spec.Finalizers, FinalizerKubernetes)
			}
			setNameLabel(ns)
		},
		prepareUpdate: func(ns, old *corev1.Namespace) {
			// spec.finalizers change only through /finalize, status only
			// through /status.
			ns.Spec.Finalizers = old.Spec.Finalizers
			ns.Status = old.Status
			setNameLabel(ns)
		},
		validate: validateNamespace,
		// As kube's namespace strategy: the create rules (on the stored
		// spec.finalizers, which an update keeps), then the update's.
		validateUpdate: func(ns, old *corev1.Namespace) field.ErrorList {
			return append(validateNamespace(ns), validateNamespaceMetaUpdate(ns, old)...)
		},
		// /finalize changes spec.finalizers: each is checked at its index.
		validateFinalizeUpdate: func(ns, old *corev1.Namespace) field.ErrorList {
			errs := validateNamespaceMetaUpdate(ns, old)
			for i, f := range ns.Spec.Finalizers {
				errs = append(errs, core.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
			}
			return errs
		},
		prepareStatusUpdate: func(ns, old *corev1.Namespace) {
			// As kube-apiserver's namespace status strategy: the spec
			// stays, metadata and status change.
			ns.Spec = old.Spec
		},
		validateStatusUpdate: func(ns, old *corev1.Namespace) field.ErrorList {
			errs := validateNamespaceMetaUpdate(ns, old)
			// The phase follows the new object's deletionTimestamp, as
			// kube checks it (a changed one is refused above).
			if ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceActive {
				errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
			}
			if !ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceTerminating {
				errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
			}
			return errs
		},
		prepareDelete: func(ns *corev1.Namespace, opts *metav1.DeleteOptions) (bool, error) {
			// Admission refuses it first; this holds for deletes made without it.
			if err := kapiadmission.AdmitNamespaceDelete(schema.GroupResource{Resource: "namespaces"}, ns.Name); err != nil {
				return false, err
			}
			if !ns.DeletionTimestamp.IsZero() {
				// A later DELETE, once its finalizers are gone: the
				// generic store's deletion, as kube-apiserver's.
				return len(ns.Spec.Finalizers) > 0, nil
			}
			// As kube-apiserver's namespace storage, the first DELETE only
			// marks the namespace Terminating (its controller finishes
			// it), and orphanDependents: false asks for the foreground
			// (the generic store reads it as the background).
			ns.Status.Phase = corev1.NamespaceTerminating
			if o := opts.OrphanDependents; o != nil && !*o && !hasString(ns.Finalizers, metav1.FinalizerDeleteDependents) {
				ns.Finalizers = append(ns.Finalizers, metav1.FinalizerDeleteDependents)
			}
			return true, nil
		},
		holdsDeletion: func(ns *corev1.Namespace) bool { return len(ns.Spec.Finalizers) > 0 },
	}
	return &registry.Resource{
		Group:          "",
		Versions:       []string{"v1"},
		StorageVersion: "v1",
		Kind:           "Namespace",
		ListKind:       "NamespaceList",
		Plural:         "namespaces",
		Singular:       "namespace",
		ShortNames:     []string{"ns"},
		Status:         true,
		// kube-apiserver serves namespaces/finalize, and no
		// deletecollection for namespaces.
		Finalize:            true,
		StatusKeepsMetadata: true,
		NoDeleteCollection:  true,
		ReturnDeletedObject: true, // as kube's namespace storage
		OwnFieldLabelErrors: true,
		CheckDelete:         checkNamespaceDelete,
		Strategy:            s,
		Table: registry.TableConvertor{
			Columns: []metav1.TableColumnDefinition{
				nameColumn(),
				{Name: "Status", Type: "string", Description: "The status of the namespace"},
				ageColumn(),
			},
			Cells: func(u *unstructured.Unstructured) []interface{} {
				phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
				return []interface{}{u.GetName(), phase, age(u)}
			},
		},
		FieldLabels: func(_ string, u *unstructured.Unstructured) fields.Set {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			return fields.Set{"status.phase": phase}
		},
	}
}

// validateNamespace is kube's ValidateNamespace: its object meta rules and
// spec.finalizers, each reported at spec.finalizers.
func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName, field.NewPath("metadata"))
	errs = append(errs, core.ValidateMetaFinalizers(&ns.ObjectMeta, field.NewPath("metadata"))...)
	for _, f := range ns.Spec.Finalizers {
		errs = append(errs, core.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers"))...)
	}
	return errs
}

// validateNamespaceMetaUpdate is kube core's ValidateObjectMetaUpdate, which
// every namespace update (main resource, /status, /finalize) runs.
func validateNamespaceMetaUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, core.ValidateMetaFinalizers(&ns.ObjectMeta, field.NewPath("metadata"))...)
}

// InitialNamespaces exist from the start, as in a new cluster.
var InitialNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// defaultNamespace is kube's defaulting of a namespace (SetDefaults_Namespace
// and SetDefaults_NamespaceStatus).
func defaultNamespace(ns *corev1.Namespace) {
	// Not for a name still to be generated: the label comes with the
	// name (prepareCreate), as kube's strategy sets it once generated.
	if ns.Name != "" {
		setNameLabel(ns)
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

func setNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[LabelMetadataName] = ns.Name
}

func hasFinalizer(list []corev1.FinalizerName, f corev1.FinalizerName) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}

// checkNamespaceDelete is kube-apiserver's namespace storage's DELETE: the
// uid precondition is always set (admission sees it), the preconditions
// are checked in its words, and a namespace already terminating that still
// has spec.finalizers is answered as it is.
func checkNamespaceDelete(u *unstructured.Unstructured, opts *metav1.DeleteOptions) (bool, error) {
	if err := checkDeletePreconditions(schema.GroupResource{Resource: "namespaces"}, u, opts); err != nil {
		return false, err
	}
	fins, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
	return u.GetDeletionTimestamp() != nil && len(fins) > 0, nil
}

// checkDeletePreconditions checks a DELETE's preconditions against u as
// the namespace and CRD storages of kube-apiserver do, in their words; the
// uid precondition is always set (admission sees it).
func checkDeletePreconditions(gr schema.GroupResource, u *unstructured.Unstructured, opts *metav1.DeleteOptions) error {
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	uid := u.GetUID()
	if opts.Preconditions.UID == nil {
		opts.Preconditions.UID = &uid
	} else if *opts.Preconditions.UID != uid {
		return apierrors.NewConflict(gr, u.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *opts.Preconditions.UID, uid))
	}
	if rv := opts.Preconditions.ResourceVersion; rv != nil && *rv != u.GetResourceVersion() {
		return apierrors.NewConflict(gr, u.GetName(), fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, u.GetResourceVersion()))
	}
	return nil
}
