package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// evString renders an event comparably, PrevData included (nil shown as
// <nil>, so a nil and an empty previous state differ).
func evString(ev Event) string {
	prev := "<nil>"
	if ev.PrevData != nil {
		prev = string(ev.PrevData)
	}
	return fmt.Sprintf("%d %s|%s|%s@%d prev %d %s -> %s", ev.Op, ev.Object.Resource, ev.Object.Namespace,
		ev.Object.Name, ev.Object.Rev, ev.PrevRev, prev, ev.Object.Data)
}

func evStrings(evs []Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, evString(ev))
	}
	return out
}

// only keeps the events of resource with a revision after rev.
func only(evs []Event, resource string, after int64) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.Object.Resource == resource && ev.Object.Rev > after {
			out = append(out, ev)
		}
	}
	return out
}

func mustChanges(t testing.TB, s *Store, resource string, after int64, limit int) []Event {
	t.Helper()
	evs, err := s.Changes(context.Background(), resource, after, limit)
	if err != nil {
		t.Fatalf("Changes(%s, %d, %d): %v", resource, after, limit, err)
	}
	return evs
}

// recordEvents runs recordHistory with a subscriber attached and returns
// the states and every published event.
func recordEvents(t *testing.T, s *Store) (map[int64][]string, []Event) {
	t.Helper()
	var evs []Event
	cancel := s.Subscribe(func(ev Event) { evs = append(evs, ev) })
	states := recordHistory(t, s)
	cancel()
	return states, evs
}

// Changes returns a resource's writes in revision order, exactly as they
// were published: op, key, revision, data, PrevRev and PrevData.
func TestChanges(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, published := recordEvents(t, s)
		cur := s.CurrentRev()
		all := mustChanges(t, s, podsRes, 0, 0)
		sameList(t, "Changes(pods, 0) vs published", evStrings(all), evStrings(only(published, podsRes, 0)))

		// The sequence recordHistory writes, in order.
		want := []string{"1 n1/a", "1 n1/b", "1 n2/c", "2 n1/b", "3 n2/c", "1 n2/d", "2 n1/b",
			"1 n2/c", "3 n2/d", "2 n2/c", "1 n1/e", "3 n1/e"}
		var got []string
		for i, ev := range all {
			got = append(got, fmt.Sprintf("%d %s/%s", ev.Op, ev.Object.Namespace, ev.Object.Name))
			if ev.Object.Resource != podsRes {
				t.Errorf("event %d has resource %q", i, ev.Object.Resource)
			}
			if i > 0 && ev.Object.Rev <= all[i-1].Object.Rev {
				t.Errorf("event %d rev %d after rev %d", i, ev.Object.Rev, all[i-1].Object.Rev)
			}
		}
		sameList(t, "ops and keys", got, want)
		if n := len(all); n == 0 || all[n-1].Object.Rev != cur {
			t.Fatalf("last change is not at CurrentRev %d", cur)
		}

		// PrevRev/PrevData are the key's previous event; adds (also the
		// re-create of a deleted key) have none.
		last := map[Key]Event{}
		for i, ev := range all {
			prev, seen := last[ev.Object.Key]
			if ev.Op == OpAdded {
				if ev.PrevRev != 0 || ev.PrevData != nil {
					t.Errorf("event %d (add): PrevRev %d PrevData %q", i, ev.PrevRev, ev.PrevData)
				}
			} else if !seen || ev.PrevRev != prev.Object.Rev || string(ev.PrevData) != string(prev.Object.Data) {
				t.Errorf("event %d: prev %d %s; previous event of the key: %s", i, ev.PrevRev, ev.PrevData, evString(prev))
			}
			if ev.Op == OpDeleted {
				// A delete records the final state the encoder rendered.
				if p := decode(t, &ev.Object); p.V != -1 || p.Rev != ev.Object.Rev {
					t.Errorf("event %d (delete) data %s", i, ev.Object.Data)
				}
			}
			last[ev.Object.Key] = ev
		}

		// After every revision: the tail of the same sequence.
		for after := int64(0); after <= cur; after++ {
			sameList(t, fmt.Sprintf("Changes(pods, %d)", after),
				evStrings(mustChanges(t, s, podsRes, after, 0)), evStrings(only(all, podsRes, after)))
		}

		// Paged with a limit, continuing after the last revision seen.
		for limit := 1; limit <= len(all)+1; limit++ {
			var paged []Event
			for after, pages := int64(0), 0; ; pages++ {
				if pages > len(all)+1 {
					t.Fatalf("limit %d: paging does not terminate", limit)
				}
				page := mustChanges(t, s, podsRes, after, limit)
				if rest := len(only(all, podsRes, after)); len(page) != min(limit, rest) {
					t.Fatalf("limit %d after %d: %d events, want %d", limit, after, len(page), min(limit, rest))
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				after = page[len(page)-1].Object.Rev
			}
			sameList(t, fmt.Sprintf("paged with limit %d", limit), evStrings(paged), evStrings(all))
		}

		// Other resources: only their own writes.
		sameList(t, "Changes(cm, 0)", evStrings(mustChanges(t, s, cmRes, 0, 0)), evStrings(only(published, cmRes, 0)))
		if n := len(mustChanges(t, s, cmRes, 0, 0)); n != 1 {
			t.Errorf("Changes(cm, 0) has %d events, want 1", n)
		}
		if evs := mustChanges(t, s, "nope/nothing", 0, 0); len(evs) != 0 {
			t.Errorf("Changes of an unknown resource: %v", evStrings(evs))
		}
		// Nothing after the newest revision (or a revision from the future).
		if evs := mustChanges(t, s, podsRes, cur, 0); len(evs) != 0 {
			t.Errorf("Changes after CurrentRev: %v", evStrings(evs))
		}
		if evs, err := s.Changes(ctx, podsRes, cur+100, 0); len(evs) != 0 || (err != nil && !errors.Is(err, ErrFutureRev)) {
			t.Errorf("Changes after a future revision: %v, %v", evStrings(evs), err)
		}

		// A new write shows up after the old current revision.
		b := Key{Resource: podsRes, Namespace: "n1", Name: "b"}
		o, err := s.Get(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		u := mustUpdate(t, s, b, o.Rev, 10)
		evs := mustChanges(t, s, podsRes, cur, 0)
		if len(evs) != 1 || evs[0].Op != OpModified || evs[0].Object.Rev != u.Rev ||
			evs[0].PrevRev != o.Rev || string(evs[0].PrevData) != string(o.Data) || string(evs[0].Object.Data) != string(u.Data) {
			t.Errorf("Changes after a new write: %v", evStrings(evs))
		}
	})
}

