package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	podsRes = "/pods"
	cmRes   = "/configmaps"
)

func TestCreateGetUpdateDelete(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := Key{Resource: podsRes, Namespace: "default", Name: "a"}

		if _, err := s.Get(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get before create: err = %v, want ErrNotFound", err)
		}

		created := mustCreate(t, s, k, 1)
		if created.Key != k {
			t.Errorf("created key %v, want %v", created.Key, k)
		}
		if created.Rev <= 0 {
			t.Fatalf("created rev %d, want > 0", created.Rev)
		}
		if p := decode(t, created); p.V != 1 || p.Rev != created.Rev {
			t.Errorf("created data %+v, want v=1 rev=%d", p, created.Rev)
		}
		if s.CurrentRev() != created.Rev {
			t.Errorf("CurrentRev %d, want %d", s.CurrentRev(), created.Rev)
		}

		got, err := s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != k || got.Rev != created.Rev || string(got.Data) != string(created.Data) {
			t.Fatalf("Get = %+v, want %+v", got, created)
		}

		updated := mustUpdate(t, s, k, created.Rev, 2)
		if updated.Rev <= created.Rev {
			t.Fatalf("update rev %d not after create rev %d", updated.Rev, created.Rev)
		}
		if p := decode(t, updated); p.V != 2 || p.Rev != updated.Rev {
			t.Errorf("updated data %+v, want v=2 rev=%d", p, updated.Rev)
		}
		got, err = s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rev != updated.Rev || decode(t, got).V != 2 {
			t.Fatalf("Get after update = rev %d %s", got.Rev, got.Data)
		}

		deleted := mustDelete(t, s, k, updated.Rev)
		if deleted.Rev <= updated.Rev {
			t.Fatalf("delete rev %d not after update rev %d", deleted.Rev, updated.Rev)
		}
		if p := decode(t, deleted); p.Rev != deleted.Rev {
			t.Errorf("delete data rendered for rev %d, object rev %d", p.Rev, deleted.Rev)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after delete: err = %v, want ErrNotFound", err)
		}
		if res := mustList(t, s, podsRes, ListOptions{}); len(res.Items) != 0 {
			t.Fatalf("List after delete: %v", render(res.Items))
		}

		// The name can be reused after delete; it starts a new life.
		again := mustCreate(t, s, k, 3)
		if again.Rev <= deleted.Rev {
			t.Fatalf("re-create rev %d not after delete rev %d", again.Rev, deleted.Rev)
		}
		if got, err := s.Get(ctx, k); err != nil || decode(t, got).V != 3 {
			t.Fatalf("Get after re-create: %v %v", got, err)
		}
	})
}

func TestWriteErrors(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := Key{Resource: podsRes, Namespace: "default", Name: "a"}
		missing := Key{Resource: podsRes, Namespace: "default", Name: "missing"}
		o := mustCreate(t, s, k, 1)

		// Every failed write leaves the store untouched: same current
		// revision, same object, and the next success gets a rev right
		// after it.
		rev := s.CurrentRev()
		check := func(what string, err, want error) {
			t.Helper()
			if !errors.Is(err, want) {
				t.Errorf("%s: err = %v, want %v", what, err, want)
			}
			if s.CurrentRev() != rev {
				t.Errorf("%s: CurrentRev moved %d -> %d", what, rev, s.CurrentRev())
			}
			got, gerr := s.Get(ctx, k)
			if gerr != nil || got.Rev != o.Rev || string(got.Data) != string(o.Data) {
				t.Errorf("%s: object changed: %v %v", what, got, gerr)
			}
		}

		_, err := s.Create(ctx, k, enc("a", 9))
		check("duplicate create", err, ErrExists)
		_, err = s.Update(ctx, missing, -1, enc("missing", 1))
		check("update missing", err, ErrNotFound)
		_, err = s.Update(ctx, missing, 1, enc("missing", 1))
		check("conditional update missing", err, ErrNotFound)
		_, err = s.Delete(ctx, missing, -1, enc("missing", 1))
		check("delete missing", err, ErrNotFound)
		_, err = s.Update(ctx, k, o.Rev+1, enc("a", 9))
		check("update with wrong rev", err, ErrConflict)
		_, err = s.Update(ctx, k, 0, enc("a", 9))
		check("update with rev 0", err, ErrConflict)
		_, err = s.Delete(ctx, k, o.Rev+1, enc("a", 9))
		check("delete with wrong rev", err, ErrConflict)
		if _, err := s.Get(ctx, missing); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get missing: %v", err)
		}

		// A stale rev (one the object had before) conflicts.
		o2 := mustUpdate(t, s, k, o.Rev, 2)
		rev, o = s.CurrentRev(), o2
		_, err = s.Update(ctx, k, o.Rev-1, enc("a", 9))
		check("update with stale rev", err, ErrConflict)
		_, err = s.Delete(ctx, k, o.Rev-1, enc("a", 9))
		check("delete with stale rev", err, ErrConflict)

		// Encoder failure aborts the write.
		boom := errors.New("boom")
		_, err = s.Update(ctx, k, o.Rev, func(int64) ([]byte, error) { return nil, boom })
		check("update with failing encoder", err, boom)
		_, err = s.Create(ctx, Key{Resource: podsRes, Namespace: "default", Name: "b"}, func(int64) ([]byte, error) { return nil, boom })
		check("create with failing encoder", err, boom)
		if _, err := s.Get(ctx, Key{Resource: podsRes, Namespace: "default", Name: "b"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("failed create left an object: %v", err)
		}

		next := mustUpdate(t, s, k, o.Rev, 3)
		if next.Rev <= rev || s.CurrentRev() != next.Rev {
			t.Errorf("after failed writes the next rev is %d (CurrentRev %d), want > %d", next.Rev, s.CurrentRev(), rev)
		}
	})
}

