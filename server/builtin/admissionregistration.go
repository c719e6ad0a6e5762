package builtin

import (
	"encoding/json"
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"

	"github.com/kapi-dev/kapi/server/registry"
	v "github.com/kapi-dev/kapi/server/validation/admissionregistration"
)

const admissionGroup = "admissionregistration.k8s.io"

func admissionGroupVersion(version string) string { return admissionGroup + "/" + version }

var apiExtensionsCategory = []string{"api-extensions"}

func webhooksColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"}
}

func countCell(u *unstructured.Unstructured, fields ...string) int64 {
	list, _, _ := unstructured.NestedSlice(u.Object, fields...)
	return int64(len(list))
}

func mutatingWebhookConfigurationResource() *registry.Resource {
	type T = admissionregistrationv1.MutatingWebhookConfiguration
	s := &typed[T]{
		storageVersion:   "v1",
		groupVersion:     admissionGroupVersion,
		tracksGeneration: true,
		defaults:         v.SetDefaultsMutatingWebhookConfiguration,
		validate:         v.ValidateMutatingWebhookConfiguration,
		validateUpdate:   v.ValidateMutatingWebhookConfigurationUpdate,
		specChanged:      func(obj, old *T) bool { return !reflect.DeepEqual(obj.Webhooks, old.Webhooks) },
		specAsDecoded:    true,
	}
	return &registry.Resource{
		Group: admissionGroup, Versions: []string{"v1"}, StorageVersion: "v1",
		Kind: "MutatingWebhookConfiguration", ListKind: "MutatingWebhookConfigurationList",
		Plural: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
		Categories: apiExtensionsCategory,
		Strategy:   s,
		Table: registry.TableConvertor{
			Columns: []metav1.TableColumnDefinition{nameColumn(), webhooksColumn(), ageColumn()},
			Cells: func(u *unstructured.Unstructured) []interface{} {
				return []interface{}{u.GetName(), countCell(u, "webhooks"), age(u)}
			},
		},
	}
}

func validatingWebhookConfigurationResource() *registry.Resource {
	type T = admissionregistrationv1.ValidatingWebhookConfiguration
	s := &typed[T]{
		storageVersion:   "v1",
		groupVersion:     admissionGroupVersion,
		tracksGeneration: true,
		defaults:         v.SetDefaultsValidatingWebhookConfiguration,
		validate:         v.ValidateValidatingWebhookConfiguration,
		validateUpdate:   v.ValidateValidatingWebhookConfigurationUpdate,
		specChanged:      func(obj, old *T) bool { return !reflect.DeepEqual(obj.Webhooks, old.Webhooks) },
		specAsDecoded:    true,
	}
	return &registry.Resource{
		Group: admissionGroup, Versions: []string{"v1"}, StorageVersion: "v1",
		Kind: "ValidatingWebhookConfiguration", ListKind: "ValidatingWebhookConfigurationList",
		Plural: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
		Categories: apiExtensionsCategory,
		Strategy:   s,
		Table: registry.TableConvertor{
			Columns: []metav1.TableColumnDefinition{nameColumn(), webhooksColumn(), ageColumn()},
			Cells: func(u *unstructured.Unstructured) []interface{} {
				return []interface{}{u.GetName(), countCell(u, "webhooks"), age(u)}
			},
		},
	}
}

