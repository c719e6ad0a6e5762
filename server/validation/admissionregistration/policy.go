package admissionregistration

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/client-go/util/jsonpath"
)

const (
	maxAuditAnnotations = 20
	// 5kb, less than the 10kb limit on an audit annotation value, since a
	// value computed by concatenation is often longer than its expression.
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

var (
	// kube accepts these reasons only; the documented "Unauthorized" is not
	// in its list.
	supportedValidationReasons = sets.New(
		string(metav1.StatusReasonForbidden),
		string(metav1.StatusReasonInvalid),
		string(metav1.StatusReasonRequestEntityTooLarge),
	)
	supportedValidationActions = sets.New(
		string(admissionregistrationv1.Deny),
		string(admissionregistrationv1.Warn),
		string(admissionregistrationv1.Audit),
	)
	newlines = regexp.MustCompile(`[\n\r]+`)
)

// preexistingExpressions are the expressions of the stored object. On update
// they compile in the stored-expressions environment, so that an expression
// accepted by an older server stays valid.
type preexistingExpressions struct {
	matchConditions  sets.Set[string]
	validations      sets.Set[string]
	messages         sets.Set[string]
	auditAnnotations sets.Set[string]
}

type policyOptions struct {
	ignoreMatchConditions bool
	preexisting           preexistingExpressions
}

// ValidateValidatingAdmissionPolicy validates a ValidatingAdmissionPolicy on create.
func ValidateValidatingAdmissionPolicy(obj *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	return validatePolicy(obj, policyOptions{})
}

// ValidateValidatingAdmissionPolicyUpdate validates a ValidatingAdmissionPolicy
// on update of the main resource. Match conditions are not re-checked when
// neither they nor paramKind changed.
func ValidateValidatingAdmissionPolicyUpdate(obj, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	opts := policyOptions{
		ignoreMatchConditions: reflect.DeepEqual(obj.Spec.ParamKind, old.Spec.ParamKind) &&
			reflect.DeepEqual(obj.Spec.MatchConditions, old.Spec.MatchConditions),
		preexisting: preexistingExpressions{
			matchConditions:  sets.New[string](),
			validations:      sets.New[string](),
			messages:         sets.New[string](),
			auditAnnotations: sets.New[string](),
		},
	}
	for _, mc := range old.Spec.MatchConditions {
		opts.preexisting.matchConditions.Insert(mc.Expression)
	}
	for _, v := range old.Spec.Validations {
		opts.preexisting.validations.Insert(v.Expression)
		if len(v.MessageExpression) > 0 {
			opts.preexisting.messages.Insert(v.MessageExpression)
		}
	}
	for _, a := range old.Spec.AuditAnnotations {
		opts.preexisting.auditAnnotations.Insert(a.ValueExpression)
	}
	return validatePolicy(obj, opts)
}

// ValidateValidatingAdmissionPolicyStatusUpdate validates an update through
// the status subresource: only the status is checked (the metadata rules
// common to every update are the handler's, as kube's store runs them).
func ValidateValidatingAdmissionPolicyStatusUpdate(obj, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	var allErrors field.ErrorList
	statusPath := field.NewPath("status")
	if tc := obj.Status.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			p := statusPath.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				allErrors = append(allErrors, field.Required(p.Child("warning"), ""))
			}
			allErrors = append(allErrors, validateFieldRef(w.FieldRef, p.Child("fieldRef"))...)
		}
	}
	return append(allErrors, metav1validation.ValidateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

func validateFieldRef(fieldRef string, fldPath *field.Path) field.ErrorList {
	fieldRef = strings.TrimSpace(fieldRef)
	if fieldRef == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if err := jsonpath.New("spec").Parse(fmt.Sprintf("{%s}", fieldRef)); err != nil {
		return field.ErrorList{field.Invalid(fldPath, fieldRef, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}

func validatePolicy(obj *admissionregistrationv1.ValidatingAdmissionPolicy, opts policyOptions) field.ErrorList {
	allErrors := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &obj.Spec
	fldPath := field.NewPath("spec")

	// One compiler per policy, created on first use: with variables it is a
	// composited compiler that accumulates the variables as they compile.
	var compiler plugincel.Compiler
	getCompiler := func() plugincel.Compiler {
		if compiler == nil {
			compiler = newPolicyCompiler(len(spec.Variables) > 0)
		}
		return compiler
	}
	hasParams := spec.ParamKind != nil

	if spec.FailurePolicy == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("failurePolicy"), ""))
	} else if !supportedFailurePolicies.Has(string(*spec.FailurePolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("failurePolicy"), *spec.FailurePolicy, sets.List(supportedFailurePolicies)))
	}
	if spec.ParamKind != nil {
		allErrors = append(allErrors, validateParamKind(spec.ParamKind, fldPath.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("matchConstraints"), ""))
	} else {
		allErrors = append(allErrors, validateMatchResources(spec.MatchConstraints, fldPath.Child("matchConstraints"))...)
		// The resource rules give the expressions their type information.
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			allErrors = append(allErrors, field.Required(fldPath.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if !opts.ignoreMatchConditions {
		allErrors = append(allErrors, validateMatchConditions(spec.MatchConditions, hasParams, opts.preexisting.matchConditions, fldPath.Child("matchConditions"))...)
	}
	for i := range spec.Variables {
		allErrors = append(allErrors, validateVariable(getCompiler(), &spec.Variables[i], hasParams, opts, fldPath.Child("variables").Index(i))...)
	}

	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const detail = "validations or auditAnnotations must contain at least one item"
		allErrors = append(allErrors, field.Required(fldPath.Child("validations"), detail))
		allErrors = append(allErrors, field.Required(fldPath.Child("auditAnnotations"), detail))
		return allErrors
	}
	for i := range spec.Validations {
		allErrors = append(allErrors, validateValidation(getCompiler(), &spec.Validations[i], hasParams, opts, fldPath.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("auditAnnotations"), auditAnnotationsValue(spec.AuditAnnotations), fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i := range spec.AuditAnnotations {
		a := &spec.AuditAnnotations[i]
		p := fldPath.Child("auditAnnotations").Index(i)
		allErrors = append(allErrors, validateAuditAnnotation(getCompiler(), obj.Name, a, hasParams, opts, p)...)
		if keys.Has(a.Key) {
			allErrors = append(allErrors, field.Duplicate(p.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return allErrors
}

// auditAnnotationsValue prints the list as kube's %#v of its internal type does.
func auditAnnotationsValue(annotations []admissionregistrationv1.AuditAnnotation) kubeValue {
	items := make([]string, len(annotations))
	for i, a := range annotations {
		items[i] = fmt.Sprintf("admissionregistration.AuditAnnotation{Key:%q, ValueExpression:%q}", a.Key, a.ValueExpression)
	}
	return kubeValue("[]admissionregistration.AuditAnnotation{" + strings.Join(items, ", ") + "}")
}

func validateParamKind(pk *admissionregistrationv1.ParamKind, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	apiVersionPath := fldPath.Child("apiVersion")
	if len(pk.APIVersion) == 0 {
		allErrors = append(allErrors, field.Required(apiVersionPath, ""))
	} else if group, version, err := parseGroupVersion(pk.APIVersion); err != nil {
		allErrors = append(allErrors, field.Invalid(apiVersionPath, pk.APIVersion, err.Error()))
	} else {
		// The same checks as an APIService's group and version.
		if len(group) > 0 {
			if errs := utilvalidation.IsDNS1123Subdomain(group); len(errs) > 0 {
				allErrors = append(allErrors, field.Invalid(apiVersionPath, group, strings.Join(errs, ",")))
			}
		}
		if len(version) == 0 {
			allErrors = append(allErrors, field.Invalid(apiVersionPath, pk.APIVersion, "version must be specified"))
		} else if errs := utilvalidation.IsDNS1035Label(version); len(errs) > 0 {
			allErrors = append(allErrors, field.Invalid(apiVersionPath, version, strings.Join(errs, ",")))
		}
	}
	if len(pk.Kind) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("kind"), ""))
	} else if errs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(errs) > 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(errs, ",")))
	}
	return allErrors
}

// parseGroupVersion splits "group/version" (or "version" for the core group).
func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// validateMatchResources checks a policy's matchConstraints or a binding's
// matchResources. matchPolicy and the selectors are filled by defaulting,
// so they are Required here; selectors are validated strictly.
func validateMatchResources(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if m == nil {
		return allErrors
	}
	if m.MatchPolicy == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("matchPolicy"), ""))
	} else if !supportedMatchPolicies.Has(string(*m.MatchPolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("matchPolicy"), *m.MatchPolicy, sets.List(supportedMatchPolicies)))
	}
	strict := metav1validation.LabelSelectorValidationOptions{}
	if m.NamespaceSelector == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("namespaceSelector"), ""))
	} else {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(m.NamespaceSelector, strict, fldPath.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("objectSelector"), ""))
	} else {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(m.ObjectSelector, strict, fldPath.Child("objectSelector"))...)
	}
	for i := range m.ResourceRules {
		allErrors = append(allErrors, validateNamedRuleWithOperations(&m.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		allErrors = append(allErrors, validateNamedRuleWithOperations(&m.ExcludeResourceRules[i], fldPath.Child("excludeResourceRules").Index(i))...)
	}
	return allErrors
}

func validateVariable(compiler plugincel.Compiler, v *admissionregistrationv1.Variable, hasParams bool, opts policyOptions, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(v.Name) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("name"), v.Name, "name is not a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(allErrors, field.Required(fldPath.Child("expression"), "expression is not specified"))
	}
	composited, ok := compiler.(*plugincel.CompositedCompiler)
	if !ok {
		return append(allErrors, field.InternalError(fldPath, fmt.Errorf("variable composition is not allowed")))
	}
	decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, StrictCost: true}
	// kube looks a variable up among the stored validation expressions.
	result := composited.CompileAndStoreVariable(variableExpression(v.Name, v.Expression), decls, envType(opts.preexisting.validations.Has(v.Expression)))
	if result.Error != nil {
		allErrors = append(allErrors, celErrorToFieldError(fldPath.Child("expression"), v.Expression, result.Error))
	}
	return allErrors
}