func TestUnconditionalWrites(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := Key{Resource: podsRes, Namespace: "ns", Name: "a"}
		o := mustCreate(t, s, k, 1)
		mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "other"}, 1) // moves the global rev on

		u := mustUpdate(t, s, k, -1, 2)
		if u.Rev <= o.Rev || decode(t, u).V != 2 {
			t.Fatalf("unconditional update: %+v", u)
		}
		d := mustDelete(t, s, k, -1)
		if d.Rev <= u.Rev {
			t.Fatalf("unconditional delete rev %d", d.Rev)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after unconditional delete: %v", err)
		}
	})
}

// The Encoder is called with the revision the write gets, and the bytes it
// returns are what Get, List and the returned Object carry.
func TestEncoderSeesFinalRevision(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var seen []int64
		recording := func(name string, v int) Encoder {
			return func(rev int64) ([]byte, error) {
				seen = append(seen, rev)
				return enc(name, v)(rev)
			}
		}
		k := Key{Resource: podsRes, Namespace: "ns", Name: "a"}
		for i := 0; i < 3; i++ { // other keys' writes move the rev on
			mustCreate(t, s, Key{Resource: cmRes, Namespace: "ns", Name: string(rune('x' + i))}, 0)
		}
		c, err := s.Create(ctx, k, recording("a", 1))
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.Update(ctx, k, c.Rev, recording("a", 2))
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Delete(ctx, k, u.Rev, recording("a", 3))
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{c.Rev, u.Rev, d.Rev}
		if len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
			t.Fatalf("encoder saw revs %v, objects got %v", seen, want)
		}
		// Reading back the update at its revision gives the encoder's bytes.
		res := mustList(t, s, podsRes, ListOptions{Rev: u.Rev})
		if len(res.Items) != 1 || res.Items[0].Rev != u.Rev || decode(t, res.Items[0]).Rev != u.Rev {
			t.Fatalf("list at %d: %v", u.Rev, render(res.Items))
		}
	})
}

func TestRevisionsIncreaseGlobally(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		keys := []Key{
			{Resource: podsRes, Namespace: "a", Name: "p"},
			{Resource: cmRes, Namespace: "a", Name: "p"},
			{Resource: "apps/deployments", Namespace: "b", Name: "p"},
			{Resource: "/namespaces", Name: "a"},
		}
		last := s.CurrentRev()
		step := func(o *Object) {
			t.Helper()
			if o.Rev <= last {
				t.Fatalf("%v got rev %d, not after %d", o.Key, o.Rev, last)
			}
			last = o.Rev
			if s.CurrentRev() != last {
				t.Fatalf("CurrentRev %d, want %d", s.CurrentRev(), last)
			}
		}
		revs := map[Key]int64{}
		for round := 0; round < 3; round++ {
			for _, k := range keys {
				var o *Object
				if round == 0 {
					o = mustCreate(t, s, k, round)
				} else {
					o = mustUpdate(t, s, k, revs[k], round)
				}
				step(o)
				revs[k] = o.Rev
			}
		}
		for _, k := range keys {
			step(mustDelete(t, s, k, revs[k]))
		}
		for _, k := range keys {
			if _, err := s.Get(ctx, k); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%v still there: %v", k, err)
			}
		}
	})
}

func TestInMemoryStoresAreIndependent(t *testing.T) {
	a, b := newMemStore(t), newMemStore(t)
	k := Key{Resource: podsRes, Namespace: "ns", Name: "x"}
	mustCreate(t, a, k, 1)
	if _, err := b.Get(context.Background(), k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second in-memory store sees the first's object: %v", err)
	}
	if b.CurrentRev() != 0 {
		t.Fatalf("fresh in-memory store CurrentRev = %d", b.CurrentRev())
	}
	mustCreate(t, b, k, 2) // no ErrExists
}

