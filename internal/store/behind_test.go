package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// behindDB is groupDB writing behind by delay, with a count of its commits
// (made on other goroutines too) and its log in the returned buffer.
func behindDB(t *testing.T, delay time.Duration) (*DB, *commitCount, *bytes.Buffer) {
	t.Helper()
	db, _ := groupDB(t)
	commits := &commitCount{}
	db.AfterCommit(func() { commits.Add(1) })
	var log bytes.Buffer
	if err := db.WriteBehind(delay, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	return db, commits, &log
}

// commitCount counts commits; the timer's are made on a goroutine of its own.
type commitCount struct{ atomic.Int64 }

// settled waits for a commit of db's queue under way, so that what it did
// (the count of commits, the timer) is seen by the caller.
func settled(db *DB) {
	synctest.Wait()
	db.behind.committing.Lock()
	//lint:ignore SA2001 the lock is taken for the order it gives, not to guard anything
	db.behind.committing.Unlock()
}

// count is how many rows of t hold v, read as the store reads.
func count(t *testing.T, db *DB, v string) int {
	t.Helper()
	var n int
	if err := db.queryRow(t.Context(), db.read, `SELECT COUNT(*) FROM t WHERE v = ?`, v).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Transactions written behind wait for the delay after the first of them,
// then are committed together, in one commit.
func TestWriteBehindCommitsAfterTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, commits, log := behindDB(t, 100*time.Millisecond)
		ctx := context.Background()
		for _, v := range []string{"a", "b"} {
			if err := db.later(ctx, "test", insert(v)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond)
		}
		time.Sleep(39 * time.Millisecond)
		settled(db)
		if got := stored(t, db); len(got) != 0 || commits.Load() != 0 {
			t.Fatalf("before the delay: stored %v in %d commits, want nothing", got, commits.Load())
		}
		time.Sleep(2 * time.Millisecond)
		settled(db)
		if got := stored(t, db); !got["a"] || !got["b"] || commits.Load() != 1 {
			t.Fatalf("after the delay: stored %v in %d commits, want a and b in 1", got, commits.Load())
		}
		db.behind.mu.Lock()
		timer := db.behind.timer
		db.behind.mu.Unlock()
		if db.behind.pending.Load() != 0 || timer != nil {
			t.Errorf("after the commit: %d pending, timer %v", db.behind.pending.Load(), timer)
		}

		// The next one waits its own delay.
		if err := db.later(ctx, "test", insert("c")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(99 * time.Millisecond)
		settled(db)
		if stored(t, db)["c"] {
			t.Fatal("c stored before its delay")
		}
		time.Sleep(2 * time.Millisecond)
		settled(db)
		if !stored(t, db)["c"] || commits.Load() != 2 {
			t.Fatalf("c after its delay: stored %v in %d commits", stored(t, db), commits.Load())
		}
		if log.Len() != 0 {
			t.Errorf("logged: %s", log)
		}
	})
}

// A read, a write or Close commits what waits first, so that the process
// sees what it wrote, in the order it wrote it.
func TestWriteBehindCaughtUp(t *testing.T) {
	ctx := context.Background()
	db, commits, _ := behindDB(t, time.Second)
	if err := db.later(ctx, "test", insert("read")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "read"); n != 1 || commits.Load() != 1 {
		t.Fatalf("a read after a write behind: %d rows, %d commits; want 1 and 1", n, commits.Load())
	}

	// A write transaction runs after what waits.
	if err := db.later(ctx, "test", insert("written")); err != nil {
		t.Fatal(err)
	}
	var deleted int64
	err := db.inTx(ctx, "test", func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM t WHERE v = 'written'`)
		if err == nil {
			deleted, err = res.RowsAffected()
		}
		return err
	})
	if err != nil || deleted != 1 {
		t.Fatalf("a write after a write behind deleted %d rows: %v", deleted, err)
	}
	// So does a statement outside a transaction.
	if err := db.later(ctx, "test", insert("updated")); err != nil {
		t.Fatal(err)
	}
	if res, err := db.exec(ctx, db.write, `UPDATE t SET v = 'updated2' WHERE v = 'updated'`); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("an update after a write behind changed %d rows", n)
	}

	// Close commits what waits before closing.
	path := filepath.Join(t.TempDir(), "closed.db")
	closing := tableDB(t, path, "")
	if err := closing.WriteBehind(time.Second, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if err := closing.later(ctx, "test", insert("last")); err != nil {
		t.Fatal(err)
	}
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var n int
	if err := again.QueryRow(`SELECT COUNT(*) FROM t WHERE v = 'last'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after Close: %d rows of what waited (%v), want 1", n, err)
	}
}

