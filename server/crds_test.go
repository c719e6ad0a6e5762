package server

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func crdNamed(plural, singular, kind string, shortNames ...string) *apiextensionsv1.CustomResourceDefinition {
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List", ShortNames: shortNames}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = plural + ".example.com"
	crd.Spec.Group = "example.com"
	crd.Spec.Names = names
	return crd
}

func TestAcceptNames(t *testing.T) {
	accepted := crdNamed("widgets", "widget", "Widget", "wd")
	accepted.Status.AcceptedNames = accepted.Spec.Names

	fresh := crdNamed("gadgets", "gadget", "Gadget", "gd")
	names, cond, est := acceptNames(fresh, []*apiextensionsv1.CustomResourceDefinition{accepted})
	if cond.Status != apiextensionsv1.ConditionTrue || cond.Reason != "NoConflicts" || !reflect.DeepEqual(names, fresh.Spec.Names) {
		t.Errorf("fresh names: %+v %+v", names, cond)
	}
	if est.Status != apiextensionsv1.ConditionFalse || est.Reason != "Installing" {
		t.Errorf("established before serving: %+v", est)
	}

	for _, tc := range []struct {
		crd    *apiextensionsv1.CustomResourceDefinition
		reason string
	}{
		{crdNamed("wd", "other", "Other"), "PluralConflict"},
		{crdNamed("others", "widget", "Other"), "SingularConflict"},
		{crdNamed("others", "other", "Other", "widgets"), "ShortNamesConflict"},
		{func() *apiextensionsv1.CustomResourceDefinition {
			c := crdNamed("others", "other", "Widget")
			c.Spec.Names.ListKind = "OtherList"
			return c
		}(), "KindConflict"},
		{crdNamed("others", "other", "Widget"), "ListKindConflict"}, // the last conflict found is reported, as kube does
	} {
		names, cond, est := acceptNames(tc.crd, []*apiextensionsv1.CustomResourceDefinition{accepted})
		if cond.Status != apiextensionsv1.ConditionFalse || cond.Reason != tc.reason {
			t.Errorf("%s: condition %+v, want False %s", tc.crd.Name, cond, tc.reason)
		}
		if est.Status == apiextensionsv1.ConditionTrue || est.Reason != "NotAccepted" {
			t.Errorf("%s: established %+v", tc.crd.Name, est)
		}
		if names.Plural == "wd" || names.Kind == "Widget" {
			t.Errorf("%s: a conflicting name was accepted: %+v", tc.crd.Name, names)
		}
	}
	// A CRD keeps the names it already holds.
	again, cond, _ := acceptNames(accepted, nil)
	if cond.Status != apiextensionsv1.ConditionTrue || !reflect.DeepEqual(again, accepted.Spec.Names) {
		t.Errorf("re-accepting its own names: %+v %+v", again, cond)
	}
}
