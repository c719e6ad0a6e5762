package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigEnc renders an object of about 8 KiB.
func bigEnc(name string, v int) Encoder {
	return func(rev int64) ([]byte, error) {
		return []byte(fmt.Sprintf(`{"name":%q,"v":%d,"rev":%d,"pad":%q}`, name, v, rev, strings.Repeat("x", 8<<10))), nil
	}
}

// A full disk (here: the quota) refuses writes with ErrNoSpace, leaves no
// trace of them, keeps serving reads, and takes writes again once there is
// room: after a compaction frees history, and after a restart with more.
func TestFullStoreRefusesWritesAndRecovers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	s, err := Open(ctx, Options{Path: path, QuotaBytes: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	// History that a compaction can free: one object rewritten often.
	churn := Key{Resource: "g/things", Name: "churn"}
	o, err := s.Create(ctx, churn, bigEnc("churn", 0))
	if err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 10; v++ {
		if o, err = s.Update(ctx, churn, o.Rev, bigEnc("churn", v)); err != nil {
			t.Fatal(err)
		}
	}
	acked := map[string]int64{}
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		name := fmt.Sprintf("obj-%d", i)
		o, err := s.Create(ctx, Key{Resource: "g/things", Name: name}, bigEnc(name, i))
		if err != nil {
			full = err
			break
		}
		acked[name] = o.Rev
	}
	if !errors.Is(full, ErrNoSpace) {
		t.Fatalf("filling the store ended with %v, want ErrNoSpace", full)
	}
	if !strings.Contains(full.Error(), "full") {
		t.Errorf("the error does not say what happened: %v", full)
	}
	before := s.CurrentRev()
	if _, err := s.Create(ctx, Key{Resource: "g/things", Name: "one-more"}, bigEnc("one-more", 0)); !errors.Is(err, ErrNoSpace) {
		t.Errorf("a second write on a full store: %v", err)
	}
	if s.CurrentRev() != before {
		t.Errorf("a refused write moved the revision from %d to %d", before, s.CurrentRev())
	}
	checkAll := func(s *Store) {
		t.Helper()
		list, err := s.List(ctx, "g/things", ListOptions{})
		if err != nil {
			t.Fatalf("list on a full store: %v", err)
		}
		got := map[string]int64{}
		for _, o := range list.Items {
			got[o.Name] = o.Rev
		}
		for name, rev := range acked {
			if got[name] != rev {
				t.Errorf("%s: rev %d, want %d", name, got[name], rev)
			}
		}
		if _, ok := got["one-more"]; ok {
			t.Error("a refused write is visible")
		}
		if len(got) != len(acked)+1 { // + churn
			t.Errorf("%d objects listed, want %d", len(got), len(acked)+1)
		}
	}
	checkAll(s)

	// Compaction drops churn's old states: room for new writes.
	if err := s.Compact(ctx, s.CurrentRev()); err != nil {
		t.Fatalf("compacting a full store: %v", err)
	}
	if o, err := s.Create(ctx, Key{Resource: "g/things", Name: "after-compaction"}, bigEnc("after-compaction", 0)); err != nil {
		t.Fatalf("write after compaction freed space: %v", err)
	} else {
		acked["after-compaction"] = o.Rev
	}

	// Fill again, then restart with a larger quota.
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("again-%d", i)
		o, err := s.Create(ctx, Key{Resource: "g/things", Name: name}, bigEnc(name, i))
		if err != nil {
			if !errors.Is(err, ErrNoSpace) {
				t.Fatalf("refilling: %v", err)
			}
			break
		}
		acked[name] = o.Rev
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, Options{Path: path, QuotaBytes: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	checkAll(s)
	if _, err := s.Create(ctx, Key{Resource: "g/things", Name: "after-restart"}, bigEnc("after-restart", 0)); err != nil {
		t.Fatalf("write after a restart with room: %v", err)
	}
}

// SQLite's read-only and I/O errors are named as such.
func TestFaultNamesReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	s := openFile(t, path)
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('x', 1)`)
	if err = fault(err); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write on a read-only database: %v, want ErrReadOnly", err)
	}
	if fault(nil) != nil || !errors.Is(fault(ErrConflict), ErrConflict) {
		t.Error("fault changed an error that is not SQLite's")
	}
}

// Writes committed together (group commit) fail alone: when the store fills
// up under concurrent writers, every acknowledged write is there at its
// revision, no refused one is, and revisions have no gaps.
func TestFullStoreUnderConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "kapi.db"), QuotaBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := s.CurrentRev()
	var mu sync.Mutex
	acked := map[string]int64{}
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				o, err := s.Create(ctx, Key{Resource: "g/things", Name: name}, bigEnc(name, i))
				if err != nil {
					if !errors.Is(err, ErrNoSpace) {
						t.Errorf("%s: %v", name, err)
					}
					return
				}
				mu.Lock()
				acked[name] = o.Rev
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	list, err := s.List(ctx, "g/things", ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(acked) {
		t.Errorf("%d objects stored, %d acknowledged", len(list.Items), len(acked))
	}
	revs := map[int64]bool{}
	for _, o := range list.Items {
		if acked[o.Name] != o.Rev {
			t.Errorf("%s: stored at %d, acknowledged at %d", o.Name, o.Rev, acked[o.Name])
		}
		revs[o.Rev] = true
	}
	for r := start + 1; r <= s.CurrentRev(); r++ {
		if !revs[r] {
			t.Errorf("revision %d is missing: revisions must have no gaps", r)
		}
	}
}

// lockedBuffer is a log destination the checkpointer's goroutine writes
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A background checkpoint that fails is logged once, and writes go on.
func TestFailingCheckpointIsLogged(t *testing.T) {
	ctx := context.Background()
	var logged lockedBuffer
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "kapi.db"), Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The checkpointer's connection gone: every checkpoint fails.
	s.db.checkpointer.Close()
	for i := 0; i < 3*checkpointAfter; i++ {
		mustCreate(t, s, Key{Resource: "g/things", Name: fmt.Sprintf("obj-%d", i)}, i)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logged.String(), "WAL checkpoint failed"); {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint failure logged; log: %q", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(logged.String(), "WAL checkpoint failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once while it lasts; log: %q", n, logged.String())
	}
}

// A full store still takes deletes, as etcd at its quota does (clients
// make room by deleting): writes are held below the quota, deletes may use
// what is left; creates stay refused.
func TestFullStoreTakesDeletes(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "kapi.db"), QuotaBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var created []*Object
	for i := 0; ; i++ {
		name := fmt.Sprintf("obj-%d", i)
		o, err := s.Create(ctx, Key{Resource: "g/things", Name: name}, bigEnc(name, i))
		if errors.Is(err, ErrNoSpace) {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("filling the store: %v after %d", err, i)
		}
		created = append(created, o)
	}
	if len(created) < 2 {
		t.Fatalf("only %d objects fit", len(created))
	}
	victim := created[0]
	if _, err := s.Delete(ctx, victim.Key, victim.Rev, func(int64) ([]byte, error) { return victim.Data, nil }); err != nil {
		t.Fatalf("a delete on a full store: %v", err)
	}
	if _, err := s.Get(ctx, victim.Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("the deleted object: %v, want ErrNotFound", err)
	}
	if _, err := s.Create(ctx, Key{Resource: "g/things", Name: "more"}, bigEnc("more", 0)); !errors.Is(err, ErrNoSpace) {
		t.Errorf("a create after the delete: %v, want ErrNoSpace (the reserve is for deletes)", err)
	}
}
