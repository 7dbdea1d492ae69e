package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
)

// maxGroup bounds how many write transactions share one commit, so that the
// first of a group does not wait long for the others to run.
const maxGroup = 64

// groupCommit runs the write transactions of an engine with a single writer
// (SQLite) that wait at the same moment as one transaction: a group commit.
// Each caller's work runs in a savepoint of its own, so that one caller's
// error undoes its own writes only, and all of them are committed at once.
// A hundred runs starting together then write the log's pages of their new
// rows once, in one commit, instead of a commit each. Callers see what they
// would have seen had their transactions run one after another in the order
// they asked (they do, in that order), with one difference: a failing
// commit fails every caller of the group.
//
// One caller at a time leads: it waits for the writer's turn (writeTurns),
// then runs every transaction waiting by then, its own among them, and hands
// the lead to the first caller that came after. A transaction's work may thus
// run on another caller's goroutine: it must not wait for anything a caller
// of a write transaction may hold (nor begin one itself, as ever).
type groupCommit struct {
	turns *writeTurns

	mu      sync.Mutex
	waiting []*groupedTx // oldest first
	led     bool         // a caller leads: waiting for the turn or running a group
}

// groupedTx is one caller's transaction waiting in a groupCommit.
type groupedTx struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	lead chan struct{}      // closed when this caller is to lead
	done chan groupedResult // its result, once its group has run
}

// groupedResult is what a grouped transaction's caller returns: an error, or
// the value its work panicked with, panicked again in the caller.
type groupedResult struct {
	err      error
	panicked any
}

// do runs fn as a transaction of a group, run by exec once the writer's
// turn has come: exec runs the group's transactions and sends each its
// result. ctx bounds the wait for the turn, as writeTurns.take's does:
// once the group is under way, its transactions run to their end.
func (g *groupCommit) do(ctx context.Context, fn func(*sql.Tx) error, exec func([]*groupedTx)) error {
	me := &groupedTx{ctx: ctx, fn: fn, lead: make(chan struct{}), done: make(chan groupedResult, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, me)
	if !g.led {
		g.led = true
		close(me.lead)
	}
	g.mu.Unlock()
	var res groupedResult
	select {
	case res = <-me.done: // run in another's group
	case <-me.lead:
		var err error
		if res, err = g.lead(ctx, me, exec); err != nil {
			return err
		}
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-me.lead: // made the leader too: the turn decides, as take does
			g.mu.Unlock()
			var err error
			if res, err = g.lead(ctx, me, exec); err != nil {
				return err
			}
		default:
			if g.withdraw(me) {
				g.mu.Unlock()
				return fmt.Errorf("begin transaction: %w", ctx.Err())
			}
			g.mu.Unlock()
			res = <-me.done // taken into a group already: it runs to its end
		}
	}
	if res.panicked != nil {
		panic(res.panicked)
	}
	return res.err
}

// lead waits for the writer's turn for me, the leader, then has exec run
// every transaction waiting by then and hands the lead on. An error means
// ctx ended before the turn came: me is withdrawn.
func (g *groupCommit) lead(ctx context.Context, me *groupedTx, exec func([]*groupedTx)) (groupedResult, error) {
	if err := g.turns.take(ctx, false); err != nil {
		g.mu.Lock()
		g.withdraw(me)
		g.passLead()
		g.mu.Unlock()
		return groupedResult{}, fmt.Errorf("begin transaction: %w", err)
	}
	g.mu.Lock()
	n := min(len(g.waiting), maxGroup)
	group := slices.Clone(g.waiting[:n])
	g.waiting = slices.Delete(g.waiting, 0, n)
	g.mu.Unlock()
	func() {
		// Handed on whatever becomes of this goroutine: should exec panic
		// (afterCommit, the driver) or a member's work end the goroutine,
		// the writer must not stay taken.
		defer func() {
			g.turns.give()
			g.mu.Lock()
			g.passLead()
			g.mu.Unlock()
		}()
		exec(group)
	}()
	return <-me.done, nil
}

// withdraw takes t out of the waiting transactions, reporting whether it
// was there. g.mu is held.
func (g *groupCommit) withdraw(t *groupedTx) bool {
	i := slices.Index(g.waiting, t)
	if i < 0 {
		return false
	}
	g.waiting = slices.Delete(g.waiting, i, i+1)
	return true
}

