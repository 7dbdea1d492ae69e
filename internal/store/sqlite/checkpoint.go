package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// checkpointEvery is how often the checkpointer copies what the write-ahead
// log holds back into the database file.
const checkpointEvery = time.Second

// autoCheckpoint is how many pages (4 KiB) the log may reach before a commit
// checkpoints it itself: a backstop for a checkpointer that falls behind, far
// above what it lets the log grow to.
const autoCheckpoint = 10000

// checkpointer moves the write-ahead log back into the database file from a
// connection of its own. Left to SQLite, the commit that takes the log past
// 1,000 pages copies them and syncs the file itself, which adds milliseconds
// to one request in every hundred or so; PASSIVE checkpoints run alongside
// the writer and readers without blocking either.
type checkpointer struct {
	db   *sql.DB
	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer opens the checkpointer's connection to path and starts it.
func startCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		// A failure (the file busy with another process's checkpoint) is
		// retried at the next tick; the backstop keeps the log bounded.
		_, _ = c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

// Close stops the checkpointer and closes its connection.
func (c *checkpointer) Close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