// After Compact(C), Changes after a revision older than C answers
// ErrCompacted (for every resource); after C and later it is unchanged,
// PrevData included.
func TestChangesAfterCompaction(t *testing.T) {
	for C := int64(1); C <= 13; C++ {
		t.Run(fmt.Sprint(C), func(t *testing.T) {
			bothStores(t, func(t *testing.T, s *Store) {
				ctx := context.Background()
				recordHistory(t, s)
				cur := s.CurrentRev()
				before := map[string][]Event{}
				for _, res := range []string{podsRes, cmRes} {
					before[res] = mustChanges(t, s, res, 0, 0)
				}
				if err := s.Compact(ctx, C); err != nil {
					t.Fatal(err)
				}
				check := func(when string) {
					t.Helper()
					for _, res := range []string{podsRes, cmRes} {
						for after := int64(0); after <= cur; after++ {
							for _, limit := range []int{0, 1} {
								evs, err := s.Changes(ctx, res, after, limit)
								if after < C {
									if !errors.Is(err, ErrCompacted) || evs != nil {
										t.Errorf("%s: Changes(%s, %d, %d) after Compact(%d): %v, %v; want ErrCompacted",
											when, res, after, limit, C, evStrings(evs), err)
									}
									continue
								}
								if err != nil {
									t.Fatalf("%s: Changes(%s, %d, %d) after Compact(%d): %v", when, res, after, limit, C, err)
								}
								want := only(before[res], res, after)
								if limit > 0 && len(want) > limit {
									want = want[:limit]
								}
								sameList(t, fmt.Sprintf("%s: Changes(%s, %d, %d) after Compact(%d)", when, res, after, limit, C),
									evStrings(evs), evStrings(want))
							}
						}
					}
				}
				check("after compaction")
				// Compacting to an older revision changes nothing.
				if err := s.Compact(ctx, C-1); err != nil {
					t.Fatal(err)
				}
				check("after an older Compact")
			})
		})
	}
}

// Changes on a closed store fails with ErrClosed, like every other call.
func TestChangesAfterClose(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		mustCreate(t, s, Key{Resource: podsRes, Namespace: "ns", Name: "a"}, 1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if evs, err := s.Changes(context.Background(), podsRes, 0, 0); !errors.Is(err, ErrClosed) {
			t.Errorf("Changes after Close: %v, %v; want ErrClosed", evStrings(evs), err)
		}
	})
}

// A cancelled subscriber gets no further events; the others keep theirs;
// cancelling twice is harmless and does not drop a later subscriber.
func TestSubscribeCancel(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		var a, b, c []int64
		cancelA := s.Subscribe(func(ev Event) { a = append(a, ev.Object.Rev) })
		cancelB := s.Subscribe(func(ev Event) { b = append(b, ev.Object.Rev) })
		k := func(name string) Key { return Key{Resource: podsRes, Namespace: "ns", Name: name} }
		o1 := mustCreate(t, s, k("1"), 1)
		cancelA()
		o2 := mustCreate(t, s, k("2"), 1)
		cancelA() // again: must not remove anyone else
		cancelC := s.Subscribe(func(ev Event) { c = append(c, ev.Object.Rev) })
		cancelA()
		o3 := mustCreate(t, s, k("3"), 1)
		cancelB()
		cancelC()
		mustCreate(t, s, k("4"), 1)

		revs := func(v []int64) string { return fmt.Sprint(v) }
		if got, want := revs(a), revs([]int64{o1.Rev}); got != want {
			t.Errorf("cancelled subscriber A got %s, want %s", got, want)
		}
		if got, want := revs(b), revs([]int64{o1.Rev, o2.Rev, o3.Rev}); got != want {
			t.Errorf("subscriber B got %s, want %s", got, want)
		}
		if got, want := revs(c), revs([]int64{o3.Rev}); got != want {
			t.Errorf("subscriber C got %s, want %s", got, want)
		}
	})
}

