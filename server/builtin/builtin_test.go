package builtin

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kapi-dev/kapi/server/registry"
)

func resource(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	reg := registry.New()
	Register(reg)
	for _, r := range reg.All() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

func decode(t *testing.T, r *registry.Resource, version, body string) (*unstructured.Unstructured, []error) {
	t.Helper()
	obj, strict, err := r.Strategy.Decode(version, []byte(body))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return obj, strict
}

func TestDecodeReportsUnknownAndDuplicateFields(t *testing.T) {
	r := resource(t, "validatingwebhookconfigurations")
	obj, strict := decode(t, r, "v1", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",
		"metadata":{"name":"a","name":"b"},"webhooks":[{"name":"x","bogus":1}]}`)
	var msgs []string
	for _, e := range strict {
		msgs = append(msgs, e.Error())
	}
	got := strings.Join(msgs, "; ")
	for _, want := range []string{`duplicate field "metadata.name"`, `unknown field "webhooks[0].bogus"`} {
		if !strings.Contains(got, want) {
			t.Errorf("strict errors %q lack %q", got, want)
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "webhooks", "0", "bogus"); found {
		t.Error("unknown field kept in the decoded object")
	}
}

func TestCRDValidationUsesKubeFieldPaths(t *testing.T) {
	r := resource(t, "customresourcedefinitions")
	obj, _ := decode(t, r, "v1", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
		"versions":[{"name":"V1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`)
	ctx := context.Background()
	r.Strategy.PrepareForCreate(ctx, obj)
	errs := r.Strategy.Validate(ctx, obj)
	found := false
	for _, e := range errs {
		if e.Field == "spec.versions[0].name" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error at spec.versions[0].name in %v", errs)
	}
	// Defaults kube-apiserver fills in: singular and listKind.
	if s, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "singular"); s != "widget" {
		t.Errorf("singular = %q, want widget", s)
	}
	if s, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "listKind"); s != "WidgetList" {
		t.Errorf("listKind = %q, want WidgetList", s)
	}
}

func TestCRDCreateClearsStatusAndRecordsStoredVersion(t *testing.T) {
	r := resource(t, "customresourcedefinitions")
	obj, _ := decode(t, r, "v1", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"widgets","kind":"Widget"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]},
		"status":{"storedVersions":["v9"],"acceptedNames":{"plural":"x","kind":"X"}}}`)
	ctx := context.Background()
	r.Strategy.PrepareForCreate(ctx, obj)
	if errs := r.Strategy.Validate(ctx, obj); len(errs) > 0 {
		t.Fatalf("valid CRD rejected: %v", errs)
	}
	stored, _, _ := unstructured.NestedStringSlice(obj.Object, "status", "storedVersions")
	if len(stored) != 1 || stored[0] != "v1" {
		t.Errorf("storedVersions = %v, want [v1]", stored)
	}
	if k, _, _ := unstructured.NestedString(obj.Object, "status", "acceptedNames", "kind"); k != "" {
		t.Errorf("client-set acceptedNames kept: %q", k)
	}
}

func TestNamespaceCreateDefaults(t *testing.T) {
	r := resource(t, "namespaces")
	obj, _ := decode(t, r, "v1", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`)
	r.Strategy.PrepareForCreate(context.Background(), obj)
	if p, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); p != "Active" {
		t.Errorf("phase = %q, want Active", p)
	}
	if f, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers"); len(f) != 1 || f[0] != "kubernetes" {
		t.Errorf("spec.finalizers = %v, want [kubernetes]", f)
	}
	if l := obj.GetLabels()[LabelMetadataName]; l != "team-a" {
		t.Errorf("label %s = %q", LabelMetadataName, l)
	}
	bad, _ := decode(t, r, "v1", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Team_A"}}`)
	if errs := r.Strategy.Validate(context.Background(), bad); len(errs) == 0 || errs[0].Field != "metadata.name" {
		t.Errorf("invalid name accepted or wrong path: %v", errs)
	}
}

func TestImmortalNamespacesCannotBeDeleted(t *testing.T) {
	r := resource(t, "namespaces")
	obj, _ := decode(t, r, "v1", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`)
	_, err := r.Strategy.(registry.DeleteStrategy).PrepareForDelete(context.Background(), obj, &metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "may not be deleted") {
		t.Fatalf("delete of default: err = %v", err)
	}
}

func TestPolicyV1beta1DecodesIntoStorageVersion(t *testing.T) {
	r := resource(t, "validatingadmissionpolicies")
	obj, strict := decode(t, r, "v1beta1", `{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"ValidatingAdmissionPolicy",
		"metadata":{"name":"p"},"spec":{"validations":[{"expression":"true"}],"nope":1}}`)
	if len(strict) != 1 || !strings.Contains(strict[0].Error(), `unknown field "spec.nope"`) {
		t.Errorf("strict = %v", strict)
	}
	if e, _, _ := unstructured.NestedSlice(obj.Object, "spec", "validations"); len(e) != 1 {
		t.Errorf("validations lost in conversion: %v", obj.Object)
	}
	if err := r.Strategy.Convert(obj, "v1"); err != nil || obj.GetAPIVersion() != "admissionregistration.k8s.io/v1" {
		t.Errorf("Convert to v1: %v, apiVersion %q", err, obj.GetAPIVersion())
	}
}

func TestNamespaceHoldsDeletionUntilSpecFinalizersGo(t *testing.T) {
	r := resource(t, "namespaces")
	ds := r.Strategy.(registry.DeleteStrategy)
	held, _ := decode(t, r, "v1", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"spec":{"finalizers":["kubernetes"]}}`)
	if !ds.HoldsDeletion(held) {
		t.Error("a namespace with spec.finalizers is not held")
	}
	free, _ := decode(t, r, "v1", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`)
	if ds.HoldsDeletion(free) {
		t.Error("a namespace without spec.finalizers is held")
	}
	crd := resource(t, "customresourcedefinitions")
	obj, _ := decode(t, crd, "v1", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"}}`)
	if crd.Strategy.(registry.DeleteStrategy).HoldsDeletion(obj) {
		t.Error("a CRD is held beyond its metadata.finalizers")
	}
}

// A binding's ParamRef cell is what kube-apiserver's printer prints: a
// [namespace/]name ("*/" when the namespace is left to the request), or
// the selector's Go form.
func TestBindingParamRefCell(t *testing.T) {
	r := resource(t, "validatingadmissionpolicybindings")
	for paramRef, want := range map[string]string{
		``: "<unset>",
		`"paramRef":{"name":"p","namespace":"n"},`:           "n/p",
		`"paramRef":{"name":"p"},`:                           "*/p",
		`"paramRef":{"selector":{"matchLabels":{"a":"b"}}},`: "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}",
	} {
		obj, _ := decode(t, r, "v1", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"b"},"spec":{`+paramRef+`"policyName":"x"}}`)
		if got := r.Table.Cells(obj)[2]; got != want {
			t.Errorf("paramRef %s: cell %q, want %q", paramRef, got, want)
		}
	}
}
