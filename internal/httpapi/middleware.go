package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
	"github.com/relay-ai/relay/internal/telemetry"
)

type (
	userKey    struct{}
	sessionKey struct{}
)

// userFrom returns the authenticated user of a request that went through authed.
func userFrom(ctx context.Context) *auth.User {
	u, _ := ctx.Value(userKey{}).(*auth.User)
	return u
}

// sessionFrom returns the session of a request authed by its cookie, or nil
// for one authed by an API key.
func sessionFrom(ctx context.Context) *auth.Session {
	sess, _ := ctx.Value(sessionKey{}).(*auth.Session)
	return sess
}

// sessionID is the id of the request's session, "" for an API key.
func sessionID(ctx context.Context) string {
	if sess := sessionFrom(ctx); sess != nil {
		return sess.ID
	}
	return ""
}

// authed wraps h so that it only runs for a request with a valid API key
// (Authorization: Bearer) or, failing that, a valid session cookie. A
// cookie request that changes something must come from Relay's own origin
// (sameOriginCheck); a key request need not, since a browser never adds a key
// by itself (docs/api.md "Authentication").
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.SetRoute(r.Context(), r.Pattern)
		secret, ok := bearer(r)
		if !ok {
			if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
				s.sessionAuthed(w, r, c.Value, h)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="relay"`)
			s.refuse(w, r, fault.New(fault.Unauthorized, "missing API key: send Authorization: Bearer <key>, or sign in"))
			return
		}
		u, err := s.opts.Auth.Authenticate(r.Context(), secret)
		if err != nil {
			if fault.Is(err, fault.Unauthorized) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="relay", error="invalid_token"`)
			}
			s.refuse(w, r, err)
			return
		}
		if err := s.opts.Quota.AllowKey(u, auth.HashSecret(secret)); err != nil {
			s.refuse(w, r, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// sessionAuthed runs h for the user of the session token, after the
// cross-origin check. A refused token's cookie is cleared; a session whose
// end moved gets its cookie again with the new expiry.
func (s *Server) sessionAuthed(w http.ResponseWriter, r *http.Request, token string, h http.HandlerFunc) {
	if err := s.sameOriginCheck(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	u, sess, err := s.opts.Auth.AuthenticateSession(r.Context(), token)
	if err != nil {
		if fault.Is(err, fault.Unauthorized) {
			s.clearSessionCookie(w, r)
		}
		s.refuse(w, r, err)
		return
	}
	if sess.Renewed {
		s.setSessionCookie(w, r, token)
	}
	// The user's sessions together are rate-limited as one key
	// (limits.api.key_per_minute).
	if err := s.opts.Quota.AllowSessions(u); err != nil {
		s.refuse(w, r, err)
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), userKey{}, u), sessionKey{}, sess)
	h(w, r.WithContext(ctx))
}

// sameOriginCheck refuses a state-changing request (not GET, HEAD or
// OPTIONS) that a browser sent from another origin: Sec-Fetch-Site other
// than same-origin or none, or, from browsers without it, an Origin whose
// host is not the request's (server.public_url's origin is trusted too). Such
// a request may carry the session cookie without its user knowing.
func (s *Server) sameOriginCheck(r *http.Request) error {
	if err := s.cop.Check(r); err != nil {
		return fault.New(fault.Forbidden, "cross-origin request refused: a request signed in with the session cookie must come from Relay's own pages (%s %s)", r.Method, r.URL.Path)
	}
	return nil
}

// sameOrigin wraps the sign-in routes, which take no authentication, in
// sameOriginCheck: another site must not sign a browser in or out.
func (s *Server) sameOrigin(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.SetRoute(r.Context(), r.Pattern)
		if err := s.sameOriginCheck(r); err != nil {
			s.refuse(w, r, err)
			return
		}
		h(w, r)
	})
}

// admin wraps an authed handler so that only admins get to it.
func (s *Server) admin(what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !userFrom(r.Context()).IsAdmin() {
			s.writeError(w, r, fault.New(fault.Forbidden, "only admins may %s", what))
			return
		}
		h(w, r)
	}
}

// limitClients takes one request of the client's address from its token
// bucket (limits.api.ip_per_minute) before it is authenticated, so that bad
// keys count too.
// The probes are not counted: load balancers call them often.
func (s *Server) limitClients(h http.Handler) http.Handler {
	if s.opts.Quota == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			if err := s.opts.Quota.AllowIP(clientIP(r)); err != nil {
				s.refuse(w, r, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// clientIP is the address the request came from: the peer of the
// connection. Forwarding headers are not trusted, since any client can send
// them. An IPv6 address counts as its /64, the block one host is usually
// given, so that a client cannot pass the limit by changing addresses in it.
func clientIP(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// capBodies limits every request body to its route's size (bodyLimit);
// reading past it fails and decode answers 413. An upload over it is refused
// as every file over the cap is, naming the cap and its key. The body also
// remembers whether reading it broke off (requestBody), for clientGone.
func (s *Server) capBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := s.bodyLimit(r)
		if r.ContentLength > limit {
			var err error = fault.New(fault.TooLarge, "request body is over the %d-byte limit", limit)
			if isUpload(r) {
				err = s.uploadErr(err)
			}
			s.refuse(w, r, err)
			return
		}
		r.Body = &requestBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit)}
		h.ServeHTTP(w, r)
	})
}

