package storage

import (
	"context"
	"testing"
	"time"
)

func TestStatsAndCommitHook(t *testing.T) {
	ctx := context.Background()
	var commits int
	s, err := Open(ctx, Options{InMemory: true, OnCommit: func(time.Duration) { commits++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc := func(int64) ([]byte, error) { return []byte(`{}`), nil }
	for _, k := range []Key{{Resource: "a/x", Name: "1"}, {Resource: "a/x", Name: "2"}, {Resource: "b/y", Name: "1"}} {
		if _, err := s.Create(ctx, k, enc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Delete(ctx, Key{Resource: "a/x", Name: "2"}, -1, enc); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Objects["a/x"] != 1 || st.Objects["b/y"] != 1 || st.ChangelogRows != 4 || st.SizeBytes <= 0 {
		t.Errorf("stats %+v", st)
	}
	if commits != 4 {
		t.Errorf("OnCommit called %d times, want 4", commits)
	}
}
