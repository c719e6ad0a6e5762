// Package core holds the checks kube-apiserver v1.33's core validation
// (pkg/apis/core/validation) layers on top of apimachinery's object meta
// validation, for the kinds kapi serves that use it (Namespace, DeviceClass).
package core

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateMetaFinalizers checks metadata.finalizers as kube's core
// ValidateObjectMeta and ValidateObjectMetaUpdate do beyond apimachinery's:
// a finalizer without a domain prefix must be a standard name.
func ValidateMetaFinalizers(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, name := range meta.Finalizers {
		allErrs = append(allErrs, validateKubeFinalizerName(name, fldPath.Child("finalizers").Index(i))...)
	}
	return allErrs
}

// ValidateFinalizerName checks a finalizer name outside metadata (a
// Namespace's spec.finalizers): a qualified name, and without a domain
// prefix a standard one.
func ValidateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateFinalizerName(name, fldPath)
	return append(allErrs, validateKubeFinalizerName(name, fldPath)...)
}

func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if strings.Contains(name, "/") {
		return nil
	}
	switch name {
	case "kubernetes", metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents:
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
}
