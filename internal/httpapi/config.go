package httpapi

import (
	"net/http"

	"github.com/relay-ai/relay/internal/prompt"
)

// Catalog is what a client such as the web UI needs to know of the server's
// configuration to build agents (GET /api/config): the providers and their
// models, the built-in tools, the placeholders of instructions and which
// features are on. It never holds a secret: no key, no address, no header.
type Catalog struct {
	Providers    []CatalogProvider    `json:"providers"`
	Tools        []CatalogTool        `json:"tools"`
	Placeholders []prompt.Placeholder `json:"placeholders"`
	Features     Features             `json:"features"`
	// Version is Relay's, as /healthz reports it; Options.Version fills it.
	Version string `json:"version"`
}

// CatalogProvider is a provider agents may name, with the models the config
// lists for it (empty when it lists none: any model name is sent as it is).
type CatalogProvider struct {
	Name   string   `json:"name"`
	Models []string `json:"models"`
	// UserProvided are the fields each user supplies for this provider
	// ("apiKey", "baseURL"; see PUT /api/endpoints/{name}/key), empty when
	// the config sets them all.
	UserProvided []string `json:"user_provided"`
}

// CatalogTool is a built-in tool agents may list in their tools.
type CatalogTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Features says which of Relay's optional parts are on.
type Features struct {
	Memory    bool `json:"memory"`
	Files     bool `json:"files"`
	WebSearch bool `json:"web_search"`
}

// config answers GET /api/config with the catalog of Options.Catalog.
func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	c := Catalog{Providers: []CatalogProvider{}, Tools: []CatalogTool{}, Placeholders: prompt.Placeholders()}
	if s.opts.Catalog != nil {
		c = *s.opts.Catalog(r.Context())
	}
	c.Version = s.opts.Version
	writeJSON(w, http.StatusOK, c)
}
