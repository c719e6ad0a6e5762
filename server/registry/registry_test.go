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
