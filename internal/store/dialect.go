package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/file"
)

// Dialect is what differs between the SQL engines. Queries are written once, with
// ? placeholders, in SQL that both engines accept; the dialect adapts the rest.
// Every difference is a field, set by the engine's package (sqlite/, postgres/),
// or a method below choosing by the fields, so that the files of the tables
// never ask which engine they run on.
type Dialect struct {
	// Engine names the engine, as Store.Engine reports it.
	Engine string
	// NumberedParams rewrites ? placeholders as $1, $2, … before a query is sent.
	NumberedParams bool
	// CacheStatements keeps every statement prepared, per connection, for
	// engines that parse each statement anew (SQLite); Postgres' driver caches
	// them itself.
	CacheStatements bool
	// SingleWriter has write transactions take turns in Go, first come first
	// served (writeTurns), for an engine whose write pool is one connection.
	SingleWriter bool
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
	// IsFull reports whether err is the database's disk (or the database
	// itself) being full: nothing more can be written until space is freed.
	// Nil means never.
	IsFull func(err error) bool
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
	// OwnerLock, when set, is run first, with a user's id, in the
	// transactions that count a user's rows against a quota before adding
	// one (CreateFileWithin, CreateScheduleWithin), so that the requests of
	// one user at once count each other's. Engines whose write transactions are
	// already serialized leave it empty.
	OwnerLock string
	// KeyShare, when set, ends a SELECT of rows that the transaction then
	// holds against deletion until it ends (Postgres' FOR KEY SHARE), as a
	// write of a process holds its node's row (DB.checkNode). Engines whose
	// write transactions are already serialized leave it empty.
	KeyShare string
	// VectorScore is the expression of the cosine similarity of the stored
	// vector c.embedding and the one ? it holds (float32 little-endian), or ""
	// when the engine cannot compute it and Relay scores the vectors itself.
	VectorScore string
	// FullText is the engine's full-text index of file_chunks, which its
	// migrations create.
	FullText FullText
	// ChunkEstimate is the statement that estimates, cheaply, how many rows
	// file_chunks holds: full-text search weighs the files it covers against it.
	ChunkEstimate string
}

// FullText names a full-text index of file_chunks and the queries that use it.
type FullText string

const (
	// FTS5 is SQLite's FTS5 table file_chunks_fts, whose file column holds
	// each chunk's file as one token (textsearch_fts5.go).
	FTS5 FullText = "fts5"
	// TSVector is Postgres' tsvector column file_chunks.tsv with a GIN index
	// (textsearch_tsvector.go).
	TSVector FullText = "tsvector"
)

// textEngine returns the full-text search of the dialect's index.
func (d *Dialect) textEngine(db *DB) (textEngine, error) {
	switch d.FullText {
	case FTS5:
		return fts5Text{db}, nil
	case TSVector:
		return tsvectorText{db}, nil
	}
	return nil, fmt.Errorf("the %s dialect names no known full-text index (%q)", d.Engine, d.FullText)
}

// searchVector scores the vectors of q's files in the engine when the dialect
// has a VectorScore, and in Go otherwise.
func (d *Dialect) searchVector(ctx context.Context, db *DB, q file.Query, vec []float32) ([]file.Hit, error) {
	if d.VectorScore == "" {
		return db.searchVectorInGo(ctx, q, vec)
	}
	return db.searchVectorInSQL(ctx, q, vec, d.VectorScore)
}

// lock runs stmt, one of the dialect's locks (SyncLock, SetupLock), in tx;
// an empty one, for engines whose write transactions are serialized already,
// is nothing to do.
func (d *Dialect) lock(ctx context.Context, db *DB, tx *sql.Tx, stmt string) error {
	if stmt == "" {
		return nil
	}
	_, err := db.exec(ctx, tx, stmt)
	return err
}

// refusedValue reports whether err is the database refusing a value
// (IsRefusedValue), never when the dialect cannot tell.
func (d *Dialect) refusedValue(err error) bool {
	return err != nil && d.IsRefusedValue != nil && d.IsRefusedValue(err)
}

// timeArg is the query argument that stores t, which is in its stored form
// (utc): text for engines without a timestamp type (TextTimes).
func (d *Dialect) timeArg(t time.Time) any {
	if d.TextTimes {
		return t.Format(timeLayout)
	}
	return t
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

// full reports whether err is the database's disk being full (IsFull).
func (d *Dialect) full(err error) bool {
	return err != nil && d.IsFull != nil && d.IsFull(err)
}
