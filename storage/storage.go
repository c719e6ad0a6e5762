// Package storage keeps kapi's objects in SQLite: an objects table that
// points at the current state of every live object, and a changelog table
// that records every write. The changelog revision is the resourceVersion:
// one global, strictly increasing integer assigned by the single writer.
//
// Objects are opaque JSON to this package; it knows keys, revisions and
// history, nothing about Kubernetes kinds.
package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Key addresses one object. Resource is "<group>/<plural>" (the core group
// is the empty string, so namespaces are "/namespaces"); Namespace is empty
// for cluster-scoped objects.
type Key struct {
	Resource  string
	Namespace string
	Name      string
}

// Op is the kind of change a changelog row records.
type Op int

const (
	OpAdded    Op = 1
	OpModified Op = 2
	OpDeleted  Op = 3
)

// Object is one stored state of an object.
type Object struct {
	Key
	Rev  int64
	Data []byte
}

// Event is one committed write, as the changelog records it.
type Event struct {
	Op     Op
	Object Object
	// PrevRev is the revision of the key's previous state (0 if none).
	PrevRev int64
	// PrevData is the key's previous state (nil if none, or compacted).
	PrevData []byte
}

// Errors returned by the Store. Callers map them to API status errors.
var (
	ErrNotFound  = errors.New("storage: object not found")
	ErrExists    = errors.New("storage: object already exists")
	ErrConflict  = errors.New("storage: object was modified")
	ErrCompacted = errors.New("storage: revision has been compacted")
	ErrFutureRev = errors.New("storage: revision is newer than the store")
	ErrClosed    = errors.New("storage: store is closed")
	// ErrNoSpace: the disk (or the configured quota) is full. The write
	// left nothing behind; reads go on, writes succeed again once there is
	// room.
	ErrNoSpace = errors.New("storage: no space left for writes")
	// ErrReadOnly: the database file cannot be written (permissions, a
	// read-only file system). Reads go on.
	ErrReadOnly = errors.New("storage: the database is read-only")
	// ErrIO: the disk failed a read or a write.
	ErrIO = errors.New("storage: disk I/O error")
)

// Encoder renders an object's JSON once its revision is known, so that the
// stored bytes carry their own resourceVersion.
type Encoder func(rev int64) ([]byte, error)

// ListOptions selects a page of objects of one resource.
type ListOptions struct {
	// Namespace limits the list to one namespace; empty means all.
	Namespace string
	// Rev lists the state as of this revision (a consistent snapshot);
	// 0 means the current state.
	Rev int64
	// AfterNamespace/AfterName continue a list after this key (in List's
	// order; the key need not exist).
	AfterNamespace, AfterName string
	// Limit is the most items to return; 0 means no limit.
	Limit int64
	// Predicate keeps an object when it returns true; nil keeps all.
	Predicate func(*Object) (bool, error)
}

// ListResult is one page of a list.
type ListResult struct {
	Items []*Object
	// Rev is the revision the list was read at.
	Rev int64
	// More is true when objects after the last item may exist.
	More bool
	// Remaining counts the objects after this page; only set when
	// there is no predicate and More is true.
	Remaining *int64
}

// Store is kapi's object store.
type Store struct {
	db *sqliteDB // set by Open, never reassigned (readers use it unlocked)

	// closed is set by Close; every operation checks it first, so calls
	// after Close fail with ErrClosed instead of using a closed database.
	closed atomic.Bool

	// writeMu makes the store a single writer: revision assignment,
	// commit and event delivery happen in one order.
	opts Options

	writeMu         sync.Mutex
	rev             int64 // last committed revision, guarded by writeMu
	sinceCheckpoint int   // writes committed since the checkpointer was last woken, guarded by writeMu

	// pending are the writes waiting for the writer lock; the next holder
	// commits them all together.
	pendingMu sync.Mutex
	pending   []*write

	subsMu sync.RWMutex
	subs   map[int]func(Event)
	nextID int

	// wrote wakes the checkpointer every checkpointAfter writes (a commit
	// never waits for it); Close closes stopCheckpoints, and
	// checkpointsDone is closed once the checkpointer has stopped.
	wrote           chan struct{}
	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}
}

