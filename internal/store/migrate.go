package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// migration is one numbered schema change, read from a file named NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the *.sql files at the top of fsys, in version order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 || name == "" {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations found")
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("two migrations are numbered %d: %s and %s", ms[i].version, ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// Migrate applies the migrations in fsys (files named NNNN_name.sql at its top)
// that the database lacks, each in its own transaction, and records them in
// schema_migrations. Processes migrating one database at once are safe: the
// dialect's lock, or the engine's exclusive write transactions, let one apply a
// migration while the others wait and then find it applied. A database that has
// a migration newer than any in fsys is refused, since this binary would not
// understand its schema.
func (db *DB) Migrate(ctx context.Context, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	defer conn.Close()
	if db.d.LockMigrations != nil {
		unlock, err := db.d.LockMigrations(ctx, conn)
		if err != nil {
			return fmt.Errorf("migrating: taking the migration lock: %w", err)
		}
		defer func() { _ = unlock() }()
	}
	newest, err := db.schemaVersion(ctx, conn)
	if err != nil {
		return err
	}
	if known := ms[len(ms)-1].version; newest > known {
		return fmt.Errorf("database schema version %d is newer than this relay (%d); upgrade relay", newest, known)
	}
	for _, m := range ms {
		if err := db.apply(ctx, conn, m); err != nil {
			return err
		}
	}
	return nil
}

// schemaVersion creates schema_migrations if needed and returns the newest
// version applied, 0 for none. It runs in a write transaction so that, on engines
// that lock the whole database to write, it waits its turn instead of failing.
func (db *DB) schemaVersion(ctx context.Context, conn *sql.Conn) (int, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("migrating: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, db.d.MigrationsTable); err != nil {
		return 0, fmt.Errorf("migrating: creating schema_migrations: %w", err)
	}
	var newest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return 0, fmt.Errorf("migrating: reading schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("migrating: commit: %w", err)
	}
	return int(newest.Int64), nil
}

// apply runs one migration unless schema_migrations says it ran already. The check
// is inside the migration's transaction, so a process that waited for another
// one's migration sees it and skips it.
func (db *DB) apply(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %04d_%s: begin: %w", m.version, m.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
	}
	if _, err := db.exec(ctx, tx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, db.timeArg(db.clock())); err != nil {
		return fmt.Errorf("migration %04d_%s: recording it: %w", m.version, m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %04d_%s: commit: %w", m.version, m.name, err)
	}
	return nil
}
