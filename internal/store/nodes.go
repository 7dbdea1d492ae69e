package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
)

// OnNode returns a DB over the same pools whose new runs name node as the
// process that runs them (ReapNode fails them when that process dies). The
// two share everything else, so closing either closes both.
func (db *DB) OnNode(node string) *DB {
	c := *db
	c.node = node
	return &c
}

// RunNode returns the node that runs or ran a run, "" when no node does (a
// command-line process started it).
func (db *DB) RunNode(ctx context.Context, runID string) (string, error) {
	var node string
	err := db.queryRow(ctx, db.read, `SELECT node_id FROM runs WHERE id = ?`, runID).Scan(nullStringDest{&node})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", fault.New(fault.NotFound, "run %q not found", runID)
	case err != nil:
		return "", fmt.Errorf("getting the node of run %q: %w", runID, err)
	}
	return node, nil
}

// checkNode refuses, in tx, a write of a process that another one took for
// dead (its node reaped: its runs failed already) with run.ErrTakenForDead,
// so that nothing of those runs is stored after their failed end. The node's
// row is held until tx ends (Dialect.KeyShare): a reap under way is waited
// for, and one that comes later waits for tx, whose writes it then sees. A
// DB that names no node (OnNode) has nothing to check.
func (db *DB) checkNode(ctx context.Context, tx *sql.Tx) error {
	if db.node == "" {
		return nil
	}
	var one int
	err := db.queryRow(ctx, tx, `SELECT 1 FROM nodes WHERE id = ?`+db.d.KeyShare, db.node).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fault.Wrap(fault.Unavailable, run.ErrTakenForDead, "node %q was reaped", db.node)
	case err != nil:
		return fmt.Errorf("checking node %q: %w", db.node, err)
	}
	return nil
}

const nodeColumns = `id, host, pid, started_at, heartbeat_at`

func scanNode(r rowScanner) (*schedule.Node, error) {
	var n schedule.Node
	if err := r.Scan(&n.ID, &n.Host, &n.PID, timeDest{&n.StartedAt}, timeDest{&n.HeartbeatAt}); err != nil {
		return nil, err
	}
	return &n, nil
}

// RegisterNode inserts n. Zero StartedAt is the current time and zero
// HeartbeatAt is StartedAt; the stored times are written back to n. A taken
// id is fault.Conflict.
func (db *DB) RegisterNode(ctx context.Context, n *schedule.Node) error {
	if n.ID == "" {
		return fault.New(fault.Invalid, "node id is required")
	}
	started := db.stamp(n.StartedAt)
	beat := started
	if !n.HeartbeatAt.IsZero() {
		beat = utc(n.HeartbeatAt)
	}
	_, err := db.exec(ctx, db.write, `INSERT INTO nodes (`+nodeColumns+`) VALUES (?, ?, ?, ?, ?)`,
		n.ID, n.Host, n.PID, db.timeArg(started), db.timeArg(beat))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "node %q already exists", n.ID)
	default:
		return fmt.Errorf("registering node %q: %w", n.ID, err)
	}
	n.StartedAt, n.HeartbeatAt = started, beat
	return nil
}