// decodeVia decodes a body of another version into the storage type. The
// v1beta1 and v1 policy types carry the same fields, so the conversion is
// a JSON round trip that loses nothing.
func decodeVia[From, To any](body []byte) (*To, []error, error) {
	from := new(From)
	strict, err := sigsjson.UnmarshalStrict(body, from, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(from)
	if err != nil {
		return nil, nil, err
	}
	to := new(To)
	if err := json.Unmarshal(data, to); err != nil {
		return nil, nil, fmt.Errorf("convert %T to %T: %w", from, to, err)
	}
	return to, strict, nil
}

func validatingAdmissionPolicyResource() *registry.Resource {
	type T = admissionregistrationv1.ValidatingAdmissionPolicy
	s := &typed[T]{
		storageVersion:   "v1",
		groupVersion:     admissionGroupVersion,
		tracksGeneration: true,
		decode: func(version string, body []byte) (*T, []error, error) {
			return decodeVia[admissionregistrationv1beta1.ValidatingAdmissionPolicy, T](body)
		},
		defaults:       v.SetDefaultsValidatingAdmissionPolicy,
		prepareCreate:  func(obj *T) { obj.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{} },
		prepareUpdate:  func(obj, old *T) { obj.Status = old.Status },
		validate:       v.ValidateValidatingAdmissionPolicy,
		validateUpdate: v.ValidateValidatingAdmissionPolicyUpdate,
		specChanged:    func(obj, old *T) bool { return semanticChanged(obj.Spec, old.Spec) },
		prepareStatusUpdate: func(obj, old *T) {
			// Only status changes (and managedFields, which record it).
			status, managed := obj.Status, obj.ManagedFields
			*obj = *old
			obj.Status, obj.ManagedFields = status, managed
		},
		validateStatusUpdate: v.ValidateValidatingAdmissionPolicyStatusUpdate,
	}
	return &registry.Resource{
		Group: admissionGroup, Versions: []string{"v1", "v1beta1"}, StorageVersion: "v1",
		Kind: "ValidatingAdmissionPolicy", ListKind: "ValidatingAdmissionPolicyList",
		Plural: "validatingadmissionpolicies", Singular: "validatingadmissionpolicy",
		Categories: apiExtensionsCategory,
		Status:     true,
		Strategy:   s,
		Table: registry.TableConvertor{
			Columns: []metav1.TableColumnDefinition{
				nameColumn(),
				{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
				{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
				ageColumn(),
			},
			Cells: func(u *unstructured.Unstructured) []interface{} {
				paramKind := "<unset>"
				if pk, ok, _ := unstructured.NestedStringMap(u.Object, "spec", "paramKind"); ok {
					paramKind = pk["apiVersion"] + "/" + pk["kind"]
				}
				return []interface{}{u.GetName(), countCell(u, "spec", "validations"), paramKind, age(u)}
			},
		},
	}
}

func validatingAdmissionPolicyBindingResource() *registry.Resource {
	type T = admissionregistrationv1.ValidatingAdmissionPolicyBinding
	s := &typed[T]{
		storageVersion:   "v1",
		groupVersion:     admissionGroupVersion,
		tracksGeneration: true,
		decode: func(version string, body []byte) (*T, []error, error) {
			return decodeVia[admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding, T](body)
		},
		defaults:       v.SetDefaultsValidatingAdmissionPolicyBinding,
		validate:       v.ValidateValidatingAdmissionPolicyBinding,
		validateUpdate: v.ValidateValidatingAdmissionPolicyBindingUpdate,
		specChanged:    func(obj, old *T) bool { return semanticChanged(obj.Spec, old.Spec) },
	}
	return &registry.Resource{
		Group: admissionGroup, Versions: []string{"v1", "v1beta1"}, StorageVersion: "v1",
		Kind: "ValidatingAdmissionPolicyBinding", ListKind: "ValidatingAdmissionPolicyBindingList",
		Plural: "validatingadmissionpolicybindings", Singular: "validatingadmissionpolicybinding",
		Categories: apiExtensionsCategory,
		Strategy:   s,
		Table: registry.TableConvertor{
			Columns: []metav1.TableColumnDefinition{
				nameColumn(),
				{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
				{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configration param"},
				ageColumn(),
			},
			Cells: func(u *unstructured.Unstructured) []interface{} {
				policy, _, _ := unstructured.NestedString(u.Object, "spec", "policyName")
				return []interface{}{u.GetName(), policy, paramRefCell(u), age(u)}
			},
		},
	}
}

// paramRefCell prints a binding's paramRef as kube's printer does: its
// [namespace/]name, or its selector.
func paramRefCell(u *unstructured.Unstructured) string {
	b := mustTyped[admissionregistrationv1.ValidatingAdmissionPolicyBinding](u)
	ref := b.Spec.ParamRef
	switch {
	case ref == nil:
		return "<unset>"
	case ref.Name != "" && ref.Namespace != "":
		return ref.Namespace + "/" + ref.Name
	case ref.Name != "":
		// No namespace: the request's namespace, printed as "*".
		return "*/" + ref.Name
	case ref.Selector != nil:
		// kube's printer prints the selector's Go form.
		return ref.Selector.String()
	}
	return "<unset>"
}
