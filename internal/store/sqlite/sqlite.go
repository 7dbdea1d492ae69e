// Package sqlite is Relay's default storage engine: one SQLite file, through the
// pure-Go modernc.org/sqlite driver, so Relay needs no C toolchain and no server.
// It owns the SQLite schema (migrations/), the connection settings, and turning
// SQLite's failures to open a file into errors that say what is wrong with it.
// The queries themselves are shared with every engine in package store.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/relay-ai/relay/internal/store"
)

// busyTimeout is how long a connection waits for another one's lock.
const busyTimeout = 10 * time.Second

//go:embed migrations/*.sql
var migrations embed.FS

// Open opens the SQLite database at path, creating it and its directory if
// missing, checks that it is a usable SQLite database, and brings its schema up
// to date. Every error names path and says what is wrong.
//
// Writes go through a single connection, so transactions of one process never
// compete for SQLite's write lock; reads use a pool of read-only connections that
// WAL lets run alongside the writer. Write transactions begin IMMEDIATE, taking
// the write lock up front, so that processes sharing the file wait for each other
// (up to the busy timeout) rather than fail part way through a transaction.
func Open(ctx context.Context, path string) (*store.DB, error) {
	if path == "" {
		return nil, errors.New("open sqlite database: no path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &openError{path, "cannot resolve the path", err}
	}
	path = abs
	if err := checkFile(path); err != nil {
		return nil, err
	}

	write, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, &openError{path, err.Error(), err}
	}
	// One writer: SQLite allows one write transaction at a time anyway, and
	// queueing in Go is cheaper and fairer than retrying on a busy lock.
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)
	if err := checkFirst(ctx, write); err != nil {
		write.Close()
		return nil, describe(path, err)
	}

	read, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		write.Close()
		return nil, &openError{path, err.Error(), err}
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)

	db := store.New(read, write, dialect())
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		db.Close()
		return nil, &openError{path, err.Error(), err}
	}
	if err := db.Migrate(ctx, sub); err != nil {
		db.Close()
		return nil, describe(path, err)
	}
	if err := check(ctx, read); err != nil {
		db.Close()
		return nil, describe(path, err)
	}
	cp, err := startCheckpointer(path, db.Urgently)
	if err != nil {
		db.Close()
		return nil, &openError{path, err.Error(), err}
	}
	db.OnClose(cp.Close)
	db.AfterCommit(cp.committed)
	return db, nil
}

// dsn is the driver's connection string for path. Its pragmas run on every new
// connection, before the pool hands it out.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	// Wait up to 10s for another connection's lock instead of failing at once
	// with "database is locked" (the driver runs this one first).
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	// Enforce REFERENCES, which SQLite leaves off by default: cascades and the
	// author and user checks depend on it.
	q.Add("_pragma", "foreign_keys(1)")
	// Write-ahead logging: readers and the writer don't block each other.
	q.Add("_pragma", "journal_mode(WAL)")
	// With WAL, NORMAL cannot corrupt the file and saves an fsync per commit; a
	// power cut may lose only the last commits.
	q.Add("_pragma", "synchronous(NORMAL)")
	// The checkpointer keeps the log short; commits checkpoint only past this.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", autoCheckpoint))
	// A log started over is cut back to this size, should it have grown
	// past it.
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walResetAt))
	if readOnly {
		// The read pool must never write, so a query sent to it by mistake fails
		// loudly instead of racing the writer for the lock.
		q.Add("_pragma", "query_only(1)")
	} else {
		// Take the write lock when a transaction begins, not at its first write,
		// so waiting for it obeys busy_timeout instead of failing mid-transaction.
		q.Set("_txlock", "immediate")
		// Keep the journals of savepoints (a group commit runs each of its
		// transactions in one, internal/store/group.go) and of statements in
		// memory, as small as the pages they change, instead of in
		// temporary files written page by page.
		q.Add("_pragma", "temp_store(MEMORY)")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// check runs a query, so that a file that is not a database fails now, at Open,
// rather than at the first request.
func check(ctx context.Context, db *sql.DB) error {
	var n int
	return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n)
}

// checkFirst is check for the first connection to the file, which may be the
// one that turns a new file to WAL. That change needs the file to itself and
// SQLite reports a competing connection as busy at once, without waiting out the
// busy timeout, so processes creating the database together retry here.
func checkFirst(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := check(ctx, db)
		if code(err)&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}

// checkFile catches what SQLite would report vaguely: a directory where the file
// should be, an unreadable file, and a missing directory (which it creates).
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return &openError{path, "is a directory, not a database file", nil}
	case err == nil:
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return &openError{path, "cannot open the file for reading and writing: " + reason(err), err}
		}
		return f.Close()
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return &openError{path, "cannot create its directory: " + reason(err), err}
		}
		// Created readable by its owner alone: it holds conversations, run
		// traces and key hashes. SQLite gives its -wal and -shm files the
		// same mode.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return &openError{path, "cannot create the file: " + reason(err), err}
		}
		if f != nil {
			return f.Close()
		}
		return nil
	default:
		return &openError{path, reason(err), err}
	}
}

// reason is an OS error without the path it repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// describe turns a failure while opening into an error that says what is wrong
// with the file.
func describe(path string, err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return &openError{path, err.Error(), err}
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_NOTADB:
		return &openError{path, "file is not a SQLite database", err}
	case sqlite3.SQLITE_CORRUPT:
		return &openError{path, "database file is corrupt", err}
	case sqlite3.SQLITE_CANTOPEN:
		return &openError{path, "cannot open the file (check that its directory exists and is writable)", err}
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return &openError{path, "the file is read-only; Relay needs to write to it", err}
	case sqlite3.SQLITE_BUSY:
		return &openError{path, "the database stayed locked by another process for too long", err}
	}
	return &openError{path, strings.TrimSpace(se.Error()), err}
}

// openError is a failure to open the database at path.
type openError struct {
	path, what string
	err        error
}

func (e *openError) Error() string { return "open sqlite database " + e.path + ": " + e.what }
func (e *openError) Unwrap() error { return e.err }

func dialect() store.Dialect {
	return store.Dialect{
		Engine:          "sqlite",
		TextTimes:       true,
		CacheStatements: true,
		SingleWriter:    true,
		MigrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TEXT NOT NULL
		) STRICT`,
		IsUniqueViolation: func(err error) bool {
			c := code(err)
			return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
		},
		IsForeignKeyViolation: func(err error) bool { return code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY },
		IsFull:                func(err error) bool { return code(err)&0xff == sqlite3.SQLITE_FULL },
		// A string or blob over SQLite's size limit, or a value of the wrong
		// type for a STRICT column.
		IsRefusedValue: func(err error) bool {
			c := code(err)
			return c&0xff == sqlite3.SQLITE_TOOBIG || c&0xff == sqlite3.SQLITE_MISMATCH || c == sqlite3.SQLITE_CONSTRAINT_DATATYPE
		},
		// No migration lock: migrations run on the single writer connection, whose
		// transactions begin IMMEDIATE, so other processes wait for each one.
		VectorScore: vectorScore,
		FullText:    store.FTS5,
		// The span of the chunks' rowids: two lookups in the table's b-tree
		// rather than a count of its rows; gaps left by deletes make it high.
		ChunkEstimate: `SELECT COALESCE(MAX(id) - MIN(id) + 1, 0) FROM file_chunks`,
	}
}

// code is the extended SQLite result code of err, or 0.
func code(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}
