package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
)

// chunkBatch is how many chunks one INSERT stores: 6 arguments each stays under
// every engine's limit of bound parameters.
const chunkBatch = 100

// AddFileChunks stores chunks of a claimed file, in one transaction.
func (db *DB) AddFileChunks(ctx context.Context, c *file.Claim, chunks []file.Chunk) error {
	if len(chunks) == 0 {
		return nil
	}
	return db.inTx(ctx, "AddFileChunks", func(tx *sql.Tx) error {
		if err := db.holdsClaim(ctx, tx, c); err != nil {
			return err
		}
		for start := 0; start < len(chunks); start += chunkBatch {
			batch := chunks[start:min(start+chunkBatch, len(chunks))]
			args := make([]any, 0, 5*len(batch))
			for _, ch := range batch {
				var emb any
				if ch.Embedding != nil {
					emb = file.EncodeVector(ch.Embedding)
				}
				args = append(args, c.File.ID, ch.Index, ch.Page, ch.Text, emb)
			}
			q := `INSERT INTO file_chunks (file_id, idx, page, text, embedding) VALUES (?, ?, ?, ?, ?)` +
				strings.Repeat(`, (?, ?, ?, ?, ?)`, len(batch)-1)
			if _, err := db.exec(ctx, tx, q, args...); err != nil {
				if db.d.IsUniqueViolation(err) {
					return fault.Wrap(fault.Conflict, err, "file %q: a chunk index is stored already", c.File.ID)
				}
				return fmt.Errorf("storing chunks of file %q: %w", c.File.ID, err)
			}
		}
		return nil
	})
}

// FileVectors calls fn with the row id, index and vector of each chunk of f
// whose vector has dims dimensions, in index order, provided f is still ready
// as of f.UpdatedAt. It is one statement, so that a file ingested again
// meanwhile (by any process) gives no chunks rather than a mix of two
// ingestions.
func (db *DB) FileVectors(ctx context.Context, f *file.File, dims int, fn func(id int64, idx int, vec []byte)) error {
	rows, err := db.query(ctx, db.read, `SELECT c.id, c.idx, c.embedding FROM files f JOIN file_chunks c ON c.file_id = f.id
		WHERE f.id = ? AND f.status = 'ready' AND f.updated_at = ? AND c.embedding IS NOT NULL AND length(c.embedding) = ?
		ORDER BY c.idx`, f.ID, db.timeArg(f.UpdatedAt), 4*dims)
	if err != nil {
		return fmt.Errorf("reading the vectors of file %q: %w", f.ID, err)
	}
	defer rows.Close()
	var (
		id  int64
		idx int
		raw []byte
	)
	for rows.Next() {
		if err := rows.Scan(&id, &idx, &raw); err != nil {
			return fmt.Errorf("reading the vectors of file %q: %w", f.ID, err)
		}
		fn(id, idx, raw)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the vectors of file %q: %w", f.ID, err)
	}
	return nil
}

// readChunksBatch is how many chunks one query of ReadChunks asks for.
const readChunksBatch = 500

// ReadChunks returns the chunks with the given row ids, in no particular
// order, leaving out ids no longer stored.
func (db *DB) ReadChunks(ctx context.Context, ids []int64) ([]file.StoredChunk, error) {
	out := make([]file.StoredChunk, 0, len(ids))
	for start := 0; start < len(ids); start += readChunksBatch {
		batch := ids[start:min(start+readChunksBatch, len(ids))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows, err := db.query(ctx, db.read, `SELECT id, file_id, idx, page, text, embedding FROM file_chunks
			WHERE id IN (`+inList(len(batch))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("reading chunks: %w", err)
		}
		for rows.Next() {
			var c file.StoredChunk
			if err := rows.Scan(&c.ID, &c.FileID, &c.Index, &c.Page, &c.Text, &c.Embedding); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading chunks: %w", err)
			}
			out = append(out, c)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("reading chunks: %w", err)
		}
	}
	return out, nil
}
