package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// seed creates one object per key in a shuffled order, plus noise in other
// resources, and returns the keys in list order: kube-apiserver's, the byte
// order of etcd's keys "<namespace>/<name>".
func seed(t *testing.T, s *Store, resource string, keys []Key) []Key {
	t.Helper()
	shuffled := append([]Key(nil), keys...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i, k := range shuffled {
		k.Resource = resource
		mustCreate(t, s, k, i)
		mustCreate(t, s, Key{Resource: resource + "-other", Namespace: k.Namespace, Name: k.Name}, i)
	}
	sorted := append([]Key(nil), keys...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	for i := range sorted {
		sorted[i].Resource = resource
	}
	return sorted
}

func keysOf(items []*Object) []string {
	out := make([]string, 0, len(items))
	for _, o := range items {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	return out
}

func keyStrings(keys []Key) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.Namespace+"/"+k.Name)
	}
	return out
}

var listKeys = []Key{
	{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "z"}, {Namespace: "a", Name: "a"},
	{Namespace: "c", Name: "m"}, {Namespace: "b", Name: "a"}, {Namespace: "a", Name: "m"},
	{Namespace: "b", Name: "b"}, {Namespace: "a", Name: "a-1"}, {Namespace: "ab", Name: "a"},
	{Namespace: "c", Name: "a"}, {Namespace: "a-b", Name: "x"}, {Namespace: "a-b-c", Name: "q"},
	{Namespace: "a-b", Name: "a"},
}

func TestListOrderAndNamespaceFilter(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		sorted := seed(t, s, podsRes, listKeys)

		res := mustList(t, s, podsRes, ListOptions{})
		sameList(t, "all keys in key order", keysOf(res.Items), keyStrings(sorted))
		// etcd's key order: a namespace followed by '-' comes before the
		// namespace itself ("a-b/…" < "a/…"), as '-' is below '/'.
		sameList(t, "all keys", keysOf(res.Items), []string{"a-b-c/q", "a-b/a", "a-b/x", "a/a", "a/a-1", "a/m", "a/z",
			"ab/a", "b/a", "b/b", "b/x", "c/a", "c/m"})
		if res.More || res.Remaining != nil {
			t.Errorf("unlimited list: More=%v Remaining=%v", res.More, res.Remaining)
		}
		if res.Rev != s.CurrentRev() {
			t.Errorf("list Rev %d, want current %d", res.Rev, s.CurrentRev())
		}
		for _, o := range res.Items {
			if o.Resource != podsRes {
				t.Errorf("item of resource %q", o.Resource)
			}
			if p := decode(t, o); p.Name != o.Name || p.Rev != o.Rev {
				t.Errorf("item %s/%s@%d carries %+v", o.Namespace, o.Name, o.Rev, p)
			}
		}

		for _, ns := range []string{"a", "b", "c", "ab", "a-b", "a-b-c"} {
			var want []Key
			for _, k := range sorted {
				if k.Namespace == ns {
					want = append(want, k)
				}
			}
			res := mustList(t, s, podsRes, ListOptions{Namespace: ns})
			sameList(t, "namespace "+ns, keysOf(res.Items), keyStrings(want))
		}
		if res := mustList(t, s, podsRes, ListOptions{Namespace: "nope"}); len(res.Items) != 0 {
			t.Errorf("unknown namespace lists %v", keysOf(res.Items))
		}
		if res := mustList(t, s, "/nothing", ListOptions{}); len(res.Items) != 0 || res.More {
			t.Errorf("unknown resource lists %v", keysOf(res.Items))
		}
	})
}

