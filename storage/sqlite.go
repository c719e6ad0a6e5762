package storage

// All SQL that is specific to SQLite lives in this file.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kapi-dev/kapi/migrations"
	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// fault names the storage faults among SQLite's errors (ErrNoSpace,
// ErrReadOnly, ErrIO), keeping SQLite's message; others pass unchanged.
func fault(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %v", ErrNoSpace, err)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("%w: %v", ErrReadOnly, err)
	case sqlite3.SQLITE_IOERR:
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	return err
}

type sqliteDB struct {
	writer *sql.DB // one connection: the single writer
	reader *sql.DB // a pool of read-only connections (same as writer in memory)

	// The write path's statements, prepared on the writer's driver
	// connection the first time it writes (see inWriteTx).
	stmts *writeStmts
	// checkpointer is one connection for background checkpoints (nil in
	// memory and when the file is read-only).
	checkpointer *sql.DB
	// getStmt reads one object; prepared once on the reader pool.
	getStmt *sql.Stmt

	// readOnly is set when the database file could not be opened for
	// writing: writes fail with ErrReadOnly.
	readOnly bool

	// quotaPages caps the database (Options.QuotaBytes) in pages; 0: no
	// cap. Writes are held reservePages below it: what is left is for
	// deletes, which a full store would otherwise refuse too (each writes
	// its changelog row), as etcd lets deletes through at its quota so
	// that clients can make room.
	quotaPages, reservePages int64
}

// writeStmts are the write path's statements, prepared on the writer's
// driver connection.
type writeStmts struct {
	conn                                                            any // the driver connection they belong to
	current, insertChange, insertObject, updateObject, deleteObject driver.Stmt
}

// prepare readies the read path's statement.
func (d *sqliteDB) prepare(ctx context.Context) error {
	var err error
	d.getStmt, err = d.reader.PrepareContext(ctx, `SELECT o.rev, c.data FROM objects o JOIN changelog c ON c.rev = o.rev
		WHERE o.resource = ? AND o.namespace = ? AND o.name = ?`)
	return err
}

