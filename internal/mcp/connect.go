package mcp

//lint:file-ignore SA1019 MCP roots and sampling are deprecated from protocol 2026-07-28 on, and Relay keeps them for the servers that use them (docs/mcp.md "Roots and sampling").

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/relay-ai/relay/internal/telemetry"
)

// ClientName is how Relay introduces itself in initialize.
const ClientName = "relay"

// ConnectOptions are the optional parts of Connect.
type ConnectOptions struct {
	// UserID, when not empty, is added to every tools/call (docs/mcp.md "Connections").
	UserID string
	// Version is the client version sent in initialize.
	Version string
	// ToolsChanged is called on notifications/tools/list_changed.
	ToolsChanged func()
	// Progress is called on notifications/progress.
	Progress func(p *sdk.ProgressNotificationParams)
	// HTTP carries the requests of the HTTP transports; nil means a new transport.
	// Connections of one manager share one, so that they share its idle pool.
	HTTP http.RoundTripper
	// Logger takes the lines a stdio server writes to stderr, with the server's
	// name added (mcp_server); it may be nil.
	Logger *slog.Logger
	// Authorization supplies the bearer token of the sse and streamable-http
	// transports and acts on the server's 401 and 403 insufficient_scope
	// challenges (see docs/mcp.md#oauth); nil means none, and a 401 fails with
	// ErrOAuthNotConfigured.
	Authorization Authorization
	// Telemetry traces each request to the server (a client span) and sends
	// its trace context (traceparent) with the requests of the sse and
	// streamable-http transports; nil means none.
	Telemetry *telemetry.Telemetry
}

// Session is an initialized connection to one server.
type Session struct {
	*sdk.ClientSession
	cmd     *exec.Cmd // the stdio child, if any
	stop    func()    // ends the context the transport's streams live in
	schemas *rawSchemas
	calls   *callers // the tool calls in flight, for the server's questions
}

// InputSchema returns the input schema of the tool name as the server last
// listed it, its keys in the server's order; false when it has not listed it.
func (s *Session) InputSchema(name string) (json.RawMessage, bool) {
	if s.schemas == nil {
		return nil, false
	}
	return s.schemas.get(name)
}

// Close ends the session and, for stdio, kills the child's whole process group so
// that nothing it started outlives it.
func (s *Session) Close() error {
	err := s.ClientSession.Close()
	s.stop()
	s.killGroup()
	return err
}

func (s *Session) killGroup() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Instructions returns the instructions the server sent in its initialize result.
func (s *Session) Instructions() string {
	if r := s.InitializeResult(); r != nil {
		return r.Instructions
	}
	return ""
}

// Connect opens and initializes a session with a server whose config has been
// resolved (see ServerConfig.Resolve). ctx bounds only the connecting.
func Connect(ctx context.Context, cfg ServerConfig, o ConnectOptions) (*Session, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTP == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		o.HTTP = tr
	}
	schemas := &rawSchemas{}
	userID := ""
	if o.UserID != "" && cfg.SendUserID {
		userID = o.UserID
	}
	rt := o.HTTP
	if cfg.Transport == TransportSSE || cfg.Transport == TransportStreamableHTTP {
		rt = o.Telemetry.Transport(rt)
	}
	if cfg.Transport == TransportStreamableHTTP {
		rt = &httpTap{base: rt, userID: userID, schemas: schemas}
	}
	t, cmd, err := transport(cfg, rt, o.Authorization, o.Logger)
	if err != nil {
		return nil, err
	}
	if cfg.Transport != TransportStreamableHTTP {
		if userID != "" {
			t = &userIDTransport{Transport: t, userID: userID}
		}
		t = &schemaTransport{Transport: t, schemas: schemas}
	}
	calls := &callers{}
	opts := &sdk.ClientOptions{
		// Roots as configured (none by default), never changed while
		// connected; questions (form and URL) always, put to the user of
		// the call in flight (docs/mcp.md "Questions"); sampling only when the
		// config enables it.
		Capabilities: &sdk.ClientCapabilities{
			RootsV2:     &sdk.RootCapabilities{},
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}},
		},
		ElicitationHandler: elicitHandler(cfg, calls),
	}
	if cfg.Sampling.Enabled {
		opts.CreateMessageHandler = sampleHandler(cfg, calls)
	}
	if o.ToolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) { o.ToolsChanged() }
	}
	if o.Progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { o.Progress(r.Params) }
	}
	client := sdk.NewClient(&sdk.Implementation{Name: ClientName, Version: o.Version}, opts)
	if o.Telemetry.Tracing() != "" {
		client.AddSendingMiddleware(traced(o.Telemetry, cfg.Name))
	}
	if !cfg.Sampling.Enabled {
		client.AddReceivingMiddleware(samplingOff(cfg.Name))
	}
	for _, r := range cfg.Roots {
		client.AddRoots(&sdk.Root{URI: r.URI, Name: r.Name})
	}
	// Some transports (SSE) keep streams open in the context they connect with, so
	// the session gets a context of its own; ctx bounds only the connecting.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	unbound := context.AfterFunc(ctx, stop)
	cs, err := client.Connect(life, t, nil)
	if !unbound() { // ctx ended while connecting
		if err == nil {
			_ = cs.Close()
			err = context.Cause(ctx)
		}
	}
	if err != nil {
		stop()
		var env []string // what the server may print of its environment
		if cmd != nil && cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			err = childEnded(cmd, err)
			env = slices.Collect(maps.Values(cfg.Env))
		}
		// The error may quote the URL, and with it a secret in its query.
		return nil, newRedactor(cfg, env).err(err)
	}
	return &Session{ClientSession: cs, cmd: cmd, stop: stop, schemas: schemas, calls: calls}, nil
}