// A transaction refused when its turn comes is undone alone and logged; the
// others of its commit are stored.
func TestWriteBehindRefusal(t *testing.T) {
	ctx := context.Background()
	db, commits, log := behindDB(t, time.Second)
	for _, v := range []string{"x", "x", "y"} { // the second x is refused: UNIQUE
		if err := db.later(ctx, "AddThing", insert(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.later(ctx, "Panicking", func(tx *sql.Tx) error {
		if err := insert("z")(tx); err != nil {
			return err
		}
		panic("in a write behind")
	}); err != nil {
		t.Fatal(err)
	}
	if count(t, db, "x") != 1 || count(t, db, "y") != 1 || count(t, db, "z") != 0 || commits.Load() != 1 {
		t.Fatalf("stored %v in %d commits; want x and y in 1", stored(t, db), commits.Load())
	}
	out := log.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "op=AddThing") || !strings.Contains(out, "UNIQUE") ||
		!strings.Contains(out, "op=Panicking") || !strings.Contains(out, "in a write behind") {
		t.Errorf("log:\n%s", out)
	}
}

// A full queue is committed at once by the caller that filled it.
func TestWriteBehindFull(t *testing.T) {
	ctx := context.Background()
	db, commits, _ := behindDB(t, time.Second)
	for i := range maxBehind {
		if err := db.later(ctx, "test", insert(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := stored(t, db); len(got) != maxBehind || commits.Load() != 1 {
		t.Fatalf("a full queue: %d stored in %d commits, want %d in 1", len(got), commits.Load(), maxBehind)
	}
	if db.behind.timer != nil {
		t.Error("a timer left for an empty queue")
	}
}

// Only an engine with a single writer writes behind, and not for long.
func TestWriteBehindRefused(t *testing.T) {
	many := New(nil, nil, Dialect{Engine: "postgres"})
	if err := many.WriteBehind(100*time.Millisecond, nil); err == nil || many.WritesBehind() {
		t.Errorf("postgres: %v", err)
	}
	db, _ := groupDB(t)
	for _, d := range []time.Duration{0, -time.Millisecond, MaxWriteBehind + time.Millisecond} {
		if err := db.WriteBehind(d, nil); err == nil || db.WritesBehind() {
			t.Errorf("delay %s: %v", d, err)
		}
	}
	// Without it, later commits before it returns.
	if err := db.later(context.Background(), "test", insert("now")); err != nil || !stored(t, db)["now"] {
		t.Errorf("later without writing behind: %v, stored %v", err, stored(t, db))
	}
}

// A queue whose commit fails for a reason that may pass (another process
// holds the write lock) is kept and tried again, not lost.
func TestWriteBehindKeptWhileBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	db := tableDB(t, path, "?_txlock=immediate")
	var log bytes.Buffer
	if err := db.WriteBehind(time.Second, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`INSERT INTO t (v) VALUES ('other')`); err != nil { // the write lock, held
		t.Fatal(err)
	}
	if err := db.later(ctx, "test", insert("kept")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "kept"); n != 0 || db.behind.pending.Load() != 1 {
		t.Fatalf("while busy: %d rows, %d pending; want 0 and 1", n, db.behind.pending.Load())
	}
	if out := log.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "trying again") || strings.Contains(out, "level=ERROR") {
		t.Errorf("log while busy:\n%s", out)
	}
	if err := lock.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "kept"); n != 1 || db.behind.pending.Load() != 0 {
		t.Fatalf("once free: %d rows, %d pending; want 1 and 0", n, db.behind.pending.Load())
	}
}
