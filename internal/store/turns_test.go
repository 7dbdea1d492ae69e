package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	_ "modernc.org/sqlite"

	"github.com/relay-ai/relay/internal/poll"
)

// Write transactions take their turns in the order they asked, an urgent
// one before all that wait; a caller that gives up waiting leaves the queue,
// and one handed the turn as it gives up passes it on.
func TestWriteTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writeTurns
		ctx := context.Background()
		if err := w.take(ctx, false); err != nil { // the turn under way
			t.Fatal(err)
		}
		var order []string
		wait := func(name string, urgent bool) {
			go func() {
				if err := w.take(ctx, urgent); err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				order = append(order, name)
				w.give()
			}()
			synctest.Wait() // queued before the next
		}
		wait("first", false)
		wait("second", false)
		gone, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- w.take(gone, false) }()
		synctest.Wait()
		wait("third", false)
		wait("urgent", true)
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("a caller that gave up: %v", err)
		}
		w.give()
		synctest.Wait()
		want := []string{"urgent", "first", "second", "third"}
		if len(order) != len(want) {
			t.Fatalf("turns %v, want %v", order, want)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("turns %v, want %v", order, want)
			}
		}
		if w.busy || len(w.queue) != 0 || len(w.urgent) != 0 {
			t.Errorf("after the last turn: busy %v, %d and %d waiting", w.busy, len(w.queue), len(w.urgent))
		}

		// Handed the turn as its context ends: the turn goes on to the next.
		if err := w.take(ctx, false); err != nil {
			t.Fatal(err)
		}
		late, cancelLate := context.WithCancel(ctx)
		lateDone := make(chan error)
		go func() { lateDone <- w.take(late, false) }()
		synctest.Wait()
		order = nil
		wait("after", false)
		w.mu.Lock() // the turn handed to late, which then sees its context end
		next := w.queue[0]
		w.queue = w.queue[1:]
		cancelLate()
		close(next)
		w.mu.Unlock()
		if err := <-lateDone; err == nil {
			w.give()
		}
		synctest.Wait()
		if len(order) != 1 || order[0] != "after" {
			t.Errorf("after a turn given up: %v", order)
		}
	})
}

// A write transaction whose function panics is rolled back, its turn and
// connection handed on: the next write goes through.
func TestPanicInTransactionFreesTheWriter(t *testing.T) {
	w, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	db := New(w, w, Dialect{Engine: "sqlite", SingleWriter: true})
	defer db.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller")
			}
		}()
		_ = db.inTx(ctx, "test", func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
				return err
			}
			panic("in the transaction")
		})
	}()
	err = db.inTx(ctx, "test", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (v TEXT)`) // the first was rolled back
		return err
	})
	if err != nil {
		t.Fatalf("the write after the panic: %v", err)
	}
}

// Closing the store while a transaction holds the one writer connection and
// another write waits for it with a cached statement lets both finish:
// closing the statement waits for that write, which waits for the
// transaction, which needs the statement cache to go on.
func TestCloseWhileWriting(t *testing.T) {
	w, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	db := New(w, w, Dialect{Engine: "sqlite", SingleWriter: true, CacheStatements: true})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := db.exec(ctx, w, `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO t (v) VALUES (?)`
	if _, err := db.exec(ctx, w, insert, "cached"); err != nil { // now a cached statement
		t.Fatal(err)
	}
	inTx, goOn := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- db.inTx(ctx, "test", func(tx *sql.Tx) error {
			close(inTx)
			<-goOn
			_, err := db.exec(ctx, tx, `INSERT INTO t (v) VALUES ('in the transaction')`)
			return err
		})
	}()
	<-inTx
	// A write with the cached statement, waiting for the connection.
	writeDone := make(chan error, 1)
	go func() {
		_, err := db.exec(ctx, w, insert, "waiting")
		writeDone <- err
	}()
	poll.Until(t, 10*time.Second, "the write waiting for the connection", func() bool { return w.Stats().WaitCount > 0 })
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	// Close has begun (it holds the statement cache while it takes it, or
	// waits for the waiting write), then the transaction goes on.
	poll.Until(t, 10*time.Second, "Close to begin", func() bool {
		if !db.stmts.mu.TryLock() {
			return true
		}
		defer db.stmts.mu.Unlock()
		return db.stmts.closed
	})
	close(goOn)
	for _, c := range []struct {
		what string
		ch   chan error
	}{{"the transaction", txDone}, {"the waiting write", writeDone}, {"Close", closed}} {
		select {
		case err := <-c.ch:
			if c.what == "the transaction" && err != nil {
				t.Errorf("%s: %v", c.what, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s never ended: Close deadlocked with the writes", c.what)
		}
	}
}
