package store

import (
	"context"
	"database/sql"
	"strings"
)

// tsvectorText is full-text search on the GIN index of file_chunks.tsv.
type tsvectorText struct{ db *DB }

func (tsvectorText) budget() int { return pgRankBudget }

func (e tsvectorText) frequencies(ctx context.Context, terms []string) ([]float64, error) {
	// ANALYZE keeps the most common lexemes of tsv with the share of rows
	// holding each, and after them the smallest such share: a lexeme not
	// listed is in fewer rows than that. No statistics yet: -1, unknown.
	rows, err := e.db.query(ctx, e.db.read, `WITH st AS (
			SELECT most_common_elems::text::text[] AS e, most_common_elem_freqs AS f
			FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'file_chunks' AND attname = 'tsv'
		), n AS (
			SELECT GREATEST(reltuples, 0) AS n FROM pg_class WHERE oid = to_regclass('file_chunks')
		)
		SELECT u.ord, COALESCE((
			SELECT COALESCE(st.f[array_position(st.e, l.lexeme)], st.f[array_length(st.e, 1) + 1]) * n.n
			FROM st, n, unnest(to_tsvector('english', u.term)) l LIMIT 1
		), -1)
		FROM unnest(string_to_array(?, ' ')) WITH ORDINALITY AS u(term, ord)`, strings.Join(terms, " "))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]float64, len(terms))
	for rows.Next() {
		var (
			ord int
			f   sql.NullFloat64
		)
		if err := rows.Scan(&ord, &f); err != nil {
			return nil, err
		}
		if ord >= 1 && ord <= len(out) {
			out[ord-1] = -1
			if f.Valid {
				out[ord-1] = f.Float64
			}
		}
	}
	return out, rows.Err()
}

func (e tsvectorText) rank(ctx context.Context, sc textScope, terms, match []string, and bool, k, budget int) ([]textRow, error) {
	op := " | "
	if and {
		op = " & "
	}
	args := []any{strings.Join(terms, " | "), strings.Join(match, op)}
	for _, id := range sc.ids {
		args = append(args, id)
	}
	args = append(args, budget, k)
	// The matches (at most budget of them) are ranked by all the words, then
	// only the best are read whole.
	rows, err := e.db.query(ctx, e.db.read, `SELECT c.id, c.file_id, c.idx, c.page, c.text, r.s FROM (
			SELECT m.id, ts_rank_cd(m.tsv, to_tsquery('english', ?)) AS s FROM (
				SELECT id, tsv FROM file_chunks
				WHERE tsv @@ to_tsquery('english', ?) AND file_id IN (`+inList(len(sc.ids))+`) LIMIT ?
			) m ORDER BY s DESC, m.id LIMIT ?
		) r JOIN file_chunks c ON c.id = r.id ORDER BY r.s DESC, c.file_id, c.idx`, args...)
	if err != nil {
		return nil, err
	}
	return scanTextRows(rows)
}
