package migrations

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func freshDB(t *testing.T) *sql.DB {
	return openDB(t, filepath.Join(t.TempDir(), "m.db"))
}

func recorded(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func versions(all []Migration) []int {
	var out []int
	for _, m := range all {
		out = append(out, m.Version)
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustAll(t *testing.T) []Migration {
	t.Helper()
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no embedded migrations")
	}
	return all
}

func TestAllIsOrderedAndNamedByVersion(t *testing.T) {
	all := mustAll(t)
	prev := 0
	for _, m := range all {
		if m.Version <= prev {
			t.Errorf("migration %s: version %d not greater than previous %d", m.Name, m.Version, prev)
		}
		prev = m.Version
		num, _, _ := strings.Cut(m.Name, "_")
		if v, err := strconv.Atoi(num); err != nil || v != m.Version {
			t.Errorf("migration %s: Version %d does not match its file name", m.Name, m.Version)
		}
		if strings.TrimSpace(m.SQL) == "" {
			t.Errorf("migration %s is empty", m.Name)
		}
	}
}

func TestApplyFreshDB(t *testing.T) {
	ctx := context.Background()
	db := freshDB(t)
	all := mustAll(t)
	v, err := Apply(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if want := all[len(all)-1].Version; v != want {
		t.Fatalf("Apply returned version %d, want %d", v, want)
	}
	if got, want := recorded(t, db), versions(all); !equalInts(got, want) {
		t.Fatalf("schema_migrations holds %v, want %v", got, want)
	}
	// Every recorded row names the file it came from.
	for _, m := range all {
		var name string
		if err := db.QueryRow(`SELECT name FROM schema_migrations WHERE version = ?`, m.Version).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name != m.Name {
			t.Errorf("version %d recorded as %q, want %q", m.Version, name, m.Name)
		}
	}
	// The schema the store relies on exists.
	for _, table := range []string{"changelog", "objects", "meta"} {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("table %s missing after Apply", table)
		}
	}
	var compacted int64
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'compacted_rev'`).Scan(&compacted); err != nil {
		t.Fatalf("meta compacted_rev: %v", err)
	}
	if compacted != 0 {
		t.Errorf("fresh compacted_rev = %d, want 0", compacted)
	}
}

// Migrations are applied in version order, each only once: a database that
// already has the first k migrations gets exactly the rest.
func TestApplyContinuesFromRecordedVersion(t *testing.T) {
	ctx := context.Background()
	all := mustAll(t)
	for k := 0; k <= len(all); k++ {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			db := freshDB(t)
			if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
				applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`); err != nil {
				t.Fatal(err)
			}
			for _, m := range all[:k] {
				if _, err := db.Exec(m.SQL); err != nil {
					t.Fatalf("%s: %v", m.Name, err)
				}
				if _, err := db.Exec(`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
					t.Fatal(err)
				}
			}
			// Re-running an already applied migration would fail
			// (CREATE TABLE of an existing table), so success here
			// also shows the first k were skipped.
			v, err := Apply(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if want := all[len(all)-1].Version; v != want {
				t.Fatalf("Apply returned %d, want %d", v, want)
			}
			if got, want := recorded(t, db), versions(all); !equalInts(got, want) {
				t.Fatalf("schema_migrations holds %v, want %v", got, want)
			}
		})
	}
}

func TestApplyTwiceIsNoop(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	db := openDB(t, path)
	v1, err := Apply(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// Data written after the first Apply must survive the second.
	if _, err := db.Exec(`UPDATE meta SET value = 42 WHERE key = 'compacted_rev'`); err != nil {
		t.Fatal(err)
	}
	var appliedAt1 string
	if err := db.QueryRow(`SELECT applied_at FROM schema_migrations WHERE version = ?`, v1).Scan(&appliedAt1); err != nil {
		t.Fatal(err)
	}
	before := recorded(t, db)
	db.Close()

	db = openDB(t, path) // as on a restart
	v2, err := Apply(ctx, db)
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if v2 != v1 {
		t.Fatalf("second Apply returned %d, want %d", v2, v1)
	}
	if got := recorded(t, db); !equalInts(got, before) {
		t.Fatalf("schema_migrations changed: %v -> %v", before, got)
	}
	var appliedAt2 string
	if err := db.QueryRow(`SELECT applied_at FROM schema_migrations WHERE version = ?`, v1).Scan(&appliedAt2); err != nil {
		t.Fatal(err)
	}
	if appliedAt2 != appliedAt1 {
		t.Errorf("applied_at rewritten: %q -> %q", appliedAt1, appliedAt2)
	}
	var compacted int64
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'compacted_rev'`).Scan(&compacted); err != nil {
		t.Fatal(err)
	}
	if compacted != 42 {
		t.Errorf("meta reset by second Apply: compacted_rev = %d, want 42", compacted)
	}
}

func TestApplyRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	db := freshDB(t)
	all := mustAll(t)
	if _, err := Apply(ctx, db); err != nil {
		t.Fatal(err)
	}
	newer := all[len(all)-1].Version + 1
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name) VALUES (?, 'from_the_future.sql')`, newer); err != nil {
		t.Fatal(err)
	}
	v, err := Apply(ctx, db)
	if err == nil {
		t.Fatal("Apply accepted a database whose schema is newer than known")
	}
	if v != newer {
		t.Errorf("Apply returned version %d, want the recorded %d", v, newer)
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %q does not say the schema is newer", err)
	}
	if got := recorded(t, db); len(got) != len(all)+1 {
		t.Errorf("schema_migrations changed by a refused Apply: %v", got)
	}
}