func TestListPaging(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		sorted := seed(t, s, podsRes, listKeys)
		n := int64(len(sorted))
		for _, limit := range []int64{1, 3, 5, n - 1, n, n + 1} {
			t.Run(fmt.Sprint(limit), func(t *testing.T) {
				opts := ListOptions{Limit: limit}
				var got []*Object
				for page := 0; ; page++ {
					res := mustList(t, s, podsRes, opts)
					got = append(got, res.Items...)
					left := n - int64(len(got))
					if left > 0 {
						if int64(len(res.Items)) != limit {
							t.Fatalf("page %d has %d items, want %d", page, len(res.Items), limit)
						}
						if !res.More {
							t.Fatalf("page %d: More=false with %d left", page, left)
						}
						if res.Remaining == nil || *res.Remaining != left {
							t.Fatalf("page %d: Remaining=%v, want %d", page, res.Remaining, left)
						}
					} else {
						if res.More {
							t.Fatalf("last page %d: More=true", page)
						}
						if res.Remaining != nil {
							t.Fatalf("last page %d: Remaining=%d", page, *res.Remaining)
						}
						break
					}
					last := res.Items[len(res.Items)-1]
					opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
				}
				sameList(t, "paged keys", keysOf(got), keyStrings(sorted))
			})
		}

		// Paging within one namespace.
		var want []string
		for _, k := range sorted {
			if k.Namespace == "a" {
				want = append(want, k.Namespace+"/"+k.Name)
			}
		}
		all, pages := listAll(t, s, podsRes, ListOptions{Namespace: "a", Limit: 2})
		sameList(t, "namespace a paged", keysOf(all), want)
		if r := pages[0].Remaining; r == nil || *r != int64(len(want)-2) {
			t.Errorf("namespace a first page Remaining=%v, want %d", r, len(want)-2)
		}

		// Continuing after a key that does not exist starts at the next one.
		res := mustList(t, s, podsRes, ListOptions{AfterNamespace: "a", AfterName: "b"})
		if len(res.Items) == 0 || res.Items[0].Namespace+"/"+res.Items[0].Name != "a/m" {
			t.Errorf("after a/b: %v", keysOf(res.Items))
		}
		res = mustList(t, s, podsRes, ListOptions{AfterNamespace: "c", AfterName: "m"})
		if len(res.Items) != 0 || res.More {
			t.Errorf("after the last key: %v More=%v", keysOf(res.Items), res.More)
		}
		// In key order, across namespaces one of which prefixes another.
		for _, c := range []struct{ afterNs, afterName, next string }{
			{"a-b", "x", "a/a"},         // the last of a-b: a follows
			{"a-b-c", "q", "a-b/a"},     // a-b-c precedes a-b
			{"a-a", "zz", "a-b-c/q"},    // a namespace with no objects
			{"a-b-c-d", "a", "a-b-c/q"}, // a-b-c-d precedes a-b-c
			{"a-b-c", "", "a-b-c/q"},    // from a namespace's start
			{"a", "z", "ab/a"},          // the last of a
			{"aa", "a", "ab/a"},         // between a and ab
			{"", "", "a-b-c/q"},         // the start
			{"a-b-c0", "a", "a-b/a"},    // between a-b-c and a-b
		} {
			res := mustList(t, s, podsRes, ListOptions{AfterNamespace: c.afterNs, AfterName: c.afterName, Limit: 1})
			if got := keysOf(res.Items); len(got) != 1 || got[0] != c.next {
				t.Errorf("after %s/%s: %v, want %s", c.afterNs, c.afterName, got, c.next)
			}
		}
	})
}

