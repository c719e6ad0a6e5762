package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestCompactionTargetKeepsAgeAndCount(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10; i++ {
		key := Key{Resource: "g/things", Name: fmt.Sprintf("n%d", i)}
		if _, err := s.Create(ctx, key, func(int64) ([]byte, error) { return []byte(`{}`), nil }); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Hour) // all writes are an hour old at "now"
	// Age allows everything; the count keeps the newest 3.
	got, err := s.CompactionTarget(ctx, Retention{Age: time.Minute, Revisions: 3}, now)
	if err != nil || got != 7 {
		t.Fatalf("target = %d, %v; want 7", got, err)
	}
	// Nothing is old enough: nothing to compact.
	got, err = s.CompactionTarget(ctx, Retention{Age: 2 * time.Hour, Revisions: 0}, now)
	if err != nil || got != 0 {
		t.Fatalf("target = %d, %v; want 0", got, err)
	}
	if err := s.Compact(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "g/things", ListOptions{Rev: 6}); err != ErrCompacted {
		t.Fatalf("list at 6 after compacting to 7: err = %v, want ErrCompacted", err)
	}
	res, err := s.List(ctx, "g/things", ListOptions{Rev: 7})
	if err != nil || len(res.Items) != 7 {
		t.Fatalf("list at 7: %d items, %v; want 7", len(res.Items), err)
	}
}
