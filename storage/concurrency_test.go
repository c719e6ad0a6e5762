package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Read-modify-write with the rev that was read, retrying on ErrConflict:
// every increment lands exactly once.
func TestConcurrentReadModifyWrite(t *testing.T) {
	s := newFileStore(t)
	ctx := context.Background()
	k := Key{Resource: cmRes, Namespace: "ns", Name: "counter"}
	mustCreate(t, s, k, 0)

	const workers, perWorker = 8, 25
	var conflicts atomic.Int64
	var mu sync.Mutex
	var revs []int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				for {
					cur, err := s.Get(ctx, k)
					if err != nil {
						errs <- err
						return
					}
					var p payload
					if err := jsonUnmarshal(cur.Data, &p); err != nil {
						errs <- err
						return
					}
					o, err := s.Update(ctx, k, cur.Rev, enc(k.Name, p.V+1))
					if errors.Is(err, ErrConflict) {
						conflicts.Add(1)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					revs = append(revs, o.Rev)
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if v := decode(t, final).V; v != workers*perWorker {
		t.Fatalf("counter = %d, want %d (%d conflicts retried)", v, workers*perWorker, conflicts.Load())
	}
	assertDistinct(t, revs)
	if len(revs) != workers*perWorker {
		t.Fatalf("%d successful updates, want %d", len(revs), workers*perWorker)
	}
	if final.Rev != s.CurrentRev() || final.Rev != revs[len(revs)-1] {
		t.Fatalf("final rev %d, current %d, newest update %d", final.Rev, s.CurrentRev(), revs[len(revs)-1])
	}
	t.Logf("%d conflicts retried", conflicts.Load())
}

func assertDistinct(t *testing.T, revs []int64) {
	t.Helper()
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	for i := 1; i < len(revs); i++ {
		if revs[i] == revs[i-1] {
			t.Fatalf("revision %d handed out twice", revs[i])
		}
	}
}

func TestConcurrentCreates(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const workers, perWorker = 8, 20
		var mu sync.Mutex
		revs := map[int64]Key{}
		var wg sync.WaitGroup
		errs := make(chan error, 2*workers*perWorker+workers) // never blocks: at most two per create, one per racer
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					k := Key{Resource: podsRes, Namespace: fmt.Sprintf("ns%d", w%3), Name: fmt.Sprintf("w%d-%02d", w, i)}
					o, err := s.Create(ctx, k, enc(k.Name, i))
					if err != nil {
						errs <- err
						continue
					}
					var p payload
					if err := jsonUnmarshal(o.Data, &p); err != nil || p.Rev != o.Rev {
						errs <- fmt.Errorf("%v: encoder got %d, object has %d (%v)", k, p.Rev, o.Rev, err)
					}
					mu.Lock()
					if other, dup := revs[o.Rev]; dup {
						errs <- fmt.Errorf("rev %d given to both %v and %v", o.Rev, other, k)
					}
					revs[o.Rev] = k
					mu.Unlock()
				}
			}(w)
		}
		// Racing creates of one key: exactly one wins.
		var winners atomic.Int64
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Create(ctx, Key{Resource: podsRes, Namespace: "ns0", Name: "contended"}, enc("contended", 0))
				switch {
				case err == nil:
					winners.Add(1)
				case !errors.Is(err, ErrExists):
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
		if winners.Load() != 1 {
			t.Fatalf("%d creates of one key succeeded, want 1", winners.Load())
		}
		if len(revs) != workers*perWorker {
			t.Fatalf("%d distinct revisions for %d creates", len(revs), workers*perWorker)
		}
		res := mustList(t, s, podsRes, ListOptions{})
		var newest int64
		for _, o := range res.Items {
			newest = max(newest, o.Rev)
		}
		if s.CurrentRev() != newest || res.Rev != newest {
			t.Fatalf("CurrentRev %d, list rev %d, newest object rev %d", s.CurrentRev(), res.Rev, newest)
		}
		if len(res.Items) != workers*perWorker+1 {
			t.Fatalf("list has %d objects, want %d", len(res.Items), workers*perWorker+1)
		}
		for _, o := range res.Items {
			if o.Name == "contended" {
				continue
			}
			if k := revs[o.Rev]; k.Namespace != o.Namespace || k.Name != o.Name {
				t.Fatalf("%s/%s listed with rev %d, which was given to %v", o.Namespace, o.Name, o.Rev, k)
			}
		}
	})
}

