package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/ident"
)

// notClaimed is the error of a write whose claim is no longer held.
func notClaimed(c *file.Claim) error {
	return fault.New(fault.Conflict, "file %q is no longer claimed by this process (it was deleted, or its lease ran out)", c.File.ID)
}

// WaitingFiles counts the files ClaimFile would take at now.
func (db *DB) WaitingFiles(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := db.queryRow(ctx, db.read,
		`SELECT COUNT(*) FROM files WHERE status = 'pending' OR (status = 'processing' AND lease_until < ?)`,
		db.timeArg(utc(now))).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting the files waiting for ingestion: %w", err)
	}
	return n, nil
}

// ClaimFile takes the oldest pending file, or one left processing past its
// lease, for the DB's node (OnNode), if any: ReapNode gives the files of a dead
// node back. On Postgres the UPDATE's compare on status and lease makes of two
// processes that picked the same file one the winner (the other's UPDATE, after
// waiting on the row lock, matches nothing and it tries the next file); on
// SQLite write transactions run one at a time.
func (db *DB) ClaimFile(ctx context.Context, now time.Time, lease time.Duration) (*file.Claim, bool, error) {
	now = utc(now)
	for range 10 {
		var id string
		err := db.queryRow(ctx, db.write,
			`SELECT id FROM files WHERE status = 'pending' OR (status = 'processing' AND lease_until < ?)
			 ORDER BY created_at, id LIMIT 1`, db.timeArg(now)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("finding a file to ingest: %w", err)
		}
		token := ident.New("claim_")
		var c *file.Claim
		err = db.inTx(ctx, "ClaimFile", func(tx *sql.Tx) error {
			res, err := db.exec(ctx, tx,
				`UPDATE files SET status = 'processing', progress = 0, error = '', note = '', chunk_count = 0,
				 claim = ?, claimed_by = ?, lease_until = ?, updated_at = ?
				 WHERE id = ? AND (status = 'pending' OR (status = 'processing' AND lease_until < ?))`,
				token, nullString(db.node), db.timeArg(now.Add(lease)), db.timeArg(now), id, db.timeArg(now))
			if err != nil {
				return err
			}
			if ok, err := affected(res); err != nil || !ok {
				return err
			}
			// A file taken again may have chunks from the process that lost it.
			if _, err := db.exec(ctx, tx, `DELETE FROM file_chunks WHERE file_id = ?`, id); err != nil {
				return err
			}
			f, err := scanFile(db.queryRow(ctx, tx, `SELECT `+fileColumns+` FROM files WHERE id = ?`, id))
			if err != nil {
				return err
			}
			c = &file.Claim{File: f, Token: token}
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("claiming file %q: %w", id, err)
		}
		if c != nil {
			return c, true, nil
		}
	}
	return nil, false, nil
}

// UpdateFileProgress sets the progress of a claimed file and extends its lease.
func (db *DB) UpdateFileProgress(ctx context.Context, c *file.Claim, progress int, leaseUntil time.Time) error {
	progress = min(max(progress, 0), 100)
	res, err := db.exec(ctx, db.write,
		`UPDATE files SET progress = ?, lease_until = ?, updated_at = ? WHERE id = ? AND claim = ? AND status = 'processing'`,
		progress, db.timeArg(leaseUntil), db.timeArg(db.clock()), c.File.ID, c.Token)
	if err != nil {
		return fmt.Errorf("updating the progress of file %q: %w", c.File.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating the progress of file %q: %w", c.File.ID, err)
	} else if !ok {
		return notClaimed(c)
	}
	c.File.Progress = progress
	return nil
}

// holdsClaim checks in tx that the claim is still held.
func (db *DB) holdsClaim(ctx context.Context, tx *sql.Tx, c *file.Claim) error {
	var n int
	if err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM files WHERE id = ? AND claim = ? AND status = 'processing'`,
		c.File.ID, c.Token).Scan(&n); err != nil {
		return fmt.Errorf("checking the claim on file %q: %w", c.File.ID, err)
	}
	if n == 0 {
		return notClaimed(c)
	}
	return nil
}

// FinishFile ends the ingestion of a claimed file.
func (db *DB) FinishFile(ctx context.Context, c *file.Claim, o file.Outcome) error {
	if o.Status != file.Ready && o.Status != file.Failed {
		return fault.New(fault.Invalid, "file %q: an ingestion ends ready or failed, not %q", c.File.ID, o.Status)
	}
	now := db.clock()
	var n int
	err := db.inTx(ctx, "FinishFile", func(tx *sql.Tx) error {
		if err := db.holdsClaim(ctx, tx, c); err != nil {
			return err
		}
		if err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM file_chunks WHERE file_id = ?`, c.File.ID).Scan(&n); err != nil {
			return fmt.Errorf("counting chunks of file %q: %w", c.File.ID, err)
		}
		_, err := db.exec(ctx, tx,
			`UPDATE files SET status = ?, progress = 100, error = ?, note = ?, chunk_count = ?, claim = '',
			 claimed_by = NULL, lease_until = NULL, updated_at = ? WHERE id = ?`,
			string(o.Status), o.Error, o.Note, n, db.timeArg(now), c.File.ID)
		if err != nil {
			return fmt.Errorf("finishing file %q: %w", c.File.ID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	f := c.File
	f.Status, f.Progress, f.Error, f.Note, f.Chunks, f.UpdatedAt = o.Status, 100, o.Error, o.Note, n, now
	return nil
}

// ReleaseFile gives a claimed file back: pending again, at once, for any
// process to ingest from the start. A claim that is no longer held changes
// nothing and is not an error: the file is someone else's work by then.
func (db *DB) ReleaseFile(ctx context.Context, c *file.Claim) error {
	_, err := db.exec(ctx, db.write,
		`UPDATE files SET status = 'pending', progress = 0, claim = '', claimed_by = NULL, lease_until = NULL, updated_at = ?
		 WHERE id = ? AND claim = ? AND status = 'processing'`,
		db.timeArg(db.clock()), c.File.ID, c.Token)
	if err != nil {
		return fmt.Errorf("releasing file %q: %w", c.File.ID, err)
	}
	return nil
}
