package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kapi-dev/kapi/migrations"
)

func changelogRows(t *testing.T, s *Store, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.db.writer.QueryRow(`SELECT COUNT(*) FROM changelog WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCompaction(t *testing.T) {
	for C := int64(1); C <= 13; C++ {
		t.Run(fmt.Sprint(C), func(t *testing.T) {
			bothStores(t, func(t *testing.T, s *Store) {
				ctx := context.Background()
				states := recordHistory(t, s)
				cur := s.CurrentRev()
				if rev, err := s.CompactedRev(ctx); err != nil || rev != 0 {
					t.Fatalf("CompactedRev before compaction = %d, %v", rev, err)
				}
				if err := s.Compact(ctx, C); err != nil {
					t.Fatal(err)
				}
				if rev, err := s.CompactedRev(ctx); err != nil || rev != C {
					t.Fatalf("CompactedRev = %d, %v; want %d", rev, err, C)
				}
				checkAfterCompaction(t, s, states, C, cur)

				// Compacting to an older revision changes nothing.
				if err := s.Compact(ctx, C-1); err != nil {
					t.Fatal(err)
				}
				if rev, _ := s.CompactedRev(ctx); rev != C {
					t.Fatalf("CompactedRev after older Compact = %d, want %d", rev, C)
				}
				checkAfterCompaction(t, s, states, C, cur)

				// History that is kept is what lists need, nothing more:
				// at or before C, one row per object live at C (the cm
				// "noise" object is created at rev 5); after C, every row.
				live := int64(len(states[C]))
				if C >= 5 {
					live++
				}
				if n := changelogRows(t, s, `rev <= ?`, C); n != live {
					t.Errorf("%d changelog rows at or before %d, want %d (objects live then)", n, C, live)
				}
				if n := changelogRows(t, s, `rev > ?`, C); n != cur-C {
					t.Errorf("%d changelog rows after %d, want %d", n, C, cur-C)
				}
				if n := changelogRows(t, s, `rev <= ? AND op = 3`, C); n != 0 {
					t.Errorf("%d delete rows at or before %d survive", n, C)
				}

				// The store keeps working: current reads and new writes.
				k := Key{Resource: podsRes, Namespace: "n1", Name: "b"}
				b, err := s.Get(ctx, k)
				if err != nil || decode(t, b).V != 3 {
					t.Fatalf("Get b after compaction: %v %v", b, err)
				}
				u := mustUpdate(t, s, k, b.Rev, 4)
				if u.Rev <= cur || s.CurrentRev() != u.Rev {
					t.Fatalf("write after compaction got rev %d (CurrentRev %d), want > %d", u.Rev, s.CurrentRev(), cur)
				}
				sameList(t, "list at C after a new write", render(mustList(t, s, podsRes, ListOptions{Rev: C}).Items), states[C])
				sameList(t, "list at old current after a new write", render(mustList(t, s, podsRes, ListOptions{Rev: cur}).Items), states[cur])
			})
		})
	}
}

func checkAfterCompaction(t *testing.T, s *Store, states map[int64][]string, C, cur int64) {
	t.Helper()
	ctx := context.Background()
	for rev := int64(1); rev <= cur; rev++ {
		res, err := s.List(ctx, podsRes, ListOptions{Rev: rev})
		if rev < C {
			if !errors.Is(err, ErrCompacted) {
				t.Errorf("list at %d < compacted %d: %v, want ErrCompacted", rev, C, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("list at %d >= compacted %d: %v", rev, C, err)
		}
		sameList(t, fmt.Sprintf("list at %d after Compact(%d)", rev, C), render(res.Items), states[rev])
		if rev != C && rev != cur {
			continue
		}
		// Paged at the same revision, too.
		all, _ := listAll(t, s, podsRes, ListOptions{Rev: rev, Limit: 1})
		sameList(t, fmt.Sprintf("paged list at %d after Compact(%d)", rev, C), render(all), states[rev])
	}
	sameList(t, "current list", render(mustList(t, s, podsRes, ListOptions{}).Items), states[cur])
}

// A key that was deleted before the compaction revision has no history left.
func TestCompactionDropsDeletedKeys(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := Key{Resource: podsRes, Namespace: "ns", Name: "gone"}
		o := mustCreate(t, s, k, 1)
		o = mustUpdate(t, s, k, o.Rev, 2)
		mustDelete(t, s, k, o.Rev)
		keep := mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "kept"}, 1)
		C := s.CurrentRev()
		if err := s.Compact(ctx, C); err != nil {
			t.Fatal(err)
		}
		if n := changelogRows(t, s, `resource = ? AND namespace = ? AND name = ?`, k.Resource, k.Namespace, k.Name); n != 0 {
			t.Errorf("%d changelog rows left for a key deleted before the compaction", n)
		}
		res := mustList(t, s, podsRes, ListOptions{Rev: C})
		sameList(t, "list at C", keysOf(res.Items), []string{"ns/kept"})
		if res.Items[0].Rev != keep.Rev {
			t.Errorf("kept rev %d, want %d", res.Items[0].Rev, keep.Rev)
		}
	})
}

// After restart the revision continues where it was, even when the newest
// changelog rows were deletes that compaction removed.
func TestRestartKeepsRevision(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	s := openFile(t, path)
	states := recordHistory(t, s) // ends with create+delete of n1/e
	cur := s.CurrentRev()
	if err := s.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if n := changelogRows(t, s, `rev = ?`, cur); n != 0 {
		t.Fatalf("test setup: the newest row (a delete) should have been compacted away")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openFile(t, path)
	if got := s.CurrentRev(); got != cur {
		t.Fatalf("CurrentRev after reopen = %d, want %d", got, cur)
	}
	if rev, err := s.CompactedRev(ctx); err != nil || rev != cur {
		t.Fatalf("CompactedRev after reopen = %d, %v; want %d", rev, err, cur)
	}
	sameList(t, "current list after reopen", render(mustList(t, s, podsRes, ListOptions{}).Items), states[cur])
	o := mustCreate(t, s, Key{Resource: podsRes, Namespace: "n1", Name: "e"}, 7)
	if o.Rev <= cur {
		t.Fatalf("first write after reopen got rev %d, want > %d", o.Rev, cur)
	}
	if p := decode(t, o); p.Rev != o.Rev {
		t.Fatalf("encoder got rev %d, object %d", p.Rev, o.Rev)
	}
	sameList(t, "list at the pre-restart rev", render(mustList(t, s, podsRes, ListOptions{Rev: cur}).Items), states[cur])

	// Delete the new object too and compact it away, then restart again.
	d := mustDelete(t, s, Key{Resource: podsRes, Namespace: "n1", Name: "e"}, o.Rev)
	if err := s.Compact(ctx, d.Rev); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openFile(t, path)
	defer s.Close()
	if got := s.CurrentRev(); got != d.Rev {
		t.Fatalf("CurrentRev after second reopen = %d, want %d", got, d.Rev)
	}
	o = mustCreate(t, s, Key{Resource: cmRes, Namespace: "x", Name: "y"}, 1)
	if o.Rev <= d.Rev {
		t.Fatalf("write after second reopen got rev %d, want > %d", o.Rev, d.Rev)
	}
}

// Without compaction, the whole history survives a restart.
func TestRestartKeepsHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	s := openFile(t, path)
	states := recordHistory(t, s)
	cur := s.CurrentRev()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Path: path, Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.CurrentRev() != cur {
		t.Fatalf("CurrentRev after reopen = %d, want %d", s.CurrentRev(), cur)
	}
	for rev, want := range states {
		sameList(t, fmt.Sprintf("list at %d after reopen", rev), render(mustList(t, s, podsRes, ListOptions{Rev: rev}).Items), want)
	}
	b, err := s.Get(ctx, Key{Resource: podsRes, Namespace: "n1", Name: "b"})
	if err != nil || decode(t, b).V != 3 {
		t.Fatalf("Get after reopen: %v %v", b, err)
	}
	if _, err := s.Update(ctx, b.Key, b.Rev-1, enc("b", 9)); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update after reopen: %v", err)
	}
	if u := mustUpdate(t, s, b.Key, b.Rev, 4); u.Rev <= cur {
		t.Fatalf("update after reopen rev %d, want > %d", u.Rev, cur)
	}
}

// A database written before migration 0002 (whose changelog kept its
// newest revision in sqlite_sequence) opens with its rows and its
// revision: here the newest row, a delete, was compacted away, so only
// sqlite_sequence and the compacted revision still held it.
func TestOpenDatabaseWithAutoincrementChangelog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kapi.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT '')`,
		all[0].SQL,
		`INSERT INTO schema_migrations (version, name) VALUES (1, '` + all[0].Name + `')`,
		`INSERT INTO changelog (resource, namespace, name, op, prev_rev, ts, data) VALUES ('/pods', 'n1', 'a', 1, 0, 0, '{"name":"a","v":1,"rev":1}')`,
		`INSERT INTO objects (resource, namespace, name, rev) VALUES ('/pods', 'n1', 'a', 1)`,
		`INSERT INTO changelog (resource, namespace, name, op, prev_rev, ts, data) VALUES ('/pods', 'n1', 'b', 1, 0, 0, '{"name":"b","v":1,"rev":2}')`,
		`INSERT INTO changelog (resource, namespace, name, op, prev_rev, ts, data) VALUES ('/pods', 'n1', 'b', 3, 2, 0, '{"name":"b","v":1,"rev":2}')`,
		`DELETE FROM changelog WHERE name = 'b'`,
		`UPDATE meta SET value = 3 WHERE key = 'compacted_rev'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var seq int64
	if err := db.QueryRow(`SELECT seq FROM sqlite_sequence WHERE name = 'changelog'`).Scan(&seq); err != nil || seq != 3 {
		t.Fatalf("test setup: sqlite_sequence holds %d (%v), want 3", seq, err)
	}
	db.Close()

	s := openFile(t, path)
	defer s.Close()
	if got := s.CurrentRev(); got != 3 {
		t.Fatalf("CurrentRev = %d, want 3", got)
	}
	if o, err := s.Get(context.Background(), Key{Resource: "/pods", Namespace: "n1", Name: "a"}); err != nil || o.Rev != 1 || decode(t, o).Name != "a" {
		t.Fatalf("Get a = %+v, %v; want it at revision 1", o, err)
	}
	o := mustCreate(t, s, Key{Resource: "/pods", Namespace: "n1", Name: "b"}, 2)
	if o.Rev != 4 {
		t.Fatalf("the first write got revision %d, want 4", o.Rev)
	}
	if n := changelogRows(t, s, `rev = ?`, o.Rev); n != 1 {
		t.Fatalf("%d changelog rows at revision %d, want 1", n, o.Rev)
	}
	var rows int
	if err := s.db.reader.QueryRow(`SELECT COUNT(*) FROM sqlite_sequence WHERE name = 'changelog'`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("sqlite_sequence still holds %d rows for the changelog (%v), want none", rows, err)
	}
}
