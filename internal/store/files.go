package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
)

const fileColumns = `id, owner, name, mime_type, size, status, progress, error, note, chunk_count, created_at, updated_at`

func scanFile(r rowScanner) (*file.File, error) {
	var f file.File
	if err := r.Scan(&f.ID, &f.Owner, &f.Name, &f.MIMEType, &f.Size, &f.Status, &f.Progress, &f.Error, &f.Note,
		&f.Chunks, timeDest{&f.CreatedAt}, timeDest{&f.UpdatedAt}); err != nil {
		return nil, err
	}
	return &f, nil
}

// checkFileStatus refuses a status that is not one of file's.
func checkFileStatus(id string, s file.Status) error {
	switch s {
	case file.Pending, file.Processing, file.Ready, file.Failed:
		return nil
	}
	return fault.New(fault.Invalid, "file %q: unknown status %q", id, s)
}

// newFileStatus checks f, a file to create, and returns its status (Pending
// when empty).
func newFileStatus(f *file.File) (file.Status, error) {
	if f.ID == "" {
		return "", fault.New(fault.Invalid, "file id is required")
	}
	status := f.Status
	if status == "" {
		status = file.Pending
	}
	if err := checkFileStatus(f.ID, status); err != nil {
		return "", err
	}
	if f.Size < 0 || f.Progress < 0 || f.Progress > 100 || f.Chunks < 0 {
		return "", fault.New(fault.Invalid, "file %q: size, progress (0–100) and chunk count must not be negative", f.ID)
	}
	return status, nil
}

// CreateFile inserts f and writes back its stored form: CreatedAt (the current
// time when zero), UpdatedAt (CreatedAt when zero) and Status (Pending when
// empty). A taken id is fault.Conflict; a missing owner fault.NotFound.
func (db *DB) CreateFile(ctx context.Context, f *file.File) error {
	status, err := newFileStatus(f)
	if err != nil {
		return err
	}
	return db.insertFile(ctx, db.write, f, status)
}

// CreateFileWithin is CreateFile refusing, with a *file.OverBound, a file
// that would take its owner's files past b. The count and the insert are one
// transaction, which the owner's other uploads wait for (writes take turns on
// SQLite; Postgres takes the dialect's OwnerLock).
func (db *DB) CreateFileWithin(ctx context.Context, f *file.File, b file.Bound) error {
	status, err := newFileStatus(f)
	if err != nil {
		return err
	}
	stored := *f
	err = db.inTx(ctx, "CreateFileWithin", func(tx *sql.Tx) error {
		if err := db.lockOwner(ctx, tx, f.Owner); err != nil {
			return err
		}
		var (
			n    int
			size int64
		)
		if err := db.queryRow(ctx, tx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE owner = ?`, f.Owner).Scan(&n, &size); err != nil {
			return fmt.Errorf("counting the files of %q: %w", f.Owner, err)
		}
		switch {
		case b.Files > 0 && n >= b.Files:
			return &file.OverBound{Files: true}
		case b.Bytes > 0 && size+f.Size > b.Bytes:
			return &file.OverBound{}
		}
		stored = *f
		return db.insertFile(ctx, tx, &stored, status)
	})
	if err != nil {
		return err
	}
	*f = stored
	return nil
}

// insertFile inserts f with status through q and writes back its stored form.
func (db *DB) insertFile(ctx context.Context, q querier, f *file.File, status file.Status) error {
	created := db.stamp(f.CreatedAt)
	updated := created
	if !f.UpdatedAt.IsZero() {
		updated = utc(f.UpdatedAt)
	}
	_, err := db.exec(ctx, q,
		`INSERT INTO files (`+fileColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		f.ID, f.Owner, f.Name, f.MIMEType, f.Size, string(status), f.Progress, f.Error, f.Note, f.Chunks,
		db.timeArg(created), db.timeArg(updated))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "file %q already exists", f.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "owner of file %q: user %q not found", f.ID, f.Owner)
	default:
		return fmt.Errorf("creating file %q: %w", f.ID, err)
	}
	f.CreatedAt, f.UpdatedAt, f.Status = created, updated, status
	return nil
}

// GetFile returns the file with that id.
func (db *DB) GetFile(ctx context.Context, id string) (*file.File, error) {
	f, err := scanFile(db.queryRow(ctx, db.read, `SELECT `+fileColumns+` FROM files WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "file %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting file %q: %w", id, err)
	}
	return f, nil
}

// getFilesBatch is how many ids one query of GetFiles asks for, well under the
// bind-parameter limits of every engine.
const getFilesBatch = 500

// GetFiles returns the files with the given ids in the order of ids, skipping ids
// with no file and returning an id listed twice once, at its first place.
func (db *DB) GetFiles(ctx context.Context, ids []string) ([]*file.File, error) {
	var (
		unique []string
		seen   = make(map[string]bool, len(ids))
	)
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	found := make(map[string]*file.File, len(unique))
	for start := 0; start < len(unique); start += getFilesBatch {
		batch := unique[start:min(start+getFilesBatch, len(unique))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		query := `SELECT ` + fileColumns + ` FROM files WHERE id IN (?` + strings.Repeat(`, ?`, len(batch)-1) + `)`
		if err := db.collectFiles(ctx, query, args, found); err != nil {
			return nil, err
		}
	}
	files := make([]*file.File, 0, len(found))
	for _, id := range unique {
		if f, ok := found[id]; ok {
			files = append(files, f)
		}
	}
	return files, nil
}

func (db *DB) collectFiles(ctx context.Context, query string, args []any, into map[string]*file.File) error {
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return fmt.Errorf("getting files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return fmt.Errorf("getting files: %w", err)
		}
		into[f.ID] = f
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("getting files: %w", err)
	}
	return nil
}

// ListFiles returns the files of owner, newest first.
func (db *DB) ListFiles(ctx context.Context, owner string) ([]*file.File, error) {
	rows, err := db.query(ctx, db.read,
		`SELECT `+fileColumns+` FROM files WHERE owner = ? ORDER BY created_at DESC, id DESC`, owner)
	if err != nil {
		return nil, fmt.Errorf("listing files of %q: %w", owner, err)
	}
	defer rows.Close()
	files := []*file.File{}
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("listing files of %q: %w", owner, err)
		}
		files = append(files, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing files of %q: %w", owner, err)
	}
	return files, nil
}

// FileUsage returns how many files owner has and the sum of their sizes.
func (db *DB) FileUsage(ctx context.Context, owner string) (int, int64, error) {
	var n int
	var size int64
	if err := db.queryRow(ctx, db.read, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE owner = ?`, owner).Scan(&n, &size); err != nil {
		return 0, 0, fmt.Errorf("counting the files of %q: %w", owner, err)
	}
	return n, size, nil
}

// DeleteFile deletes the file with its contents and chunks.
func (db *DB) DeleteFile(ctx context.Context, id string) error {
	return db.inTx(ctx, "DeleteFile", func(tx *sql.Tx) error {
		res, err := db.exec(ctx, tx, `DELETE FROM files WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("deleting file %q: %w", id, err)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("deleting file %q: %w", id, err)
		} else if !ok {
			return fault.New(fault.NotFound, "file %q not found", id)
		}
		if _, err := db.exec(ctx, tx, `DELETE FROM file_parts WHERE file_id = ?`, id); err != nil {
			return fmt.Errorf("deleting the contents of file %q: %w", id, err)
		}
		return nil
	})
}
