package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// Dialect is what differs between the SQL engines. Queries are written once, with
// ? placeholders, in SQL that both engines accept; the dialect adapts the rest.
type Dialect struct {
	// Engine names the engine, as Store.Engine reports it.
	Engine string
	// NumberedParams rewrites ? placeholders as $1, $2, … before a query is sent.
	NumberedParams bool
	// CacheStatements keeps every statement prepared, per connection, for
	// engines that parse each statement anew (SQLite); Postgres' driver caches
	// them itself.
	CacheStatements bool
	// TextTimes stores timestamps as fixed-width RFC 3339 text in UTC with
	// microseconds, for engines without a timestamp type. That text sorts in time
	// order, so ORDER BY and keyset comparisons work on it unchanged.
	TextTimes bool
	// MigrationsTable is the statement that creates schema_migrations(version,
	// name, applied_at) if it does not exist yet.
	MigrationsTable string
	// IsUniqueViolation reports whether err broke a primary key or unique constraint.
	IsUniqueViolation func(err error) bool
	// IsForeignKeyViolation reports whether err broke a foreign key constraint.
	IsForeignKeyViolation func(err error) bool
	// IsRefusedValue reports whether err is the database refusing a value of
	// the statement itself (Postgres' data exceptions and program limits,
	// SQLite's too big or mismatched values): sending the same value again
	// is refused again, unlike a connection that failed. Nil means never.
	IsRefusedValue func(err error) bool
	// LockMigrations, when set, takes a lock that other processes migrating the same
	// database wait for, on the connection the migrations then run on. The returned
	// function releases it. Engines whose write transactions already exclude each
	// other leave it nil.
	LockMigrations func(ctx context.Context, conn *sql.Conn) (unlock func() error, err error)
	// SyncLock, when set, is run first in the transaction of SyncManagedAgents so
	// that processes starting together sync one after the other rather than fail on
	// each other's inserts. Engines whose write transactions are already serialized
	// leave it empty.
	SyncLock string
	// SetupLock, when set, is run first in the transaction of CompleteSetup, so
	// that setups with different tokens at once make one admin. Engines whose
	// write transactions are already serialized leave it empty.
	SetupLock string
	// VectorScore is the expression of the cosine similarity of the stored
	// vector c.embedding and the one ? it holds (float32 little-endian), or ""
	// when the engine cannot compute it and Relay scores the vectors itself.
	VectorScore string
}

// bind adapts a query written with ? placeholders to the dialect. A ? inside a
// quoted literal or identifier is left alone.
func (d *Dialect) bind(query string) string {
	if !d.NumberedParams || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
