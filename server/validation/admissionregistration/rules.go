package admissionregistration

import (
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedOperations = sets.New(
		string(admissionregistrationv1.OperationAll),
		string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update),
		string(admissionregistrationv1.Delete),
		string(admissionregistrationv1.Connect),
	)
	supportedScopes = sets.New(
		string(admissionregistrationv1.ClusterScope),
		string(admissionregistrationv1.NamespacedScope),
		string(admissionregistrationv1.AllScopes),
	)
)

// kubeValue is an error value that prints as given. kube-apiserver reports
// some values of its internal types (package "admissionregistration") with
// %#v, e.g. []admissionregistration.OperationType{"*", "CREATE"}; printing
// the v1 values the same way keeps the messages identical.
type kubeValue string

func (v kubeValue) String() string { return string(v) }

// internalSliceValue renders a slice of strings as %#v renders a slice of the
// named internal type typeName.
func internalSliceValue[T ~string](typeName string, values []T) kubeValue {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(string(v))
	}
	return kubeValue(fmt.Sprintf("[]admissionregistration.%s{%s}", typeName, strings.Join(quoted, ", ")))
}

func hasWildcard[T ~string](values []T) bool {
	for _, v := range values {
		if v == "*" {
			return true
		}
	}
	return false
}

func validateRuleWithOperations(rule *admissionregistrationv1.RuleWithOperations, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(rule.Operations) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("operations"), ""))
	}
	if len(rule.Operations) > 1 && hasWildcard(rule.Operations) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("operations"), internalSliceValue("OperationType", rule.Operations), "if '*' is present, must not specify other operations"))
	}
	for i, op := range rule.Operations {
		if !supportedOperations.Has(string(op)) {
			allErrors = append(allErrors, field.NotSupported(fldPath.Child("operations").Index(i), op, sets.List(supportedOperations)))
		}
	}
	return append(allErrors, validateRule(&rule.Rule, fldPath)...)
}

func validateRule(rule *admissionregistrationv1.Rule, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(rule.APIGroups) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("apiGroups"), ""))
	}
	if len(rule.APIGroups) > 1 && hasWildcard(rule.APIGroups) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	// An empty group is valid: it is the core ("legacy") group.
	if len(rule.APIVersions) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("apiVersions"), ""))
	}
	if len(rule.APIVersions) > 1 && hasWildcard(rule.APIVersions) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersions"), rule.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, version := range rule.APIVersions {
		if version == "" {
			allErrors = append(allErrors, field.Required(fldPath.Child("apiVersions").Index(i), ""))
		}
	}
	allErrors = append(allErrors, validateResources(rule.Resources, fldPath.Child("resources"))...)
	if rule.Scope != nil && !supportedScopes.Has(string(*rule.Scope)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("scope"), *rule.Scope, sets.List(supportedScopes)))
	}
	return allErrors
}

// validateResources checks that resource/subresource entries do not overlap:
// "*/*" must be alone, "*" excludes plain resources, "x/*" excludes other
// "x/..." entries after it and "*/y" excludes other ".../y" entries after it.
func validateResources(resources []string, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(resources) == 0 {
		allErrors = append(allErrors, field.Required(fldPath, ""))
	}

	resourcesWithWildcardSubresource := sets.New[string]() // "x/*"
	subresourcesWithWildcardResource := sets.New[string]() // "*/x"
	hasDoubleWildcard := false                             // "*/*"
	hasSingleWildcard := false                             // "*"
	// Set by the last entry without a subresource only, as kube does.
	hasResourceWithoutSubresource := false

	for i, entry := range resources {
		if entry == "" {
			allErrors = append(allErrors, field.Required(fldPath.Index(i), ""))
			continue
		}
		if entry == "*/*" {
			hasDoubleWildcard = true
		}
		if entry == "*" {
			hasSingleWildcard = true
		}
		res, sub, found := strings.Cut(entry, "/")
		if !found {
			hasResourceWithoutSubresource = entry != "*"
			continue
		}
		if resourcesWithWildcardSubresource.Has(res) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), entry, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, entry)))
		}
		if subresourcesWithWildcardResource.Has(sub) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), entry, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, entry)))
		}
		if sub == "*" {
			resourcesWithWildcardSubresource.Insert(res)
		}
		if res == "*" {
			subresourcesWithWildcardResource.Insert(sub)
		}
	}
	if len(resources) > 1 && hasDoubleWildcard {
		allErrors = append(allErrors, field.Invalid(fldPath, resources, "if '*/*' is present, must not specify other resources"))
	}
	if hasSingleWildcard && hasResourceWithoutSubresource {
		allErrors = append(allErrors, field.Invalid(fldPath, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return allErrors
}

func validateNamedRuleWithOperations(rule *admissionregistrationv1.NamedRuleWithOperations, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	names := sets.New[string]()
	for i, name := range rule.ResourceNames {
		for _, msg := range path.ValidatePathSegmentName(name, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("resourceNames").Index(i), name, msg))
		}
		if names.Has(name) {
			allErrors = append(allErrors, field.Duplicate(fldPath.Child("resourceNames").Index(i), name))
		} else {
			names.Insert(name)
		}
	}
	return append(allErrors, validateRuleWithOperations(&rule.RuleWithOperations, fldPath)...)
}
