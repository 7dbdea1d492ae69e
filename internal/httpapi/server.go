// Package httpapi is Relay's HTTP surface: the routes (all in routes.go), their
// handlers, authentication, JSON in and out, and the mapping of error kinds to
// status codes.
package httpapi

import (
	"context"
	"io/fs"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/relay-ai/relay/internal/account"
	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/auth/oidc"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/quota"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/telemetry"
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
	// EndpointKeys serves /api/endpoints/keys and /api/endpoints/{name}/key,
	// each user's own values for the endpoints that take them; nil answers
	// 503 there.
	EndpointKeys EndpointKeys
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
	// Catalog returns what GET /api/config answers (its Version is
	// Version's); nil answers no providers, no tools and no features.
	Catalog func(context.Context) *Catalog
	// CORSOrigins may call /v1 from a browser (server.cors_origins); "*"
	// is any origin.
	CORSOrigins []string
	// UI is the web UI's built files (web.Dist); nil serves no UI, and
	// every path outside the API is a JSON 404.
	UI fs.FS
	// Quota holds the per-user quotas and the rate limits per API key and
	// client address (limits); nil means none.
	Quota *quota.Service
	// SignIns counts failed sign-ins per email and client address
	// (auth.login_limit); nil means no limit.
	SignIns *quota.SignIns
	// PublicURL is server.public_url: when it is https the session cookie is
	// Secure (as it is for a request over TLS), and its origin passes the
	// cross-origin check of cookie requests. "" means neither.
	PublicURL string
	// OIDC signs people in with an OpenID Connect provider (auth.oidc); nil
	// means single sign-on is off.
	OIDC *oidc.Client
	// Accounts serves each user's own MCP accounts (customUserVars and
	// OAuth); nil answers 503 there.
	Accounts *account.Service
	// Telemetry measures every request and, with tracing on, gives it a
	// server span named by its route (docs/observability.md); nil means
	// neither.
	Telemetry *telemetry.Telemetry
	// MetricsToken, with Telemetry, serves GET /metrics (Prometheus's scrape)
	// to requests that send it as Authorization: Bearer (metrics.token);
	// "" serves no /metrics here.
	MetricsToken string
}

// Server holds the handlers' dependencies.
type Server struct {
	opts Options
	log  *slog.Logger
	// cop refuses cross-origin state-changing requests signed in by cookie.
	cop *http.CrossOriginProtection
}

// New returns the HTTP handler for Relay's API.
func New(opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: opts.Logger, cop: http.NewCrossOriginProtection()}
	if o := publicOrigin(opts.PublicURL); o != "" {
		if err := s.cop.AddTrustedOrigin(o); err != nil {
			s.log.Warn("server.public_url is not an origin the cross-origin check can trust", slog.String("origin", o), slog.Any("err", err))
		}
	}
	// The request id comes first, so that every log line of the request has
	// it; the telemetry middleware's copy of the request is the one the
	// router sees, so that it reads the route that matched.
	return s.requestIDs(opts.Telemetry.Middleware(s.metrics(s.routes())))
}

// publicOrigin is the scheme://host[:port] of a public URL, "" when there is none.
func publicOrigin(public string) string {
	u, err := url.Parse(public)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
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
