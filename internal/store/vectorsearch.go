package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/file"
)

// SearchVector finds the chunks of q.FileIDs nearest to vec.
func (db *DB) SearchVector(ctx context.Context, q file.Query, vec []float32) ([]file.Hit, error) {
	if len(q.FileIDs) == 0 || len(vec) == 0 {
		return []file.Hit{}, nil
	}
	return db.d.searchVector(ctx, db, q, vec)
}

// searchVectorInSQL has the engine score the vectors of q's files with score,
// the expression of the dialect's VectorScore.
func (db *DB) searchVectorInSQL(ctx context.Context, q file.Query, vec []float32, score string) ([]file.Hit, error) {
	blob := file.EncodeVector(vec)
	match := `SELECT c.id, c.file_id, c.idx, ` + score + ` AS s FROM file_chunks c
		WHERE c.embedding IS NOT NULL AND length(c.embedding) = ? AND c.file_id IN (` + inList(len(q.FileIDs)) + `)`
	args := []any{blob, len(blob)}
	for _, id := range q.FileIDs {
		args = append(args, id)
	}
	query, more := ranked(match, q.PerFile, queryLimit(q))
	hits, err := db.hits(ctx, query, append(args, more...), clip01)
	if err != nil {
		return nil, fmt.Errorf("searching files by vector: %w", err)
	}
	return hits, nil
}

func clip01(s float64) float64 { return min(max(s, 0), 1) }

// hits runs a ranked query and maps its scores to 0–1 with norm.
func (db *DB) hits(ctx context.Context, query string, args []any, norm func(float64) float64) ([]file.Hit, error) {
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hits := []file.Hit{}
	for rows.Next() {
		var h file.Hit
		if err := rows.Scan(&h.FileID, &h.Chunk, &h.Page, &h.Text, &h.Score); err != nil {
			return nil, err
		}
		h.Score = norm(h.Score)
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// scored is a chunk's place and its similarity, while vectors are scored in Go.
type scored struct {
	fileID string
	idx    int
	s      float64
}

// searchVectorInGo scores the vectors of q's files in Go, for engines that
// cannot: it reads only ids and vectors, keeps the best, then reads their text.
func (db *DB) searchVectorInGo(ctx context.Context, q file.Query, vec []float32) ([]file.Hit, error) {
	limit := queryLimit(q)
	perFile := q.PerFile
	if perFile <= 0 {
		perFile = limit
	}
	qn := file.Normalize(vec)
	want := 4 * len(vec)
	var best []scored
	byFile := map[string][]scored{}
	args := make([]any, 0, len(q.FileIDs)+1)
	args = append(args, want)
	for _, id := range q.FileIDs {
		args = append(args, id)
	}
	rows, err := db.query(ctx, db.read, `SELECT file_id, idx, embedding FROM file_chunks
		WHERE embedding IS NOT NULL AND length(embedding) = ? AND file_id IN (`+inList(len(q.FileIDs))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("searching files by vector: %w", err)
	}
	var (
		id  string
		idx int
		raw []byte
	)
	for rows.Next() {
		if err := rows.Scan(&id, &idx, &raw); err != nil {
			rows.Close()
			return nil, fmt.Errorf("searching files by vector: %w", err)
		}
		s := file.CosineEncoded(qn, raw)
		// Keep each file's perFile best as they come; the overall best are
		// picked from those below.
		fs := byFile[id]
		if len(fs) < perFile {
			byFile[id] = insertScored(fs, scored{id, idx, s})
		} else if s > fs[len(fs)-1].s {
			fs[len(fs)-1] = scored{id, idx, s}
			byFile[id] = insertScored(fs[:len(fs)-1], fs[len(fs)-1])
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, fmt.Errorf("searching files by vector: %w", err)
	}
	rows.Close()
	for _, fs := range byFile {
		best = append(best, fs...)
	}
	slices.SortFunc(best, func(a, b scored) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.fileID, b.fileID), a.idx-b.idx)
	})
	best = best[:min(len(best), limit)]
	hits := make([]file.Hit, len(best))
	for i, b := range best {
		h := &hits[i]
		h.FileID, h.Chunk, h.Score = b.fileID, b.idx, clip01(b.s)
		if err := db.queryRow(ctx, db.read, `SELECT page, text FROM file_chunks WHERE file_id = ? AND idx = ?`,
			b.fileID, b.idx).Scan(&h.Page, &h.Text); err != nil {
			return nil, fmt.Errorf("reading chunk %d of file %q: %w", b.idx, b.fileID, err)
		}
	}
	return hits, nil
}

// insertScored inserts x into fs, which is sorted best first.
func insertScored(fs []scored, x scored) []scored {
	i, _ := slices.BinarySearchFunc(fs, x, func(a, b scored) int {
		if a.s > b.s {
			return -1
		}
		return 1
	})
	return slices.Insert(fs, i, x)
}

// ranked wraps a query selecting id, file_id, idx and s of chunks so that it
// keeps at most perFile rows per file (0: no cap) and limit in all, best
// first, and only then reads their page and text.
func ranked(match string, perFile, limit int) (string, []any) {
	if perFile <= 0 {
		perFile = limit
	}
	return `SELECT c.file_id, c.idx, c.page, c.text, r.s FROM (
		SELECT id, file_id, idx, s FROM (
			SELECT m.id, m.file_id, m.idx, m.s,
			       ROW_NUMBER() OVER (PARTITION BY m.file_id ORDER BY m.s DESC, m.idx) AS rn
			FROM (` + match + `) m
		) w WHERE rn <= ? ORDER BY s DESC, file_id, idx LIMIT ?
	) r JOIN file_chunks c ON c.id = r.id ORDER BY r.s DESC, r.file_id, r.idx`, []any{perFile, limit}
}