// requestBody is a request's body that remembers whether a read of it failed
// for another reason than its end, its size cap or server.read_timeout: the
// connection broke off, as when the client goes away while sending it. The
// read error itself (an unexpected EOF, a reset connection) says nothing of
// the cause, and is reported by the JSON and multipart readers as a malformed
// body.
type requestBody struct {
	io.ReadCloser
	broken atomic.Bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); !tooBig {
			b.broken.Store(true)
		}
	}
	return n, err
}

// bodyBroken reports whether reading r's body broke off (requestBody).
func bodyBroken(r *http.Request) bool {
	b, ok := r.Body.(*requestBody)
	return ok && b.broken.Load()
}

// statusWriter remembers the status code for the access log.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flushing for SSE).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests writes one debug line per request: never headers, never bodies.
func (s *Server) logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		s.log.DebugContext(r.Context(), "http request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.code), slog.Duration("duration", time.Since(start)))
	})
}

// recoverPanics turns a panicking handler into a logged 500 instead of a dropped connection.
func (s *Server) recoverPanics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "handler panic", slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
				s.refuse(w, r, fault.New(fault.Internal, "internal error"))
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// cors lets web pages of the configured origins (server.cors_origins) call
// /v1: such a request gets Access-Control-Allow-Origin naming its origin, and
// a preflight (OPTIONS with Access-Control-Request-Method) is answered here,
// before authentication, since browsers send it without the key. Credentials
// (cookies) are never allowed: Relay reads the key from Authorization. A
// request from another origin gets no CORS headers, so the browser keeps the
// page from reading the answer; its preflight is a 403.
func (s *Server) cors(h http.Handler) http.Handler {
	if len(s.opts.CORSOrigins) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !strings.HasPrefix(r.URL.Path, "/v1/") {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		allowed := slices.ContainsFunc(s.opts.CORSOrigins, func(o string) bool {
			return o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
		})
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !allowed {
			if preflight {
				s.refuse(w, r, fault.New(fault.Forbidden, "origin %q is not in server.cors_origins", origin))
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		if !preflight {
			w.Header().Set("Access-Control-Expose-Headers", "X-Should-Retry, Retry-After")
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Access-Control-Request-Method")
		w.Header().Add("Vary", "Access-Control-Request-Headers")
		w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		headers := r.Header.Get("Access-Control-Request-Headers")
		if headers == "" {
			headers = "Authorization, Content-Type"
		}
		w.Header().Set("Access-Control-Allow-Headers", headers)
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

// requestIDs gives every request an id, sent back in X-Request-Id and added
// to every log line the request writes (request_id): the client's own
// X-Request-Id when it is a short token (a proxy's, so that both logs
// agree), else a new one.
func (s *Server) requestIDs(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := RequestID(r)
		w.Header().Set("X-Request-Id", id)
		h.ServeHTTP(w, r.WithContext(telemetry.WithRequestID(r.Context(), id)))
	})
}

// RequestID is the id of r that its X-Request-Id answer header carries (docs/api.md
// "Request ids"): the client's own X-Request-Id when it is a short token,
// else a new one. For the handler that answers before this server exists,
// while Relay starts.
func RequestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = ident.New("req_")
	}
	return id
}

// validRequestID accepts at most 64 letters, digits and - _ . : — what a
// log line may show as it is.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// metrics answers GET (and HEAD) /metrics with Relay's metrics (Telemetry.Handler) when
// Options.MetricsToken is set and the request sends it as a bearer token;
// every other request goes to h. A request without the token gets 401:
// the metrics name agents, models and MCP servers. Wrong tokens count
// against the client address's rate limit, as bad API keys do.
func (s *Server) metrics(h http.Handler) http.Handler {
	token := []byte(s.opts.MetricsToken)
	if s.opts.Telemetry == nil || len(token) == 0 {
		return h
	}
	scrape := s.opts.Telemetry.Handler()
	guarded := s.limitClients(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearer(r)
		if !ok || subtle.ConstantTimeCompare([]byte(secret), token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="relay metrics"`)
			s.writeError(w, r, fault.New(fault.Unauthorized, "missing or wrong metrics token: send Authorization: Bearer <metrics.token>"))
			return
		}
		scrape.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			h.ServeHTTP(w, r)
			return
		}
		telemetry.SetRoute(r.Context(), "GET /metrics")
		guarded.ServeHTTP(w, r)
	})
}