// transport builds the go-sdk transport for a resolved config.
func transport(cfg ServerConfig, rt http.RoundTripper, auth Authorization, log *slog.Logger) (sdk.Transport, *exec.Cmd, error) {
	switch cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Env = childEnv(cfg.Env)
		// Its own process group, so that closing kills everything it started; and
		// killed with Relay if Relay dies without closing it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if cfg.Stderr == "inherit" {
			cmd.Stderr = os.Stderr
		} else {
			// What it prints of its environment (a user's key, say) is masked.
			cmd.Stderr = stderrLogger(log, cfg.Name, newRedactor(cfg, slices.Collect(maps.Values(cfg.Env))))
		}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, cmd, nil
	case TransportSSE:
		return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: serverClient(rt, cfg, auth)}, nil, nil
	case TransportStreamableHTTP:
		// staleSessionTransport lets a request the server refused for a session
		// it no longer knows be sent again on a new one (see conn.sessionGone).
		return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: serverClient(&staleSessionTransport{base: rt}, cfg, auth)}, nil, nil
	case TransportWebSocket:
		// The headers go through the client too (not the handshake's own
		// header), so that a redirected handshake does not carry them elsewhere.
		return &WebSocketTransport{URL: cfg.URL, HTTPClient: httpClient(rt, cfg.URL, cfg.Headers)}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", cfg.Transport)
}

// childEnded adds to the error of a stdio server that could not be
// connected how it ended, when it ended by itself (it was not killed), and
// the last lines it wrote to stderr: a server that fails at start usually
// says why there.
func childEnded(cmd *exec.Cmd, err error) error {
	var said []string
	if l, ok := cmd.Stderr.(*lineLogger); ok {
		said = l.tail()
	}
	ps := cmd.ProcessState
	switch {
	case ps != nil && ps.Exited() && len(said) > 0:
		return fmt.Errorf("%w (the server exited with status %d; its last words on stderr: %s)", err, ps.ExitCode(), strings.Join(said, " / "))
	case ps != nil && ps.Exited():
		return fmt.Errorf("%w (the server exited with status %d)", err, ps.ExitCode())
	case len(said) > 0:
		return fmt.Errorf("%w (its last words on stderr: %s)", err, strings.Join(said, " / "))
	}
	return err
}

// stderrLogger returns a writer that logs each line a stdio server writes to
// stderr, at debug level, keeping the last few for the error of a server
// that fails to start. It has no goroutine or pipe of its own: os/exec copies
// the child's stderr into it until the child ends, and then nothing holds it.
func stderrLogger(log *slog.Logger, server string, mask *redactor) io.Writer {
	return &lineLogger{log: log, server: server, mask: mask}
}

// tailLines and tailLineBytes bound what a lineLogger keeps of the last lines.
const (
	tailLines     = 3
	tailLineBytes = 300
)

// maxStderrLine is the longest stderr line kept whole; a longer one is logged in
// pieces of this size.
const maxStderrLine = 64 << 10

type lineLogger struct {
	log    *slog.Logger
	server string
	mask   *redactor // the secrets of the server's config, masked in each line

	mu   sync.Mutex
	buf  []byte   // the unfinished last line
	last []string // the last lines that were not blank, cut at tailLineBytes
}