func validateValidation(compiler plugincel.Compiler, v *admissionregistrationv1.Validation, hasParams bool, opts policyOptions, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("expression"), "expression is not specified"))
	} else {
		decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, StrictCost: true}
		allErrors = append(allErrors, compile(compiler, boolExpression(v.Expression), decls, opts.preexisting.validations.Has(v.Expression), fldPath.Child("expression"))...)
	}

	trimmedMessageExpression := strings.TrimSpace(v.MessageExpression)
	if len(v.MessageExpression) > 0 && len(trimmedMessageExpression) == 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if len(trimmedMessageExpression) != 0 {
		// Compiled untrimmed so that error columns match the input; the
		// authorizer is not available to message expressions.
		decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false, StrictCost: true}
		allErrors = append(allErrors, compile(compiler, messageExpression(v.MessageExpression), decls, opts.preexisting.messages.Has(v.MessageExpression), fldPath.Child("messageExpression"))...)
	}

	trimmedMessage := strings.TrimSpace(v.Message)
	if len(v.Message) > 0 && len(trimmedMessage) == 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("message"), v.Message, "message must be non-empty if specified"))
	} else if newlines.MatchString(trimmedMessage) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("message"), v.Message, "message must not contain line breaks"))
	}

	if v.Reason != nil && !supportedValidationReasons.Has(string(*v.Reason)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("reason"), *v.Reason, sets.List(supportedValidationReasons)))
	}
	return allErrors
}

