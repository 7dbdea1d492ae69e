package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/telemetry"
)

// State is where a connection stands.
type State string

// The connection states of docs/mcp.md "Connections".
const (
	StateDisconnected State = "disconnected"
	StateConnecting   State = "connecting"
	StateConnected    State = "connected"
	StateError        State = "error"
	// StateAuthRequired is a user's connection that waits for the user: to
	// connect their account (OAuth) or to set their variables.
	StateAuthRequired State = "auth_required"
)

// Options tune a Manager; the zero value gives the defaults of docs/mcp.md.
type Options struct {
	Logger *slog.Logger
	// Getenv resolves ${VAR}; nil means the process environment.
	Getenv func(string) (string, bool)
	// Version is sent as the client version in initialize.
	Version string
	// IdleTimeout closes user-scoped connections unused that long (default 15 min).
	IdleTimeout time.Duration
	// BackoffBase is the first reconnect delay (default 1 s), doubled per attempt
	// up to BackoffMax (default 30 s).
	BackoffBase, BackoffMax time.Duration
	// MaxAttempts failed reconnects put a server in the error state (default 5);
	// it is then retried on use, at most once per RetryAfter (default 1 min).
	MaxAttempts int
	RetryAfter  time.Duration
	// StableAfter is how long a connection must stay up (default 30 s) before
	// its loss starts the backoff afresh; a successful tool call does so too.
	// Until then a server that crashes soon after connecting counts every
	// crash as a failed attempt, backs off, and ends in the error state.
	StableAfter time.Duration
	// Users supplies each user's customUserVars values; nil means no user has
	// any, so servers that use them cannot connect.
	Users Users
	// VarsRecheck is how often a user's connection that carries
	// customUserVars values reads them again when used (default 1 s): values
	// changed by another Relay process sharing the database reach the server
	// within that time, on a new connection. This process's own changes close
	// the connection at once (Disconnect).
	VarsRecheck time.Duration
	// Telemetry measures tool calls, traces MCP requests (sending their trace
	// context to sse and streamable-http servers) and reports the
	// connections' states at each scrape; nil means none of it.
	Telemetry *telemetry.Telemetry
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 15 * time.Minute
	}
	if o.VarsRecheck <= 0 {
		o.VarsRecheck = time.Second
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Minute
	}
	if o.StableAfter <= 0 {
		o.StableAfter = 30 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
}