// Options configure Open.
type Options struct {
	// Path of the SQLite database file. Ignored when InMemory.
	Path string
	// InMemory keeps the database in memory only (a throwaway store).
	InMemory bool
	// Durable makes every commit survive a power loss (synchronous=FULL);
	// otherwise a commit survives a process kill (synchronous=NORMAL).
	Durable bool
	// QuotaBytes, when above 0, caps the database's size: writes that
	// would grow it further fail with ErrNoSpace, as on a full disk.
	QuotaBytes int64
	// OnCommit, when set, is told how long each committed write took.
	OnCommit func(time.Duration)
	// OnCompact, when set, is told how long each compaction took.
	OnCompact func(time.Duration)
	// Log, when set, is told of failures in the background: when
	// checkpoints start failing and when they succeed again.
	Log *slog.Logger
}

// Stats are figures of the store, for metrics.
type Stats struct {
	// Objects counts the live objects per resource.
	Objects map[string]int64
	// ChangelogRows is the length of the history kept.
	ChangelogRows int64
	// SizeBytes is the database's size.
	SizeBytes int64
}

// Stats reads the store's figures.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	if s.closed.Load() {
		return Stats{}, ErrClosed
	}
	return s.db.stats(ctx)
}

// Open opens (creating if needed) the store and applies migrations.
func Open(ctx context.Context, opts Options) (*Store, error) {
	db, err := openSQLite(ctx, opts)
	if err != nil {
		return nil, err
	}
	rev, err := db.currentRev(ctx, db.writer)
	if err != nil {
		db.close()
		return nil, err
	}
	s := &Store{db: db, rev: rev, opts: opts, wrote: make(chan struct{}), stopCheckpoints: make(chan struct{}), checkpointsDone: make(chan struct{})}
	if db.checkpointer != nil {
		go s.runCheckpoints()
	} else {
		close(s.checkpointsDone)
	}
	return s, nil
}

// checkpointAfter is how many committed writes wake the background
// checkpointer: ~4 frames of 8 KiB each for a write committed alone, so
// it runs at about half the 4 MiB at which the writer's own checkpoint
// (the backstop) would.
const checkpointAfter = 64

// runCheckpoints copies committed WAL frames into the database file in the
// background, until Close. SQLite's own automatic checkpoint runs inside
// the commit that crosses its threshold, so about one write in a hundred
// waited for a checkpoint's page copies and fsyncs (a lone writer's p99
// create latency ~5 ms against a p50 of 0.6 ms). The writer's automatic
// checkpoint stays as a backstop at a higher threshold.
func (s *Store) runCheckpoints() {
	defer close(s.checkpointsDone)
	failing := false
	for {
		select {
		case <-s.stopCheckpoints:
			return
		case <-s.wrote:
		}
		// A failed checkpoint (an I/O error, a full disk) loses nothing:
		// the WAL grows, the next wake-up retries, and the writer's own
		// checkpoint remains. It is logged when it starts and stops.
		err := s.db.checkpoint()
		if s.opts.Log != nil && (err != nil) != failing {
			if err != nil {
				s.opts.Log.Warn("WAL checkpoint failed: the write-ahead log grows until one succeeds", "err", err)
			} else {
				s.opts.Log.Info("WAL checkpoints succeed again")
			}
		}
		failing = err != nil
	}
}

// ReadOnly tells whether the database file was opened read-only (it could
// not be written): reads are served, writes fail with ErrReadOnly.
func (s *Store) ReadOnly() bool { return s.db.readOnly }

// Close closes the database. Calls after Close fail with ErrClosed.
func (s *Store) Close() error {
	s.writeMu.Lock()
	if s.closed.Swap(true) {
		s.writeMu.Unlock()
		return nil
	}
	s.writeMu.Unlock()
	close(s.stopCheckpoints)
	<-s.checkpointsDone
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.db.close()
}

// Subscribe registers fn to be called, in revision order, with every
// committed write, until the returned cancel is called. fn runs while the
// writer lock is held: it must not block, must not write to the store, and
// must not call cancel (that would deadlock).
func (s *Store) Subscribe(fn func(Event)) (cancel func()) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if s.subs == nil {
		s.subs = map[int]func(Event){}
	}
	id := s.nextID
	s.nextID++
	s.subs[id] = fn
	return func() {
		s.subsMu.Lock()
		delete(s.subs, id)
		s.subsMu.Unlock()
	}
}

// SubscribeAt is Subscribe that also returns the last revision committed
// before fn was registered: fn sees every write after it.
func (s *Store) SubscribeAt(fn func(Event)) (rev int64, cancel func()) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.rev, s.Subscribe(fn)
}

// Changes returns, in revision order, the writes to resource after rev
// (at most limit, 0 for all). ErrCompacted if history after rev is gone.
func (s *Store) Changes(ctx context.Context, resource string, rev int64, limit int) ([]Event, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.changes(ctx, resource, rev, limit)
}

