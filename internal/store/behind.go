package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// writeBehind holds the write transactions whose callers did not wait for
// their commit (DB.later) until they are committed together, in one
// transaction: delay after the first of them was queued, at once when a read
// or another write of the process comes (DB.catchUp), or when the DB closes.
// Runs that follow one another then share a commit, as runs at once do
// (groupCommit), instead of each waiting for its own: the commit's writes of
// the log's pages, more than half of what storing a run costs, are made once
// for all of them. What the process reads and writes is unchanged by it: it
// sees everything it wrote, in the order it wrote it. What a crash of the
// process loses is: the transactions still queued, at most delay's worth
// (docs/config.md, database.write_behind).
type writeBehind struct {
	delay time.Duration
	log   *slog.Logger

	mu     sync.Mutex
	queued []laterTx
	timer  *time.Timer // commits the queue at delay after its first; nil while it is empty

	// pending counts the transactions queued or being committed: a read
	// with none pending goes on at once, without a lock.
	pending atomic.Int64
	// committing is held while a queue is committed, so that a read
	// waiting for it sees its end.
	committing sync.Mutex
	// failingSince is when commits of the queue began to fail for a reason
	// that may pass (keep); zero while they do not. Held by committing.
	failingSince time.Time
}

// How long and how often a queue whose commit fails for a reason that may
// pass (the database busy with another process's writes, unreachable) is
// tried again, as the run package's writer tries the records the store
// refuses for such a reason, before it is given up.
const (
	behindRetryFor   = 5 * time.Minute
	behindRetryEvery = time.Second
)

// keep puts queued back at the head of the queue, to be tried again in
// behindRetryEvery or at the next catch-up, when its commit failed with err
// for less than behindRetryFor; it reports whether it did. committing is
// held.
func (b *writeBehind) keep(queued []laterTx, err error, retry func()) bool {
	if b.failingSince.IsZero() {
		b.failingSince = time.Now()
	}
	if time.Since(b.failingSince) >= behindRetryFor {
		return false
	}
	b.log.Warn("writes whose callers went on could not be committed yet; trying again",
		slog.Int("transactions", len(queued)), slog.Any("err", err))
	b.mu.Lock()
	b.queued = append(queued, b.queued...)
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(behindRetryEvery, retry)
	b.mu.Unlock()
	return true
}

// laterTx is a write transaction waiting in a writeBehind.
type laterTx struct {
	op string // the store's method, as inTx names it
	fn func(*sql.Tx) error
	// pieces, when not nil, splits fn's work into parts that stand alone,
	// each tried on its own when fn is refused: a batch of many runs'
	// records then loses the refused part alone.
	pieces func() []func(*sql.Tx) error
}

// maxBehind is the most transactions that wait: the one that fills the
// queue commits it at once, in its caller's time.
const maxBehind = 256

// MaxWriteBehind bounds database.write_behind: the most a crash may lose.
const MaxWriteBehind = time.Second

// WriteBehind has db commit the records of runs (StartRun of a new
// conversation, WriteBatch) up to delay after they are handed over rather
// than before their call returns, with the others that come meanwhile (see
// writeBehind). Failures then come too late for the caller: they are
// logged to log. Only an engine with a single writer, whose one process
// reads and writes the database (SQLite), can do so: a reader in another
// process would not see what waits. Call it before using db.
func (db *DB) WriteBehind(delay time.Duration, log *slog.Logger) error {
	switch {
	case db.turns == nil:
		return fmt.Errorf("write-behind needs an engine with a single writer (SQLite), not %s", db.d.Engine)
	case delay <= 0 || delay > MaxWriteBehind:
		return fmt.Errorf("write-behind delay %s: must be more than 0 and at most %s", delay, MaxWriteBehind)
	}
	if log == nil {
		log = slog.Default()
	}
	db.behind = &writeBehind{delay: delay, log: log}
	return nil
}

// WritesBehind reports whether db writes runs' records behind (WriteBehind).
func (db *DB) WritesBehind() bool { return db.behind != nil }

