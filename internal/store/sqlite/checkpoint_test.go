package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reset copies the whole log into the database and starts the log over,
// and leaves the writer's connection with its usual busy timeout.
func TestCheckpointerResetStartsTheLogOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	write, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	write.SetMaxOpenConns(1)
	defer write.Close()
	ctx := t.Context()
	if _, err := write.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	row := strings.Repeat("x", 4000)
	for range walResetAt / 4000 * 2 {
		if _, err := write.ExecContext(ctx, `INSERT INTO t VALUES (?)`, row); err != nil {
			t.Fatal(err)
		}
	}
	c, err := startCheckpointer(path, func(ctx context.Context, fn func(*sql.Conn) error) error {
		conn, err := write.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		return fn(conn)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	size := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if n := size(); n <= walResetAt {
		t.Fatalf("the log is %d bytes; the test needs more than %d", n, walResetAt)
	}
	if !c.reset(ctx) {
		t.Error("reset reports that the log was not started over")
	}
	// The log starts over: the next write is its first frames, and the file
	// is cut back to walResetAt.
	if _, err := write.ExecContext(ctx, `INSERT INTO t VALUES ('after')`); err != nil {
		t.Fatal(err)
	}
	var busy, frames, copied int
	if err := write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil || frames > 4 {
		t.Errorf("after a reset and one write the log holds %d frames (%v), want a few", frames, err)
	}
	if n := size(); n > walResetAt {
		t.Errorf("after a reset the log is %d bytes, want at most %d", n, walResetAt)
	}
	var count int
	read, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	if err := read.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&count); err != nil || count != walResetAt/4000*2+1 {
		t.Errorf("after a reset the table has %d rows (%v), want %d", count, err, walResetAt/4000*2+1)
	}
	var wait int64
	if err := write.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&wait); err != nil || wait != busyTimeout.Milliseconds() {
		t.Errorf("the writer's busy timeout after a reset is %d (%v), want %d", wait, err, busyTimeout.Milliseconds())
	}
}

// Commits that leave the log past walResetAt have the checkpointer reset it
// at once, without waiting for its next look; below, they do not. The size is
// looked at every lookEvery commits.
func TestCommitPastResetKicksTheCheckpointer(t *testing.T) {
	wal := filepath.Join(t.TempDir(), "relay.db-wal")
	c := &checkpointer{wal: wal, kick: make(chan struct{}, 1)}
	for _, tc := range []struct {
		size int64
		kick bool
	}{{0, false}, {walResetAt, false}, {walResetAt + 1, true}, {walResetAt + 1, true}} {
		if err := os.WriteFile(wal, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(wal, tc.size); err != nil {
			t.Fatal(err)
		}
		for range lookEvery {
			c.committed()
		}
		select {
		case <-c.kick:
			if !tc.kick {
				t.Errorf("a log of %d bytes kicks the checkpointer", tc.size)
			}
		default:
			if tc.kick {
				t.Errorf("a log of %d bytes does not kick the checkpointer", tc.size)
			}
		}
	}
}

// A write that finds the database full (here its size capped with
// max_page_count, as a full disk would) is told apart from other failures.
func TestFullDatabaseRecognised(t *testing.T) {
	raw, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "full.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1) // the pragma holds for its connection
	ctx := t.Context()
	for _, q := range []string{`CREATE TABLE t (b BLOB)`, `PRAGMA max_page_count = 4`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = raw.ExecContext(ctx, `INSERT INTO t VALUES (randomblob(100000))`)
	if d := dialect(); err == nil || !d.IsFull(err) || d.IsFull(errors.New("disk I/O error")) || d.IsRefusedValue(err) {
		t.Errorf("a write past the database's size: %v; want it recognised as full, and nothing else as full", err)
	}
}
