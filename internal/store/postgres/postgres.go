// Package postgres is Relay's storage engine for a PostgreSQL server, through
// pgx's database/sql adapter. It owns the Postgres schema (migrations/), waiting
// for a server that is still starting, the locks that let several Relay processes
// share one database, and keeping the password out of every message. The queries
// themselves are shared with every engine in package store.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/relay-ai/relay/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// ConnectTimeout is how long Open keeps trying to reach a server that does not
	// answer yet, as when Relay and Postgres start together. 0 means 30s.
	ConnectTimeout time.Duration
	// Logger gets a warning for each failed attempt to connect; nil discards them.
	Logger *slog.Logger
}

// DefaultConnectTimeout is the ConnectTimeout of a zero Options.
const DefaultConnectTimeout = 30 * time.Second

// Retries start this far apart and double up to maxBackoff.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// Advisory lock keys ("RELAY" and a number): one for migrations, one for syncing
// managed agents, one for the first start's setup, and the seed of the per-user
// locks of uploads (OwnerLock). Every Relay process using the database agrees on
// them.
const (
	migrationLockKey int64 = 0x52454c41590001
	syncLockKey      int64 = 0x52454c41590002
	setupLockKey     int64 = 0x52454c41590003
	ownerLockSeed    int64 = 0x52454c41590004
)

// Open connects to the Postgres database at connString (a postgres:// URL or
// key=value string, as libpq accepts), retrying with backoff until
// opts.ConnectTimeout while the server cannot be reached, then brings the schema
// up to date. A server that answers but refuses the login or lacks the database
// fails at once. No message or error contains the password.
func Open(ctx context.Context, connString string, opts Options) (*store.DB, error) {
	safe := Redact(connString)
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, &openError{url: safe, what: "invalid connection string", err: err}
	}
	secret := cfg.Password
	fail := func(what string, err error) error {
		return &openError{url: safe, what: what, err: err, secret: secret}
	}

	sqldb := stdlib.OpenDB(*cfg)
	// The pool serves reads and writes alike. A few processes with 20 connections
	// each stay well within a default server's 100; 10 idle ones spare a burst of
	// requests from reconnecting for each one.
	sqldb.SetMaxOpenConns(20)
	sqldb.SetMaxIdleConns(10)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	if err := connect(ctx, sqldb, opts, safe, secret); err != nil {
		sqldb.Close()
		return nil, err
	}
	db := store.New(sqldb, sqldb, dialect())
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		db.Close()
		return nil, fail("reading migrations", err)
	}
	if err := db.Migrate(ctx, sub); err != nil {
		db.Close()
		return nil, fail("", err)
	}
	return db, nil
}

// connect pings until the server answers, the timeout passes, ctx ends, or the
// server gives an answer that waiting will not change.
func connect(ctx context.Context, db *sql.DB, opts Options, safe, secret string) error {
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var last error
	delay := firstBackoff
	for attempt := 1; ; attempt++ {
		err := db.PingContext(tctx)
		if err == nil {
			return nil
		}
		remaining := timeout - time.Since(start)
		// A ping cut short by the deadline says less than the failure before it.
		if cut := tctx.Err() != nil || remaining <= 0; last == nil || !cut {
			last = err
		}
		switch {
		case ctx.Err() != nil:
			return &openError{url: safe, what: "cancelled while connecting", err: errors.Join(context.Cause(ctx), last), secret: secret}
		case permanent(err):
			return &openError{url: safe, err: err, secret: secret}
		case tctx.Err() != nil || remaining <= 0:
			return &openError{url: safe, what: fmt.Sprintf("server not reachable within %s", timeout), err: last, secret: secret}
		}
		wait := min(delay, remaining)
		log.Warn("postgres not reachable; retrying",
			"url", safe, "attempt", attempt, "retry_in", wait, "error", scrub(err.Error(), secret))
		t := time.NewTimer(wait)
		select {
		case <-tctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay = min(delay*2, maxBackoff)
	}
}

// permanent reports whether the server answered with something that retrying
// will not fix: a refused login or a missing database.
func permanent(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000"
	}
	return false
}

// openError is a failure to open the database; its message names the redacted
// URL and never the password, even when the cause's message holds it.
type openError struct {
	url, what string
	err       error
	secret    string
}

func (e *openError) Error() string {
	msg := "open postgres database " + e.url
	if e.what != "" {
		msg += ": " + e.what
	}
	if e.err != nil {
		msg += ": " + scrub(e.err.Error(), e.secret)
	}
	return msg
}

func (e *openError) Unwrap() error { return e.err }

// scrub replaces every occurrence of secret in s.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "xxxxx")
}

var (
	kvQuotedPassword = regexp.MustCompile(`(?i)(password\s*=\s*)'(?:[^'\\]|\\.)*'`)
	kvPassword       = regexp.MustCompile(`(?i)(password\s*=\s*)[^'\s][^\s]*`)
	urlPassword      = regexp.MustCompile(`(://[^:/@]*):[^@]*@`)
)

// Redact returns connString with its password, if any, replaced by xxxxx, for
// logs and error messages.
func Redact(connString string) string {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			// Too broken to parse: hide whatever sits between user and host.
			return urlPassword.ReplaceAllString(connString, "${1}:xxxxx@")
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	s := kvQuotedPassword.ReplaceAllString(connString, "${1}xxxxx")
	return kvPassword.ReplaceAllString(s, "${1}xxxxx")
}

func dialect() store.Dialect {
	return store.Dialect{
		Engine:         "postgres",
		NumberedParams: true,
		MigrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL
		)`,
		IsUniqueViolation:     func(err error) bool { return code(err) == "23505" },
		IsForeignKeyViolation: func(err error) bool { return code(err) == "23503" },
		// disk_full: no more can be written until space is freed.
		IsFull: func(err error) bool { return code(err) == "53100" },
		// Class 22 (data exception: a value out of range, text that is not
		// UTF-8, …) and class 54 (program limit exceeded: a value too big).
		IsRefusedValue: func(err error) bool {
			c := code(err)
			return strings.HasPrefix(c, "22") || strings.HasPrefix(c, "54")
		},
		LockMigrations: lockMigrations,
		SyncLock:       fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, syncLockKey),
		SetupLock:      fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, setupLockKey),
		// One lock per user: the key is the hash of their id.
		OwnerLock: fmt.Sprintf(`SELECT pg_advisory_xact_lock(hashtextextended(?, %d))`, ownerLockSeed),
		// A key-share lock does not wait for heartbeats (they change no key),
		// only for the reap that deletes the node.
		KeyShare: ` FOR KEY SHARE`,
		// No VectorScore: vectors are scored in Go (see docs/config.md, rag).
		FullText: store.TSVector,
		// The planner's count, kept by ANALYZE and VACUUM; Postgres ids are not dense.
		ChunkEstimate: `SELECT GREATEST(reltuples, 0)::BIGINT FROM pg_class WHERE oid = to_regclass('file_chunks')`,
	}
}

// code is the SQLSTATE of err, or "".
func code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// lockMigrations holds a session advisory lock on conn while migrations run, so
// that of several processes starting together one migrates and the others wait.
func lockMigrations(ctx context.Context, conn *sql.Conn) (func() error, error) {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return nil, err
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
			// A session lock lasts as long as its connection: close this one rather
			// than let the pool hand it out still holding the lock.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			return err
		}
		return nil
	}, nil
}
