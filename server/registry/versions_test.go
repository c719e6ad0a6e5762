package registry

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The order the CRD reference gives for discovery (F-003).
func TestSortVersionsKubeLike(t *testing.T) {
	got := []string{"foo10", "v1", "v12alpha1", "v3beta1", "v11alpha2", "foo1", "v10beta3", "v2", "v11beta2", "v10"}
	SortVersions(got)
	want := []string{"v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SortVersions = %v, want %v", got, want)
	}
}

func TestRegistryAddRemove(t *testing.T) {
	reg := New()
	reg.Add(&Resource{Group: "example.com", Versions: []string{"v1beta1", "v1"}, Plural: "widgets", Kind: "Widget"})
	reg.Add(&Resource{Group: "", Versions: []string{"v1"}, Plural: "namespaces", Kind: "Namespace"})
	if _, ok := reg.Get("example.com", "v1", "widgets"); !ok {
		t.Fatal("widgets v1 not found")
	}
	if _, ok := reg.Get("example.com", "v2", "widgets"); ok {
		t.Fatal("widgets v2 found but not served")
	}
	gvs := reg.GroupVersions()
	if len(gvs) != 2 || gvs[1].Group != "example.com" || !reflect.DeepEqual(gvs[1].Versions, []string{"v1", "v1beta1"}) {
		t.Fatalf("GroupVersions = %+v", gvs)
	}
	before := reg.Generation()
	reg.Remove(schema.GroupResource{Group: "example.com", Resource: "widgets"})
	if reg.Generation() == before {
		t.Error("Remove did not change the generation")
	}
	if _, ok := reg.Get("example.com", "v1", "widgets"); ok {
		t.Fatal("widgets still served after Remove")
	}
	if gvs := reg.GroupVersions(); len(gvs) != 1 || gvs[0].Group != "" {
		t.Fatalf("GroupVersions after Remove = %+v", gvs)
	}
}

// Discovery lists groups as kube-apiserver does: by priority (the
// built-in groups at kube's figures, CRD groups after them), then by
// name, whatever the order they were registered in; in a group, a CRD's
// versions come before the built-in ones. A group that serves no version
// is not listed.
func TestGroupVersionsOrder(t *testing.T) {
	reg := New()
	for _, r := range []*Resource{
		{Group: "b.example.com", Versions: []string{"v1"}, Plural: "widgets", Custom: true},
		{Group: "resource.k8s.io", Versions: []string{"v1beta2"}, Plural: "deviceclasses"},
		{Group: "a.example.com", Versions: []string{"v1", "v2"}, Plural: "widgets", Custom: true},
		{Group: "unserved.example.com", Plural: "widgets", Custom: true},
		{Group: "apiextensions.k8s.io", Versions: []string{"v1"}, Plural: "customresourcedefinitions"},
		{Group: "admissionregistration.k8s.io", Versions: []string{"v1", "v1beta1"}, Plural: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Versions: []string{"v2alpha1"}, Plural: "foos", Custom: true},
		{Group: "", Versions: []string{"v1"}, Plural: "namespaces"},
	} {
		reg.Add(r)
	}
	var got []string
	for _, gv := range reg.GroupVersions() {
		got = append(got, gv.Group+"="+strings.Join(gv.Versions, ","))
	}
	want := []string{"=v1", "admissionregistration.k8s.io=v2alpha1,v1,v1beta1", "apiextensions.k8s.io=v1", "resource.k8s.io=v1beta2", "a.example.com=v2,v1", "b.example.com=v1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GroupVersions = %q, want %q", got, want)
	}
}

func TestVerbs(t *testing.T) {
	for _, c := range []struct {
		r    Resource
		want string
	}{
		{Resource{}, "create,delete,deletecollection,get,list,patch,update,watch"},
		{Resource{NoDeleteCollection: true}, "create,delete,get,list,patch,update,watch"},
		{Resource{Custom: true}, "delete,deletecollection,get,list,patch,create,update,watch"},
		{Resource{Custom: true, Terminating: true}, "delete,deletecollection,get,list,watch"},
	} {
		if got := strings.Join(c.r.Verbs(), ","); got != c.want {
			t.Errorf("Verbs of %+v = %s, want %s", c.r, got, c.want)
		}
	}
}
