package storage

import (
	"context"
	"log/slog"
	"time"
)

// Retention says how much history the changelog keeps: revisions younger
// than Age, and at least the newest Revisions revisions. Watches and
// paginated lists can resume from anything kept.
type Retention struct {
	Age       time.Duration
	Revisions int64
}

// CompactionTarget returns the revision a compaction run may compact to
// under r (0: nothing to compact).
func (s *Store) CompactionTarget(ctx context.Context, r Retention, now time.Time) (int64, error) {
	byAge, err := s.RevAt(ctx, now.Add(-r.Age).UnixMilli())
	if err != nil {
		return 0, err
	}
	target := byAge
	if byCount := s.CurrentRev() - r.Revisions; byCount < target {
		target = byCount
	}
	if target < 0 {
		target = 0
	}
	return target, nil
}

// RunCompaction compacts the changelog every interval under r until ctx
// ends.
func (s *Store) RunCompaction(ctx context.Context, r Retention, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		target, err := s.CompactionTarget(ctx, r, time.Now())
		if err == nil && target > 0 {
			start := time.Now()
			if err = s.Compact(ctx, target); err == nil {
				log.Info("compacted the changelog", "revision", target, "took", time.Since(start))
			}
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("compaction failed", "err", err)
		}
	}
}