// Tool is one tool of one server, as the model will see it.
type Tool struct {
	Key         string `json:"key"`
	Server      string `json:"server"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	InputSchema any    `json:"input_schema"`
	// Schema is InputSchema encoded once, as the prompt sends it.
	Schema prompt.Schema `json:"-"`

	args *ArgsSchema // InputSchema compiled once, for every call
}

// ServerStatus is what the API and `relay mcp list` show about a server. For a
// user-scoped server it sums up that user's connection, or says how many users
// are connected when asked without a user.
type ServerStatus struct {
	Name           string     `json:"name"`
	Transport      string     `json:"transport"`
	Scope          Scope      `json:"scope"`
	State          State      `json:"state"`
	ToolCount      int        `json:"tool_count"`
	LastError      string     `json:"last_error,omitempty"`
	ConnectedSince *time.Time `json:"connected_since,omitempty"`
	Connections    int        `json:"connections"`
	// OAuth says each user connects their account first; UserVars are the
	// values each user sets (see docs/api.md "MCP accounts").
	OAuth    bool      `json:"oauth,omitempty"`
	UserVars []UserVar `json:"user_vars,omitempty"`
}

// Manager owns every connection to every MCP server.
type Manager struct {
	opts    Options
	log     *slog.Logger
	http    http.RoundTripper // shared by every HTTP and websocket connection
	servers map[string]ServerConfig
	order   []string
	names   Names

	mu     sync.Mutex
	conns  map[connKey]*conn
	closed bool

	// tools interns tool definitions by server and JSON, so that the many
	// connections of a user-scoped server share one copy of each tool and its
	// compiled schema.
	toolsMu sync.Mutex
	tools   map[string]Tool
	// known is each user-scoped server's tools as a connection last listed
	// them, for the users who cannot connect yet (see Tools).
	known map[string][]Tool
}

// intern returns the shared Tool for a server's tool definition, building it
// once. schema is its input schema as the server sent it, when known: the
// model is sent those bytes, not t.InputSchema encoded again.
func (m *Manager) intern(server string, t *sdk.Tool, schema json.RawMessage, log *slog.Logger) Tool {
	raw, err := json.Marshal(t)
	key := server + "\x00" + string(raw) + "\x00" + string(schema)
	if err == nil {
		m.toolsMu.Lock()
		shared, ok := m.tools[key]
		m.toolsMu.Unlock()
		if ok {
			return shared
		}
	}
	tool := Tool{
		Key: m.names.Add(server, t.Name), Server: server, Name: t.Name,
		Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		args: CompileArgsSchema(t.InputSchema),
	}
	if err := tool.args.Err(); err != nil {
		log.Warn("tool arguments will not be checked", slog.String("tool", t.Name), slog.String("err", err.Error()))
	}
	var sent any = t.InputSchema
	if len(schema) > 0 {
		sent = schema
	}
	if tool.Schema, err = prompt.NewSchema(sent); err != nil {
		log.Warn("tool schema cannot be sent as is", slog.String("tool", t.Name), slog.String("err", err.Error()))
	}
	if err == nil {
		m.toolsMu.Lock()
		if m.tools == nil {
			m.tools = map[string]Tool{}
		}
		m.tools[key] = tool
		m.toolsMu.Unlock()
	}
	return tool
}

type connKey struct{ server, user string }

// NewManager returns a manager for the given servers (in config order).
func NewManager(servers []ServerConfig, opts Options) *Manager {
	opts.defaults()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	m := &Manager{opts: opts, log: opts.Logger, http: tr, servers: map[string]ServerConfig{}, conns: map[connKey]*conn{}}
	normalised := map[string]bool{}
	for _, s := range servers {
		m.servers[s.Name] = s
		m.order = append(m.order, s.Name)
		// Of servers whose names are the same in tool keys, the first in the
		// config keeps the plain keys, whichever lists its tools first.
		if n := NormaliseServer(s.Name); normalised[n] {
			m.names.Yield(s.Name)
		} else {
			normalised[n] = true
		}
	}
	opts.Telemetry.CollectMCP(m.connCounts)
	return m
}

// states are the states a connection can be in, as relay_mcp_connections
// reports them.
var states = []State{StateDisconnected, StateConnecting, StateConnected, StateError, StateAuthRequired}

// connCounts counts the connections of each server by state, every state of
// every server included, for relay_mcp_connections.
func (m *Manager) connCounts() []telemetry.ConnCount {
	m.mu.Lock()
	cs := make(map[string][]*conn, len(m.order))
	for k, c := range m.conns {
		cs[k.server] = append(cs[k.server], c)
	}
	m.mu.Unlock()
	out := make([]telemetry.ConnCount, 0, len(m.order)*len(states))
	for _, name := range m.order {
		n := map[State]int{}
		for _, c := range cs[name] {
			c.mu.Lock()
			n[c.state]++
			c.mu.Unlock()
		}
		for _, st := range states {
			out = append(out, telemetry.ConnCount{Server: name, State: string(st), Count: n[st]})
		}
	}
	return out
}

// Servers lists the configured servers in config order.
func (m *Manager) Servers() []ServerConfig {
	out := make([]ServerConfig, len(m.order))
	for i, n := range m.order {
		out[i] = m.servers[n]
	}
	return out
}

// Server returns one server's config.
func (m *Manager) Server(name string) (ServerConfig, bool) {
	s, ok := m.servers[name]
	return s, ok
}

// Start connects the app-scoped servers marked for start-up and lists their
// tools, in parallel, each bounded by its InitTimeout and Timeout, and returns when every one has connected or failed.
// A failure is logged and kept in the server's state; it never fails Start.
func (m *Manager) Start(ctx context.Context) {
	var g errgroup.Group
	for _, name := range m.order {
		s := m.servers[name]
		if s.Scope != ScopeApp || !s.Startup {
			continue
		}
		c, err := m.conn(s.Name, nil)
		if err != nil {
			break // closed: nothing more to start
		}
		g.Go(func() error {
			// Its tools are listed too, so that its status counts them
			// before anything asks for them.
			if _, err := c.tools(ctx); err != nil {
				m.log.Warn("mcp server failed to start", slog.String("mcp_server", s.Name), slog.String("err", err.Error()))
			} else {
				m.log.Info("mcp server connected", slog.String("mcp_server", s.Name), slog.String("transport", s.Transport))
			}
			return nil
		})
	}
	_ = g.Wait()
}

// Run closes idle user connections until ctx is done, then closes everything.
func (m *Manager) Run(ctx context.Context) error {
	tick := min(m.opts.IdleTimeout/4, time.Minute)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return m.Close()
		case <-t.C:
			m.closeIdle()
		}
	}
}

func (m *Manager) closeIdle() {
	m.mu.Lock()
	var idle []*conn
	for k, c := range m.conns {
		if k.user != "" && c.idleFor() >= m.opts.IdleTimeout {
			idle = append(idle, c)
			delete(m.conns, k)
		}
	}
	m.mu.Unlock()
	for _, c := range idle {
		m.log.Debug("closing idle mcp connection", slog.String("mcp_server", c.cfg.Name), slog.String("user_id", c.user.ID))
		c.close()
	}
}

// Close closes every connection and kills every stdio child. After it every use
// of the manager fails with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	conns := m.conns
	m.conns = map[connKey]*conn{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.close)
	}
	wg.Wait()
	if tr, ok := m.http.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
	return nil
}

// errUnknownServer is returned for a server name that is not configured.
func errUnknownServer(name string) error {
	return fmt.Errorf("no MCP server named %q in mcpServers", name)
}

// ErrClosed is returned for any use of a Manager after Close.
var ErrClosed = errors.New("MCP manager closed")

// conn returns the connection for a server and user (nil user for app scope),
// creating it (not yet connected) if needed. After Close there are none: a
// connection made then would start a stdio child nothing would ever stop.
func (m *Manager) conn(server string, u *User) (*conn, error) {
	s := m.servers[server]
	key := connKey{server: server}
	if s.Scope == ScopeUser {
		if u == nil {
			u = &User{}
		}
		key.user = u.ID
	} else {
		u = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	c, ok := m.conns[key]
	if ok && key.user != "" && !s.fillsAlike(c.user, u, m.opts.Getenv) {
		// The user's details the config names have changed (a new name):
		// the connection is made afresh with them, as after new
		// customUserVars. The old one ends once its calls have.
		delete(m.conns, key)
		c.retire()
		ok = false
	}
	if !ok {
		c = newConn(m, s, u)
		m.conns[key] = c
	}
	return c, nil
}

// Status reports every server's state; for user-scoped servers, that of u's
// connection (nil u: how many users are connected, and the state of any one).
func (m *Manager) Status(u *User) []ServerStatus {
	out := make([]ServerStatus, 0, len(m.order))
	for _, name := range m.order {
		s := m.servers[name]
		st := ServerStatus{Name: name, Transport: s.Transport, Scope: s.Scope, State: StateDisconnected, OAuth: s.OAuth != nil, UserVars: s.UserVars}
		m.mu.Lock()
		var cs []*conn
		for k, c := range m.conns {
			if k.server == name && (u == nil || s.Scope == ScopeApp || k.user == u.ID) {
				cs = append(cs, c)
			}
		}
		m.mu.Unlock()
		st.Connections = len(cs)
		for _, c := range cs {
			cst := c.status()
			if st.State != StateConnected {
				st.State, st.LastError, st.ConnectedSince, st.ToolCount = cst.State, cst.LastError, cst.ConnectedSince, cst.ToolCount
			}
		}
		out = append(out, st)
	}
	return out
}

// Tools lists a server's tools for u, connecting if needed.
func (m *Manager) Tools(ctx context.Context, server string, u *User) ([]Tool, error) {
	if _, ok := m.servers[server]; !ok {
		return nil, errUnknownServer(server)
	}
	c, err := m.conn(server, u)
	if err != nil {
		return nil, err
	}
	ts, err := c.tools(ctx)
	if NeedsUser(err) {
		// The tools as another user's connection last listed them, so that
		// the model can still call one and read what the user must do.
		m.toolsMu.Lock()
		known, ok := m.known[server]
		m.toolsMu.Unlock()
		if ok {
			return known, nil
		}
	}
	return ts, err
}

// Disconnect closes one user's connection to a server (every user's when
// userID is empty), so that the next use connects with the user's current
// variables and authorization.
func (m *Manager) Disconnect(server, userID string) {
	m.mu.Lock()
	var cs []*conn
	for k, c := range m.conns {
		if k.server == server && k.user != "" && (userID == "" || k.user == userID) {
			cs = append(cs, c)
			delete(m.conns, k)
		}
	}
	m.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// Instructions returns the server's prompt instructions: the configured text, or
// with serverInstructions: true the server's own (connecting if needed).
func (m *Manager) Instructions(ctx context.Context, server string, u *User) (string, error) {
	s, ok := m.servers[server]
	if !ok {
		return "", errUnknownServer(server)
	}
	if !s.InstructionsFromServer {
		return s.Instructions, nil
	}
	c, err := m.conn(server, u)
	if err != nil {
		return "", err
	}
	sess, err := c.session(ctx)
	if err != nil {
		return "", err
	}
	return sess.Instructions(), nil
}

// Reconnect drops a server's app connection (or every user's) and connects again,
// listing the tools of an app-scoped one.
func (m *Manager) Reconnect(ctx context.Context, server string) error {
	s, ok := m.servers[server]
	if !ok {
		return errUnknownServer(server)
	}
	m.mu.Lock()
	var cs []*conn
	for k, c := range m.conns {
		if k.server == server {
			cs = append(cs, c)
			delete(m.conns, k)
		}
	}
	m.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
	if s.Scope == ScopeUser {
		return nil // user connections open again on next use
	}
	c, err := m.conn(server, nil)
	if err != nil {
		return err
	}
	// Its tools are listed too, as at Start, so that its status counts them
	// again.
	_, err = c.tools(ctx)
	return err
}

// Resolve maps a tool key the model used back to its server and tool. Keys of
// servers whose tools have not been listed yet are resolved by their name parts.
func (m *Manager) Resolve(key string) (server, tool string, err error) {
	if s, t, ok := m.names.Lookup(key); ok {
		return s, t, nil
	}
	t, s, ok := SplitKey(key)
	if ok {
		for _, name := range m.order {
			if NamedBy(name, s) {
				return name, t, nil
			}
		}
	}
	return "", "", fmt.Errorf("no MCP tool %q", key)
}

// ResolveFor is Resolve for u, for a key that may be shortened or
// disambiguated (docs/mcp.md "Tool keys"): such a key names its server only
// through the tools the server lists, so the servers it may belong to (all
// whose key it could be) list their tools for u first when no listing in this
// process has handed it out yet, as when a user-scoped server is called, or
// `relay mcp call` runs, before any run listed them.
func (m *Manager) ResolveFor(ctx context.Context, u *User, key string) (server, tool string, err error) {
	server, tool, err = m.Resolve(key)
	if err == nil || !shortened(key) {
		return server, tool, err
	}
	// The server's part of the key, as far as it survived the cut.
	prefix := key[:len(key)-9]
	var serverPart string
	if i := strings.LastIndex(prefix, Delimiter); i >= 0 {
		serverPart = prefix[i+len(Delimiter):]
	}
	for _, name := range m.order {
		if !strings.HasPrefix(NormaliseServer(name), serverPart) {
			continue
		}
		if _, lerr := m.Tools(ctx, name, u); lerr != nil {
			continue
		}
		if s, t, ok := m.names.Lookup(key); ok {
			return s, t, nil
		}
	}
	return "", "", err
}

// Call calls a tool by its key for u, after validating args against the tool's
// schema. A failure the model should see (bad arguments, timeout, transport or
// JSON-RPC error) is returned as a Go error; FailureText renders it. The call's
// time limit is the server's Timeout, restarted by each progress notification;
// it covers all the call waits for: a connect, the tool listing and tools/call.
func (m *Manager) Call(ctx context.Context, u *User, key string, args json.RawMessage) (*sdk.CallToolResult, error) {
	server, tool, err := m.ResolveFor(ctx, u, key)
	if err != nil {
		return nil, err
	}
	c, err := m.conn(server, u)
	if err != nil {
		return nil, err
	}
	c.inflight.Add(1)
	defer func() {
		c.touch()
		if c.inflight.Add(-1) == 0 && c.retired.Load() {
			c.close()
		}
	}()
	ctx, measured := m.opts.Telemetry.StartTool(ctx, server, tool)
	res, err := m.call(ctx, c, server, tool, args)
	if _, ok := errors.AsType[*noToolError](err); ok {
		measured.NoSuchTool()
	}
	measured.End(res != nil && res.IsError, err)
	return res, err
}

// call is Call on the connection c to server, within the server's timeout.
func (m *Manager) call(ctx context.Context, c *conn, server, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	// One time limit for the whole call: waiting for a connect or reconnect and
	// listing the tools count against it too (docs/mcp.md "Connections": a call never waits longer
	// than its own timeout). Progress notifications restart it.
	timeout := c.cfg.Timeout
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := &callTimer{timeout: timeout}
	t.timer = time.AfterFunc(timeout, func() { cancel(errTimeout) })
	defer t.timer.Stop()
	// While the user is asked a question of the server (or its model
	// samples), the limit is held: the server is waiting, not stuck.
	ctx = withHold(ctx, t.hold)
	res, err := c.callTool(ctx, tool, args, t.restart)
	if err != nil && errors.Is(context.Cause(ctx), errTimeout) {
		return nil, fmt.Errorf("no answer from %q within %s (timeout)", server, timeout)
	}
	return res, err
}

// callTimer is a call's time limit: restarted by progress, held while the
// server waits for the user or the model.
type callTimer struct {
	timeout time.Duration
	timer   *time.Timer

	mu   sync.Mutex
	held int // the questions and samplings in progress
}

// restart starts the limit again, unless it is held.
func (t *callTimer) restart() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held == 0 {
		t.timer.Reset(t.timeout)
	}
}

// hold stops the limit until every hold is released; it then starts afresh.
func (t *callTimer) hold() func() {
	t.mu.Lock()
	t.held++
	t.timer.Stop()
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.held--; t.held == 0 {
				t.timer.Reset(t.timeout)
			}
		})
	}
}

// callTool finds the tool, checks args against its schema and calls it; progress
// is called on each progress notification of the call.
func (c *conn) callTool(ctx context.Context, tool string, args json.RawMessage, progress func()) (*sdk.CallToolResult, error) {
	server := c.cfg.Name
	tools, err := c.tools(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == tool })
	if i < 0 {
		// The list may be older than the tool (a server that added it without
		// saying so): list once more before giving up.
		c.toolsChanged()
		if tools, err = c.tools(ctx); err != nil {
			return nil, err
		}
		if i = slices.IndexFunc(tools, func(t Tool) bool { return t.Name == tool }); i < 0 {
			return nil, &noToolError{server: server, tool: tool}
		}
	}
	if err := tools[i].args.Validate(args); err != nil {
		return nil, err
	}
	return c.call(ctx, tool, args, progress)
}

// noToolError is the failure of a call of a tool the server does not have.
type noToolError struct{ server, tool string }

func (e *noToolError) Error() string {
	return fmt.Sprintf("server %q has no tool %q", e.server, e.tool)
}

// conn is one connection to one server, for everyone (app scope) or one user.
type conn struct {
	m    *Manager
	cfg  ServerConfig
	user *User

	mu             sync.Mutex
	state          State
	sess           *Session
	lastErr        string
	connectedSince time.Time // with its monotonic reading, for StableAfter; shown in UTC
	toolList       []Tool    // nil: not listed yet, or changed since
	toolsGen       uint64    // counts the changes of the server's tools, so that a listing older than one is not kept
	failures       int       // failed attempts since the server last worked; see Options.StableAfter
	lastAttempt    time.Time
	attempt        chan struct{} // closed when the connect in flight ends; nil when none
	retry          *time.Timer   // the scheduled reconnect, if any
	closed         bool
	redact         *redactor         // cleans this connection's errors; see redactor
	needs          error             // what the user must do first (NeedsUser), when the last attempt said so
	vars           map[string]string // the user's customUserVars values the session was made with

	varsRead atomic.Int64 // unix nanoseconds: when vars were last read from Users

	inflight atomic.Int64
	retired  atomic.Bool  // replaced in the manager; closed when no call is in flight
	lastUsed atomic.Int64 // unix nanoseconds
	tokens   sync.Map     // progress token → func() that restarts the call's timer
	nextTok  atomic.Int64
}

func newConn(m *Manager, cfg ServerConfig, u *User) *conn {
	c := &conn{m: m, cfg: cfg, user: u, state: StateDisconnected}
	c.redact = newRedactor(cfg.resolve(u, nil, m.opts.Getenv))
	c.touch()
	return c
}

func (c *conn) touch() { c.lastUsed.Store(time.Now().UnixNano()) }

func (c *conn) idleFor() time.Duration {
	if c.inflight.Load() > 0 {
		return 0
	}
	return time.Since(time.Unix(0, c.lastUsed.Load()))
}

func (c *conn) status() ServerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := ServerStatus{State: c.state, LastError: c.lastErr, ToolCount: len(c.toolList)}
	if c.state == StateConnected {
		t := c.connectedSince.UTC()
		st.ConnectedSince = &t
	}
	return st
}

func (c *conn) logger() *slog.Logger {
	return c.userLogger().With(slog.String("mcp_server", c.cfg.Name))
}

// userLogger is the manager's logger with the connection's user, if any.
func (c *conn) userLogger() *slog.Logger {
	if c.user != nil {
		return c.m.log.With(slog.String("user_id", c.user.ID))
	}
	return c.m.log
}

// clean passes an error through the connection's redactor: every error of a
// connection is cleaned before it is stored, logged or returned.
func (c *conn) clean(err error) error {
	c.mu.Lock()
	r := c.redact
	c.mu.Unlock()
	return r.err(err)
}

// session returns the connected session, connecting if needed. It waits no longer
// than ctx allows; the connect itself is bounded by InitTimeout and goes on for
// other callers if this one gives up.
func (c *conn) session(ctx context.Context) (*Session, error) {
	s, err := c.connected(ctx)
	if err == nil && c.varsChanged(ctx) {
		c.renew(s)
		s, err = c.connected(ctx)
	}
	return s, c.clean(err)
}

// varsChanged reports whether the user's customUserVars values are no longer
// those the session was made with, reading them at most once per
// Options.VarsRecheck. A failed read is not a change: the session goes on.
func (c *conn) varsChanged(ctx context.Context) bool {
	if c.user == nil || c.cfg.Scope != ScopeUser || len(c.cfg.UserVars) == 0 || c.m.opts.Users == nil {
		return false
	}
	now, last := time.Now().UnixNano(), c.varsRead.Load()
	if time.Duration(now-last) < c.m.opts.VarsRecheck || !c.varsRead.CompareAndSwap(last, now) {
		return false
	}
	vars, err := c.m.opts.Users.Vars(ctx, c.cfg.Name, c.user.ID)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !maps.Equal(vars, c.vars)
}

// renew forgets sess, which works but was made with what has changed since,
// and closes it, so that the next use connects afresh.
func (c *conn) renew(sess *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.sess != sess {
		return
	}
	c.logger().Debug("reconnecting with the user's new settings")
	c.sess, c.state, c.toolList = nil, StateDisconnected, nil
	go sess.Close()
}

func (c *conn) connected(ctx context.Context) (*Session, error) {
	c.touch()
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return nil, errors.New("connection closed")
		case c.state == StateConnected:
			s := c.sess
			c.mu.Unlock()
			return s, nil
		case c.attempt == nil && c.failures >= c.m.opts.MaxAttempts && time.Since(c.lastAttempt) < c.m.opts.RetryAfter:
			err := fmt.Errorf("server %q is unavailable (%s); next retry %s", c.cfg.Name, c.lastErr, c.lastAttempt.Add(c.m.opts.RetryAfter).Format(time.TimeOnly))
			c.mu.Unlock()
			return nil, err
		}
		if c.attempt == nil {
			c.startAttemptLocked()
		}
		wait := c.attempt
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for server %q to connect: %w", c.cfg.Name, context.Cause(ctx))
		}
		c.mu.Lock()
		if c.state != StateConnected && !c.closed {
			err := fmt.Errorf("server %q: %s", c.cfg.Name, c.lastErr)
			if c.needs != nil {
				err = c.needs // kept whole, so that callers can tell it apart
			}
			c.mu.Unlock()
			return nil, err
		}
		c.mu.Unlock()
	}
}

// startAttemptLocked begins one connect attempt in the background.
func (c *conn) startAttemptLocked() {
	if c.retry != nil {
		c.retry.Stop()
		c.retry = nil
	}
	done := make(chan struct{})
	c.attempt = done
	c.state = StateConnecting
	c.lastAttempt = time.Now()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.InitTimeout)
		defer cancel()
		uid := ""
		if c.user != nil {
			uid = c.user.ID
		}
		var (
			sess *Session
			red  *redactor
		)
		cfg, err := c.userConfig(ctx, uid)
		if err == nil {
			var substituted []string
			cfg, substituted = cfg.resolve(c.user, cfg.vars, c.m.opts.Getenv)
			red = newRedactor(cfg.ServerConfig, substituted)
			c.mu.Lock()
			c.redact = red
			c.mu.Unlock()
			sess, err = Connect(ctx, cfg.ServerConfig, ConnectOptions{
				UserID: uid, Version: c.m.opts.Version, ToolsChanged: c.toolsChanged, Progress: c.progress,
				HTTP: c.m.http, Logger: c.userLogger(), Authorization: cfg.auth, Telemetry: c.m.opts.Telemetry,
			})
			if err != nil && ctx.Err() != nil && !NeedsUser(err) {
				err = fmt.Errorf("no answer to initialize within initTimeout (%s)", c.cfg.InitTimeout)
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.attempt = nil
		if red == nil {
			red = c.redact
		}
		if c.closed {
			if sess != nil {
				go sess.Close()
			}
			return
		}
		if NeedsUser(err) {
			// Not the server's failure: nothing is retried until the user acts,
			// and the next use tries again at once.
			c.state, c.lastErr = StateAuthRequired, red.text(err.Error())
			c.needs = err
			return
		}
		c.needs = nil
		if err != nil {
			c.failures++
			c.state, c.lastErr = StateError, red.text(err.Error())
			c.logger().Warn("mcp connect failed", slog.Int("attempt", c.failures), slog.String("err", c.lastErr))
			c.scheduleRetryLocked()
			return
		}
		// failures is kept: a server that only connects has not shown it works.
		c.sess, c.state, c.lastErr, c.connectedSince = sess, StateConnected, "", time.Now()
		c.vars = cfg.vars
		c.varsRead.Store(time.Now().UnixNano())
		c.toolList = nil
		go c.watch(sess)
	}()
}

// scheduleRetryLocked plans the next reconnect with exponential backoff, until
// MaxAttempts have failed; after that the next use retries.
func (c *conn) scheduleRetryLocked() {
	if c.failures >= c.m.opts.MaxAttempts || c.closed {
		return
	}
	d := c.m.opts.BackoffBase << (c.failures - 1)
	if d > c.m.opts.BackoffMax || d <= 0 {
		d = c.m.opts.BackoffMax
	}
	c.retry = time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.closed && c.attempt == nil && c.state != StateConnected {
			c.startAttemptLocked()
		}
	})
}

// watch notices when a session ends on its own (the child died, the server went
// away) and reconnects.
func (c *conn) watch(sess *Session) {
	err := sess.Wait()
	sess.killGroup()
	if err == nil {
		err = errors.New("connection closed")
	}
	c.lost(sess, err)
}

// lost records that sess no longer works and plans a reconnect; the next use
// reconnects at once.
func (c *conn) lost(sess *Session, err error) { c.drop(sess, err, true) }

// drop forgets sess, which no longer works, and closes it. A counted drop is a
// failed attempt (see Options.StableAfter) and plans a reconnect; an uncounted
// one (the server only forgot the session) plans none, as its caller
// reconnects at once.
func (c *conn) drop(sess *Session, err error, counted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.sess != sess {
		return
	}
	if ue, ok := userError(err); ok {
		// The user's grant was revoked or has run out: not the server's
		// failure, and nothing is retried until the user connects again.
		c.sess, c.state, c.lastErr, c.toolList, c.needs = nil, StateAuthRequired, c.redact.text(ue.Error()), nil, err
		go sess.Close()
		return
	}
	msg := c.redact.text(err.Error())
	c.logger().Warn("mcp connection lost", slog.String("err", msg))
	c.sess, c.state, c.lastErr, c.toolList = nil, StateError, "connection lost: "+msg, nil
	if counted {
		if time.Since(c.connectedSince) >= c.m.opts.StableAfter {
			c.failures = 0
		}
		c.failures++
		c.scheduleRetryLocked()
	}
	go sess.Close()
}

// sessionGone reports whether a request on sess failed because the server no
// longer knows the session (see staleProbe), and if so drops sess, so that the
// caller's next c.session starts a new one with a new initialize. A request
// abandoned by its caller is never sent again.
func (c *conn) sessionGone(ctx context.Context, sess *Session, p *staleProbe, err error) bool {
	status, ok := p.refused()
	if !ok || context.Cause(ctx) != nil {
		return false
	}
	c.drop(sess, fmt.Errorf("server no longer knows the session (HTTP %d): %w", status, err), false)
	return true
}

// transportFailure reports whether a call's error means the connection itself is
// gone (as opposed to an error answer, a timeout or a cancellation).
func transportFailure(err error) bool {
	// The go-sdk flattens some causes into text ("rejected by transport: …"),
	// so the words are checked too, before the error's kind.
	msg := err.Error()
	for _, words := range []string{"connection refused", "connection reset", "broken pipe", "rejected by transport"} {
		if strings.Contains(msg, words) {
			return true
		}
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return false // the server answered
	}
	var netErr *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sdk.ErrConnectionClosed) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr)
}

// retire closes c, which the manager no longer hands out, now or when its
// last call in flight ends.
func (c *conn) retire() {
	c.retired.Store(true)
	if c.inflight.Load() == 0 {
		go c.close()
	}
}

func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	sess := c.sess
	c.sess, c.state = nil, StateDisconnected
	if c.retry != nil {
		c.retry.Stop()
	}
	c.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
}

// toolsChanged forgets the listed tools; it runs on notifications/tools/list_changed
// and when a call names a tool the list lacks.
func (c *conn) toolsChanged() {
	c.mu.Lock()
	c.toolList = nil
	c.toolsGen++
	c.mu.Unlock()
}

// listingsPerChange bounds how many times tools lists again because the tools
// changed while they were being listed.
const listingsPerChange = 3

// tools lists the server's tools (following pagination), cached until the server
// says they changed. A listing during which they changed may predate the change:
// it is not kept, and the tools are listed again (a server that adds tools once
// initialized, as the reference server does, says so while Relay's first
// listing is in flight), at most listingsPerChange times in all; the last is
// returned but not kept when even it saw a change.
func (c *conn) tools(ctx context.Context) ([]Tool, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	cached, gen := c.toolList, c.toolsGen
	c.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var list listing
	for range listingsPerChange {
		list, err = c.listTools(ctx, sess)
		if err != nil && c.sessionGone(ctx, sess, list.probe, err) {
			// Once more on a new session, within the same time limit.
			if sess, err = c.session(ctx); err != nil {
				return nil, err
			}
			list, err = c.listTools(ctx, sess)
		}
		if err != nil {
			if transportFailure(err) {
				c.lost(sess, err)
			}
			return nil, c.clean(fmt.Errorf("listing tools of %q: %w", c.cfg.Name, err))
		}
		c.mu.Lock()
		kept := c.sess == sess && c.toolsGen == gen
		if kept {
			c.toolList = list.tools
		}
		changed := c.sess == sess && !kept
		gen = c.toolsGen
		c.mu.Unlock()
		if !changed {
			break
		}
	}
	if c.cfg.Scope == ScopeUser {
		c.m.toolsMu.Lock()
		if c.m.known == nil {
			c.m.known = map[string][]Tool{}
		}
		c.m.known[c.cfg.Name] = list.tools
		c.m.toolsMu.Unlock()
	}
	return list.tools, nil
}

// listing is one listing of a server's tools, with the probe its requests carried.
type listing struct {
	tools []Tool
	probe *staleProbe
}

// listTools lists the tools of sess, following pagination.
func (c *conn) listTools(ctx context.Context, sess *Session) (listing, error) {
	ctx, probe := withStaleProbe(ctx)
	list := listing{tools: []Tool{}, probe: probe}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return list, err
		}
		raw, _ := sess.InputSchema(t.Name)
		list.tools = append(list.tools, c.m.intern(c.cfg.Name, t, raw, c.logger()))
	}
	return list, nil
}

var errTimeout = errors.New("timed out")

func (c *conn) progress(p *sdk.ProgressNotificationParams) {
	if restart, ok := c.tokens.Load(fmt.Sprint(p.ProgressToken)); ok {
		restart.(func())()
	}
}

// call runs tools/call within ctx, calling progress on each progress
// notification (Call restarts its time limit there). Cancelling ctx cancels the
// request on the server (notifications/cancelled). A call the server refused
// because it no longer knows the session is sent once more on a new session.
func (c *conn) call(ctx context.Context, tool string, args json.RawMessage, progress func()) (*sdk.CallToolResult, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	token := "relay-" + strconv.FormatInt(c.nextTok.Add(1), 10)
	c.tokens.Store(token, progress)
	defer c.tokens.Delete(token)

	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(token)
	pctx, probe := withStaleProbe(ctx)
	res, err := sess.CallTool(pctx, params)
	if err != nil && c.sessionGone(ctx, sess, probe, err) {
		// The server did not run the call: once more, on a new session and
		// within the same time limit; a second refusal is the call's error.
		if sess, err = c.session(ctx); err != nil {
			return nil, err
		}
		res, err = sess.CallTool(ctx, params)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, c.clean(fmt.Errorf("cancelled: %w", cause))
		}
		if transportFailure(err) {
			c.lost(sess, err)
			if sess.cmd != nil {
				// A stdio server that died in the call: its exit status and
				// last words on stderr say why, where a bare EOF would not.
				// Close waits for the child, which has ended or is killed.
				// Its env values are masked there, as when it fails to start.
				_ = sess.Close()
				var env []string
				for _, kv := range sess.cmd.Env {
					if k, v, _ := strings.Cut(kv, "="); c.cfg.Env[k] != "" {
						env = append(env, v)
					}
				}
				err = newRedactor(ServerConfig{}, env).err(childEnded(sess.cmd, err))
			}
		}
		return nil, c.clean(err)
	}
	c.mu.Lock()
	if c.sess == sess {
		c.failures = 0 // the server works
	}
	c.mu.Unlock()
	return res, nil
}
