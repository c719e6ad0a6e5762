package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	apihelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kapi-dev/kapi/storage"
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
	names, cond, est := acceptNames(fresh, []apiextensionsv1.CustomResourceDefinitionNames{accepted.Status.AcceptedNames})
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
		names, cond, est := acceptNames(tc.crd, []apiextensionsv1.CustomResourceDefinitionNames{accepted.Status.AcceptedNames})
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
	// Every short name in use is named, as kube's aggregate error names them.
	_, cond, _ = acceptNames(crdNamed("others", "other", "Other", "widgets", "wd"), []apiextensionsv1.CustomResourceDefinitionNames{accepted.Status.AcceptedNames})
	if want := `["widgets" is already in use, "wd" is already in use]`; cond.Reason != "ShortNamesConflict" || cond.Message != want {
		t.Errorf("two short names in use: %s %q, want ShortNamesConflict %q", cond.Reason, cond.Message, want)
	}
	// Its own accepted names count too: a new singular may not be the
	// plural it holds.
	renamed := accepted.DeepCopy()
	renamed.Spec.Names.Singular = "widgets"
	if _, cond, _ = acceptNames(renamed, []apiextensionsv1.CustomResourceDefinitionNames{accepted.Status.AcceptedNames}); cond.Reason != "SingularConflict" {
		t.Errorf("a singular the CRD holds as its plural: %s %q, want SingularConflict", cond.Reason, cond.Message)
	}
	// A CRD keeps the names it already holds.
	again, cond, _ := acceptNames(accepted, nil)
	if cond.Status != apiextensionsv1.ConditionTrue || !reflect.DeepEqual(again, accepted.Spec.Names) {
		t.Errorf("re-accepting its own names: %+v %+v", again, cond)
	}
}

