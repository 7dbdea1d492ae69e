package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// PutFilePart stores part seq of the contents of the file id.
func (db *DB) PutFilePart(ctx context.Context, id string, seq int, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	_, err := db.exec(ctx, db.write, `INSERT INTO file_parts (file_id, seq, data, stored_at) VALUES (?, ?, ?, ?)`, id, seq, data, db.timeArg(db.clock()))
	switch {
	case err == nil:
		return nil
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "part %d of file %q already exists", seq, id)
	}
	return fmt.Errorf("storing part %d of file %q: %w", seq, id, err)
}

// DeleteFileParts deletes the contents of the file id.
func (db *DB) DeleteFileParts(ctx context.Context, id string) error {
	if _, err := db.exec(ctx, db.write, `DELETE FROM file_parts WHERE file_id = ?`, id); err != nil {
		return fmt.Errorf("deleting the contents of file %q: %w", id, err)
	}
	return nil
}

// SweepFileParts deletes the parts of uploads that never became a file (cut
// off by a crash): parts with no file record stored before cutoff, or before
// stored_at was kept. It returns how many parts it deleted.
func (db *DB) SweepFileParts(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM file_parts
		WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.id = file_parts.file_id)
		  AND (stored_at IS NULL OR stored_at < ?)`, db.timeArg(cutoff))
	if err != nil {
		return 0, fmt.Errorf("sweeping the parts of unfinished uploads: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sweeping the parts of unfinished uploads: %w", err)
	}
	return int(n), nil
}

// FileContents returns the contents of the file id. Parts are read one query
// each, so that no driver holds more than one part besides the result.
func (db *DB) FileContents(ctx context.Context, id string, sizeHint int64) ([]byte, error) {
	out := make([]byte, 0, max(sizeHint, 0))
	for seq := 0; ; seq++ {
		var part []byte
		err := db.queryRow(ctx, db.read, `SELECT data FROM file_parts WHERE file_id = ? AND seq = ?`, id, seq).Scan(&part)
		if errors.Is(err, sql.ErrNoRows) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading part %d of file %q: %w", seq, id, err)
		}
		out = append(out, part...)
	}
}