func TestListPredicateWithLimit(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		var keys []Key
		for i := 0; i < 23; i++ {
			keys = append(keys, Key{Namespace: "ns", Name: fmt.Sprintf("o%02d", i)})
		}
		seed(t, s, podsRes, keys)
		// Keep names whose number is a multiple of 3: o00 o03 ... o21.
		calls := 0
		pred := func(o *Object) (bool, error) {
			calls++
			var n int
			fmt.Sscanf(o.Name, "o%d", &n)
			return n%3 == 0, nil
		}
		var want []string
		for i := 0; i < 23; i += 3 {
			want = append(want, fmt.Sprintf("ns/o%02d", i))
		}

		res := mustList(t, s, podsRes, ListOptions{Predicate: pred})
		sameList(t, "predicate without limit", keysOf(res.Items), want)

		for _, limit := range []int64{1, 2, 3, 8, 9} {
			t.Run(fmt.Sprint(limit), func(t *testing.T) {
				opts := ListOptions{Predicate: pred, Limit: limit}
				var got []*Object
				for page := 0; page < 100; page++ {
					res := mustList(t, s, podsRes, opts)
					if int64(len(res.Items)) > limit {
						t.Fatalf("page %d: %d items over limit %d", page, len(res.Items), limit)
					}
					if res.Remaining != nil {
						t.Fatalf("page %d: Remaining set with a predicate", page)
					}
					got = append(got, res.Items...)
					if len(got) < len(want) {
						// Matches remain: the page must be full and say so.
						if int64(len(res.Items)) != limit || !res.More {
							t.Fatalf("page %d: %d items More=%v, want %d and More", page, len(res.Items), res.More, limit)
						}
					}
					if !res.More {
						break
					}
					if len(res.Items) == 0 {
						t.Fatalf("page %d: More with no items", page)
					}
					last := res.Items[len(res.Items)-1]
					opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
				}
				sameList(t, "predicate pages", keysOf(got), want)
			})
		}

		boom := errors.New("boom")
		_, err := s.List(context.Background(), podsRes, ListOptions{Predicate: func(*Object) (bool, error) { return false, boom }})
		if !errors.Is(err, boom) {
			t.Errorf("predicate error: got %v", err)
		}
	})
}

// A paginated list read at the first page's revision sees exactly the state
// at that revision, whatever is written between the pages.
func TestListSnapshotPagination(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var keys []Key
		for i := 0; i < 12; i++ {
			keys = append(keys, Key{Namespace: "ns", Name: fmt.Sprintf("o%02d", i*10)})
		}
		sorted := seed(t, s, podsRes, keys)

		first := mustList(t, s, podsRes, ListOptions{Limit: 4})
		R := first.Rev
		if R != s.CurrentRev() || !first.More {
			t.Fatalf("first page Rev=%d (current %d) More=%v", R, s.CurrentRev(), first.More)
		}
		if first.Remaining == nil || *first.Remaining != 8 {
			t.Fatalf("first page Remaining=%v, want 8", first.Remaining)
		}
		// The full state at R, as an unpaged list saw it.
		wantAtR := render(mustList(t, s, podsRes, ListOptions{}).Items)

		get := func(name string) *Object {
			o, err := s.Get(ctx, Key{Resource: podsRes, Namespace: "ns", Name: name})
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		k := func(name string) Key { return Key{Resource: podsRes, Namespace: "ns", Name: name} }
		// Writes on both sides of the page boundary and in later pages.
		mustUpdate(t, s, k("o50"), get("o50").Rev, 500)
		mustUpdate(t, s, k("o50"), get("o50").Rev, 501)
		mustDelete(t, s, k("o60"), get("o60").Rev)
		mustCreate(t, s, k("o55"), 55)  // would be on page 2
		mustCreate(t, s, k("o999"), 99) // would be on the last page
		mustCreate(t, s, k("o00a"), 1)  // before the continue key
		mustDelete(t, s, k("o10"), get("o10").Rev)
		mustUpdate(t, s, k("o100"), get("o100").Rev, 1000)
		mustDelete(t, s, k("o110"), get("o110").Rev) // the last key at R
		mustCreate(t, s, k("o110"), 110)             // ...re-created
		mustUpdate(t, s, Key{Resource: podsRes + "-other", Namespace: "ns", Name: "o70"}, -1, 7)
		if s.CurrentRev() <= R {
			t.Fatal("writes did not move the revision")
		}

		got := append([]*Object(nil), first.Items...)
		opts := ListOptions{Limit: 4, Rev: R}
		last := first.Items[len(first.Items)-1]
		opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
		for page := 1; ; page++ {
			res := mustList(t, s, podsRes, opts)
			if res.Rev != R {
				t.Fatalf("page %d read at %d, want %d", page, res.Rev, R)
			}
			wantLeft := int64(len(sorted) - len(got) - len(res.Items))
			if res.More && (res.Remaining == nil || *res.Remaining != wantLeft) {
				t.Fatalf("page %d Remaining=%v, want %d (state at R)", page, res.Remaining, wantLeft)
			}
			got = append(got, res.Items...)
			if !res.More {
				break
			}
			last := res.Items[len(res.Items)-1]
			opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
		}
		sameList(t, "pages at R", render(got), wantAtR)
		for _, o := range got {
			if o.Rev > R {
				t.Errorf("item %s@%d is newer than R=%d", o.Name, o.Rev, R)
			}
		}

		// Unpaged and filtered lists at R agree, too.
		sameList(t, "unpaged list at R", render(mustList(t, s, podsRes, ListOptions{Rev: R}).Items), wantAtR)
		sameList(t, "namespace list at R", render(mustList(t, s, podsRes, ListOptions{Rev: R, Namespace: "ns"}).Items), wantAtR)

		// The current state has the changes.
		cur := mustList(t, s, podsRes, ListOptions{})
		want := []string{"o00", "o00a", "o100", "o110", "o20", "o30", "o40", "o50", "o55", "o70", "o80", "o90", "o999"}
		var names []string
		for _, o := range cur.Items {
			names = append(names, o.Name)
		}
		sameList(t, "current names", names, want)
		for _, o := range cur.Items {
			if o.Name == "o50" && decode(t, o).V != 501 {
				t.Errorf("current o50 = %s", o.Data)
			}
		}
	})
}