// inWriteTx runs fn in one transaction on the writer's connection and
// commits it when fn returns nil; otherwise it rolls back and returns
// fn's error.
//
// The write path talks to the driver connection directly rather than
// through database/sql's Tx: that starts a goroutine per transaction and
// per query in one to watch their contexts (~5 % of a create's CPU), and
// the write path's few statements, serialised under the store's write
// lock, take well under a millisecond and are never cancelled halfway (a
// request's cancellation would roll back the other writes of its batch).
func (d *sqliteDB) inWriteTx(fn func(st *writeStmts) error) error {
	ctx := context.Background()
	conn, err := d.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		st, err := d.writeStmtsOn(ctx, dc)
		if err != nil {
			return err
		}
		begin, ok := dc.(driver.ConnBeginTx)
		if !ok {
			return fmt.Errorf("storage: the driver connection %T cannot begin a transaction", dc)
		}
		tx, err := begin.BeginTx(ctx, driver.TxOptions{}) // BEGIN IMMEDIATE (_txlock)
		if err != nil {
			return err
		}
		if err := fn(st); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// writeStmtsOn returns the write path's statements prepared on the driver
// connection dc, preparing them the first time (database/sql keeps the
// writer's single connection for the life of the store).
func (d *sqliteDB) writeStmtsOn(ctx context.Context, dc any) (*writeStmts, error) {
	if d.stmts != nil && d.stmts.conn == dc {
		return d.stmts, nil
	}
	prep, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("storage: the driver connection %T cannot prepare statements", dc)
	}
	st := &writeStmts{conn: dc}
	for _, q := range []struct {
		dst   *driver.Stmt
		query string
	}{
		{&st.current, `SELECT o.rev, c.data FROM objects o JOIN changelog c ON c.rev = o.rev
			WHERE o.resource = ? AND o.namespace = ? AND o.name = ?`},
		{&st.insertChange, `INSERT INTO changelog (rev, resource, namespace, name, op, prev_rev, ts, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.insertObject, `INSERT INTO objects (resource, namespace, name, rev) VALUES (?, ?, ?, ?)`},
		{&st.updateObject, `UPDATE objects SET rev = ? WHERE resource = ? AND namespace = ? AND name = ?`},
		{&st.deleteObject, `DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?`},
	} {
		var err error
		if *q.dst, err = prep.PrepareContext(ctx, q.query); err != nil {
			st.close()
			return nil, fmt.Errorf("prepare %q: %w", q.query, err)
		}
	}
	d.stmts = st
	return st, nil
}

func (st *writeStmts) close() {
	for _, s := range []driver.Stmt{st.current, st.insertChange, st.insertObject, st.updateObject, st.deleteObject} {
		if s != nil {
			s.Close()
		}
	}
}

// exec runs a statement that returns no rows.
func exec(s driver.Stmt, args ...driver.Value) error {
	_, err := s.(driver.StmtExecContext).ExecContext(context.Background(), namedValues(args))
	return err
}

// queryRow reads the first row of a query into dest; found is false when
// there is none. Blobs come as fresh copies.
func queryRow(s driver.Stmt, dest []driver.Value, args ...driver.Value) (found bool, err error) {
	rows, err := s.(driver.StmtQueryContext).QueryContext(context.Background(), namedValues(args))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	switch err := rows.Next(dest); {
	case errors.Is(err, io.EOF):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

func namedValues(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}

func openSQLite(ctx context.Context, opts Options) (*sqliteDB, error) {
	sync := "NORMAL"
	if opts.Durable {
		sync = "FULL"
	}
	if opts.InMemory {
		// One connection holds the in-memory database, so reads and
		// writes share it (they are short, never nested).
		db, err := sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		s := &sqliteDB{writer: db, reader: db}
		if _, err := migrations.Apply(ctx, db); err != nil {
			db.Close()
			return nil, err
		}
		if err := s.prepare(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return s, nil
	}
	if opts.Path == "" {
		return nil, errors.New("storage: no database path")
	}
	if err := checkOwnDatabase(ctx, opts.Path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	// A new database gets 8 KiB pages: they hold five ~1.5 KiB objects
	// where SQLite's default 4 KiB pages hold two. The page size is fixed
	// when the first page is written, which switching to WAL does: the
	// driver runs the _pragma list before the _journal_mode key. (On an
	// existing database page_size changes nothing.)
	q.Add("_pragma", "page_size(8192)")
	q.Set("_journal_mode", "WAL")
	// The store checkpoints in the background (runCheckpoints); the
	// writer's own automatic checkpoint, inside a commit, is the backstop
	// if that falls behind: past 4 MiB of WAL (500 pages of 8 KiB).
	q.Add("_pragma", "wal_autocheckpoint(500)")
	// A WAL that outgrew that while a checkpoint had to wait for readers
	// is cut back to 4 MiB once a checkpoint has caught up, instead of
	// keeping its largest size for good.
	q.Add("_pragma", "journal_size_limit(4194304)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_txlock", "immediate")
	w, err := sql.Open("sqlite", "file:"+opts.Path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	readOnly := false
	if _, err := migrations.Apply(ctx, w); err != nil {
		// A read-only file whose schema is current is served read-only:
		// reads work, writes fail with ErrReadOnly.
		if !errors.Is(fault(err), ErrReadOnly) || !schemaCurrent(ctx, w) {
			w.Close()
			return nil, err
		}
		readOnly = true
	} else if f, err := os.OpenFile(opts.Path, os.O_WRONLY, 0); err != nil {
		// The schema needs no migration, yet this process may not write
		// the file (permissions, a read-only file system).
		readOnly = true
	} else {
		f.Close()
	}
	var quotaPages, reservePages int64
	if opts.QuotaBytes > 0 {
		var pageSize int64
		if err := w.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
			w.Close()
			return nil, err
		}
		// SQLite answers SQLITE_FULL past max_page_count, as on a full disk.
		quotaPages = max(opts.QuotaBytes/pageSize, 1)
		reservePages = min(max(quotaPages/64, 4), quotaPages/2)
		if _, err := w.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, quotaPages-reservePages)); err != nil {
			w.Close()
			return nil, err
		}
	}
	rq := url.Values{}
	rq.Add("_pragma", "busy_timeout(10000)")
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", "file:"+opts.Path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	d := &sqliteDB{writer: w, reader: r, readOnly: readOnly, quotaPages: quotaPages, reservePages: reservePages}
	if !readOnly {
		cq := url.Values{}
		cq.Add("_pragma", "busy_timeout(10000)")
		cq.Add("_pragma", "journal_size_limit(4194304)")
		if d.checkpointer, err = sql.Open("sqlite", "file:"+opts.Path+"?"+cq.Encode()); err != nil {
			d.close()
			return nil, err
		}
		d.checkpointer.SetMaxOpenConns(1)
	}
	if err := d.prepare(ctx); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// checkOwnDatabase refuses an existing database file that is not kapi's:
// another program's SQLite database (tables, but no schema_migrations),
// which opening it would change for good (WAL mode, kapi's tables). It is
// read through a read-only connection, before anything writes.
func checkOwnDatabase(ctx context.Context, path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil // a new database
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	var tables, ours int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN name = 'schema_migrations' THEN 1 END) FROM sqlite_master WHERE type = 'table'`).Scan(&tables, &ours)
	if err != nil {
		return fmt.Errorf("storage: %s cannot be read as a SQLite database: %w", path, err)
	}
	if tables > 0 && ours == 0 {
		return fmt.Errorf("storage: %s is not kapi's database (it has %d tables and none of kapi's): refusing to change it", path, tables)
	}
	return nil
}

// schemaCurrent tells whether db's schema is the newest migration's.
func schemaCurrent(ctx context.Context, db *sql.DB) bool {
	all, err := migrations.All()
	if err != nil || len(all) == 0 {
		return false
	}
	var current int
	err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current)
	return err == nil && current == all[len(all)-1].Version
}