// HeartbeatNode sets the node's HeartbeatAt to at. A node that is gone is
// fault.NotFound: another process reaped it.
func (db *DB) HeartbeatNode(ctx context.Context, id string, at time.Time) error {
	res, err := db.exec(ctx, db.write, `UPDATE nodes SET heartbeat_at = ? WHERE id = ?`, db.timeArg(at), id)
	if err != nil {
		return fmt.Errorf("heartbeat of node %q: %w", id, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("heartbeat of node %q: %w", id, err)
	} else if !ok {
		return fault.New(fault.NotFound, "node %q not found", id)
	}
	return nil
}

// GetNode returns the node with that id.
func (db *DB) GetNode(ctx context.Context, id string) (*schedule.Node, error) {
	n, err := scanNode(db.queryRow(ctx, db.read, `SELECT `+nodeColumns+` FROM nodes WHERE id = ?`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fault.New(fault.NotFound, "node %q not found", id)
	case err != nil:
		return nil, fmt.Errorf("getting node %q: %w", id, err)
	}
	return n, nil
}

// ListNodes lists the registered nodes, oldest first, then by id. There are as
// many as Relay processes, so it takes no limit.
func (db *DB) ListNodes(ctx context.Context) ([]*schedule.Node, error) {
	rows, err := db.query(ctx, db.read, `SELECT `+nodeColumns+` FROM nodes ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	defer rows.Close()
	out := []*schedule.Node{}
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return out, nil
}

// ReapNode deletes the node if its HeartbeatAt is at or before seen and, in the
// same transaction, fails its runs still queued or running as FailStaleRuns
// does (answer, final events), marks failed, with reason as their error and
// the current time as FinishedAt, the firings it claimed that are still queued
// or running, and puts the files it was ingesting back to pending. The delete
// comes first and is the claim: of processes reaping one
// node at once, on Postgres the others wait on its row and then find it gone,
// and on SQLite write transactions run one at a time, so exactly one gets true.
// A node gone already, or whose heartbeat moved past seen, gives false and
// changes nothing.
func (db *DB) ReapNode(ctx context.Context, id string, seen time.Time, reason string) (schedule.Reaped, bool, error) {
	var r schedule.Reaped
	now := db.timeArg(db.clock())
	err := db.inTx(ctx, "ReapNode", func(tx *sql.Tx) error {
		res, err := db.exec(ctx, tx, `DELETE FROM nodes WHERE id = ? AND heartbeat_at <= ?`, id, db.timeArg(seen))
		if err != nil {
			return fmt.Errorf("reaping node %q: %w", id, err)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("reaping node %q: %w", id, err)
		} else if !ok {
			return errReaped
		}
		n, err := db.failRuns(ctx, tx, `node_id = ?`, []any{id}, reason)
		if err != nil {
			return fmt.Errorf("failing the runs of node %q: %w", id, err)
		}
		r.Runs = n
		// The firings about to fail, for their schedules' webhooks.
		r.FiringIDs, err = db.firingIDs(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("failing the firings of node %q: %w", id, err)
		}
		res, err = db.exec(ctx, tx,
			`UPDATE schedule_firings SET status = ?, error = ?, finished_at = ? WHERE claimed_by = ? AND status IN (?, ?)`,
			string(schedule.FiringFailed), reason, now, id, string(schedule.FiringQueued), string(schedule.FiringRunning))
		if err != nil {
			return fmt.Errorf("failing the firings of node %q: %w", id, err)
		}
		nf, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("failing the firings of node %q: %w", id, err)
		}
		r.Firings = int(nf)
		// Files it was ingesting go back to pending, for another process now.
		res, err = db.exec(ctx, tx,
			`UPDATE files SET status = 'pending', progress = 0, claim = '', claimed_by = NULL, lease_until = NULL, updated_at = ?
			 WHERE claimed_by = ? AND status = 'processing'`, now, id)
		if err != nil {
			return fmt.Errorf("releasing the files of node %q: %w", id, err)
		}
		if nf, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("releasing the files of node %q: %w", id, err)
		}
		r.Files = int(nf)
		return nil
	})
	switch {
	case errors.Is(err, errReaped):
		return schedule.Reaped{}, false, nil
	case err != nil:
		return schedule.Reaped{}, false, err
	}
	return r, true, nil
}

// firingIDs lists the firings the node claimed that are still queued or
// running.
func (db *DB) firingIDs(ctx context.Context, q querier, node string) ([]string, error) {
	rows, err := db.query(ctx, q, `SELECT id FROM schedule_firings WHERE claimed_by = ? AND status IN (?, ?) ORDER BY id`,
		node, string(schedule.FiringQueued), string(schedule.FiringRunning))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// errReaped ends a ReapNode transaction that found nothing to reap.
var errReaped = errors.New("node reaped already or alive")

// RequestAbort asks the process running a run to abort it (AbortRequests):
// the run is marked while it is still queued or running in a node's process.
// A missing run is fault.NotFound; one that has ended already, or that a
// process without a node runs (a command line's), is fault.Conflict.
func (db *DB) RequestAbort(ctx context.Context, runID string) error {
	res, err := db.exec(ctx, db.write,
		`UPDATE runs SET abort_requested_at = ? WHERE id = ? AND status IN ('queued', 'running') AND node_id IS NOT NULL`,
		db.timeArg(db.clock()), runID)
	if err != nil {
		return fmt.Errorf("asking to abort run %q: %w", runID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("asking to abort run %q: %w", runID, err)
	} else if ok {
		return nil
	}
	r, err := db.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if r.Status == run.StatusQueued || r.Status == run.StatusRunning {
		return fault.New(fault.Conflict, "run %q is running in a command-line Relay process; stop it there", runID)
	}
	return fault.New(fault.Conflict, "run %q has ended", runID)
}

// AbortRequests returns the runs of this DB's node (OnNode) still queued or
// running that another process asked to abort (RequestAbort); none without a
// node.
func (db *DB) AbortRequests(ctx context.Context) ([]string, error) {
	if db.node == "" {
		return nil, nil
	}
	rows, err := db.query(ctx, db.read,
		`SELECT id FROM runs WHERE node_id = ? AND status IN ('queued', 'running') AND abort_requested_at IS NOT NULL`, db.node)
	if err != nil {
		return nil, fmt.Errorf("listing the runs to abort: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing the runs to abort: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the runs to abort: %w", err)
	}
	return ids, nil
}
