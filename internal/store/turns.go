package store

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// writeTurns gives the write transactions of an engine with a single writer
// (SQLite: Dialect.SingleWriter) their turns on its one connection, in the
// order they asked, except that an urgent turn goes before every waiting
// one. database/sql hands a freed connection to a waiter picked at random,
// so under load a caller could wait behind any number of others; the
// checkpointer's reset of the write-ahead log must not (internal/store/sqlite).
type writeTurns struct {
	mu     sync.Mutex
	busy   bool            // a turn is under way
	queue  []chan struct{} // waiting turns, oldest first
	urgent []chan struct{} // waiting urgent turns, oldest first
}

// take waits for a turn, which the caller ends with give; an error (ctx
// ended) means no turn was taken.
func (w *writeTurns) take(ctx context.Context, urgent bool) error {
	w.mu.Lock()
	if !w.busy {
		w.busy = true
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if urgent {
		w.urgent = append(w.urgent, ch)
	} else {
		w.queue = append(w.queue, ch)
	}
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	if i := slices.Index(w.urgent, ch); i >= 0 {
		w.urgent = slices.Delete(w.urgent, i, i+1)
		w.mu.Unlock()
		return ctx.Err()
	}
	if i := slices.Index(w.queue, ch); i >= 0 {
		w.queue = slices.Delete(w.queue, i, i+1)
		w.mu.Unlock()
		return ctx.Err()
	}
	w.mu.Unlock()
	w.give() // handed the turn as ctx ended: pass it on
	return ctx.Err()
}

// give ends a turn, handing it to the next.
func (w *writeTurns) give() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next chan struct{}
	switch {
	case len(w.urgent) > 0:
		next, w.urgent = w.urgent[0], w.urgent[1:]
	case len(w.queue) > 0:
		next, w.queue = w.queue[0], w.queue[1:]
	default:
		w.busy = false
		return
	}
	close(next)
}

// Urgently runs fn on a connection of the write pool before every write
// transaction waiting for its turn, and with no transaction of this DB
// under way meanwhile (on an engine with a single writer; elsewhere, on a
// connection of the pool like any other).
func (db *DB) Urgently(ctx context.Context, fn func(*sql.Conn) error) error {
	if db.turns != nil {
		if err := db.turns.take(ctx, true); err != nil {
			return err
		}
		defer db.turns.give()
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}
