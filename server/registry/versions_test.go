package registry

import (
	"reflect"
	"testing"
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
	if len(gvs) != 2 || gvs[0].Group != "example.com" || !reflect.DeepEqual(gvs[0].Versions, []string{"v1", "v1beta1"}) {
		t.Fatalf("GroupVersions = %+v", gvs)
	}
	before := reg.Generation()
	reg.Remove(reg.All()[1].GroupResource())
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