// checkpoint copies the WAL's committed frames into the database file as
// far as readers allow (PASSIVE: it never waits for the writer or readers).
func (d *sqliteDB) checkpoint() error {
	_, err := d.checkpointer.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
	return fault(err)
}

func (d *sqliteDB) close() error {
	var err error
	if d.checkpointer != nil {
		err = d.checkpointer.Close()
	}
	if d.reader != d.writer {
		err = errors.Join(err, d.reader.Close())
	}
	if d.writer != nil {
		if conn, e := d.writer.Conn(context.Background()); e == nil {
			conn.Raw(func(dc any) error {
				if d.stmts != nil && d.stmts.conn == dc {
					d.stmts.close()
					d.stmts = nil
				}
				return nil
			})
			conn.Close()
		}
		// A TRUNCATE checkpoint folds the WAL back into the main file so
		// a clean shutdown leaves a single database file.
		d.writer.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
		if e := d.writer.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// currentRev is the newest revision handed out: the newest changelog row's,
// or the compacted revision when compaction removed that row (it removes
// rows at or below the revision it records; migration 0002 explains).
func (d *sqliteDB) currentRev(ctx context.Context, q querier) (int64, error) {
	var rev int64
	err := q.QueryRowContext(ctx, `SELECT MAX(COALESCE((SELECT MAX(rev) FROM changelog), 0),
		(SELECT value FROM meta WHERE key = 'compacted_rev'))`).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("read current revision: %w", err)
	}
	return rev, nil
}

func (d *sqliteDB) compactedRev(ctx context.Context) (int64, error) {
	var rev int64
	err := d.reader.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'compacted_rev'`).Scan(&rev)
	return rev, err
}

func (d *sqliteDB) get(ctx context.Context, key Key) (*Object, error) {
	var o Object
	o.Key = key
	// One index lookup, never worth interrupting once begun: without a
	// context that can end, neither database/sql nor the driver starts a
	// goroutine to watch it.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	err := d.getStmt.QueryRowContext(ctx, key.Resource, key.Namespace, key.Name).Scan(&o.Rev, &o.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &o, nil
}

func (d *sqliteDB) list(ctx context.Context, resource string, opts ListOptions) (*ListResult, error) {
	tx, err := d.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	current, err := d.currentRev(ctx, tx)
	if err != nil {
		return nil, err
	}
	res := &ListResult{Rev: current}
	history := opts.Rev != 0 && opts.Rev != current
	if history {
		if opts.Rev > current {
			return nil, ErrFutureRev
		}
		var compacted int64
		if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'compacted_rev'`).Scan(&compacted); err != nil {
			return nil, err
		}
		if opts.Rev < compacted {
			return nil, ErrCompacted
		}
		res.Rev = opts.Rev
	}
	// build returns the query for the objects of one key range (a list
	// limited to a namespace has one range, of that namespace).
	build := func(kr keyRange) (string, []any) {
		if !history {
			return `SELECT o.namespace, o.name, o.rev, c.data, 0 AS op FROM objects o JOIN changelog c ON c.rev = o.rev
				WHERE o.resource = ? AND (o.namespace, o.name) > (?, ?) AND o.namespace <= ? ORDER BY o.namespace, o.name`,
				[]any{resource, kr.afterNamespace, kr.afterName, kr.lastNamespace}
		}
		// The state at Rev: for every key, its newest changelog row at or
		// before Rev, unless that row is a delete (skipped by the caller).
		return `SELECT c.namespace, c.name, c.rev, c.data, c.op FROM changelog c
			WHERE c.resource = ? AND c.rev <= ? AND (c.namespace, c.name) > (?, ?) AND c.namespace <= ?
			AND c.rev = (SELECT MAX(c2.rev) FROM changelog c2
				WHERE c2.resource = c.resource AND c2.namespace = c.namespace AND c2.name = c.name AND c2.rev <= ?)
			ORDER BY c.namespace, c.name`,
			[]any{resource, opts.Rev, kr.afterNamespace, kr.afterName, kr.lastNamespace, opts.Rev}
	}
	namespaces, err := namespacesOf(ctx, tx, resource, history, opts.Namespace)
	if err != nil {
		return nil, err
	}
	// read reads one key range's rows into res; false once the page is
	// full (res.More is then set) or on error.
	read := func(kr keyRange) (bool, error) {
		query, args := build(kr)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		for rows.Next() {
			o := &Object{Key: Key{Resource: resource}}
			var op Op
			if err := rows.Scan(&o.Namespace, &o.Name, &o.Rev, &o.Data, &op); err != nil {
				return false, err
			}
			if op == OpDeleted {
				continue
			}
			if opts.Limit > 0 && int64(len(res.Items)) == opts.Limit {
				res.More = true
				return false, nil
			}
			if opts.Predicate != nil {
				ok, err := opts.Predicate(o)
				if err != nil {
					return false, err
				}
				if !ok {
					continue
				}
			}
			res.Items = append(res.Items, o)
		}
		return true, rows.Err()
	}
	for _, kr := range namespaces.after(opts.AfterNamespace, opts.AfterName) {
		more, err := read(kr)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	if res.More && opts.Predicate == nil {
		// Count what follows the last item, at the same snapshot.
		last := res.Items[len(res.Items)-1]
		var remaining int64
		for _, kr := range namespaces.after(last.Namespace, last.Name) {
			cq, cargs := build(kr)
			if !history {
				// The current state: the objects index alone answers,
				// without reading the objects' data.
				cq = `SELECT 0 AS op FROM objects o WHERE o.resource = ? AND (o.namespace, o.name) > (?, ?) AND o.namespace <= ?`
				cargs = []any{resource, kr.afterNamespace, kr.afterName, kr.lastNamespace}
			}
			var n int64
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+cq+`) WHERE op != 3`, cargs...).Scan(&n); err != nil {
				return nil, err
			}
			remaining += n
		}
		res.Remaining = &remaining
	}
	return res, nil
}

