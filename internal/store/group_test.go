package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

	_ "modernc.org/sqlite"
)

// groupDB returns a DB on a new SQLite file with one table, t, and a count
// of its commits.
func groupDB(t *testing.T) (*DB, *int) {
	t.Helper()
	db := tableDB(t, filepath.Join(t.TempDir(), "relay.db"), "")
	commits := 0
	db.AfterCommit(func() { commits++ })
	return db, &commits
}

// tableDB returns a DB with a single writer on the SQLite file at path,
// opened with the query params, which it creates with one table, t. It is
// closed when the test ends.
func tableDB(t *testing.T, path, params string) *DB {
	t.Helper()
	w, err := sql.Open("sqlite", "file:"+path+params)
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	db := New(w, w, Dialect{Engine: "sqlite", SingleWriter: true})
	t.Cleanup(func() { db.Close() })
	if _, err := w.Exec(`CREATE TABLE t (v TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// insert is a transaction adding v to t.
func insert(v string) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO t (v) VALUES (?)`, v)
		return err
	}
}

// stored returns the values in t.
func stored(t *testing.T, db *DB) map[string]bool {
	t.Helper()
	rows, err := db.write.Query(`SELECT v FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got[v] = true
	}
	return got
}

// Transactions that wait for the writer together are committed together, in
// one commit; one that fails or panics has its own writes undone, its error
// or panic returned to its caller alone.
func TestGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, commits := groupDB(t)
		ctx := context.Background()
		if err := db.turns.take(ctx, false); err != nil { // the writer busy
			t.Fatal(err)
		}
		results := make([]error, 6)
		panicked := make([]any, 6)
		for i := range results {
			go func() {
				defer func() { panicked[i] = recover() }()
				results[i] = db.inTx(ctx, "test", func(tx *sql.Tx) error {
					if err := insert(fmt.Sprint("v", i))(tx); err != nil {
						return err
					}
					switch i {
					case 2:
						return errors.New("refused by its caller")
					case 4:
						panic("in a grouped transaction")
					case 5:
						return insert("v0")(tx) // taken by the first: UNIQUE fails
					}
					return nil
				})
			}()
			synctest.Wait() // in the order they asked
		}
		db.turns.give()
		synctest.Wait()
		got := stored(t, db)
		for i, want := range []bool{true, true, false, true, false, false} {
			if v := fmt.Sprint("v", i); got[v] != want {
				t.Errorf("%s stored %v, want %v", v, got[v], want)
			}
		}
		for i, err := range results {
			failed := i == 2 || i == 5
			if (err != nil) != failed {
				t.Errorf("transaction %d: %v", i, err)
			}
		}
		if p, ok := panicked[4].(*txPanic); !ok || p.value != "in a grouped transaction" || !strings.Contains(string(p.stack), "group_test.go") || panicked[1] != nil {
			t.Errorf("panics: %v", panicked)
		}
		if *commits != 1 {
			t.Errorf("%d commits, want 1", *commits)
		}
		if db.commits.led || len(db.commits.waiting) != 0 {
			t.Errorf("after the group: led %v, %d waiting", db.commits.led, len(db.commits.waiting))
		}

		// Alone, a transaction runs as it would without groups.
		if err := db.inTx(ctx, "test", insert("alone")); err != nil || !stored(t, db)["alone"] || *commits != 2 {
			t.Errorf("alone: %v, %d commits", err, *commits)
		}
	})
}

// A caller that gives up waiting leaves the group, its work never run; a
// leader that gives up before the writer's turn came hands the lead on.
func TestGroupCommitGivingUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, commits := groupDB(t)
		ctx := context.Background()
		if err := db.turns.take(ctx, false); err != nil {
			t.Fatal(err)
		}
		leaderCtx, leaderGivesUp := context.WithCancel(ctx)
		waiterCtx, waiterGivesUp := context.WithCancel(ctx)
		errs := make(chan error, 3)
		for _, c := range []struct {
			ctx context.Context
			v   string
		}{{leaderCtx, "leader"}, {waiterCtx, "waiter"}, {ctx, "stays"}} {
			go func() { errs <- db.inTx(c.ctx, "test", insert(c.v)) }()
			synctest.Wait()
		}
		waiterGivesUp()
		leaderGivesUp()
		synctest.Wait()
		for range 2 {
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Errorf("a caller that gave up: %v", err)
			}
		}
		db.turns.give()
		synctest.Wait()
		if err := <-errs; err != nil {
			t.Errorf("the caller that stayed: %v", err)
		}
		if got := stored(t, db); len(got) != 1 || !got["stays"] {
			t.Errorf("stored %v, want the stayer's alone", got)
		}
		if *commits != 1 || db.commits.led {
			t.Errorf("%d commits, led %v after", *commits, db.commits.led)
		}
	})
}

// Whatever ends the leader's goroutine in the middle of a group — a panic
// after the commit (the checkpointer's hook), a member's work ending the
// goroutine — the writer is handed on, and no member is told its work was
// stored unless it was.
func TestGroupCommitLeaderGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _ := groupDB(t)
		ctx := context.Background()

		// A panic after the commit: the work stands, the next write goes through.
		hook := func() { panic("in the hook") }
		db.AfterCommit(hook)
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the hook's panic did not reach the caller")
				}
			}()
			_ = db.inTx(ctx, "test", insert("before"))
		}()
		db.AfterCommit(nil)
		if err := db.inTx(ctx, "test", insert("after")); err != nil {
			t.Fatalf("the write after the hook panicked: %v", err)
		}

		// A member's work ends the leader's goroutine: the other members
		// learn that nothing was stored, and the writer is free.
		if err := db.turns.take(ctx, false); err != nil {
			t.Fatal(err)
		}
		returned := make([]bool, 3)
		errs := make([]error, 3)
		for i := range 3 {
			go func() {
				errs[i] = db.inTx(ctx, "test", func(tx *sql.Tx) error {
					if err := insert(fmt.Sprint("g", i))(tx); err != nil {
						return err
					}
					if i == 1 {
						runtime.Goexit()
					}
					return nil
				})
				returned[i] = true
			}()
			synctest.Wait()
		}
		db.turns.give()
		synctest.Wait()
		if returned[0] || !returned[2] {
			t.Fatalf("returned %v: want the leader's goroutine ended, the last member told", returned)
		}
		if !errors.Is(errs[2], errGroupUnfinished) {
			t.Errorf("the member after the one that ended the goroutine: %v", errs[2])
		}
		got := stored(t, db)
		if got["g0"] || got["g1"] || got["g2"] || !got["before"] || !got["after"] {
			t.Errorf("stored %v", got)
		}
		if err := db.inTx(ctx, "test", insert("last")); err != nil {
			t.Fatalf("the write after the group: %v", err)
		}
	})
}