func (s *Store) publish(ev Event) {
	s.subsMu.RLock()
	defer s.subsMu.RUnlock()
	for _, fn := range s.subs {
		fn(ev)
	}
}

// CurrentRev returns the last committed revision.
func (s *Store) CurrentRev() int64 {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.rev
}

// CompactedRev returns the revision below which history is gone.
func (s *Store) CompactedRev(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.db.compactedRev(ctx)
}

// Get returns the current state of key.
func (s *Store) Get(ctx context.Context, key Key) (*Object, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.get(ctx, key)
}

// List returns a page of objects of resource, in kube-apiserver's order:
// the byte order of "<namespace>/<name>" (etcd's keys).
func (s *Store) List(ctx context.Context, resource string, opts ListOptions) (*ListResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.list(ctx, resource, opts)
}

// Create stores a new object. ErrExists if key is live.
func (s *Store) Create(ctx context.Context, key Key, enc Encoder) (*Object, error) {
	return s.write(ctx, key, OpAdded, -1, enc)
}

// Update replaces the object at key if its current revision is
// expectedRev; otherwise ErrConflict (ErrNotFound if it is gone).
func (s *Store) Update(ctx context.Context, key Key, expectedRev int64, enc Encoder) (*Object, error) {
	return s.write(ctx, key, OpModified, expectedRev, enc)
}

// Delete removes the object at key if its current revision is expectedRev.
// enc renders the object's final state, recorded in the changelog.
func (s *Store) Delete(ctx context.Context, key Key, expectedRev int64, enc Encoder) (*Object, error) {
	return s.write(ctx, key, OpDeleted, expectedRev, enc)
}

func (s *Store) write(ctx context.Context, key Key, op Op, expectedRev int64, enc Encoder) (*Object, error) {
	w := &write{ctx: ctx, key: key, op: op, expectedRev: expectedRev, enc: enc, done: make(chan struct{})}
	s.pendingMu.Lock()
	s.pending = append(s.pending, w)
	s.pendingMu.Unlock()
	// Group commit: whoever holds the writer lock commits every write
	// queued meanwhile in one batch. A write queued before this one took
	// the lock is either done already or in the batch taken now.
	s.writeMu.Lock()
	select {
	case <-w.done:
	default:
		s.pendingMu.Lock()
		batch := s.pending
		s.pending = nil
		s.pendingMu.Unlock()
		s.commitBatch(batch)
	}
	s.writeMu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	return &Object{Key: key, Rev: w.rev, Data: w.prev.data}, nil
}

// commitBatch commits a batch of writes and publishes their events, in
// revision order. Called with writeMu held.
func (s *Store) commitBatch(batch []*write) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	if s.closed.Load() {
		for _, w := range batch {
			w.err = ErrClosed
		}
		return
	}
	start := time.Now()
	s.rev = s.db.commitBatch(batch, s.rev)
	took := time.Since(start)
	for _, w := range batch {
		if w.err != nil {
			continue
		}
		s.sinceCheckpoint++
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(took)
		}
		s.publish(Event{Op: w.op, Object: Object{Key: w.key, Rev: w.rev, Data: w.prev.data}, PrevRev: w.prev.prevRev, PrevData: w.prev.prevData})
	}
	if s.sinceCheckpoint >= checkpointAfter {
		select {
		case s.wrote <- struct{}{}:
			s.sinceCheckpoint = 0
		default: // the checkpointer is busy; wake it once it is done
		}
	}
}

// Compact removes history older than rev: afterwards the state as of any
// revision >= rev can still be listed, older ones answer ErrCompacted.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if rev > s.CurrentRev() {
		return ErrFutureRev
	}
	start := time.Now()
	if err := s.db.compact(ctx, rev); err != nil {
		return err
	}
	if s.opts.OnCompact != nil {
		s.opts.OnCompact(time.Since(start))
	}
	return nil
}

// RevAt returns the newest revision committed at or before unixMilli (0 if
// none), for compaction by age.
func (s *Store) RevAt(ctx context.Context, unixMilli int64) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.db.revAt(ctx, unixMilli)
}

// Backup copies the database file at dbPath, which a running kapi may be
// writing, to outPath as one consistent snapshot: a store opened on the copy
// serves the same objects and resourceVersions.
func Backup(ctx context.Context, dbPath, outPath string) error {
	if _, err := os.Stat(dbPath); err != nil {
		return err
	}
	if _, err := os.Stat(outPath); err == nil {
		return fmt.Errorf("%s exists: a backup does not overwrite", outPath)
	}
	return backup(ctx, dbPath, outPath)
}