// Readers run while a writer writes: they never fail, never see a torn
// state, and a list read at a revision reads back identically later.
func TestReadersDuringWrites(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const nkeys = 10
		key := func(i int) Key { return Key{Resource: podsRes, Namespace: "ns", Name: fmt.Sprintf("k%d", i)} }
		for i := 0; i < nkeys; i++ {
			mustCreate(t, s, key(i), 0)
		}
		stop := make(chan struct{})
		ready := make(chan struct{}, 8) // a reader is running: start writing
		var writes atomic.Int64
		writerDone := make(chan error, 1)
		go func() {
			// Updates, plus deletes and re-creates, round-robin over the keys.
			select { // start once a reader has done a round (or gave up)
			case <-ready:
			case <-time.After(10 * time.Second):
			}
			revs := map[int]int64{}
			for i := 0; i < nkeys; i++ {
				o, err := s.Get(ctx, key(i))
				if err != nil {
					writerDone <- err
					return
				}
				revs[i] = o.Rev
			}
			for n := 0; n < 120; n++ {
				i := n % nkeys
				var o *Object
				var err error
				if n%7 == 3 {
					if _, err = s.Delete(ctx, key(i), revs[i], enc(key(i).Name, -1)); err == nil {
						o, err = s.Create(ctx, key(i), enc(key(i).Name, n))
					}
				} else {
					o, err = s.Update(ctx, key(i), revs[i], enc(key(i).Name, n))
				}
				if err != nil {
					writerDone <- fmt.Errorf("write %d: %w", n, err)
					return
				}
				revs[i] = o.Rev
				writes.Add(1)
			}
			close(stop)
			writerDone <- nil
		}()

		const readers = 4
		var wg sync.WaitGroup
		errs := make(chan error, readers*2)
		var reads atomic.Int64
		for r := 0; r < readers; r++ {
			wg.Add(1)
			go func(r int) {
				defer wg.Done()
				var lastRev int64
				for first := true; ; first = false {
					select {
					case <-stop:
						return
					default:
					}
					res, err := s.List(ctx, podsRes, ListOptions{})
					if err != nil {
						errs <- fmt.Errorf("reader %d: list: %w", r, err)
						return
					}
					if res.Rev < lastRev {
						errs <- fmt.Errorf("reader %d: list rev went back %d -> %d", r, lastRev, res.Rev)
						return
					}
					lastRev = res.Rev
					for _, o := range res.Items {
						var p payload
						if err := jsonUnmarshal(o.Data, &p); err != nil || p.Rev != o.Rev || p.Name != o.Name || o.Rev > res.Rev {
							errs <- fmt.Errorf("reader %d: torn item %s@%d=%s in list at %d", r, o.Name, o.Rev, o.Data, res.Rev)
							return
						}
					}
					// The same revision reads back identically (from history
					// once the writer has moved on).
					again, err := s.List(ctx, podsRes, ListOptions{Rev: res.Rev, Limit: 3})
					if err != nil {
						errs <- fmt.Errorf("reader %d: list at %d: %w", r, res.Rev, err)
						return
					}
					want := render(res.Items)
					if len(want) > 3 {
						want = want[:3]
					}
					if fmt.Sprint(render(again.Items)) != fmt.Sprint(want) {
						errs <- fmt.Errorf("reader %d: list at %d changed:\n %v\n %v", r, res.Rev, render(again.Items), want)
						return
					}
					o, err := s.Get(ctx, key(r))
					if err != nil && !errors.Is(err, ErrNotFound) {
						errs <- fmt.Errorf("reader %d: get: %w", r, err)
						return
					}
					var p payload
					if err == nil && (jsonUnmarshal(o.Data, &p) != nil || p.Rev != o.Rev) {
						errs <- fmt.Errorf("reader %d: get torn: %s@%d", r, o.Data, o.Rev)
						return
					}
					reads.Add(1)
					if first {
						ready <- struct{}{}
					}
				}
			}(r)
		}
		if err := <-writerDone; err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if reads.Load() == 0 {
			t.Error("no read overlapped the writes")
		}
		t.Logf("%d writes, %d read rounds", writes.Load(), reads.Load())
	})
}

