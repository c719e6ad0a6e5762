// Package resource validates resource.k8s.io objects the way kube-apiserver
// v1.33 does (pkg/apis/resource/validation), working directly on the typed
// k8s.io/api/resource/v1beta2 structs.
package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/kapi-dev/kapi/server/validation/core"
)

// ValidateDeviceClass validates a DeviceClass on create.
func ValidateDeviceClass(obj *resourcev1beta2.DeviceClass) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	allErrs = append(allErrs, core.ValidateMetaFinalizers(&obj.ObjectMeta, metaPath)...)
	allErrs = append(allErrs, validateDeviceClassSpec(&obj.Spec, nil, field.NewPath("spec"))...)
	return allErrs
}

// ValidateDeviceClassUpdate validates an update of old to obj.
func ValidateDeviceClassUpdate(obj, old *resourcev1beta2.DeviceClass) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	allErrs = append(allErrs, core.ValidateMetaFinalizers(&obj.ObjectMeta, metaPath)...)
	allErrs = append(allErrs, validateDeviceClassSpec(&obj.Spec, &old.Spec, field.NewPath("spec"))...)
	return allErrs
}

func validateDeviceClassSpec(spec, oldSpec *resourcev1beta2.DeviceClassSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	// Selectors identical to the stored ones (same order, same content) were
	// accepted before and are checked with the more permissive environment
	// for stored expressions. Any change makes all of them "new".
	storedSelectors := oldSpec != nil && apiequality.Semantic.DeepEqual(spec.Selectors, oldSpec.Selectors)
	selectorsPath := fldPath.Child("selectors")
	for i, selector := range spec.Selectors {
		allErrs = append(allErrs, validateSelector(selector, selectorsPath.Index(i), storedSelectors)...)
	}
	if len(spec.Selectors) > resourcev1beta2.DeviceSelectorsMaxSize {
		allErrs = append(allErrs, field.TooMany(selectorsPath, len(spec.Selectors), resourcev1beta2.DeviceSelectorsMaxSize))
	}

	// The same applies to config: unchanged entries are not subject to the
	// size limit of the parameters.
	storedConfig := oldSpec != nil && apiequality.Semantic.DeepEqual(spec.Config, oldSpec.Config)
	configPath := fldPath.Child("config")
	for i, config := range spec.Config {
		allErrs = append(allErrs, validateDeviceConfiguration(config.DeviceConfiguration, configPath.Index(i), storedConfig)...)
	}
	if len(spec.Config) > resourcev1beta2.DeviceConfigMaxSize {
		allErrs = append(allErrs, field.TooMany(configPath, len(spec.Config), resourcev1beta2.DeviceConfigMaxSize))
	}

	return allErrs
}

func validateSelector(selector resourcev1beta2.DeviceSelector, fldPath *field.Path, stored bool) field.ErrorList {
	if selector.CEL == nil {
		return field.ErrorList{field.Required(fldPath.Child("cel"), "")}
	}
	return validateCELExpression(selector.CEL.Expression, fldPath.Child("cel", "expression"), stored)
}

func validateCELExpression(expression string, fldPath *field.Path, stored bool) field.ErrorList {
	if len(expression) > resourcev1beta2.CELSelectorExpressionMaxLength {
		// Too long expressions are not compiled at all.
		return field.ErrorList{field.TooLong(fldPath, "", resourcev1beta2.CELSelectorExpressionMaxLength)}
	}

	envType := environment.NewExpressions
	if stored {
		envType = environment.StoredExpressions
	}
	result := dracel.GetCompiler().CompileCELExpression(expression, dracel.Options{EnvType: &envType})
	if result.Error != nil {
		return field.ErrorList{celErrorToFieldError(fldPath, expression, result.Error)}
	}
	if result.MaxCost > resourcev1beta2.CELSelectorExpressionMaxCost {
		return field.ErrorList{field.Forbidden(fldPath, "too complex, exceeds cost limit")}
	}
	return nil
}

// celErrorToFieldError maps an error from the CEL compiler onto the field
// error type kube-apiserver reports for it.
func celErrorToFieldError(fldPath *field.Path, expression string, err error) *field.Error {
	var celErr *apiservercel.Error
	if errors.As(err, &celErr) {
		switch celErr.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(fldPath, celErr.Detail)
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(fldPath, expression, celErr.Detail)
		case apiservercel.ErrorTypeInternal:
			return field.InternalError(fldPath, celErr)
		}
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}

func validateDeviceConfiguration(config resourcev1beta2.DeviceConfiguration, fldPath *field.Path, stored bool) field.ErrorList {
	if config.Opaque == nil {
		return field.ErrorList{field.Required(fldPath.Child("opaque"), "")}
	}
	opaquePath := fldPath.Child("opaque")
	allErrs := validateDriverName(config.Opaque.Driver, opaquePath.Child("driver"))
	allErrs = append(allErrs, validateParameters(config.Opaque.Parameters, opaquePath.Child("parameters"), stored)...)
	return allErrs
}

// validateDriverName checks a driver name the way CSI driver names are
// checked: required, at most 63 bytes, and (case-insensitively) a DNS-1123
// subdomain.
func validateDriverName(name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath, ""))
	}
	if len(name) > resourcev1beta2.DriverNameMaxLength {
		allErrs = append(allErrs, field.TooLong(fldPath, name, resourcev1beta2.DriverNameMaxLength))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.ToLower(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateParameters checks opaque driver parameters: present, not larger
// than the limit (unless already stored), and a JSON object.
func validateParameters(raw runtime.RawExtension, fldPath *field.Path, stored bool) field.ErrorList {
	if len(raw.Raw) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !stored && len(raw.Raw) > resourcev1beta2.OpaqueParametersMaxLength {
		// Not worth parsing.
		return field.ErrorList{field.TooLong(fldPath, "", resourcev1beta2.OpaqueParametersMaxLength)}
	}
	var v any
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(fldPath, "<value omitted>", fmt.Sprintf("error parsing data as JSON: %v", err))}
	}
	if v == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(fldPath, "<value omitted>", "parameters must be a valid JSON object")}
	}
	return nil
}