// Under concurrent writes: once cancel has returned, the subscriber is never
// called again, and subscribing/cancelling while writing is race-free.
func TestSubscribeCancelConcurrent(t *testing.T) {
	s := newFileStore(t)
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			k := Key{Resource: podsRes, Namespace: "ns", Name: fmt.Sprintf("w%d", w)}
			mustCreate(t, s, k, 0)
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Update(ctx, k, -1, enc(k.Name, i)); err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		}(w)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// Subscribers that come and go while the writers run.
	for i := 0; i < 50; i++ {
		var cancelled atomic.Bool
		var late, seen atomic.Int64
		cancel := s.Subscribe(func(ev Event) {
			seen.Add(1)
			if cancelled.Load() {
				late.Add(1)
			}
		})
		if i%10 == 0 {
			waitFor("an event", func() bool { return seen.Load() > 0 })
		}
		cancel()
		cancelled.Store(true)
		n := writes.Load()
		waitFor("more writes", func() bool { return writes.Load() > n+2 })
		if late.Load() != 0 {
			t.Fatalf("subscriber %d called %d times after cancel returned", i, late.Load())
		}
	}
	close(stop)
	wg.Wait()
	s.subsMu.RLock()
	left := len(s.subs)
	s.subsMu.RUnlock()
	if left != 0 {
		t.Errorf("%d subscribers left after all were cancelled", left)
	}
}

// SubscribeAt hands over without a gap or a duplicate: the changes up to
// the returned revision plus the events after it are every write, which is
// how a watch replays history and then follows live events.
func TestSubscribeAtHandoff(t *testing.T) {
	bothStores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		resources := []string{podsRes, cmRes}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var writes atomic.Int64
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				k := Key{Resource: resources[w%2], Namespace: "ns", Name: fmt.Sprintf("w%d", w)}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					var err error
					switch i % 3 {
					case 0:
						_, err = s.Create(ctx, k, enc(k.Name, i))
					case 1:
						_, err = s.Update(ctx, k, -1, enc(k.Name, i))
					case 2:
						_, err = s.Delete(ctx, k, -1, enc(k.Name, i))
					}
					if err != nil {
						t.Error(err)
						return
					}
					writes.Add(1)
				}
			}(w)
		}
		for deadline := time.Now().Add(20 * time.Second); writes.Load() < 30 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		var mu sync.Mutex
		var live []Event
		subRev, cancel := s.SubscribeAt(func(ev Event) {
			mu.Lock()
			live = append(live, ev)
			mu.Unlock()
		})
		n := writes.Load()
		for deadline := time.Now().Add(20 * time.Second); writes.Load() < n+30 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel()
		close(stop)
		wg.Wait()
		if t.Failed() {
			return
		}

		mu.Lock()
		defer mu.Unlock()
		if subRev == 0 || len(live) == 0 {
			t.Fatalf("SubscribeAt rev %d with %d live events: the writes did not overlap", subRev, len(live))
		}
		for i, ev := range live {
			if ev.Object.Rev <= subRev {
				t.Fatalf("live event %d at rev %d, not after SubscribeAt's %d", i, ev.Object.Rev, subRev)
			}
			if i > 0 && ev.Object.Rev <= live[i-1].Object.Rev {
				t.Fatalf("live event %d rev %d after %d", i, ev.Object.Rev, live[i-1].Object.Rev)
			}
		}
		last := live[len(live)-1].Object.Rev
		for _, res := range resources {
			// Replay: the changes after 0 up to subRev, as a watch does.
			var replay []Event
			for from := int64(0); from < subRev; {
				page := mustChanges(t, s, res, from, 7)
				if len(page) == 0 {
					break
				}
				for _, ev := range page {
					if ev.Object.Rev > subRev {
						break
					}
					replay = append(replay, ev)
				}
				if page[len(page)-1].Object.Rev > subRev {
					break
				}
				from = page[len(page)-1].Object.Rev
			}
			var got []Event
			got = append(got, replay...)
			got = append(got, only(live, res, 0)...)
			want := mustChanges(t, s, res, 0, 0)
			var upTo []Event
			for _, ev := range want {
				if ev.Object.Rev <= last {
					upTo = append(upTo, ev)
				}
			}
			if g, w := strings.Join(evStrings(got), "\n"), strings.Join(evStrings(upTo), "\n"); g != w {
				t.Fatalf("%s: replay to %d (%d events) + live (%d events) != Changes to %d (%d events)",
					res, subRev, len(replay), len(only(live, res, 0)), last, len(upTo))
			}
		}
		t.Logf("SubscribeAt at %d of %d writes, %d live events", subRev, writes.Load(), len(live))
	})
}
