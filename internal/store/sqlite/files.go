package sqlite

import (
	// sqlite-vec, bundled with the driver: vec_distance_cosine scores the
	// chunks' vectors inside SQLite when a search's vectors are not held in
	// memory. It registers itself with every connection opened after the
	// import, which is every connection Relay opens.
	_ "modernc.org/sqlite/vec"
)

// vectorScore is the cosine similarity computed by sqlite-vec.
const vectorScore = `1 - vec_distance_cosine(c.embedding, ?)`