func TestWritesAfterCloseFail(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := Key{Resource: podsRes, Namespace: "ns", Name: "x"}
		o := mustCreate(t, s, k, 1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if _, err := s.Create(ctx, Key{Resource: podsRes, Namespace: "ns", Name: "y"}, enc("y", 1)); !errors.Is(err, ErrClosed) {
			t.Errorf("Create after Close: %v", err)
		}
		if _, err := s.Update(ctx, k, o.Rev, enc("x", 2)); !errors.Is(err, ErrClosed) {
			t.Errorf("Update after Close: %v", err)
		}
		if _, err := s.Delete(ctx, k, o.Rev, enc("x", 2)); !errors.Is(err, ErrClosed) {
			t.Errorf("Delete after Close: %v", err)
		}
		// Reads and maintenance after Close fail too (they used to
		// dereference a nil database and panic).
		if _, err := s.Get(ctx, k); !errors.Is(err, ErrClosed) {
			t.Errorf("Get after Close: %v", err)
		}
		if _, err := s.List(ctx, podsRes, ListOptions{}); !errors.Is(err, ErrClosed) {
			t.Errorf("List after Close: %v", err)
		}
		if _, err := s.CompactedRev(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("CompactedRev after Close: %v", err)
		}
		if err := s.Compact(ctx, o.Rev); !errors.Is(err, ErrClosed) {
			t.Errorf("Compact after Close: %v", err)
		}
		if _, err := s.RevAt(ctx, time.Now().UnixMilli()); !errors.Is(err, ErrClosed) {
			t.Errorf("RevAt after Close: %v", err)
		}
	})
}

// Close while reads are in flight (a server shutting down with requests
// still running) must not crash or race; later reads answer ErrClosed.
func TestCloseDuringReads(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := Key{Resource: podsRes, Namespace: "ns", Name: "x"}
		mustCreate(t, s, k, 1)
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for r := 0; r < 4; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					_, gerr := s.Get(ctx, k)
					_, lerr := s.List(ctx, podsRes, ListOptions{})
					if i == 0 {
						started <- struct{}{}
					}
					if errors.Is(gerr, ErrClosed) && errors.Is(lerr, ErrClosed) {
						return
					}
				}
			}()
		}
		for r := 0; r < 4; r++ {
			<-started
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	})
}

// Cancelling a request's context must not lose data; for the in-memory
// store the one connection is the database.
func TestCancelledContextKeepsData(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		k := Key{Resource: podsRes, Namespace: "ns", Name: "x"}
		mustCreate(t, s, k, 1)
		mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "y"}, 1)

		ctx, cancel := context.WithCancel(context.Background())
		_, err := s.List(ctx, podsRes, ListOptions{Predicate: func(*Object) (bool, error) {
			cancel() // the client goes away mid-list
			return true, nil
		}})
		_ = err // the list may or may not notice; the data must survive
		cancel()
		before := s.CurrentRev()
		if _, err := s.Create(ctx, Key{Resource: podsRes, Namespace: "ns", Name: "z"}, enc("z", 1)); err == nil {
			t.Error("Create with a cancelled context succeeded")
		}
		if _, err := s.Get(ctx, k); err == nil {
			t.Error("Get with a cancelled context succeeded")
		}

		bg := context.Background()
		o, err := s.Get(bg, k)
		if err != nil {
			t.Fatalf("Get after cancelled calls: %v", err)
		}
		if res := mustList(t, s, podsRes, ListOptions{}); len(res.Items) != 2 {
			t.Fatalf("list after cancelled calls: %v", keysOf(res.Items))
		}
		if s.CurrentRev() != before {
			t.Fatalf("cancelled Create moved CurrentRev %d -> %d", before, s.CurrentRev())
		}
		if u := mustUpdate(t, s, k, o.Rev, 2); u.Rev <= before {
			t.Fatalf("update after cancelled calls got rev %d, want > %d", u.Rev, before)
		}
	})
}

func TestRevAt(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if rev, err := s.RevAt(ctx, time.Now().UnixMilli()); err != nil || rev != 0 {
			t.Fatalf("RevAt on empty store = %d, %v", rev, err)
		}
		before := time.Now().UnixMilli() - 1
		mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "a"}, 1)
		o := mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "b"}, 1)
		if rev, err := s.RevAt(ctx, before); err != nil || rev != 0 {
			t.Errorf("RevAt(before any write) = %d, %v; want 0", rev, err)
		}
		if rev, err := s.RevAt(ctx, time.Now().UnixMilli()+1000); err != nil || rev != o.Rev {
			t.Errorf("RevAt(now) = %d, %v; want %d", rev, err, o.Rev)
		}
	})
}

// A database file of another program is refused, and left as it was.
func TestOpenRefusesForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kapi.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), Options{Path: path}); err == nil {
		s.Close()
		t.Fatal("opening another program's database succeeded, want it refused")
	} else if !strings.Contains(err.Error(), "is not kapi's database") {
		t.Errorf("error %q, want it to say the database is not kapi's", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the refused database file changed")
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Errorf("the refused database got a WAL file (%v)", err)
	}
}