// Every revision's state can be listed, and matches what a list at the time saw.
func TestListAtEveryRevision(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		states := recordHistory(t, s)
		for rev, want := range states {
			sameList(t, fmt.Sprintf("list at %d", rev), render(mustList(t, s, podsRes, ListOptions{Rev: rev}).Items), want)
			// Paged: Remaining counts the objects live at rev, not
			// history rows of keys deleted by then.
			all, pages := listAll(t, s, podsRes, ListOptions{Rev: rev, Limit: 1})
			sameList(t, fmt.Sprintf("paged list at %d", rev), render(all), want)
			for i, p := range pages {
				left := int64(len(want) - i - 1)
				if p.More != (left > 0) {
					t.Fatalf("rev %d page %d: More=%v with %d left", rev, i, p.More, left)
				}
				if left > 0 && (p.Remaining == nil || *p.Remaining != left) {
					t.Fatalf("rev %d page %d: Remaining=%v, want %d", rev, i, p.Remaining, left)
				}
			}
		}
	})
}

func TestListFutureRev(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.List(ctx, podsRes, ListOptions{Rev: 1}); !errors.Is(err, ErrFutureRev) {
			t.Errorf("list at 1 on empty store: %v, want ErrFutureRev", err)
		}
		mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "a"}, 1)
		cur := s.CurrentRev()
		if _, err := s.List(ctx, podsRes, ListOptions{Rev: cur + 1}); !errors.Is(err, ErrFutureRev) {
			t.Errorf("list at current+1: %v, want ErrFutureRev", err)
		}
		if _, err := s.List(ctx, podsRes, ListOptions{Rev: cur + 1000}); !errors.Is(err, ErrFutureRev) {
			t.Errorf("list at current+1000: %v, want ErrFutureRev", err)
		}
		res, err := s.List(ctx, podsRes, ListOptions{Rev: cur})
		if err != nil || res.Rev != cur || len(res.Items) != 1 {
			t.Errorf("list at current: %v %v", res, err)
		}
	})
}