// later runs fn as a write transaction: committed before it returns, as
// inTx does, unless db writes behind (WriteBehind). Then fn is queued and
// later returns nil: fn runs later, maybe on another goroutine, in one
// transaction with the others queued, and its error is logged (catchUp). fn
// must therefore hold copies of what its caller may change after later
// returns.
func (db *DB) later(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	return db.laterInPieces(ctx, op, fn, nil)
}

// laterInPieces is later for work that pieces splits into parts that stand
// alone (laterTx.pieces).
func (db *DB) laterInPieces(ctx context.Context, op string, fn func(*sql.Tx) error, pieces func() []func(*sql.Tx) error) error {
	b := db.behind
	if b == nil {
		return db.inTx(ctx, op, fn)
	}
	b.pending.Add(1)
	b.mu.Lock()
	b.queued = append(b.queued, laterTx{op: op, fn: fn, pieces: pieces})
	full := len(b.queued) >= maxBehind
	if b.timer == nil && !full {
		b.timer = time.AfterFunc(b.delay, func() { db.catchUp(context.Background()) })
	}
	b.mu.Unlock()
	if full {
		db.catchUp(ctx)
	}
	return nil
}

// catchUp commits the transactions that wait (later) before the caller
// reads or writes, so that it sees them; it returns at once when none wait.
// It must not be called by a write transaction's work, which holds the
// writer the commit needs.
func (db *DB) catchUp(ctx context.Context) {
	b := db.behind
	if b == nil || b.pending.Load() == 0 {
		return
	}
	b.committing.Lock()
	defer b.committing.Unlock()
	b.mu.Lock()
	queued := b.queued
	b.queued = nil
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.mu.Unlock()
	if len(queued) == 0 {
		return // committed by the catch-up this one waited for
	}
	// Its own deadline: the queue is others' records too, and a caller's
	// cancelled request must not lose them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// All of them at once first: a savepoint each would cost two
	// statements more a transaction, for a refusal that seldom comes.
	err := db.runTx(ctx, "WriteBehind", func(tx *sql.Tx) error {
		for _, t := range queued {
			if res := runGuarded(tx, t.fn); res.err != nil || res.panicked != nil {
				return errBehindRefused
			}
		}
		return nil
	})
	if err != errBehindRefused {
		if err != nil && b.keep(queued, err, func() { db.catchUp(context.Background()) }) {
			return
		}
		b.failingSince = time.Time{}
		b.pending.Add(-int64(len(queued)))
		if err != nil {
			b.log.Error("writes whose callers went on could not be committed; they are lost",
				slog.Int("transactions", len(queued)), slog.Any("err", err))
		}
		return
	}
	b.failingSince = time.Time{}
	defer b.pending.Add(-int64(len(queued)))
	// One was refused, and all undone: again, each in a savepoint, so that
	// the refused ones alone are lost.
	failed := 0
	err = db.runTx(ctx, "WriteBehind", func(tx *sql.Tx) error {
		for _, t := range queued {
			res, err := db.savepoint(ctx, tx, t.fn)
			if err != nil {
				return err
			}
			if refusal(res) == nil {
				continue
			}
			if t.pieces == nil {
				failed++
				b.log.Error("a write the database refused after its caller went on; it is lost", slog.String("op", t.op), slog.Any("err", refusal(res)))
				continue
			}
			for _, piece := range t.pieces() {
				res, err := db.savepoint(ctx, tx, piece)
				if err != nil {
					return err
				}
				if why := refusal(res); why != nil {
					b.log.Error("a part of a write the database refused after its caller went on; it is lost", slog.String("op", t.op), slog.Any("err", why))
				}
			}
		}
		return nil
	})
	if err != nil {
		b.log.Error("writes whose callers went on could not be committed; they are lost",
			slog.Int("transactions", len(queued)-failed), slog.Any("err", err))
	}
}

// refusal is why a transaction run in a savepoint was undone; nil when it
// was not.
func refusal(res groupedResult) error {
	if res.panicked != nil {
		return fmt.Errorf("panic: %v", res.panicked)
	}
	return res.err
}

// errBehindRefused ends catchUp's first try, which one of the transactions
// failed: the try is undone, whole.
var errBehindRefused = errors.New("a transaction written behind was refused")
