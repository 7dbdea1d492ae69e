package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
)

// fts5Text is full-text search on SQLite's FTS5 index, whose file column
// holds each chunk's file as one token.
type fts5Text struct{ db *DB }

// fileToken is the token of the file id in file_chunks_fts.file (migration 0009).
func fileToken(id string) string { return "f" + strings.ToUpper(hex.EncodeToString([]byte(id))) }

// ftsTerms writes terms as FTS5 strings joined by op; terms hold letters and
// digits only, never a quote, so words such as AND or NEAR are only words.
func ftsTerms(terms []string, op string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" " + op + " ")
		}
		b.WriteString(`"` + t + `"`)
	}
	return b.String()
}

func (fts5Text) budget() int { return rankBudget }

func (e fts5Text) frequencies(ctx context.Context, terms []string) ([]float64, error) {
	var b strings.Builder
	args := make([]any, len(terms))
	b.WriteString("SELECT ")
	for i, t := range terms {
		if i > 0 {
			b.WriteString(", ")
		}
		// Counting stops at the budget: past it a word is common, whatever its count.
		fmt.Fprintf(&b, `(SELECT COUNT(*) FROM (SELECT 1 FROM file_chunks_fts WHERE file_chunks_fts MATCH ? LIMIT %d))`, rankBudget+1)
		args[i] = "text : " + ftsTerms([]string{t}, "")
	}
	dest := make([]any, len(terms))
	n := make([]int64, len(terms))
	for i := range n {
		dest[i] = &n[i]
	}
	if err := e.db.queryRow(ctx, e.db.read, b.String(), args...).Scan(dest...); err != nil {
		return nil, err
	}
	out := make([]float64, len(n))
	for i, c := range n {
		out[i] = float64(c)
	}
	return out, nil
}

func (e fts5Text) rank(ctx context.Context, sc textScope, _, match []string, and bool, k, budget int) ([]textRow, error) {
	rows, err := e.rankIn(ctx, sc, match, and, k, budget)
	if err != nil {
		return nil, err
	}
	return unclamp(rows, len(match)), nil
}

// rankIn is rank before unclamp.
func (e fts5Text) rankIn(ctx context.Context, sc textScope, match []string, and bool, k, budget int) ([]textRow, error) {
	op := "OR"
	if and {
		op = "AND"
	}
	expr := "text : (" + ftsTerms(match, op) + ")"
	scoped := func() string { // expr within the scope's files
		toks := make([]string, len(sc.ids))
		for i, id := range sc.ids {
			toks[i] = fileToken(id)
		}
		return "(" + expr + ") AND file : (" + ftsTerms(toks, "OR") + ")"
	}
	// A small scope joins the query with its files' tokens, so that FTS5 ranks
	// their chunks only; a large one is cheaper to rank whole, dropping other
	// files' chunks afterwards, with more rows asked for. But the matches a
	// ranking reads stop at budget, in the order of their rows: when other
	// files' matches (another user's large file, stored first) used the
	// budget up before enough of the scope's, it is ranked again, scoped.
	if sc.share() < 0.34 {
		return e.rankMatches(ctx, scoped(), budget, k)
	}
	rows, err := e.rankMatches(ctx, expr, budget, int(float64(k)/sc.share()))
	if err != nil || sc.chunks >= sc.total {
		return rows, err
	}
	in := 0
	for _, r := range rows {
		if sc.set[r.fileID] {
			in++
		}
	}
	if in >= k {
		return rows, nil
	}
	return e.rankMatches(ctx, scoped(), budget, k)
}

// idfFloor is the weight FTS5's bm25 gives a word in half or more of all
// chunks, whose inverse document frequency is not above 0.
const idfFloor = 1e-6

// unclamp rescales rows (best first) ranked for n words that are all in half
// or more of the database's chunks. bm25 weighs each such word idfFloor, so
// their scores, in order still, read as 0 (SearchText's relevance is
// s/(1+s)). Such a ranking is scored as if each word weighed 1/n: a passage
// holding them about as often as an average one scores about a half, as
// with rare words. The best score tells such a ranking: it stays below
// 2.2·n·idfFloor (bm25's k1 + 1), and any word in less than half of the
// chunks weighs far more.
func unclamp(rows []textRow, n int) []textRow {
	if len(rows) == 0 || n == 0 || rows[0].s > 100*idfFloor*float64(n) {
		return rows
	}
	for i := range rows {
		rows[i].s /= idfFloor * float64(n)
	}
	return rows
}

// rankMatches ranks at most budget chunks that match the FTS5 expression
// expr and returns the k best.
func (e fts5Text) rankMatches(ctx context.Context, expr string, budget, k int) ([]textRow, error) {
	rows, err := e.db.query(ctx, e.db.read, `SELECT c.id, c.file_id, c.idx, c.page, c.text, t.s FROM (
			SELECT rowid, s FROM (
				SELECT rowid, -bm25(file_chunks_fts, 1.0, 0.0) AS s FROM file_chunks_fts
				WHERE file_chunks_fts MATCH ? LIMIT ?
			) ORDER BY s DESC LIMIT ?
		) t JOIN file_chunks c ON c.id = t.rowid ORDER BY t.s DESC, c.file_id, c.idx`, expr, budget, k)
	if err != nil {
		return nil, err
	}
	return scanTextRows(rows)
}
