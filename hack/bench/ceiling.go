package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the driver kapi uses

	"github.com/kapi-dev/kapi/migrations"
)

// ceilings: the SQLite ceiling in both --sync modes, and kapi's create
// rates as a share of the ceiling of their mode.
func (b *bench) ceilings() error {
	row := b.storedObject
	if row == nil { // the main phase failed before it had one
		row = widgetJSON("default", "w-00001", "", 1, nil)
	}
	ceiling := map[string]float64{}
	var errs []error
	for _, mode := range []string{"full", "normal"} {
		// The disk's fsync latency varies from run to run: the median of 3.
		var rates []float64
		var err error
		for i := 0; i < 3 && err == nil; i++ {
			var rate float64
			rate, err = sqliteCeiling(filepath.Join(b.tmp, fmt.Sprintf("ceiling-%s-%d.db", mode, i)), mode, b.objects, row)
			rates = append(rates, rate)
		}
		name := fmt.Sprintf("SQLite ceiling, synchronous=%s: %s rows of %d bytes, one transaction each, one writer (median of 3)",
			strings.ToUpper(mode), thousands(b.objects), len(row))
		if !b.r.check(name, err) {
			errs = append(errs, err)
			continue
		}
		slices.Sort(rates)
		b.r.add(name, rates[1], "rows/s")
		ceiling[mode] = rates[1]
	}
	share := func(name string, rate float64, mode string) {
		if c := ceiling[mode]; c > 0 && rate > 0 {
			b.r.atLeast(fmt.Sprintf("%s as a share of the --sync=%s ceiling", name, mode), 100*rate/c, "%", 50)
		}
	}
	share("create, 1 client", b.create1, b.sync)
	share("create, 32 clients", b.create32, b.sync)
	for _, mode := range []string{"full", "normal"} {
		share("create, 32 clients, fresh kapi --sync="+mode, b.fresh32[mode], mode)
	}
	return errors.Join(errs...)
}

// sqliteCeiling inserts rows rows of data into a fresh database with kapi's
// schema, pragmas and write statements (storage/sqlite.go: openSQLite and
// commit), one transaction per row from one writer, and returns rows/s.
func sqliteCeiling(path, syncMode string, rows int, data []byte) (float64, error) {
	ctx := context.Background()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+strings.ToUpper(syncMode)+")")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if _, err := migrations.Apply(ctx, db); err != nil {
		return 0, err
	}
	current, err := db.PrepareContext(ctx, `SELECT o.rev, c.data FROM objects o JOIN changelog c ON c.rev = o.rev
		WHERE o.resource = ? AND o.namespace = ? AND o.name = ?`)
	if err != nil {
		return 0, err
	}
	insertChange, err := db.PrepareContext(ctx, `INSERT INTO changelog (rev, resource, namespace, name, op, prev_rev, ts, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	insertObject, err := db.PrepareContext(ctx, `INSERT INTO objects (resource, namespace, name, rev) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	const resource, ns = widgetGroup + "/widgets", "default"
	insert := func(rev int64, name string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var cur int64
		var curData []byte
		err = tx.StmtContext(ctx, current).QueryRowContext(ctx, resource, ns, name).Scan(&cur, &curData)
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s exists or: %v", name, err)
		}
		if _, err := tx.StmtContext(ctx, insertChange).ExecContext(ctx, rev, resource, ns, name, 1, cur, time.Now().UnixMilli(), data); err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, insertObject).ExecContext(ctx, resource, ns, name, rev); err != nil {
			return err
		}
		return tx.Commit()
	}
	start := time.Now()
	for i := 0; i < rows; i++ {
		if err := insert(int64(i+1), fmt.Sprintf("w-%05d", i)); err != nil {
			return 0, err
		}
	}
	return float64(rows) / time.Since(start).Seconds(), nil
}
