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

const fileColumns = `id, owner, name, mime_type, created_at`

func scanFile(r rowScanner) (*file.File, error) {
	var f file.File
	if err := r.Scan(&f.ID, &f.Owner, &f.Name, &f.MIMEType, timeDest{&f.CreatedAt}); err != nil {
		return nil, err
	}
	return &f, nil
}

// CreateFile inserts f and writes its CreatedAt back in stored form (the current
// time when zero). A taken id is fault.Conflict; a missing owner fault.NotFound.
func (db *DB) CreateFile(ctx context.Context, f *file.File) error {
	if f.ID == "" {
		return fault.New(fault.Invalid, "file id is required")
	}
	created := db.stamp(f.CreatedAt)
	_, err := db.exec(ctx, db.write,
		`INSERT INTO files (`+fileColumns+`) VALUES (?, ?, ?, ?, ?)`,
		f.ID, f.Owner, f.Name, f.MIMEType, db.timeArg(created))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "file %q already exists", f.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "owner of file %q: user %q not found", f.ID, f.Owner)
	default:
		return fmt.Errorf("creating file %q: %w", f.ID, err)
	}
	f.CreatedAt = created
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
