package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/relay-ai/relay/internal/file"
)

// maxSearchTerms bounds the words of a full-text query: each costs a lookup,
// and the longest words of a question, which are kept, say most about it.
const maxSearchTerms = 12

// stopWords are English and Dutch words too common to say what a passage is
// about (Relay's first users ask in both). Matching any word of a query, a
// passage holding only "the" would otherwise be a hit, and ranking the
// thousands of passages that hold "de" costs more than all the rest.
// Postgres's english configuration drops the English ones too.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about all also an and any are as at be been but by can could did do does for from had has have
		how i if in into is it its just me more my no not of on or our should so some than that the their
		them then there these they this to too us was we were what when where which who whom why will
		with would you your
		aan al alle als bij dan dat de der deze die dit doch doen door dus een en er ge geen had heb
		hebben heeft hem het hier hij hoe hun ik in is ja je kan kon maar me meer men met mij mijn na
		naar niet niets nog nu of om omdat ons ook op over reeds te tegen toch toen tot u uit uw van
		veel voor want waren was wat we wel werd wie wij wil zal ze zei zich zij zijn zo zonder zou`) {
		m[w] = true
	}
	return m
}()

// searchTerms cuts text into lower-case words of letters and digits, each
// once, leaving out stop words unless there is nothing else, and keeps the
// maxSearchTerms longest (in their order): all an engine's query syntax then
// sees, so that no text is a syntax error.
func searchTerms(text string) []string {
	var terms, stops []string
	seen := map[string]bool{}
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if seen[w] {
			continue
		}
		seen[w] = true
		if stopWords[w] {
			stops = append(stops, w)
		} else {
			terms = append(terms, w)
		}
	}
	if len(terms) == 0 {
		// A question of stop words alone ("what is it?") still searches.
		terms = stops
	}
	if len(terms) > maxSearchTerms {
		byLength := slices.Clone(terms)
		slices.SortStableFunc(byLength, func(a, b string) int { return len(b) - len(a) })
		keep := map[string]bool{}
		for _, w := range byLength[:maxSearchTerms] {
			keep[w] = true
		}
		terms = slices.DeleteFunc(terms, func(w string) bool { return !keep[w] })
	}
	return terms
}

// queryLimit is q's limit, 10 when unset.
func queryLimit(q file.Query) int {
	if q.Limit <= 0 {
		return 10
	}
	return q.Limit
}

// Full-text search ranks the matches of a query, which costs per match
// (bm25 reads each one's length; ts_rank_cd each one's tsvector, from the
// table), while finding them is cheap. A question's words OR-ed together
// match a large part of a big collection when any of them is common, so
// search works in tiers, each ranking at most about the engine's budget of
// chunks (rankBudget on SQLite, a few µs each; pgRankBudget on Postgres,
// where each is a visit to the table and its TOAST):
//
//  1. When the words' chunks (estimated from the index: FTS5 counts, or
//     Postgres's statistics) are few, the OR of all words, ranked exactly.
//  2. Otherwise the chunks holding every word (AND), ranked.
//  3. When those are too few, the OR of the rarest words whose chunks
//     together stay within the budget, ranked, after the chunks of tier 2;
//     the common words left out weigh little in bm25 and cover density.
//
// Every ranking query also stops at a fixed number of matches, so that a
// wrong estimate costs quality, never unbounded time.
const (
	rankBudget   = 5000
	pgRankBudget = 1500
)

// textRow is a chunk a full-text query found, with its relevance (higher is
// better).
type textRow struct {
	id     int64
	fileID string
	idx    int
	page   int
	text   string
	s      float64
}

// textScope is what a search covers: the files (as a set) and their share of
// all chunks.
type textScope struct {
	ids    []string
	set    map[string]bool
	chunks int64
	total  int64
}

// share is the scope's part of all chunks, 0–1.
func (sc textScope) share() float64 {
	if sc.total <= 0 {
		return 1
	}
	return min(float64(sc.chunks)/float64(sc.total), 1)
}

// scope reads how many chunks the files of ids have and about how many the
// database holds.
func (db *DB) scope(ctx context.Context, ids []string) (textScope, error) {
	sc := textScope{ids: ids, set: make(map[string]bool, len(ids))}
	for _, id := range ids {
		sc.set[id] = true
	}
	for start := 0; start < len(ids); start += getFilesBatch {
		batch := ids[start:min(start+getFilesBatch, len(ids))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		var n int64
		if err := db.queryRow(ctx, db.read, `SELECT COALESCE(SUM(chunk_count), 0) FROM files WHERE id IN (`+inList(len(batch))+`)`,
			args...).Scan(&n); err != nil {
			return sc, fmt.Errorf("counting the chunks searched: %w", err)
		}
		sc.chunks += n
	}
	if err := db.queryRow(ctx, db.read, db.d.ChunkEstimate).Scan(&sc.total); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return sc, fmt.Errorf("counting all chunks: %w", err)
	}
	sc.total = max(sc.total, sc.chunks)
	return sc, nil
}

// textEngine is what full-text search needs of an engine.
type textEngine interface {
	// frequencies estimates in how many chunks of the whole database each
	// term is, in the order of terms; -1 where it cannot tell.
	frequencies(ctx context.Context, terms []string) ([]float64, error)
	// budget is how many matches one ranking may cost.
	budget() int
	// rank returns the k best chunks of sc that match all (and) or any of
	// match, ranked by all of terms where the engine can, reading at most
	// about budget matches.
	rank(ctx context.Context, sc textScope, terms, match []string, and bool, k, budget int) ([]textRow, error)
}

// SearchText finds the chunks of q.FileIDs that best match q.Text.
func (db *DB) SearchText(ctx context.Context, q file.Query) ([]file.Hit, error) {
	terms := searchTerms(q.Text)
	if len(terms) == 0 || len(q.FileIDs) == 0 {
		return []file.Hit{}, nil
	}
	rows, err := db.searchText(ctx, q, terms)
	if err != nil {
		return nil, fmt.Errorf("searching files by text: %w", err)
	}
	hits := make([]file.Hit, len(rows))
	for i, r := range rows {
		hits[i] = file.Hit{FileID: r.fileID, Chunk: r.idx, Page: r.page, Text: r.text, Score: r.s / (1 + r.s)}
	}
	return hits, nil
}

func (db *DB) searchText(ctx context.Context, q file.Query, terms []string) ([]textRow, error) {
	eng, err := db.d.textEngine(db)
	if err != nil {
		return nil, err
	}
	sc, err := db.scope(ctx, q.FileIDs)
	if err != nil {
		return nil, err
	}
	limit := queryLimit(q)
	// collect runs one tier, asking for more rows while the caps per file
	// leave fewer than limit and the tier has more.
	collect := func(match []string, and bool, budget int, have []textRow) ([]textRow, error) {
		for k := limit + 8; ; k *= 4 {
			rows, err := eng.rank(ctx, sc, terms, match, and, k, budget)
			if err != nil {
				return nil, err
			}
			out := capRows(mergeRows(have, rows), sc, limit, q.PerFile)
			if len(out) >= limit || len(rows) < k {
				return out, nil
			}
		}
	}
	freq, err := eng.frequencies(ctx, terms)
	if err != nil {
		return nil, err
	}
	budget := float64(eng.budget())
	share := sc.share()
	var sum float64
	for _, f := range freq {
		sum += max(f, 0) * share
	}
	if len(terms) == 1 || sum <= budget {
		return collect(terms, false, 4*eng.budget(), nil)
	}
	all, err := collect(terms, true, eng.budget(), nil)
	if err != nil || len(all) >= limit {
		return all, err
	}
	// The rarest words, as many as the budget allows (at least one).
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(freq[a], freq[b]) })
	var rare []string
	sum = 0
	for _, i := range order {
		sum += max(freq[i], 0) * share
		if len(rare) > 0 && sum > budget {
			break
		}
		rare = append(rare, terms[i])
	}
	return collect(rare, false, eng.budget(), all)
}

// mergeRows returns the rows of a and b, each chunk once, best first.
func mergeRows(a, b []textRow) []textRow {
	seen := make(map[int64]bool, len(a))
	out := make([]textRow, 0, len(a)+len(b))
	for _, r := range a {
		seen[r.id] = true
		out = append(out, r)
	}
	for _, r := range b {
		if !seen[r.id] {
			seen[r.id] = true
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y textRow) int {
		return cmp.Or(cmp.Compare(y.s, x.s), strings.Compare(x.fileID, y.fileID), x.idx-y.idx)
	})
	return out
}

// capRows keeps, of rows best first, those of sc's files, at most perFile
// (0: any) of one file and limit in all.
func capRows(rows []textRow, sc textScope, limit, perFile int) []textRow {
	out := []textRow{}
	count := map[string]int{}
	for _, r := range rows {
		if len(out) == limit {
			break
		}
		if !sc.set[r.fileID] || (perFile > 0 && count[r.fileID] == perFile) {
			continue
		}
		count[r.fileID]++
		out = append(out, r)
	}
	return out
}

// scanTextRows reads rows of id, file_id, idx, page, text and s.
func scanTextRows(rows *sql.Rows) ([]textRow, error) {
	defer rows.Close()
	var out []textRow
	for rows.Next() {
		var r textRow
		if err := rows.Scan(&r.id, &r.fileID, &r.idx, &r.page, &r.text, &r.s); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
