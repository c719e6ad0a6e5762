package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// payload is the JSON the tests store; Rev is the revision the Encoder was
// given, so every stored object shows which revision it was rendered for.
type payload struct {
	Name string `json:"name"`
	V    int    `json:"v"`
	Rev  int64  `json:"rev"`
}

func enc(name string, v int) Encoder {
	return func(rev int64) ([]byte, error) {
		return json.Marshal(payload{Name: name, V: v, Rev: rev})
	}
}

func decode(t testing.TB, o *Object) payload {
	t.Helper()
	var p payload
	if err := json.Unmarshal(o.Data, &p); err != nil {
		t.Fatalf("decode %s/%s: %v (%q)", o.Namespace, o.Name, err, o.Data)
	}
	return p
}

func openFile(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func newFileStore(t testing.TB) *Store {
	t.Helper()
	s := openFile(t, filepath.Join(t.TempDir(), "kapi.db"))
	t.Cleanup(func() { s.Close() })
	return s
}

func newMemStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{InMemory: true})
	if err != nil {
		t.Fatalf("Open(InMemory): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// bothStores runs f against a file-backed and an in-memory store.
func bothStores(t *testing.T, f func(t *testing.T, s *Store)) {
	t.Run("file", func(t *testing.T) { f(t, newFileStore(t)) })
	t.Run("memory", func(t *testing.T) { f(t, newMemStore(t)) })
}

func mustCreate(t testing.TB, s *Store, k Key, v int) *Object {
	t.Helper()
	o, err := s.Create(context.Background(), k, enc(k.Name, v))
	if err != nil {
		t.Fatalf("Create %v: %v", k, err)
	}
	return o
}

func mustUpdate(t testing.TB, s *Store, k Key, rev int64, v int) *Object {
	t.Helper()
	o, err := s.Update(context.Background(), k, rev, enc(k.Name, v))
	if err != nil {
		t.Fatalf("Update %v@%d: %v", k, rev, err)
	}
	return o
}

func mustDelete(t testing.TB, s *Store, k Key, rev int64) *Object {
	t.Helper()
	o, err := s.Delete(context.Background(), k, rev, enc(k.Name, -1))
	if err != nil {
		t.Fatalf("Delete %v@%d: %v", k, rev, err)
	}
	return o
}

func mustList(t testing.TB, s *Store, resource string, opts ListOptions) *ListResult {
	t.Helper()
	res, err := s.List(context.Background(), resource, opts)
	if err != nil {
		t.Fatalf("List %s %+v: %v", resource, opts, err)
	}
	return res
}

// render turns items into comparable strings: ns/name@rev=data.
func render(items []*Object) []string {
	out := make([]string, 0, len(items))
	for _, o := range items {
		out = append(out, fmt.Sprintf("%s/%s@%d=%s", o.Namespace, o.Name, o.Rev, o.Data))
	}
	return out
}

func sameList(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// listAll pages through resource with the given page size, continuing from
// the last key of each page, and returns everything plus the pages' revs.
func listAll(t testing.TB, s *Store, resource string, opts ListOptions) ([]*Object, []*ListResult) {
	t.Helper()
	var all []*Object
	var pages []*ListResult
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("paging does not terminate")
		}
		res := mustList(t, s, resource, opts)
		pages = append(pages, res)
		all = append(all, res.Items...)
		if !res.More {
			return all, pages
		}
		if len(res.Items) == 0 {
			t.Fatalf("page %d: More with no items", i)
		}
		last := res.Items[len(res.Items)-1]
		opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
		opts.Rev = res.Rev
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
