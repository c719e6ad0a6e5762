package registry

import "testing"

func TestRetired(t *testing.T) {
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	g := New()
	first := &Resource{Group: "example.com", Plural: "things", Versions: []string{"v1"}}
	g.Add(first)
	ch := g.Retired(first)
	if closed(ch) {
		t.Fatal("a served resource is retired")
	}
	g.Add(first) // the same resource again: still served
	if closed(ch) {
		t.Fatal("re-adding the served resource retired it")
	}
	second := &Resource{Group: "example.com", Plural: "things", Versions: []string{"v1"}}
	g.Add(second)
	if !closed(ch) || !closed(g.Retired(first)) {
		t.Fatal("a replaced resource is not retired")
	}
	ch = g.Retired(second)
	if closed(ch) {
		t.Fatal("the replacing resource is retired")
	}
	g.Remove(second.GroupResource())
	if !closed(ch) {
		t.Fatal("a removed resource is not retired")
	}
}

// A watch of a resource that its CRD's deletion marked Terminating since
// (a copy with the mark) is not retired: the resource is still served.
func TestRetiredAcrossTerminatingMark(t *testing.T) {
	g := New()
	first := &Resource{Group: "example.com", Plural: "things", Versions: []string{"v1"}}
	g.Add(first)
	g.SetTerminating(first.GroupResource(), true)
	ch := g.Retired(first) // asked for after the mark
	select {
	case <-ch:
		t.Fatal("a resource marked Terminating is retired")
	default:
	}
	g.Remove(first.GroupResource())
	select {
	case <-ch:
	default:
		t.Fatal("a removed resource is not retired")
	}
}

// An Unestablished resource is served (Get finds it) but discovery's views
// leave it out until SetEstablished; the mark keeps its watches.
func TestUnestablishedNotListed(t *testing.T) {
	g := New()
	res := &Resource{Group: "example.com", Plural: "things", Versions: []string{"v1"}, Custom: true, Unestablished: true}
	g.Add(res)
	if _, ok := g.Get("example.com", "v1", "things"); !ok {
		t.Fatal("an Unestablished resource is not served")
	}
	if got := g.Resources("example.com", "v1"); len(got) != 0 {
		t.Errorf("Resources lists the Unestablished resource: %v", got)
	}
	if got := g.GroupVersions(); len(got) != 0 {
		t.Errorf("GroupVersions lists the Unestablished resource's group: %v", got)
	}
	ch := g.Retired(res)
	gen := g.Generation()
	g.SetEstablished(res.GroupResource(), true)
	if g.Generation() == gen {
		t.Error("SetEstablished did not move the generation (discovery documents are cached by it)")
	}
	if got := g.Resources("example.com", "v1"); len(got) != 1 {
		t.Errorf("Resources after SetEstablished: %v, want the resource", got)
	}
	if got := g.GroupVersions(); len(got) != 1 || got[0].Group != "example.com" {
		t.Errorf("GroupVersions after SetEstablished: %v, want example.com", got)
	}
	select {
	case <-ch:
		t.Error("marking the resource Established retired it")
	default:
	}
}
