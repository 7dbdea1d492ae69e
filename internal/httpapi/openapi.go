package httpapi

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3.1 document of the API: every route of table,
// its parameters, bodies, answers and how callers authenticate (docs/api.md
// "OpenAPI"). The httpapi tests check it against the table and every answer
// against it.
//
//go:embed openapi.json
var openapiDoc []byte

// openapi answers GET /api/openapi.json with the document.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(openapiDoc)
}
