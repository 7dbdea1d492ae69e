package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/telemetry"
)

// DB is the SQL implementation of Store that every engine shares. Reads go to one
// pool and writes to another, so that an engine can give writes a single
// connection (SQLite) while reads run in parallel.
type DB struct {
	read, write *sql.DB
	d           Dialect
	now         func() time.Time
	node        string     // the process new runs name (OnNode); "" for none
	stmts       *stmtCache // shared with the DBs of OnNode
	onClose     []func() error
	tel         *telemetry.Telemetry // traces write transactions; nil for none
	turns       *writeTurns          // orders write transactions (Dialect.SingleWriter); nil for none
	commits     *groupCommit         // commits the write transactions waiting together at once (with turns); nil for none
	afterCommit func()               // see AfterCommit; nil for nothing
	behind      *writeBehind         // the transactions committed later (WriteBehind); nil for none
}

// Instrument has db trace each write transaction (a span named by the
// store's method, such as WriteBatch) and report its pools' statistics
// (go_sql_* with db_name read and write, or main when both are one pool).
// Call it before using db: the DBs of OnNode made after it share it.
func (db *DB) Instrument(t *telemetry.Telemetry) {
	db.tel = t
	if db.read == db.write {
		t.CollectDB("main", db.write)
		return
	}
	t.CollectDB("write", db.write)
	t.CollectDB("read", db.read)
}

// system is the engine's name as traces name database systems.
func (db *DB) system() string {
	if db.d.Engine == "postgres" {
		return "postgresql"
	}
	return db.d.Engine
}

// OnClose has Close call f first, for what an engine runs beside the pools
// (SQLite's checkpointer).
func (db *DB) OnClose(f func() error) { db.onClose = append(db.onClose, f) }

// stmtCache keeps the statements sent to a pool prepared, for engines that
// ask for it (Dialect.CacheStatements): SQLite parses every statement it is
// given, which costs more than running most of Relay's.
type stmtCache struct {
	mu sync.Mutex
	m  map[stmtKey]*sql.Stmt
	// closed is set by Close: statements are no longer cached.
	closed bool
	// wanted are statements first sent in a transaction: preparing them on
	// the pool needs a connection of their own, which with a single writer
	// connection only exists once the transaction is over (prepareWanted).
	wanted []string
}

type stmtKey struct {
	pool  *sql.DB
	query string
}

// maxCachedStmts bounds the cache: queries built with a varying number of
// placeholders are prepared each time once it is full.
const maxCachedStmts = 256

// stmt returns the prepared form of query for q when q is one of the pools or
// a transaction on the write pool, or nil to send the query as it is.
func (db *DB) stmt(ctx context.Context, q querier, query string) *sql.Stmt {
	if !db.d.CacheStatements {
		return nil
	}
	pool, tx := db.write, (*sql.Tx)(nil)
	switch q := q.(type) {
	case *sql.DB:
		pool = q
	case *sql.Tx:
		tx = q // inTx begins every transaction on the write pool
	default:
		return nil
	}
	k := stmtKey{pool, query}
	db.stmts.mu.Lock()
	if db.stmts.closed {
		db.stmts.mu.Unlock()
		return nil
	}
	st := db.stmts.m[k]
	if st == nil && tx != nil {
		if len(db.stmts.m)+len(db.stmts.wanted) < maxCachedStmts && !slices.Contains(db.stmts.wanted, query) {
			db.stmts.wanted = append(db.stmts.wanted, query)
		}
		db.stmts.mu.Unlock()
		return nil
	}
	db.stmts.mu.Unlock()
	if st == nil {
		var err error
		if st, err = pool.PrepareContext(ctx, query); err != nil {
			return nil // the query itself will say what is wrong
		}
		db.stmts.mu.Lock()
		switch old := db.stmts.m[k]; {
		case db.stmts.closed:
			db.stmts.mu.Unlock()
			st.Close()
			return nil
		case old != nil: // prepared meanwhile by another caller
			st.Close()
			st = old
		case len(db.stmts.m) < maxCachedStmts:
			if db.stmts.m == nil {
				db.stmts.m = map[stmtKey]*sql.Stmt{}
			}
			db.stmts.m[k] = st
		default:
			db.stmts.mu.Unlock()
			st.Close()
			return nil
		}
		db.stmts.mu.Unlock()
	}
	if tx != nil {
		return tx.StmtContext(ctx, st)
	}
	return st
}

