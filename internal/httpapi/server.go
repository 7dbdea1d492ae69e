// Package httpapi is Relay's HTTP surface: the routes (all in routes.go), their
// handlers, authentication, JSON in and out, and the mapping of error kinds to
// status codes.
package httpapi

import (
	"context"
	"log"
	"log/slog"
	"net/http"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/quota"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
)

// Options holds what the handlers need. Nil fields are not allowed except where noted.
type Options struct {
	Auth   *auth.Service
	Agents *agent.Service
	// Groups serves /api/groups and /api/principals; nil answers 503 there.
	Groups *auth.Groups
	MCP    *mcp.Manager
	// Runs runs agents for chat messages.
	Runs *run.Service
	// Schedules manages scheduled agents.
	Schedules *schedule.Service
	// Retrieval says which tools' results are retrieved contexts (Ragas export).
	Retrieval func(toolName string) bool
	// Prompt builds the request a message would send (the preview API).
	Prompt *run.Preparer
	// Memory serves /api/memories; nil means memory is disabled.
	Memory *memory.Service
	// Files serves /api/files; nil answers 503 there.
	Files *file.Service
	// UploadLimit caps an uploaded file in bytes; 0 means 50 MB.
	UploadLimit int64
	// Ready reports whether Relay can serve requests (database reachable,
	// migrations applied); it backs /readyz.
	Ready  func(ctx context.Context) error
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means 1 MiB.
	MaxBodyBytes int64
	// Version is reported by /healthz and /api/config.
	Version string
	// Catalog is what GET /api/config answers (its Version is Version's);
	// nil answers no providers, no tools and no features.
	Catalog *Catalog
	// CORSOrigins may call /v1 from a browser (server.cors_origins); "*"
	// is any origin.
	CORSOrigins []string
	// Quota holds the per-user quotas and the rate limits per API key and
	// client address (limits); nil means none.
	Quota *quota.Service
}

// Server holds the handlers' dependencies.
type Server struct {
	opts Options
	log  *slog.Logger
}

// New returns the HTTP handler for Relay's API.
func New(opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: opts.Logger}
	return s.routes()
}

// Conns are the HTTP server's bounds on connections and headers
// (docs/config.md "server").
type Conns struct {
	// ReadHeaderTimeout bounds the reading of a request's headers: a client
	// sending them slowly (slowloris) is cut off after it.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, headers and body.
	ReadTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers.
	MaxHeaderBytes int
	// ErrorLog receives the server's own errors; nil means the log package's.
	ErrorLog *log.Logger
}

// NewHTTPServer returns the http.Server that serves h within c. Its
// ReadTimeout does not cut streams: net/http lifts the read deadline once a
// request's body has been read to its end (every handler reads it whole
// before answering), so an SSE answer may last hours. It has no
// WriteTimeout, which would cut them; streams set their own write deadline
// for each burst of events.
func NewHTTPServer(h http.Handler, c Conns) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          c.ErrorLog,
	}
}