// keyRange is a run of namespaces that follow each other in both orders
// below: the keys after (afterNamespace, afterName) up to the end of
// namespace lastNamespace, in (namespace, name) order.
type keyRange struct {
	afterNamespace, afterName, lastNamespace string
}

// listNamespaces is the namespaces a list reads, in kube-apiserver's order
// of keys: etcd's "<namespace>/<name>" in byte order. That is the index's
// (namespace, name) order but where a namespace is another's prefix
// followed by a byte below '/' ("app-x/…" comes before "app/…"): such
// namespaces split the list into several ranges of the index.
type listNamespaces struct {
	keyOrder []string
	position map[string]int // in the index's order
}

// namespacesOf reads the namespaces of a resource's objects (history: of
// its changelog, for a list at an older revision), one index seek each.
// namespace, when set, is the only one a list reads.
func namespacesOf(ctx context.Context, tx *sql.Tx, resource string, history bool, namespace string) (*listNamespaces, error) {
	if namespace != "" {
		return &listNamespaces{keyOrder: []string{namespace}, position: map[string]int{namespace: 0}}, nil
	}
	table := "objects"
	if history {
		table = "changelog"
	}
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE ns(n) AS (
			SELECT (SELECT namespace FROM `+table+` WHERE resource = ?1 ORDER BY namespace LIMIT 1)
			UNION ALL
			SELECT (SELECT namespace FROM `+table+` WHERE resource = ?1 AND namespace > ns.n ORDER BY namespace LIMIT 1)
			FROM ns WHERE ns.n IS NOT NULL
		) SELECT n FROM ns WHERE n IS NOT NULL`, resource)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	l := &listNamespaces{position: map[string]int{}}
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, err
		}
		l.position[ns] = len(l.keyOrder)
		l.keyOrder = append(l.keyOrder, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(l.keyOrder, func(a, b string) int { return strings.Compare(a+"/", b+"/") })
	return l, nil
}

// after returns the key ranges that list the objects after the key
// (afterNamespace, afterName), which need not exist, in key order.
func (l *listNamespaces) after(afterNamespace, afterName string) []keyRange {
	first := 0
	if afterNamespace != "" {
		first, _ = slices.BinarySearchFunc(l.keyOrder, afterNamespace+"/", func(ns, target string) int { return strings.Compare(ns+"/", target) })
	}
	var ranges []keyRange
	for i := first; i < len(l.keyOrder); i++ {
		ns := l.keyOrder[i]
		if i > first && l.position[ns] == l.position[l.keyOrder[i-1]]+1 {
			ranges[len(ranges)-1].lastNamespace = ns
			continue
		}
		kr := keyRange{afterNamespace: ns, lastNamespace: ns}
		if ns == afterNamespace {
			kr.afterName = afterName
		}
		ranges = append(ranges, kr)
	}
	return ranges
}

type prevState struct {
	data     []byte
	prevRev  int64
	prevData []byte
}

// write is one write of a batch and, once committed, its outcome.
type write struct {
	ctx         context.Context
	key         Key
	op          Op
	expectedRev int64
	enc         Encoder

	rev  int64 // assigned on success
	prev prevState
	err  error
	done chan struct{} // closed when the outcome is set
}

// commitBatch commits writes in their order, the first successful one at
// revision rev+1, and returns the last revision assigned. Several writes
// share one transaction (group commit: one WAL append, one fsync); a
// refused write (exists, conflict...) takes no revision and leaves the
// others alone. On any other failure the batch is retried one transaction
// per write, so a fault fails only the writes it hits.
func (d *sqliteDB) commitBatch(writes []*write, rev int64) int64 {
	if len(writes) > 1 {
		if last, ok := d.commitTogether(writes, rev); ok {
			return last
		}
	}
	for _, w := range writes {
		if w.err = w.ctx.Err(); w.err != nil {
			continue
		}
		w.prev, w.err = d.commit(w.key, w.op, w.expectedRev, rev+1, w.enc)
		if w.err == nil {
			rev++
			w.rev = rev
		}
	}
	return rev
}

func (d *sqliteDB) commitTogether(writes []*write, rev int64) (int64, bool) {
	next := rev
	err := d.inWriteTx(func(st *writeStmts) error {
		for _, w := range writes {
			w.err = nil
			if err := w.ctx.Err(); err != nil {
				w.err = err
				continue
			}
			prev, refused, err := apply(st, w.key, w.op, w.expectedRev, next+1, w.enc)
			if err != nil {
				return err
			}
			if refused != nil {
				w.err = refused
				continue
			}
			next++
			w.rev, w.prev = next, prev
		}
		return nil
	})
	if err != nil {
		return rev, false
	}
	return next, true
}

// commit runs one write in its own transaction.
func (d *sqliteDB) commit(key Key, op Op, expectedRev, rev int64, enc Encoder) (prevState, error) {
	var prev prevState
	write := func() error {
		return fault(d.inWriteTx(func(st *writeStmts) error {
			p, refused, err := apply(st, key, op, expectedRev, rev, enc)
			if err != nil {
				return err
			}
			if refused != nil {
				return refused // nothing was written
			}
			prev = p
			return nil
		}))
	}
	err := write()
	if errors.Is(err, ErrNoSpace) && op == OpDeleted && d.quotaPages > 0 {
		// A delete may use the reserve; other writes stay held below it
		// (SQLite keeps the cap at the file's size when that is more).
		ctx := context.Background()
		if _, perr := d.writer.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, d.quotaPages)); perr == nil {
			err = write()
			_, _ = d.writer.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, d.quotaPages-d.reservePages))
		}
	}
	return prev, err
}

// apply makes one write inside a transaction: check the key's current
// revision, write the changelog row and point objects at it. refused is
// why the write was refused before anything was written (ErrExists,
// ErrNotFound, ErrConflict, the encoder's error); err is a database
// failure, after which the transaction must be rolled back.
func apply(st *writeStmts, key Key, op Op, expectedRev, rev int64, enc Encoder) (prev prevState, refused, err error) {
	var (
		cur     int64
		curData []byte
	)
	row := make([]driver.Value, 2)
	exists, err := queryRow(st.current, row, key.Resource, key.Namespace, key.Name)
	if err != nil {
		return prevState{}, nil, err
	}
	if exists {
		cur, _ = row[0].(int64)
		curData, _ = row[1].([]byte)
	}
	switch op {
	case OpAdded:
		if exists {
			return prevState{}, ErrExists, nil
		}
	default:
		if !exists {
			return prevState{}, ErrNotFound, nil
		}
		if expectedRev >= 0 && cur != expectedRev {
			return prevState{}, ErrConflict, nil
		}
	}
	data, encErr := enc(rev)
	if encErr != nil {
		return prevState{}, encErr, nil
	}
	if err := exec(st.insertChange, rev, key.Resource, key.Namespace, key.Name, int64(op), cur, time.Now().UnixMilli(), data); err != nil {
		return prevState{}, nil, err
	}
	switch op {
	case OpAdded:
		err = exec(st.insertObject, key.Resource, key.Namespace, key.Name, rev)
	case OpModified:
		err = exec(st.updateObject, rev, key.Resource, key.Namespace, key.Name)
	case OpDeleted:
		err = exec(st.deleteObject, key.Resource, key.Namespace, key.Name)
	}
	if err != nil {
		return prevState{}, nil, err
	}
	return prevState{data: data, prevRev: cur, prevData: curData}, nil, nil
}

func (d *sqliteDB) compact(ctx context.Context, rev int64) error {
	return fault(d.compactTx(ctx, rev))
}

func (d *sqliteDB) compactTx(ctx context.Context, rev int64) error {
	tx, err := d.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var compacted int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'compacted_rev'`).Scan(&compacted); err != nil {
		return err
	}
	if rev <= compacted {
		return nil
	}
	// Keep, for every key, its newest row at or before rev (the state at
	// rev) unless that row is a delete; drop everything older.
	if _, err := tx.ExecContext(ctx, `DELETE FROM changelog WHERE rev < ?1 AND EXISTS (
		SELECT 1 FROM changelog c2 WHERE c2.resource = changelog.resource AND c2.namespace = changelog.namespace
		AND c2.name = changelog.name AND c2.rev > changelog.rev AND c2.rev <= ?1)`, rev); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM changelog WHERE rev <= ? AND op = 3`, rev); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'compacted_rev'`, rev); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *sqliteDB) revAt(ctx context.Context, unixMilli int64) (int64, error) {
	var rev sql.NullInt64
	// Walking back from the newest row reads only the rows newer than the
	// cut-off; ts grows with rev.
	err := d.reader.QueryRowContext(ctx, `SELECT rev FROM changelog WHERE ts <= ? ORDER BY rev DESC LIMIT 1`, unixMilli).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return rev.Int64, err
}

