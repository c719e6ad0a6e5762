package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A WAL that grew while a reader held back checkpoints is cut back to
// 4 MiB once they catch up, rather than keeping its largest size on disk.
func TestWALFileCutBackAfterCheckpointsCatchUp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	s := openFile(t, path)
	defer s.Close()
	walSize := func() int64 {
		info, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	const limit = 4 << 20

	// A reader's snapshot keeps checkpoints from restarting the WAL.
	reader, err := s.db.reader.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM objects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 8000)
	for i := 0; i < 1000; i++ {
		if _, err := s.Create(ctx, Key{Resource: podsRes, Namespace: "ns", Name: fmt.Sprint("big-", i)}, func(int64) ([]byte, error) {
			return []byte(`"` + big + `"`), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := walSize(); got <= 2*limit {
		t.Fatalf("the WAL is %d bytes with checkpoints held back; the test needs it past %d", got, 2*limit)
	}
	reader.Rollback()

	// Writes go on: a background checkpoint completes, the WAL restarts
	// and is cut back. How many writes that takes depends on how soon the
	// checkpointer runs (later on a busy machine), hence the generous bound.
	for i := 0; walSize() > limit+limit/8; i++ {
		if i == 20000 {
			t.Fatalf("the WAL is still %d bytes after %d writes since checkpoints could catch up, want %d at most", walSize(), i, limit)
		}
		if _, err := s.Create(ctx, Key{Resource: podsRes, Namespace: "ns", Name: fmt.Sprint("small-", i)}, enc("small", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// Committed frames reach the database file in the background, long before
// the writer's own checkpoint (at 500 frames) would copy them.
func TestCheckpointsInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	s := openFile(t, path)
	defer s.Close()
	dbSize := func() int64 {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	before := dbSize()
	for i := 0; i < checkpointAfter+10; i++ {
		if _, err := s.Create(ctx, Key{Resource: podsRes, Namespace: "ns", Name: fmt.Sprint("p-", i)}, enc("p", i)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); dbSize() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %d writes the database file is still %d bytes: nothing was checkpointed", checkpointAfter+10, before)
		}
	}
}

// A new database file is in WAL mode with 8 KiB pages, and keeps both
// when reopened.
func TestNewDatabaseLayout(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kapi.db")
	for _, round := range []string{"new", "reopened"} {
		s := openFile(t, path)
		var pageSize int
		var mode string
		if err := s.db.reader.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
			t.Fatal(err)
		}
		if err := s.db.reader.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if pageSize != 8192 || mode != "wal" {
			t.Errorf("%s: page_size %d, journal_mode %s; want 8192, wal", round, pageSize, mode)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