// A kapi restarted on a CRD whose status was never written serves its
// resource at once and writes the status after start: the write goes
// through admission, whose caches start after the CRDs are served, so
// start must not wait on it (it did, for the admission plugins' 10 s).
func TestStartServesStoredCRDsWithoutWaitingForAdmission(t *testing.T) {
	ctx := context.Background()
	store := memStore(t)
	// As a kapi stopped before its controller wrote the status stores it.
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com","uid":"u1","generation":1,"resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
		"conversion":{"strategy":"None"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	key := storage.Key{Resource: crdStorageResource, Name: "widgets.example.com"}
	if _, err := store.Create(ctx, key, func(rev int64) ([]byte, error) { return fmt.Appendf(nil, crd, rev), nil }); err != nil {
		t.Fatal(err)
	}
	s, reg := newServer(t, store, Options{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	started := make(chan error, 1)
	go func() { started <- s.Start(runCtx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start is still waiting after 5 s")
	}
	if _, ok := reg.Get("example.com", "v1", "widgets"); !ok {
		t.Error("the stored CRD's resource is not served once Start returned")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, err := store.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var got apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(o.Data, &got); err != nil {
			t.Fatal(err)
		}
		if apihelpers.IsCRDConditionTrue(&got, apiextensionsv1.Established) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CRD's status was not written after start: %s", o.Data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A kapi restarted on a CRD whose requested plural another stored CRD of
// the group has accepted (as a short name) keeps refusing it: the names
// the stored CRDs accepted count from the first CRD served at start on
// (gadgets.example.com sorts, and is served, before the other).
func TestStartKeepsStoredNameConflicts(t *testing.T) {
	ctx := context.Background()
	store := memStore(t)
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"%s.example.com","uid":"%s","generation":1,"resourceVersion":"%%d","creationTimestamp":"2026-01-01T00:00:00Z"},
		"spec":{"group":"example.com","scope":"Namespaced","names":%s,"conversion":{"strategy":"None"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}%s}`
	widgets := `{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList","shortNames":["gadgets"]}`
	for _, c := range []struct{ name, body string }{
		{"widgets", fmt.Sprintf(crd, "widgets", "u1", widgets, `,"status":{"acceptedNames":`+widgets+`,
			"conditions":[{"type":"NamesAccepted","status":"True","reason":"NoConflicts","message":"no conflicts found","lastTransitionTime":"2026-01-01T00:00:00Z"},
			{"type":"Established","status":"True","reason":"InitialNamesAccepted","message":"the initial names have been accepted","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`)},
		{"gadgets", fmt.Sprintf(crd, "gadgets", "u2", `{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"}`, "")},
	} {
		key := storage.Key{Resource: crdStorageResource, Name: c.name + ".example.com"}
		if _, err := store.Create(ctx, key, func(rev int64) ([]byte, error) { return fmt.Appendf(nil, c.body, rev), nil }); err != nil {
			t.Fatal(err)
		}
	}
	s, reg := newServer(t, store, Options{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := s.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get("example.com", "v1", "widgets"); !ok {
		t.Error("the CRD holding the names is not served")
	}
	if _, ok := reg.Get("example.com", "v1", "gadgets"); ok {
		t.Error("the CRD whose plural is taken is served")
	}
}

// A CRD whose instances are still there a minute after its deletion says
// so, as kube-apiserver's finalizer does once its minute of waiting ends:
// Terminating True InstanceDeletionCheck.
func TestCRDInstanceDeletionCheck(t *testing.T) {
	ctx := context.Background()
	store := memStore(t)
	deleted := time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com","uid":"u1","generation":1,"resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z",
			"deletionTimestamp":"` + deleted + `","finalizers":["customresourcecleanup.apiextensions.k8s.io"]},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
		"conversion":{"strategy":"None"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]},
		"status":{"acceptedNames":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"storedVersions":["v1"],
			"conditions":[{"type":"NamesAccepted","status":"True","reason":"NoConflicts","message":"no conflicts found","lastTransitionTime":"2026-01-01T00:00:00Z"},
				{"type":"Established","status":"True","reason":"InitialNamesAccepted","message":"the initial names have been accepted","lastTransitionTime":"2026-01-01T00:00:00Z"},
				{"type":"Terminating","status":"True","reason":"InstanceDeletionInProgress","message":"CustomResource deletion is in progress","lastTransitionTime":"` + deleted + `"}]}}`
	key := storage.Key{Resource: crdStorageResource, Name: "widgets.example.com"}
	if _, err := store.Create(ctx, key, func(rev int64) ([]byte, error) { return fmt.Appendf(nil, crd, rev), nil }); err != nil {
		t.Fatal(err)
	}
	held := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"held","namespace":"default","uid":"u2","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z","finalizers":["example.com/hold"]}}`
	if _, err := store.Create(ctx, storage.Key{Resource: "example.com/widgets", Namespace: "default", Name: "held"}, func(rev int64) ([]byte, error) { return fmt.Appendf(nil, held, rev), nil }); err != nil {
		t.Fatal(err)
	}
	s, _ := newServer(t, store, Options{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := s.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, err := store.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var got apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(o.Data, &got); err != nil {
			t.Fatal(err)
		}
		c := apihelpers.FindCRDCondition(&got, apiextensionsv1.Terminating)
		if c != nil && c.Reason == "InstanceDeletionCheck" {
			if c.Status != apiextensionsv1.ConditionTrue || c.Message != "could not confirm zero CustomResources remaining: context deadline exceeded" {
				t.Errorf("Terminating %s %s %q", c.Status, c.Reason, c.Message)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no InstanceDeletionCheck 2 minutes after the deletion: %s", o.Data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A v1 CRD with spec.preserveUnknownFields true is refused as kube-apiserver
// refuses it (apiextensions' validation: set it in the schema instead);
// kapi's conversion to the internal type and back lost the field, so it
// created the CRD without it.
func TestCRDPreserveUnknownFieldsTrueRefused(t *testing.T) {
	ts := newTestServer(t)
	crd := strings.Replace(gvCRD("a.example.com", "first"), `"spec":{"group"`, `"spec":{"preserveUnknownFields":true,"group"`, 1)
	code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", crd)
	var st metav1.Status
	_ = json.Unmarshal([]byte(body), &st)
	want := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.preserveUnknownFields",
		Message: "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"}}
	if code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Details == nil || !reflect.DeepEqual(st.Details.Causes, want) {
		t.Errorf("create with preserveUnknownFields true: %d %s, want 422 with %v", code, body, want)
	}
	// false is the default, and accepted.
	crd = strings.Replace(gvCRD("b.example.com", "first"), `"spec":{"group"`, `"spec":{"preserveUnknownFields":false,"group"`, 1)
	if code, body := call(t, ts, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", crd); code != http.StatusCreated {
		t.Errorf("create with preserveUnknownFields false: %d %s", code, body)
	}
}