// passLead makes the oldest waiting caller the leader, or notes that none
// leads. g.mu is held.
func (g *groupCommit) passLead() {
	if len(g.waiting) == 0 {
		g.led = false
		return
	}
	close(g.waiting[0].lead)
}

// runGroup runs group's transactions in one transaction on db's writer,
// each but a lone one in a savepoint, commits, and sends each its result.
// It is groupCommit's exec for db.
func (db *DB) runGroup(group []*groupedTx) {
	results := make([]groupedResult, len(group))
	committed := false
	send := func() {
		for i, t := range group {
			r := results[i]
			if !committed && r.err == nil && r.panicked == nil {
				// Its work went well, but the group's transaction ended
				// before its commit: a member's work ended the goroutine
				// (runtime.Goexit), or the driver panicked.
				r.err = errGroupUnfinished
			}
			t.done <- r
		}
	}
	defer send()
	failAll := func(err error) {
		for i := range results {
			if results[i].err == nil && results[i].panicked == nil {
				results[i].err = err
			}
		}
	}
	ctx := context.WithoutCancel(group[0].ctx)
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		failAll(fmt.Errorf("begin transaction: %w", err))
		return
	}
	defer db.prepareWanted(ctx)
	defer func() { _ = tx.Rollback() }() // after a commit this does nothing
	ok := 0                              // transactions whose work stands
	if len(group) == 1 {
		results[0] = runGuarded(tx, group[0].fn)
		if results[0].err != nil || results[0].panicked != nil {
			return
		}
		ok = 1
	} else {
		for i, t := range group {
			if err := t.ctx.Err(); err != nil { // gave up before its work began
				results[i].err = err
				continue
			}
			var err error
			if results[i], err = db.savepoint(ctx, tx, t.fn); err != nil {
				failAll(err)
				return
			}
			if results[i].err == nil && results[i].panicked == nil {
				ok++
			}
		}
	}
	if ok == 0 {
		return // nothing to commit: the deferred Rollback ends it
	}
	if err := tx.Commit(); err != nil {
		failAll(fmt.Errorf("commit: %w", db.refused(err)))
		return
	}
	committed = true
	if db.afterCommit != nil {
		db.afterCommit()
	}
}

// savepoint runs fn in a savepoint of tx: fn's writes are kept when it
// returns nil, undone when it fails or panics (res says how). err is the
// savepoint's own failure, which ends tx: should the engine have rolled back
// the whole transaction (out of disk, say), no savepoint is left.
func (db *DB) savepoint(ctx context.Context, tx *sql.Tx, fn func(*sql.Tx) error) (res groupedResult, err error) {
	if _, err := db.exec(ctx, tx, "SAVEPOINT grouped"); err != nil {
		return res, fmt.Errorf("begin transaction: %w", err)
	}
	res = runGuarded(tx, fn)
	if res.err == nil && res.panicked == nil {
		if _, err := db.exec(ctx, tx, "RELEASE grouped"); err != nil {
			return res, fmt.Errorf("commit: %w", db.refused(err))
		}
		return res, nil
	}
	_, err = db.exec(ctx, tx, "ROLLBACK TO grouped")
	if err == nil {
		_, err = db.exec(ctx, tx, "RELEASE grouped")
	}
	if err != nil {
		return res, fmt.Errorf("transaction of a group failed, the group with it: %w", db.refused(err))
	}
	return res, nil
}

// errGroupUnfinished is the error of the grouped transactions whose group
// ended before its commit without an error of theirs.
var errGroupUnfinished = errors.New("commit: the transaction's group ended before its commit; nothing of it was stored")

// runGuarded runs fn, turning a panic into a result its caller panics
// with, so that one caller's panic neither ends the others' transactions
// nor leaves them waiting.
func runGuarded(tx *sql.Tx, fn func(*sql.Tx) error) (res groupedResult) {
	defer func() {
		if p := recover(); p != nil {
			res = groupedResult{panicked: &txPanic{value: p, stack: debug.Stack()}}
		}
	}()
	return groupedResult{err: fn(tx)}
}

// txPanic is what the caller of a write transaction panics with when the
// transaction's work panicked: the work may run on another caller's
// goroutine (groupCommit), so the stack where it panicked comes with it.
type txPanic struct {
	value any    // what the work panicked with
	stack []byte // the stack where it did
}

func (p *txPanic) Error() string {
	return fmt.Sprintf("%v\n\nin a write transaction, at:\n%s", p.value, p.stack)
}

// Unwrap returns the error the work panicked with, if it was one.
func (p *txPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}