// recordHistory runs a fixed sequence of writes on podsRes (and noise in
// another resource) and returns the state after every revision, as listed
// right after that revision was committed.
func recordHistory(t *testing.T, s *Store) map[int64][]string {
	t.Helper()
	states := map[int64][]string{}
	snap := func() {
		res := mustList(t, s, podsRes, ListOptions{})
		states[res.Rev] = render(res.Items)
	}
	k := func(ns, name string) Key { return Key{Resource: podsRes, Namespace: ns, Name: name} }
	a := mustCreate(t, s, k("n1", "a"), 1) // never touched again
	snap()
	b := mustCreate(t, s, k("n1", "b"), 1)
	snap()
	c := mustCreate(t, s, k("n2", "c"), 1)
	snap()
	b = mustUpdate(t, s, k("n1", "b"), b.Rev, 2)
	snap()
	mustCreate(t, s, Key{Resource: cmRes, Namespace: "n1", Name: "noise"}, 1)
	snap()
	mustDelete(t, s, k("n2", "c"), c.Rev) // c gone
	snap()
	d := mustCreate(t, s, k("n2", "d"), 1)
	snap()
	b = mustUpdate(t, s, k("n1", "b"), b.Rev, 3)
	snap()
	c = mustCreate(t, s, k("n2", "c"), 2) // c is back
	snap()
	mustDelete(t, s, k("n2", "d"), d.Rev)
	snap()
	c = mustUpdate(t, s, k("n2", "c"), c.Rev, 3)
	snap()
	e := mustCreate(t, s, k("n1", "e"), 1)
	snap()
	mustDelete(t, s, k("n1", "e"), e.Rev)
	snap()
	_ = a
	if len(states) != 13 {
		t.Fatalf("recorded %d states, want 13", len(states))
	}
	return states
}

// A list across namespaces, some of which prefix others, comes in key order
// at every revision and page, with the count of what follows.
func TestListKeyOrderAtRevision(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		k := func(ns, name string) Key { return Key{Resource: podsRes, Namespace: ns, Name: name} }
		for _, key := range []Key{k("app", "b"), k("apps", "a"), k("app-x", "a"), k("app", "a"), k("app-x-y", "z"), k("app-x", "c")} {
			mustCreate(t, s, key, 1)
		}
		want := []string{"app-x-y/z", "app-x/a", "app-x/c", "app/a", "app/b", "apps/a"}
		R := s.CurrentRev()
		gone, err := s.Get(context.Background(), k("app-x", "a"))
		if err != nil {
			t.Fatal(err)
		}
		mustDelete(t, s, k("app-x", "a"), gone.Rev)
		mustCreate(t, s, k("app-x-a", "n"), 1)
		now := []string{"app-x-a/n", "app-x-y/z", "app-x/c", "app/a", "app/b", "apps/a"}
		for _, c := range []struct {
			rev  int64
			want []string
		}{{R, want}, {0, now}} {
			sameList(t, fmt.Sprintf("list at %d", c.rev), keysOf(mustList(t, s, podsRes, ListOptions{Rev: c.rev}).Items), c.want)
			for _, limit := range []int64{1, 2, 4} {
				opts := ListOptions{Rev: c.rev, Limit: limit}
				var got []string
				for page := 0; ; page++ {
					res := mustList(t, s, podsRes, opts)
					got = append(got, keysOf(res.Items)...)
					left := int64(len(c.want) - len(got))
					if res.More != (left > 0) || (left > 0 && (res.Remaining == nil || *res.Remaining != left)) {
						t.Fatalf("rev %d limit %d page %d: More=%v Remaining=%v, want %d left", c.rev, limit, page, res.More, res.Remaining, left)
					}
					if !res.More {
						break
					}
					last := res.Items[len(res.Items)-1]
					opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
					opts.Rev = res.Rev
				}
				sameList(t, fmt.Sprintf("pages of %d at %d", limit, c.rev), got, c.want)
			}
		}
	})
}

// remainingItemCount counts only the namespace a list is limited to.
func TestListPagingInNamespaceCountsRemaining(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		seed(t, s, podsRes, listKeys)
		checked := 0
		for _, k := range listKeys {
			all := mustList(t, s, podsRes, ListOptions{Namespace: k.Namespace})
			if len(all.Items) < 2 {
				continue
			}
			page := mustList(t, s, podsRes, ListOptions{Namespace: k.Namespace, Limit: 1})
			if want := int64(len(all.Items) - 1); page.Remaining == nil || *page.Remaining != want {
				t.Errorf("namespace %q: Remaining=%v, want %d", k.Namespace, page.Remaining, want)
			}
			checked++
		}
		if checked == 0 {
			t.Fatal("no namespace with two objects to page through")
		}
	})
}
