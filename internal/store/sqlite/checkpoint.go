package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// checkpointEvery is how often the checkpointer copies what the write-ahead
// log holds back into the database file, and measureEvery how often it looks
// at the log's size (a stat of the file): a busy server writes tens of MB of
// log a second, so the log outgrows walResetAt by what is written in
// measureEvery before a reset can begin.
const (
	checkpointEvery = time.Second
	measureEvery    = 25 * time.Millisecond
)

// autoCheckpoint is how many pages (4 KiB) the log may reach before a commit
// checkpoints it itself: a backstop for a checkpointer that falls behind, far
// above what it lets the log grow to.
const autoCheckpoint = 10000

// walResetAt is the size of the log past which the checkpointer, rather than
// copying what it can, takes the writer's connection, waits for the readers
// to leave the log and starts it again from its beginning (RESTART). Readers that
// follow each other without pause would otherwise keep the log from ever
// starting over, and it would grow without bound under load.
const walResetAt = 4 << 20

// resetWait bounds how long a reset waits for the readers, during which the
// process's writes wait for it; a reset that cannot finish in time gives up
// and is tried again at the next tick.
const resetWait = 100 * time.Millisecond

// checkpointer moves the write-ahead log back into the database file from a
// connection of its own. Left to SQLite, the commit that takes the log past
// 1,000 pages copies them and syncs the file itself, which adds milliseconds
// to one request in every hundred or so; PASSIVE checkpoints run alongside
// the writer and readers without blocking either. When the log passes
// walResetAt all the same, the checkpointer resets it.
type checkpointer struct {
	wal string // the log's path
	// urgently runs a function on the writer's connection before the
	// write transactions waiting for it (store.DB.Urgently).
	urgently func(ctx context.Context, fn func(*sql.Conn) error) error
	db       *sql.DB
	kick     chan struct{} // a commit took the log past walResetAt
	commits  atomic.Uint32 // the process's write transactions, counted by committed
	stop     context.CancelFunc
	done     chan struct{}
}

// startCheckpointer opens the checkpointer's connection to path and starts it;
// urgently runs a function on the process's one writing connection, ahead of
// the writes waiting for it.
func startCheckpointer(path string, urgently func(ctx context.Context, fn func(*sql.Conn) error) error) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{wal: path + "-wal", urgently: urgently, db: db, kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(measureEvery)
	defer t.Stop()
	var last time.Time // of the last checkpoint
	// The log's size after the last reset that started it over: RESTART
	// leaves the file as it is until the next write starts the log from its
	// beginning (and cuts the file back), so an idle process would otherwise
	// reset it again at every look.
	settled := int64(-1)
	for {
		var now time.Time
		select {
		case now = <-t.C:
		case <-c.kick:
			now = time.Now()
		case <-ctx.Done():
			return
		}
		// A failure (the file busy with another process's checkpoint, or
		// readers that stayed longer than resetWait) is retried at the next
		// tick; the backstop keeps the log bounded.
		if fi, err := os.Stat(c.wal); err == nil && fi.Size() > walResetAt && fi.Size() != settled {
			if c.reset(ctx) {
				if fi, err := os.Stat(c.wal); err == nil {
					settled = fi.Size()
				}
			}
			last = now
			continue
		}
		if now.Sub(last) < checkpointEvery {
			continue
		}
		_, _ = c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		last = now
	}
}

// lookEvery is how many write transactions of the process pass between two
// looks at the log's size by committed: a few hundred KB of log under load.
const lookEvery = 8

// committed is called after each write transaction of the process, by its
// writer: past walResetAt, the log is reset without waiting for the next look.
func (c *checkpointer) committed() {
	if c.commits.Add(1)%lookEvery != 0 {
		return
	}
	if fi, err := os.Stat(c.wal); err == nil && fi.Size() > walResetAt {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// reset checkpoints the whole log and starts it over, on the writer's own
// connection, taken before every write waiting for it: no write of this
// process can come between, so only readers are waited for, and no longer
// than resetWait. It reports whether the log was started over.
func (c *checkpointer) reset(ctx context.Context) bool {
	// What can be copied is copied first, alongside the writer: the writer
	// then waits only for what came since and for the readers,
	// not for the whole copy and its sync.
	_, _ = c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	done := false
	_ = c.urgently(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, resetWait.Milliseconds())); err != nil {
			return err
		}
		var busy, frames, copied int
		err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &frames, &copied)
		done = err == nil && busy == 0
		// The writer's own wait, back for its transactions. Should this fail, the
		// connection must not serve them with the short one.
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyTimeout.Milliseconds())); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return nil
	})
	return done
}

// Close stops the checkpointer and closes its connection.
func (c *checkpointer) Close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