// prepareWanted prepares, on the write pool, the statements that
// transactions asked for; the caller holds no connection.
func (db *DB) prepareWanted(ctx context.Context) {
	if !db.d.CacheStatements {
		return
	}
	db.stmts.mu.Lock()
	wanted := db.stmts.wanted
	db.stmts.wanted = nil
	db.stmts.mu.Unlock()
	for _, q := range wanted {
		if st := db.stmt(ctx, db.write, q); st == nil {
			return // full, or the connection is gone: they are sent as they are
		}
	}
}

var _ Store = (*DB)(nil)

// New returns a DB over the read and write pools, which may be the same pool. The
// DB owns them from then on: Close closes them.
func New(read, write *sql.DB, d Dialect) *DB {
	db := &DB{read: read, write: write, d: d, now: time.Now, stmts: &stmtCache{}}
	if d.SingleWriter {
		db.turns = &writeTurns{}
		db.commits = &groupCommit{turns: db.turns}
	}
	return db
}

// Engine names the engine: "sqlite" or "postgres".
func (db *DB) Engine() string { return db.d.Engine }

// Ping checks that both pools reach the database.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.write.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", db.d.Engine, err)
	}
	if db.read != db.write {
		if err := db.read.PingContext(ctx); err != nil {
			return fmt.Errorf("ping %s: %w", db.d.Engine, err)
		}
	}
	return nil
}

// Close closes both pools. Closing a nil DB does nothing, so a failed Open's
// result may be closed like any other.
func (db *DB) Close() error {
	if db == nil {
		return nil
	}
	db.catchUp(context.Background())
	var errs []error
	for _, f := range db.onClose {
		errs = append(errs, f())
	}
	db.onClose = nil
	// The statements are closed outside the cache's lock: closing one waits
	// for the calls using it, which may wait for a connection that a
	// transaction holds, which may want the lock to find its statements.
	db.stmts.mu.Lock()
	cached := db.stmts.m
	db.stmts.m, db.stmts.closed = nil, true
	db.stmts.mu.Unlock()
	for _, st := range cached {
		st.Close()
	}
	err := errors.Join(append(errs, db.write.Close())...)
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	return err
}

// querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// exec, query and queryRow send every statement of Relay but migrations,
// with its arguments made storable (text.go): the one place where text
// becomes what every engine keeps alike. exec and query classify the values
// the database refuses (refused).
func (db *DB) exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	db.catchUpFor(ctx, q)
	ctx = db.uninterrupted(ctx, q)
	query, args = db.d.bind(query), storable(args)
	if st := db.stmt(ctx, q, query); st != nil {
		res, err := st.ExecContext(ctx, args...)
		return res, db.refused(err)
	}
	res, err := q.ExecContext(ctx, query, args...)
	return res, db.refused(err)
}

func (db *DB) query(ctx context.Context, q querier, query string, args ...any) (*sql.Rows, error) {
	db.catchUpFor(ctx, q)
	ctx = db.uninterrupted(ctx, q)
	query, args = db.d.bind(query), storable(args)
	if st := db.stmt(ctx, q, query); st != nil {
		rows, err := st.QueryContext(ctx, args...)
		return rows, db.refused(err)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	return rows, db.refused(err)
}

// txStmt returns query prepared for a statement run many times in tx, with
// execStmt: from the statement cache when the engine keeps one and query is
// in it, else prepared in tx. The caller closes it.
func (db *DB) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	ctx, query = db.uninterrupted(ctx, tx), db.d.bind(query)
	if st := db.stmt(ctx, tx, query); st != nil {
		return st, nil
	}
	return tx.PrepareContext(ctx, query)
}

// execStmt runs a statement prepared in a transaction, as exec runs the others.
func (db *DB) execStmt(ctx context.Context, st *sql.Stmt, args ...any) (sql.Result, error) {
	if db.turns != nil {
		ctx = context.WithoutCancel(ctx) // as uninterrupted does for a transaction's statements
	}
	res, err := st.ExecContext(ctx, storable(args)...)
	return res, db.refused(err)
}

