package postgres

import "strings"

// textMatch finds chunks through the GIN index on their tsvector, ranked by
// cover density.
const textMatch = `SELECT c.id, c.file_id, c.idx, ts_rank_cd(c.tsv, q) AS s
	FROM file_chunks c, to_tsquery('english', ?) AS q
	WHERE c.tsv @@ q`

// textQuery is a tsquery matching any of terms, stemmed by to_tsquery as the
// chunks were. Terms hold letters and digits only, never an operator.
func textQuery(terms []string) string { return strings.Join(terms, " | ") }