func (d *sqliteDB) changes(ctx context.Context, resource string, rev int64, limit int) ([]Event, error) {
	tx, err := d.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var compacted int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'compacted_rev'`).Scan(&compacted); err != nil {
		return nil, err
	}
	if rev < compacted {
		return nil, ErrCompacted
	}
	// The revisions first, from the key index alone (it holds them), then
	// the rows of the page: sorting the resource's whole history with its
	// objects' data, as one query did, took seconds for a long history.
	sub := `SELECT rev FROM changelog WHERE resource = ? AND rev > ? ORDER BY rev`
	args := []any{resource, rev}
	if limit > 0 {
		sub += ` LIMIT ?`
		args = append(args, limit)
	}
	q := `SELECT c.rev, c.namespace, c.name, c.op, c.prev_rev, c.data, p.data FROM (` + sub + `) r
		JOIN changelog c ON c.rev = r.rev
		LEFT JOIN changelog p ON p.rev = c.prev_rev
		ORDER BY c.rev`
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		ev := Event{Object: Object{Key: Key{Resource: resource}}}
		if err := rows.Scan(&ev.Object.Rev, &ev.Object.Namespace, &ev.Object.Name, &ev.Op, &ev.PrevRev, &ev.Object.Data, &ev.PrevData); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

func (d *sqliteDB) stats(ctx context.Context) (Stats, error) {
	st := Stats{Objects: map[string]int64{}}
	rows, err := d.reader.QueryContext(ctx, `SELECT resource, COUNT(*) FROM objects GROUP BY resource`)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var resource string
		var n int64
		if err := rows.Scan(&resource, &n); err != nil {
			return st, err
		}
		st.Objects[resource] = n
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	// Release the connection: the in-memory store has only one.
	rows.Close()
	if err := d.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM changelog`).Scan(&st.ChangelogRows); err != nil {
		return st, err
	}
	var pages, pageSize int64
	if err := d.reader.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return st, err
	}
	if err := d.reader.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		return st, err
	}
	st.SizeBytes = pages * pageSize
	return st, nil
}

// backup writes a consistent copy of the database at dbPath to outPath
// (VACUUM INTO reads one snapshot; the server may keep writing).
func backup(ctx context.Context, dbPath, outPath string) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+dbPath+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `VACUUM INTO ?`, outPath)
	return err
}