func (db *DB) queryRow(ctx context.Context, q querier, query string, args ...any) *sql.Row {
	db.catchUpFor(ctx, q)
	ctx = db.uninterrupted(ctx, q)
	query, args = db.d.bind(query), storable(args)
	if st := db.stmt(ctx, q, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.QueryRowContext(ctx, query, args...)
}

// catchUpFor commits the transactions that wait (DB.later) before a
// statement sent to one of the pools, so that it sees them. A statement of a
// transaction needs nothing: the transaction began after them.
func (db *DB) catchUpFor(ctx context.Context, q querier) {
	if _, pool := q.(*sql.DB); pool {
		db.catchUp(ctx)
	}
}

// uninterrupted returns ctx without its end for a statement of a write
// transaction on an engine with a single writer (SQLite): once its turn has
// come (writeTurns), such a transaction runs to its end, its statements all
// short. ctx still bounds the wait for the turn. The driver would otherwise
// watch ctx with a goroutine of its own for each statement, which costs more
// than most of Relay's statements.
func (db *DB) uninterrupted(ctx context.Context, q querier) context.Context {
	if _, inTx := q.(*sql.Tx); inTx && db.turns != nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// inTx runs fn in a transaction on the write pool, committing if fn returns
// nil. op names the transaction in traces: the method that runs it. On an
// engine with a single writer, the transactions waiting for it together
// are committed together (groupCommit), after those that wait to be
// committed later (WriteBehind).
func (db *DB) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	db.catchUp(ctx)
	return db.runTx(ctx, op, fn)
}

// runTx is inTx without catching up first: the catch-up's own transaction.
func (db *DB) runTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) (err error) {
	ctx, end := db.tel.StartDB(ctx, db.system(), op)
	defer func() { end(err) }()
	if db.commits != nil {
		return db.commits.do(ctx, fn, db.runGroup)
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer db.prepareWanted(context.WithoutCancel(ctx))
	defer func() { _ = tx.Rollback() }() // after a commit this does nothing
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", db.refused(err))
	}
	if db.afterCommit != nil {
		db.afterCommit()
	}
	return nil
}

// AfterCommit has f called after each write transaction commits, before the
// next begins (on an engine with a single writer): the SQLite checkpointer
// watches the write-ahead log's size with it. Call it before using db.
func (db *DB) AfterCommit(f func()) { db.afterCommit = f }

// affected reports whether a statement changed at least one row.
func affected(res sql.Result) (bool, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// timeLayout is how engines without a timestamp type store one: fixed width, UTC,
// microseconds, so that text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// utc is the stored form of a time: UTC, truncated to microseconds, which every
// engine keeps exactly.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// clock returns the current time in its stored form.
func (db *DB) clock() time.Time { return utc(db.now()) }

// timeArg is the query argument that stores t.
func (db *DB) timeArg(t time.Time) any {
	return db.d.timeArg(utc(t))
}

// nullTimeArg is the query argument that stores t, or NULL when t is nil.
func (db *DB) nullTimeArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return db.timeArg(*t)
}

// inList returns "?, ?, …" for n arguments.
func inList(n int) string { return "?" + strings.Repeat(", ?", n-1) }

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// timeDest scans a stored time into a UTC time.Time.
type timeDest struct{ t *time.Time }

func (d timeDest) Scan(src any) error {
	t, err := parseTime(src)
	if err != nil {
		return err
	}
	*d.t = t
	return nil
}

// nullTimeDest scans a nullable stored time; NULL becomes nil.
type nullTimeDest struct{ t **time.Time }

func (d nullTimeDest) Scan(src any) error {
	if src == nil {
		*d.t = nil
		return nil
	}
	t, err := parseTime(src)
	if err != nil {
		return err
	}
	*d.t = &t
	return nil
}

func parseTime(src any) (time.Time, error) {
	switch v := src.(type) {
	case time.Time:
		return v.UTC(), nil
	case string:
		return parseTimeText(v)
	case []byte:
		return parseTimeText(string(v))
	}
	return time.Time{}, fmt.Errorf("cannot read a time from %T", src)
}

func parseTimeText(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		// Accept any RFC 3339 form too, in case a row was written by hand.
		t, err = time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("stored time %q is not RFC 3339", s)
		}
	}
	return t.UTC(), nil
}

// nullStringDest scans a nullable text column; NULL becomes "".
type nullStringDest struct{ s *string }

func (d nullStringDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.s = ""
	case string:
		*d.s = v
	case []byte:
		*d.s = string(v)
	default:
		return fmt.Errorf("cannot read a string from %T", src)
	}
	return nil
}