func TestSubscribe(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var got1, got2 []Event
		s.Subscribe(func(ev Event) { got1 = append(got1, ev) })
		s.Subscribe(func(ev Event) { got2 = append(got2, ev) })

		a := Key{Resource: podsRes, Namespace: "ns", Name: "a"}
		b := Key{Resource: cmRes, Namespace: "ns", Name: "b"}
		ca := mustCreate(t, s, a, 1)
		cb := mustCreate(t, s, b, 1)
		ua := mustUpdate(t, s, a, ca.Rev, 2)
		// Failed writes publish nothing.
		s.Update(ctx, a, ca.Rev, enc("a", 9))
		s.Create(ctx, b, enc("b", 9))
		s.Delete(ctx, Key{Resource: podsRes, Namespace: "ns", Name: "zz"}, -1, enc("zz", 9))
		db := mustDelete(t, s, b, cb.Rev)
		ua2 := mustUpdate(t, s, a, -1, 3)
		ca2 := mustCreate(t, s, b, 5) // re-created: no previous state

		want := []Event{
			{Op: OpAdded, Object: *ca, PrevRev: 0},
			{Op: OpAdded, Object: *cb, PrevRev: 0},
			{Op: OpModified, Object: *ua, PrevRev: ca.Rev},
			{Op: OpDeleted, Object: *db, PrevRev: cb.Rev},
			{Op: OpModified, Object: *ua2, PrevRev: ua.Rev},
			{Op: OpAdded, Object: *ca2, PrevRev: 0},
		}
		for i, got := range [][]Event{got1, got2} {
			if len(got) != len(want) {
				t.Fatalf("subscriber %d got %d events, want %d: %v", i, len(got), len(want), got)
			}
			for j := range want {
				g, w := got[j], want[j]
				if g.Op != w.Op || g.PrevRev != w.PrevRev || g.Object.Key != w.Object.Key ||
					g.Object.Rev != w.Object.Rev || string(g.Object.Data) != string(w.Object.Data) {
					t.Errorf("subscriber %d event %d = {%v %v@%d prev %d %s}, want {%v %v@%d prev %d %s}", i, j,
						g.Op, g.Object.Key, g.Object.Rev, g.PrevRev, g.Object.Data,
						w.Op, w.Object.Key, w.Object.Rev, w.PrevRev, w.Object.Data)
				}
			}
		}
		// The deleted event carries the final state the encoder rendered.
		if p := decode(t, &got1[3].Object); p.V != -1 || p.Rev != db.Rev {
			t.Errorf("delete event data %s", got1[3].Object.Data)
		}
	})
}

// With concurrent writers, a subscriber still sees every committed write
// once, in strictly increasing revision order, each PrevRev pointing at the
// key's previous event.
func TestSubscribeConcurrentOrder(t *testing.T) {
	s := newFileStore(t)
	ctx := context.Background()
	var events []Event // appended under the store's writer lock
	s.Subscribe(func(ev Event) { events = append(events, ev) })

	const workers, perWorker = 6, 20
	var mu sync.Mutex
	committed := map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			k := Key{Resource: podsRes, Namespace: "ns", Name: fmt.Sprintf("shared%d", w%2)}
			for i := 0; i < perWorker; i++ {
				var o *Object
				var err error
				switch i % 4 {
				case 0:
					o, err = s.Create(ctx, k, enc(k.Name, i))
				case 3:
					o, err = s.Delete(ctx, k, -1, enc(k.Name, i))
				default:
					o, err = s.Update(ctx, k, -1, enc(k.Name, i))
				}
				if err != nil {
					continue // lost a race with another worker on the same key
				}
				mu.Lock()
				committed[o.Rev] = true
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()

	if len(events) != len(committed) {
		t.Fatalf("%d events for %d committed writes", len(events), len(committed))
	}
	last := map[Key]Event{}
	for i, ev := range events {
		if !committed[ev.Object.Rev] {
			t.Fatalf("event %d at rev %d was not a committed write", i, ev.Object.Rev)
		}
		if i > 0 && ev.Object.Rev <= events[i-1].Object.Rev {
			t.Fatalf("event %d rev %d after rev %d", i, ev.Object.Rev, events[i-1].Object.Rev)
		}
		prev, seen := last[ev.Object.Key]
		switch {
		case ev.Op == OpAdded:
			if ev.PrevRev != 0 || (seen && prev.Op != OpDeleted) {
				t.Fatalf("event %d: add of %v with PrevRev %d after %v", i, ev.Object.Key, ev.PrevRev, prev.Op)
			}
		case !seen || prev.Op == OpDeleted:
			t.Fatalf("event %d: %v of %v that does not exist", i, ev.Op, ev.Object.Key)
		case ev.PrevRev != prev.Object.Rev:
			t.Fatalf("event %d: %v PrevRev %d, previous event for the key at %d", i, ev.Object.Key, ev.PrevRev, prev.Object.Rev)
		}
		last[ev.Object.Key] = ev
	}
	if n := int64(len(events)); n == 0 || events[n-1].Object.Rev != s.CurrentRev() {
		t.Fatalf("last event does not match CurrentRev %d", s.CurrentRev())
	}
}