func validateAuditAnnotation(compiler plugincel.Compiler, policyName string, a *admissionregistrationv1.AuditAnnotation, hasParams bool, opts policyOptions, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	// The key must make "<policy name>/<key>" a qualified name; that limits
	// the key to a 63-character name.
	if len(policyName) != 0 {
		allErrors = append(allErrors, validateQualifiedName(policyName+"/"+a.Key, fldPath.Child("key"))...)
	} else {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}

	valuePath := fldPath.Child("valueExpression")
	trimmed := strings.TrimSpace(a.ValueExpression)
	switch {
	case len(trimmed) == 0:
		allErrors = append(allErrors, field.Required(valuePath, "valueExpression is not specified"))
	case len(trimmed) > maxAuditAnnotationValueExpressionLength:
		// kube reports the length limit as Required, not TooLong.
		allErrors = append(allErrors, field.Required(valuePath, fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	default:
		decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, StrictCost: true}
		result := compiler.CompileCELExpression(auditValueExpression(trimmed), decls, envType(opts.preexisting.auditAnnotations.Has(a.ValueExpression)))
		if result.Error != nil {
			allErrors = append(allErrors, celErrorToFieldError(valuePath, a.ValueExpression, result.Error))
		}
	}
	return allErrors
}

var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = sets.New("true", "false", "null", "in",
		"as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let",
		"loop", "package", "namespace", "return",
		"var", "void", "while")
)

