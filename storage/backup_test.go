package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

func TestBackupIsConsistentCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "kapi.db")
	s, err := Open(ctx, Options{Path: src})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc := func(int64) ([]byte, error) { return []byte(`{"x":1}`), nil }
	for i := 0; i < 20; i++ {
		if _, err := s.Create(ctx, Key{Resource: "g/things", Name: fmt.Sprintf("t%02d", i)}, enc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Delete(ctx, Key{Resource: "g/things", Name: "t00"}, -1, enc); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "backup.db")
	if err := Backup(ctx, src, out); err != nil {
		t.Fatal(err)
	}
	if err := Backup(ctx, src, out); err == nil {
		t.Error("a second backup overwrote the first")
	}
	// Writes after the backup are not in it.
	if _, err := s.Create(ctx, Key{Resource: "g/things", Name: "later"}, enc); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, Options{Path: out})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.CurrentRev() != 21 {
		t.Errorf("backup's revision %d, want 21", b.CurrentRev())
	}
	res, err := b.List(ctx, "g/things", ListOptions{})
	if err != nil || len(res.Items) != 19 {
		t.Fatalf("backup lists %d things (%v), want 19", len(res.Items), err)
	}
	o, err := b.Get(ctx, Key{Resource: "g/things", Name: "t05"})
	if err != nil || o.Rev != 6 {
		t.Errorf("t05 in the backup: %v rev %d, want rev 6", err, o.Rev)
	}
	// The copy's history resumes where the original's was.
	if ev, err := b.Changes(ctx, "g/things", 19, 0); err != nil || len(ev) != 2 || ev[1].Op != OpDeleted {
		t.Errorf("changes after 19 in the backup: %v %v", ev, err)
	}
}