// tail returns the last lines the server wrote (the unfinished one too).
func (l *lineLogger) tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.last)
	if s := strings.TrimSpace(string(l.buf)); s != "" {
		out = append(out, cut(s))
	}
	if len(out) > tailLines {
		out = out[len(out)-tailLines:]
	}
	return out
}

func cut(s string) string {
	if len(s) > tailLineBytes {
		return strings.ToValidUTF8(s[:tailLineBytes], "") + "…"
	}
	return s
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		line, rest, found := bytes.Cut(l.buf, []byte{'\n'})
		if !found {
			if len(l.buf) >= maxStderrLine {
				line, rest = l.buf[:maxStderrLine], l.buf[maxStderrLine:]
			} else {
				break
			}
		}
		text := l.mask.text(string(bytes.TrimSuffix(line, []byte{'\r'})))
		l.log.Debug("mcp server stderr", slog.String("mcp_server", l.server), slog.String("line", text))
		if t := strings.TrimSpace(text); t != "" {
			l.last = append(l.last, cut(t))
			if len(l.last) > tailLines {
				l.last = slices.Delete(l.last, 0, len(l.last)-tailLines)
			}
		}
		l.buf = rest
	}
	if len(l.buf) == 0 {
		l.buf = nil // let a large buffer go
	}
	return len(p), nil
}

// httpClient returns a client over rt that adds the server's headers to every
// request to the server's own host (see headerTransport).
func httpClient(rt http.RoundTripper, server string, headers map[string]string) *http.Client {
	t := &headerTransport{base: rt, headers: headers}
	if u, err := url.Parse(server); err == nil {
		t.host, t.secure = u.Hostname(), u.Scheme == "https" || u.Scheme == "wss"
	}
	return &http.Client{Transport: t}
}

// serverClient is httpClient with the bearer token of auth (see authTransport)
// sent to the server's host after its headers.
func serverClient(rt http.RoundTripper, cfg ServerConfig, auth Authorization) *http.Client {
	c := httpClient(rt, cfg.URL, cfg.Headers)
	ht := c.Transport.(*headerTransport)
	ht.base = &authTransport{base: ht.base, auth: auth, name: cfg.Name, server: ht}
	return c
}

// headerTransport adds the configured headers (Authorization, API keys…) to the
// requests it carries, but only to those for the configured host, and never over
// plain HTTP when the server was configured with TLS. A redirect to another host
// (or an SSE endpoint there) must not receive the server's credentials; the
// http.Client copies only the headers of the original request on a redirect,
// which never held these.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	host    string // "" when the configured URL did not parse: no headers at all
	secure  bool
}

func (t *headerTransport) forServer(u *url.URL) bool {
	if t.host == "" || !strings.EqualFold(u.Hostname(), t.host) {
		return false
	}
	return !t.secure || u.Scheme == "https" || u.Scheme == "wss"
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && t.forServer(r.URL) {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// userIDTransport adds a top-level `userId` to the params of every tools/call
// request, which the go-sdk's typed params have no field for.
type userIDTransport struct {
	sdk.Transport
	userID string
}

func (t *userIDTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &userIDConn{Connection: c, userID: t.userID}, nil
}

type userIDConn struct {
	sdk.Connection
	userID string
}

func (c *userIDConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		params := map[string]json.RawMessage{}
		if len(req.Params) > 0 {
			if err := json.Unmarshal(req.Params, &params); err != nil {
				return fmt.Errorf("adding userId to tools/call: %w", err)
			}
		}
		id, _ := json.Marshal(c.userID)
		params["userId"] = id
		raw, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("adding userId to tools/call: %w", err)
		}
		cp := *req
		cp.Params = raw
		msg = &cp
	}
	return c.Connection.Write(ctx, msg)
}

// traced gives each request Relay sends to server a client span (see
// telemetry.StartMCPRequest); notifications get none. The span is in the
// context the transport sends the request with, so that its trace context
// goes along.
func traced(tel *telemetry.Telemetry, server string) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			var target, session string
			if p, ok := req.GetParams().(*sdk.CallToolParams); ok && p != nil {
				target = p.Name
			}
			if s := req.GetSession(); s != nil {
				session = s.ID()
			}
			ctx, end := tel.StartMCPRequest(ctx, server, method, target, session)
			res, err := next(ctx, method, req)
			end(err)
			return res, err
		}
	}
}