// isCELIdentifier reports whether name is a CEL IDENT: [_a-zA-Z][_a-zA-Z0-9]*
// and not a reserved word.
func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !celReserved.Has(name)
}

// ValidateValidatingAdmissionPolicyBinding validates a ValidatingAdmissionPolicyBinding on create.
func ValidateValidatingAdmissionPolicyBinding(obj *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	allErrors := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &obj.Spec
	fldPath := field.NewPath("spec")

	if len(spec.PolicyName) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("policyName"), ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.PolicyName, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("policyName"), spec.PolicyName, msg))
		}
	}
	allErrors = append(allErrors, validateParamRef(spec.ParamRef, fldPath.Child("paramRef"))...)
	// kube v1.33 reports matchResources errors under the misspelt
	// "spec.matchResouces"; keep its paths.
	allErrors = append(allErrors, validateMatchResources(spec.MatchResources, fldPath.Child("matchResouces"))...)
	allErrors = append(allErrors, validateValidationActions(spec.ValidationActions, fldPath.Child("validationActions"))...)
	return allErrors
}

// ValidateValidatingAdmissionPolicyBindingUpdate validates a
// ValidatingAdmissionPolicyBinding on update; the rules are those of create.
func ValidateValidatingAdmissionPolicyBindingUpdate(obj, old *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	return ValidateValidatingAdmissionPolicyBinding(obj)
}

func validateParamRef(pr *admissionregistrationv1.ParamRef, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if pr == nil {
		return allErrors
	}
	const exclusive = "name and selector are mutually exclusive"
	if len(pr.Name) > 0 {
		for _, msg := range path.ValidatePathSegmentName(pr.Name, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			allErrors = append(allErrors, field.Forbidden(fldPath.Child("name"), exclusive))
		}
	}
	if pr.Selector != nil {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if len(pr.Name) > 0 {
			allErrors = append(allErrors, field.Forbidden(fldPath.Child("selector"), exclusive))
		}
	}
	if len(pr.Name) == 0 && pr.Selector == nil {
		allErrors = append(allErrors, field.Required(fldPath, "one of name or selector must be specified"))
	}

	action := pr.ParameterNotFoundAction
	if action == nil || len(*action) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("parameterNotFoundAction"), ""))
	} else if *action != admissionregistrationv1.DenyAction && *action != admissionregistrationv1.AllowAction {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("parameterNotFoundAction"), *action,
			[]string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
	}
	return allErrors
}

func validateValidationActions(actions []admissionregistrationv1.ValidationAction, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	seen := sets.New[string]()
	for i, action := range actions {
		if !supportedValidationActions.Has(string(action)) {
			allErrors = append(allErrors, field.NotSupported(fldPath.Index(i), action, sets.List(supportedValidationActions)))
		}
		if seen.Has(string(action)) {
			allErrors = append(allErrors, field.Duplicate(fldPath.Index(i), action))
		}
		seen.Insert(string(action))
	}
	if seen.Has(string(admissionregistrationv1.Deny)) && seen.Has(string(admissionregistrationv1.Warn)) {
		allErrors = append(allErrors, field.Invalid(fldPath, internalSliceValue("ValidationAction", actions),
			"must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		allErrors = append(allErrors, field.Required(fldPath, "at least one validation action is required"))
	}
	return allErrors
}
