package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/ident"
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

// CreateFile inserts f and writes back its stored form: CreatedAt (the current
// time when zero), UpdatedAt (CreatedAt when zero) and Status (Pending when
// empty). A taken id is fault.Conflict; a missing owner fault.NotFound.
func (db *DB) CreateFile(ctx context.Context, f *file.File) error {
	if f.ID == "" {
		return fault.New(fault.Invalid, "file id is required")
	}
	status := f.Status
	if status == "" {
		status = file.Pending
	}
	if err := checkFileStatus(f.ID, status); err != nil {
		return err
	}
	if f.Size < 0 || f.Progress < 0 || f.Progress > 100 || f.Chunks < 0 {
		return fault.New(fault.Invalid, "file %q: size, progress (0–100) and chunk count must not be negative", f.ID)
	}
	created := db.stamp(f.CreatedAt)
	updated := created
	if !f.UpdatedAt.IsZero() {
		updated = utc(f.UpdatedAt)
	}
	_, err := db.exec(ctx, db.write,
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
	return db.inTx(ctx, func(tx *sql.Tx) error {
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

// notClaimed is the error of a write whose claim is no longer held.
func notClaimed(c *file.Claim) error {
	return fault.New(fault.Conflict, "file %q is no longer claimed by this process (its lease ran out)", c.File.ID)
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
		err = db.inTx(ctx, func(tx *sql.Tx) error {
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

// chunkBatch is how many chunks one INSERT stores: 6 arguments each stays under
// every engine's limit of bound parameters.
const chunkBatch = 100

// AddFileChunks stores chunks of a claimed file, in one transaction.
func (db *DB) AddFileChunks(ctx context.Context, c *file.Claim, chunks []file.Chunk) error {
	if len(chunks) == 0 {
		return nil
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
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

// FinishFile ends the ingestion of a claimed file.
func (db *DB) FinishFile(ctx context.Context, c *file.Claim, o file.Outcome) error {
	if o.Status != file.Ready && o.Status != file.Failed {
		return fault.New(fault.Invalid, "file %q: an ingestion ends ready or failed, not %q", c.File.ID, o.Status)
	}
	now := db.clock()
	var n int
	err := db.inTx(ctx, func(tx *sql.Tx) error {
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

// inList returns "?, ?, …" for n arguments.
func inList(n int) string { return "?" + strings.Repeat(", ?", n-1) }

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
	total := `SELECT COALESCE(MAX(id) - MIN(id) + 1, 0) FROM file_chunks`
	if db.d.Engine == "postgres" {
		// The planner's count, kept by ANALYZE and VACUUM; Postgres ids are not dense.
		total = `SELECT GREATEST(reltuples, 0)::BIGINT FROM pg_class WHERE oid = to_regclass('file_chunks')`
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
	if err := db.queryRow(ctx, db.read, total).Scan(&sc.total); err != nil && !errors.Is(err, sql.ErrNoRows) {
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
	var eng textEngine = sqliteText{db}
	if db.d.Engine == "postgres" {
		eng = postgresText{db}
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

// sqliteText is full-text search on SQLite's FTS5 index, whose file column
// holds each chunk's file as one token.
type sqliteText struct{ db *DB }

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

func (sqliteText) budget() int { return rankBudget }

func (e sqliteText) frequencies(ctx context.Context, terms []string) ([]float64, error) {
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

func (e sqliteText) rank(ctx context.Context, sc textScope, _, match []string, and bool, k, budget int) ([]textRow, error) {
	op := "OR"
	if and {
		op = "AND"
	}
	expr := "text : (" + ftsTerms(match, op) + ")"
	// A small scope joins the query with its files' tokens, so that FTS5 ranks
	// their chunks only; a large one is cheaper to rank whole, dropping other
	// files' chunks afterwards, with more rows asked for.
	if sc.share() < 0.34 {
		toks := make([]string, len(sc.ids))
		for i, id := range sc.ids {
			toks[i] = fileToken(id)
		}
		expr = "(" + expr + ") AND file : (" + ftsTerms(toks, "OR") + ")"
	} else {
		k = int(float64(k) / sc.share())
	}
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

// postgresText is full-text search on the GIN index of file_chunks.tsv.
type postgresText struct{ db *DB }

func (postgresText) budget() int { return pgRankBudget }

func (e postgresText) frequencies(ctx context.Context, terms []string) ([]float64, error) {
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

func (e postgresText) rank(ctx context.Context, sc textScope, terms, match []string, and bool, k, budget int) ([]textRow, error) {
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

// SearchVector finds the chunks of q.FileIDs nearest to vec.
func (db *DB) SearchVector(ctx context.Context, q file.Query, vec []float32) ([]file.Hit, error) {
	if len(q.FileIDs) == 0 || len(vec) == 0 {
		return []file.Hit{}, nil
	}
	if db.d.VectorScore == "" {
		return db.searchVectorInGo(ctx, q, vec)
	}
	blob := file.EncodeVector(vec)
	match := `SELECT c.id, c.file_id, c.idx, ` + db.d.VectorScore + ` AS s FROM file_chunks c
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
