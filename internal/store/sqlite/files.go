package sqlite

import (
	"strings"

	// sqlite-vec, bundled with the driver: vec_distance_cosine scores the
	// chunks' vectors inside SQLite. It registers itself with every connection
	// opened after the import, which is every connection Relay opens.
	_ "modernc.org/sqlite/vec"
)

// textMatch finds chunks through the FTS5 index. bm25 is negative, lower
// is better; negated it is a relevance of 0 or more. CROSS JOIN keeps the
// index search outside: the other order would run the full-text query once
// per chunk of the searched files.
const textMatch = `SELECT c.id, c.file_id, c.idx, -bm25(file_chunks_fts) AS s
	FROM file_chunks_fts CROSS JOIN file_chunks c ON c.id = file_chunks_fts.rowid
	WHERE file_chunks_fts MATCH ?`

// textQuery is an FTS5 query matching any of terms. Each term is a quoted
// string, so that words such as AND, NEAR or a leading minus are only words;
// terms hold letters and digits only, never a quote.
func textQuery(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + t + `"`)
	}
	return b.String()
}

// vectorScore is the cosine similarity computed by sqlite-vec.
const vectorScore = `1 - vec_distance_cosine(c.embedding, ?)`
