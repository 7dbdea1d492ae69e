package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/netguard"
	"github.com/relay-ai/relay/internal/secret"
)

// Validate checks the whole configuration and returns a fault.Invalid error that
// lists every problem, each as its dotted path (with file:line:column when it
// came from the file, or the environment variable that set it) and a message.
// Load calls it; call it again after changing a Config, e.g. to apply flags.
func (c *Config) Validate() error {
	c.complete()
	return c.validate(nil, nil)
}

// validate adds the problems of c to those found while decoding, leaving out
// fields that already failed to decode.
func (c *Config) validate(decoded []problem, bad []string) error {
	v := &validator{c: c}
	v.server()
	v.database()
	v.endpoints()
	v.mcpServers()
	v.agents()
	v.memory()
	v.summarization()
	v.webSearch()
	v.rag()
	v.scheduler()
	v.limits()
	v.auth()
	v.secrets()
	v.metrics()

	all := decoded
	for _, p := range v.problems {
		if !slices.ContainsFunc(bad, func(b string) bool { return within(p.path, b) }) {
			all = append(all, p)
		}
	}
	if len(all) == 0 {
		return nil
	}
	fs := make([]fault.FieldError, len(all))
	for i, p := range all {
		field := p.path
		if p.where != "" {
			field = strings.TrimSuffix(p.where+": "+p.path, ": ")
		}
		fs[i] = fault.FieldError{Field: field, Message: p.msg}
	}
	msg := "invalid config"
	if c.Path != "" {
		msg += " " + c.Path
	}
	return &fault.Error{Kind: fault.Invalid, Message: msg, Fields: fs}
}

// within reports whether path is base or below it.
func within(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+".") || strings.HasPrefix(path, base+"[")
}

type validator struct {
	c        *Config
	problems []problem
}

// add records a problem at path, pointing at where the value (or the nearest
// enclosing one) was written.
func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, problem{where: v.c.whereOf(path), path: path, msg: fmt.Sprintf(format, args...)})
}

// whereOf returns the position of path's value, or of the closest enclosing
// value when path itself was not written (a missing key, a list item).
func (c *Config) whereOf(path string) string {
	for p := path; p != ""; p = parentPath(p) {
		if w, ok := c.where[p]; ok {
			return w
		}
	}
	return ""
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"text", "json"}
	memoryKey  = regexp.MustCompile(`^[a-z_]+$`)
)

// minMetricsToken is the shortest metrics.token accepted: a token that
// guards what Relay's metrics tell must not be guessable.
const minMetricsToken = 16

func (v *validator) metrics() {
	m := v.c.Metrics
	if m.Addr != "" {
		host, port, err := net.SplitHostPort(m.Addr)
		switch {
		case err != nil || port == "":
			v.add("metrics.addr", "%q is not a host:port address (e.g. 127.0.0.1:9090 or :9090)", m.Addr)
		case samePort(host, port, v.c.Server.Addr):
			v.add("metrics.addr", "%q is server.addr's port: the metrics need a listener of their own (or set metrics.token to serve them on server.addr)", m.Addr)
		}
	}
	if m.Pprof && m.Addr == "" {
		v.add("metrics.pprof", "needs metrics.addr: the profiles are served on its listener only")
	}
	switch t := m.Token; {
	case t == "":
	case placeholder.MatchString(t):
		v.add("metrics.token", "names an environment variable that is not set")
	case len(t) < minMetricsToken:
		v.add("metrics.token", "must be at least %d characters", minMetricsToken)
	case strings.ContainsFunc(t, unicode.IsSpace):
		v.add("metrics.token", "must not contain spaces")
	}
}

// samePort reports whether a listener on host:port would take the port of
// addr: the same port, on the same host or where either is every interface.
func samePort(host, port, addr string) bool {
	h2, p2, err := net.SplitHostPort(addr)
	if err != nil || port != p2 {
		return false
	}
	any := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return host == h2 || any(host) || any(h2)
}

func (v *validator) server() {
	s := v.c.Server
	if _, port, err := net.SplitHostPort(s.Addr); err != nil || port == "" {
		v.add("server.addr", "%q is not a host:port address (e.g. 127.0.0.1:3080 or :3080)", s.Addr)
	}
	if strings.TrimSpace(s.DataDir) == "" {
		v.add("server.data_dir", "required")
	}
	if _, err := v.c.Location(); err != nil {
		v.add("server.timezone", "unknown time zone %q (use an IANA name such as Europe/Amsterdam, or leave it empty for the local zone)", s.Timezone)
	}
	if s.MaxBodyBytes <= 0 {
		v.add("server.max_body_bytes", "must be greater than 0")
	}
	if s.ShutdownTimeout.Duration <= 0 {
		v.add("server.shutdown_timeout", "must be greater than 0")
	}
	if !slices.Contains(logLevels, s.LogLevel) {
		v.add("server.log_level", "must be one of %s, got %q", strings.Join(logLevels, ", "), s.LogLevel)
	}
	if !slices.Contains(logFormats, s.LogFormat) {
		v.add("server.log_format", "must be text or json, got %q", s.LogFormat)
	}
	if s.MemoryLimitMB < 0 {
		v.add("server.memory_limit_mb", "must be 0 (no limit) or more")
	}
	if s.GCPercent < -1 || s.GCPercent == 0 {
		v.add("server.gc_percent", "must be greater than 0, or -1 to collect only at server.memory_limit_mb")
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"read_header_timeout", s.ReadHeaderTimeout}, {"read_timeout", s.ReadTimeout}, {"idle_timeout", s.IdleTimeout}} {
		if d.v.Duration <= 0 {
			v.add("server."+d.key, "must be greater than 0")
		}
	}
	if s.MaxHeaderBytes < 4<<10 {
		v.add("server.max_header_bytes", "must be at least 4096")
	}
	for i, o := range s.CORSOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			v.add(fmt.Sprintf("server.cors_origins[%d]", i), "%q is not an origin (scheme://host[:port], e.g. https://app.example.com) or \"*\"", o)
		}
	}
	for i, e := range s.AllowedAddresses {
		if err := netguard.CheckEntry(e); err != nil {
			v.add(fmt.Sprintf("server.allowed_addresses[%d]", i), "%q: %v (give an IP address, a CIDR or a host name, each with an optional :port)", e, err)
		}
	}
	if s.PublicURL != "" {
		u, err := url.Parse(s.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			v.add("server.public_url", "%q is not the URL people open (scheme://host[:port][/path], e.g. https://relay.example.com)", maskURL(s.PublicURL))
		}
	}
	if s.Procs < 0 {
		v.add("server.procs", "must be 0 (follow the load) or a number of threads")
	}
	if s.GCPercent == -1 && s.MemoryLimitMB == 0 {
		v.add("server.gc_percent", "-1 needs server.memory_limit_mb, or memory would grow without bound")
	}
}

// maxWriteBehind bounds database.write_behind, as the store's WriteBehind
// does: the most of a process's writes that its crash may lose.
const maxWriteBehind = time.Second

func (v *validator) database() {
	if _, _, err := v.c.DB(); err != nil {
		v.add("database.url", "%s", strings.TrimPrefix(err.Error(), "database.url: "))
	}
	if v.c.Database.ConnectTimeout.Duration <= 0 {
		v.add("database.connect_timeout", "must be greater than 0")
	}
	switch wb := v.c.Database.WriteBehind.Duration; {
	case wb < 0 || wb > maxWriteBehind:
		v.add("database.write_behind", "must be between 0 and %s", maxWriteBehind)
	case wb > 0:
		if engine, _, err := v.c.DB(); err == nil && engine != "sqlite" {
			v.add("database.write_behind", "is for SQLite only: with %s, other processes read what this one writes", engine)
		}
	}
}

var (
	urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]+):`)
	libpqDSN  = regexp.MustCompile(`(^|\s)(host|dbname|user|password|sslmode)=`)
)

// DB returns the database engine and what to open: "sqlite" and a file path, or
// "postgres" and the URL. database.url may be empty (SQLite at
// <data_dir>/relay.db), a file path, sqlite:PATH, sqlite://PATH (so
// sqlite:///abs/relay.db is absolute), or a postgres:// or postgresql:// URL.
// Errors never include a password.
func (c *Config) DB() (engine string, dsn string, err error) {
	u := strings.TrimSpace(c.Database.URL)
	if u == "" {
		return "sqlite", filepath.Join(c.Server.DataDir, "relay.db"), nil
	}
	m := urlScheme.FindStringSubmatch(u)
	if m == nil {
		if libpqDSN.MatchString(u) {
			return "", "", errors.New("database.url: looks like a key=value connection string; write it as postgres://user:password@host:5432/dbname")
		}
		return "sqlite", u, nil
	}
	switch scheme := strings.ToLower(m[1]); scheme {
	case "sqlite":
		p := strings.TrimPrefix(u[len(m[0]):], "//")
		if p == "" {
			return "", "", errors.New("database.url: sqlite URL needs a file path, e.g. sqlite:///var/lib/relay/relay.db")
		}
		return "sqlite", p, nil
	case "postgres", "postgresql":
		pu, err := url.Parse(u)
		if err != nil {
			return "", "", errors.New("database.url: not a valid postgres URL (check that special characters in the password are percent-encoded)")
		}
		if pu.Host == "" || pu.Hostname() == "" {
			return "", "", errors.New("database.url: postgres URL needs a host, e.g. postgres://relay@localhost:5432/relay")
		}
		return "postgres", u, nil
	default:
		return "", "", fmt.Errorf("database.url: unsupported scheme %q (use a SQLite file path, sqlite://PATH or postgres://…)", scheme)
	}
}

func (v *validator) endpoints() {
	e := v.c.Endpoints
	for _, b := range []struct {
		name string
		e    Endpoint
	}{{ProviderOpenAI, e.OpenAI}, {ProviderAnthropic, e.Anthropic}, {ProviderGoogle, e.Google}} {
		v.baseURL("endpoints."+b.name+".baseURL", b.e.BaseURL)
	}
	seen := map[string]int{}
	for i, ce := range e.Custom {
		at := fmt.Sprintf("endpoints.custom[%d]", i)
		name := strings.TrimSpace(ce.Name)
		key := strings.ToLower(name)
		switch {
		case name == "":
			v.add(at+".name", "required")
		case slices.ContainsFunc(reservedEndpoints, func(r string) bool { return strings.EqualFold(r, name) }):
			v.add(at+".name", "%q is a built-in endpoint name; choose another", ce.Name)
		default:
			if j, dup := seen[key]; dup {
				v.add(at+".name", "%q is already the name of endpoints.custom[%d] (names are compared without case)", ce.Name, j)
			} else {
				seen[key] = i
			}
		}
		if ce.BaseURL == "" {
			v.add(at+".baseURL", "required: the address of the OpenAI-compatible API (or user_provided)")
		}
		v.baseURL(at+".baseURL", ce.BaseURL)
		for _, model := range slices.Sorted(maps.Keys(ce.TokenConfig)) {
			if ce.TokenConfig[model].Context < 0 {
				v.add(fmt.Sprintf("%s.tokenConfig.%s.context", at, model), "must not be negative (0 means unknown)")
			}
		}
	}
	v.azure()
	for _, t := range e.titleSettings() {
		v.titles(t.path, t.Titles)
	}
	a := e.Agents
	if a.MaxParallelTools < 1 {
		v.add("endpoints.agents.maxParallelTools", "must be at least 1")
	}
	if a.ToolTimeout.Duration < 0 {
		v.add("endpoints.agents.toolTimeout", "must not be negative (0 leaves only each MCP server's own timeout)")
	}
	if a.RecursionLimit < 1 {
		v.add("endpoints.agents.recursionLimit", "must be at least 1")
	}
	if a.MaxToolResultChars < 0 {
		v.add("endpoints.agents.maxToolResultChars", "must not be negative (0 means 30%% of the agent's token budget)")
	}
	if a.MaxRecursionLimit < 1 {
		v.add("endpoints.agents.maxRecursionLimit", "must be at least 1")
	}
	if a.RecursionLimit >= 1 && a.MaxRecursionLimit >= 1 && a.RecursionLimit > a.MaxRecursionLimit {
		v.add("endpoints.agents.recursionLimit", "%d is more than maxRecursionLimit (%d)", a.RecursionLimit, a.MaxRecursionLimit)
	}
}

// titles checks the title settings at path: titleEndpoint names a provider,
// or one of LibreChat's endpoints that Relay does not have, which loads with a
// warning (libreChatValues) and counts as not set (Endpoints.TitlesFor).
func (v *validator) titles(path string, t Titles) {
	if t.TitleEndpoint == "" || v.c.Endpoints.isProvider(t.TitleEndpoint) || isLibreChatEndpoint(t.TitleEndpoint) {
		return
	}
	v.add(path+".titleEndpoint", "%q is not a provider (known: %s)", t.TitleEndpoint, strings.Join(v.c.Providers(), ", "))
}

// isLibreChatEndpoint reports whether name is one of libreChatEndpoints.
func isLibreChatEndpoint(name string) bool {
	return slices.ContainsFunc(libreChatEndpoints, func(e string) bool { return strings.EqualFold(e, name) })
}

// azurePlaceholders are the references an Azure group's baseURL may hold that
// Relay fills per model rather than from the environment.
var azurePlaceholders = strings.NewReplacer("${INSTANCE_NAME}", "instance", "${DEPLOYMENT_NAME}", "deployment")

func (v *validator) azure() {
	groups := v.c.Endpoints.AzureOpenAI.Groups
	seenGroup := map[string]int{}
	// listedIn maps a model to the first group that lists it.
	listedIn := map[string]int{}
	for i, g := range groups {
		at := fmt.Sprintf("endpoints.azureOpenAI.groups[%d]", i)
		name := strings.TrimSpace(g.Group)
		if name == "" {
			v.add(at+".group", "required (a name for the group)")
		} else if j, dup := seenGroup[name]; dup {
			v.add(at+".group", "%q is already the name of endpoints.azureOpenAI.groups[%d]", g.Group, j)
		} else {
			seenGroup[name] = i
		}
		switch {
		case g.Serverless && g.BaseURL == "":
			v.add(at+".baseURL", "required for a serverless group (the endpoint's URL)")
		case !g.Serverless && g.InstanceName == "" && g.BaseURL == "":
			v.add(at, "needs an instanceName (the Azure resource's name) or a baseURL")
		case !g.Serverless && g.InstanceName == "" && strings.Contains(g.BaseURL, "${INSTANCE_NAME}"):
			v.add(at+".baseURL", "uses ${INSTANCE_NAME}, but the group has no instanceName")
		}
		v.baseURL(at+".baseURL", azurePlaceholders.Replace(g.BaseURL))
		if len(g.Models) == 0 {
			v.add(at+".models", "list at least one model (name: true, or name: {deploymentName, version})")
		}
		models := make([]string, 0, len(g.Models))
		for m := range g.Models {
			models = append(models, m)
		}
		slices.Sort(models)
		for _, m := range models {
			mp := mapPath(at+".models", m)
			if strings.TrimSpace(m) == "" {
				v.add(mp, "a model needs a name")
				continue
			}
			if g.Models[m].Off {
				continue
			}
			if j, dup := listedIn[m]; dup {
				v.add(mp, "model %q is already listed by endpoints.azureOpenAI.groups[%d] (%s); a model belongs to one group", m, j, groups[j].Group)
				continue
			}
			listedIn[m] = i
		}
	}
}

// baseURL checks an http(s) URL. A value still holding a ${VAR} reference (its
// variable is not set) can only be checked for its scheme.
func (v *validator) baseURL(path, s string) {
	if s == "" || s == UserProvided {
		return // each user gives their own (docs/config.md)
	}
	if strings.Contains(s, "${") {
		if !strings.HasPrefix(s, "${") && !hasPrefixFold(s, "http://") && !hasPrefixFold(s, "https://") {
			v.add(path, "must be an http:// or https:// URL")
		}
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(path, "must be an http:// or https:// URL with a host, got %q", maskURL(s))
	}
}

var transports = []string{TransportStdio, TransportSSE, TransportStreamableHTTP, TransportWebSocket}

func (v *validator) mcpServers() {
	names := make([]string, 0, len(v.c.MCPServers))
	for name := range v.c.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := v.c.MCPServers[name]
		at := mapPath("mcpServers", name)
		if strings.TrimSpace(name) == "" {
			v.add(at, "a server needs a name")
		}
		switch t := s.Transport(); {
		case t == "":
			v.add(at, "needs a command (stdio) or a url")
		case !slices.Contains(transports, t):
			v.add(at+".type", "must be one of stdio, sse, streamable-http (or http), websocket, got %q", s.Type)
		case t == TransportStdio:
			if strings.TrimSpace(s.Command) == "" {
				v.add(at+".command", "required for a stdio server")
			}
		case t == TransportWebSocket:
			v.mcpURL(at+".url", s.URL, "ws://", "wss://")
		default:
			v.mcpURL(at+".url", s.URL, "http://", "https://")
		}
		if s.Timeout <= 0 {
			v.add(at+".timeout", "must be greater than 0 (milliseconds)")
		}
		if s.InitTimeout <= 0 {
			v.add(at+".initTimeout", "must be greater than 0 (milliseconds)")
		}
		if s.ElicitationTimeout <= 0 {
			v.add(at+".elicitationTimeout", "must be greater than 0 (milliseconds)")
		}
		for i, r := range s.Roots {
			if u, err := url.Parse(r.URI); r.URI == "" || err != nil || u.Scheme == "" {
				v.add(fmt.Sprintf("%s.roots[%d].uri", at, i), "must be a URI with a scheme (file:///…)")
			}
		}
		if s.Sampling.MaxTokens < 0 {
			v.add(at+".sampling.maxTokens", "must be 0 (1024) or more")
		}
		if s.Scope != ScopeApp && s.Scope != ScopeUser {
			v.add(at+".scope", "must be app or user, got %q", s.Scope)
		}
		v.mcpUser(at, s)
	}
}

var userVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// mcpUser checks what a server needs of each user: OAuth and customUserVars
// are per user, so they need a user-scoped server, and OAuth an HTTP transport.
func (v *validator) mcpUser(at string, s MCPServer) {
	perUser := s.UsesOAuth() || len(s.CustomUserVars) > 0
	if perUser && s.Scope == ScopeApp {
		v.add(at+".scope", "must be user (or absent) for a server with requiresOAuth, oauth or customUserVars: each user has their own connection")
	}
	if t := s.Transport(); s.UsesOAuth() && t != "" && t != TransportSSE && t != TransportStreamableHTTP {
		v.add(at+".type", "OAuth needs an sse or streamable-http server, got %s", t)
	}
	if o := s.OAuth; o != nil {
		v.baseURL(at+".oauth.authorization_url", o.AuthorizationURL)
		v.baseURL(at+".oauth.token_url", o.TokenURL)
		v.baseURL(at+".oauth.redirect_uri", o.RedirectURI)
		v.baseURL(at+".oauth.revocation_endpoint", o.RevocationEndpoint)
		if (o.AuthorizationURL == "") != (o.TokenURL == "") {
			v.add(at+".oauth", "authorization_url and token_url go together: give both or neither")
		}
		if o.ClientSecret != "" && o.ClientID == "" {
			v.add(at+".oauth.client_secret", "needs client_id")
		}
		switch o.TokenExchangeMethod {
		case "", "DefaultPost", "BasicAuthHeader":
		default:
			v.add(at+".oauth.token_exchange_method", "must be DefaultPost or BasicAuthHeader, got %q", o.TokenExchangeMethod)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.CustomUserVars)) {
		switch {
		case !userVarName.MatchString(name):
			v.add(at+".customUserVars."+name, "a variable name is letters, digits and _, not starting with a digit")
		case strings.HasPrefix(name, "LIBRECHAT_"):
			v.add(at+".customUserVars."+name, "LIBRECHAT_ names are Relay's own placeholders")
		}
	}
}

// mcpURL checks a remote server's URL against the schemes of its transport. A
// URL with ${VAR} or {{…}} placeholders is substituted per connection, so only
// its scheme can be checked, and only when it does not start with a placeholder.
func (v *validator) mcpURL(path, s string, schemes ...string) {
	want := strings.Join(schemes, " or ")
	if strings.TrimSpace(s) == "" {
		v.add(path, "required (a %s URL)", want)
		return
	}
	okScheme := slices.ContainsFunc(schemes, func(p string) bool { return hasPrefixFold(s, p) })
	if strings.Contains(s, "${") || strings.Contains(s, "{{") {
		if !okScheme && !strings.HasPrefix(s, "${") && !strings.HasPrefix(s, "{{") {
			v.add(path, "must be a %s URL", want)
		}
		return
	}
	u, err := url.Parse(s)
	if err != nil || !okScheme || u.Host == "" {
		v.add(path, "must be a %s URL with a host, got %q", want, maskURL(s))
	}
}

func (v *validator) agents() {
	rules := agent.Rules{Providers: v.c.Providers(), MaxRecursionLimit: v.c.Endpoints.Agents.MaxRecursionLimit}
	seen := map[string]int{}
	for i := range v.c.Agents {
		a := &v.c.Agents[i]
		at := fmt.Sprintf("agents[%d]", i)
		switch j, dup := seen[a.ID]; {
		case a.ID == "":
			v.add(at+".id", "required")
		case !agent.ValidID(a.ID):
			v.add(at+".id", "%q is not an agent id (1 to 64 letters, digits, _ or -)", a.ID)
		case dup:
			v.add(at+".id", "%q is already the id of agents[%d]", a.ID, j)
		default:
			seen[a.ID] = i
		}
		if strings.EqualFold(a.Provider, ProviderAzureOpenAI) && a.Model != "" {
			if _, ok := v.c.Endpoints.Azure(a.Model); !ok {
				v.add(at+".model", "%s", AzureUnlisted(a.Model))
			}
		}
		err := rules.Validate(&a.Spec)
		if err == nil {
			continue
		}
		var fe *fault.Error
		if !errors.As(err, &fe) || len(fe.Fields) == 0 {
			v.add(at, "%s", err)
			continue
		}
		for _, f := range fe.Fields {
			v.add(at+"."+f.Field, "%s", f.Message)
		}
	}
}

func (v *validator) memory() {
	m := v.c.Memory
	for i, k := range m.ValidKeys {
		if !memoryKey.MatchString(k) {
			v.add(fmt.Sprintf("memory.validKeys[%d]", i), "%q must be lower-case letters and _", k)
		}
	}
	if m.TokenLimit < 0 {
		v.add("memory.tokenLimit", "must not be negative")
	}
	if m.MessageWindowSize < 1 {
		v.add("memory.messageWindowSize", "must be at least 1 (the default is %d), got %d", DefaultMessageWindowSize, m.MessageWindowSize)
	}
	// A memory agent that does not run is not checked: turning it off with
	// enabled: false must not need its provider to stay configured.
	if m.RunsAgent() {
		v.memoryAgent(m.Agent)
	}
}

// memoryAgent checks memory.agent: a stored agent's id, or a provider and a
// model, never both.
func (v *validator) memoryAgent(a *MemoryAgent) {
	const at = "memory.agent"
	id, provider, model := strings.TrimSpace(a.ID), strings.TrimSpace(a.Provider), strings.TrimSpace(a.Model)
	if id != "" {
		if !agent.ValidID(id) {
			v.add(at+".id", "%q is not an agent id (1 to 64 letters, digits, _ or -)", a.ID)
		}
		if provider != "" || model != "" {
			v.add(at+".id", "give either id (a stored agent) or provider and model, not both")
		}
		if len(a.ModelParameters) > 0 {
			v.add(at+".model_parameters", "only with provider and model: the agent %q has its own", a.ID)
		}
		return
	}
	if provider == "" && model == "" {
		v.add(at, "give id (a stored agent) or provider and model")
		return
	}
	if provider == "" {
		v.add(at+".provider", "required with model")
	} else if ps := v.c.Providers(); !slices.ContainsFunc(ps, func(p string) bool { return strings.EqualFold(p, provider) }) {
		v.add(at+".provider", "unknown provider %q (known: %s)", a.Provider, strings.Join(ps, ", "))
	}
	if model == "" {
		v.add(at+".model", "required with provider")
	} else if strings.EqualFold(provider, ProviderAzureOpenAI) {
		if _, ok := v.c.Endpoints.Azure(model); !ok {
			v.add(at+".model", "%s", AzureUnlisted(model))
		}
	}
}

func (v *validator) limits() {
	l := v.c.Limits
	for _, n := range []struct {
		key string
		v   int64
	}{
		{"user.files", int64(l.User.Files)}, {"user.storage_mb", l.User.StorageMB},
		{"user.runs_per_minute", int64(l.User.RunsPerMinute)}, {"user.concurrent_runs", int64(l.User.ConcurrentRuns)},
		{"api.key_per_minute", int64(l.API.KeyPerMinute)}, {"api.key_burst", int64(l.API.KeyBurst)},
		{"api.ip_per_minute", int64(l.API.IPPerMinute)}, {"api.ip_burst", int64(l.API.IPBurst)},
	} {
		if n.v < 0 && strings.HasSuffix(n.key, "_burst") {
			v.add("limits."+n.key, "must be 0 (a minute's worth) or more")
		} else if n.v < 0 {
			v.add("limits."+n.key, "must be 0 (no limit) or more")
		}
	}
}

func (v *validator) auth() {
	a := v.c.Auth
	if a.SessionTTL.Duration < time.Minute {
		v.add("auth.session_ttl", "must be at least 1m, got %s", a.SessionTTL.Duration)
	}
	l := a.LoginLimit
	if l.PerEmail < 0 {
		v.add("auth.login_limit.per_email", "must be 0 (no limit) or more")
	}
	if l.PerAddress < 0 {
		v.add("auth.login_limit.per_address", "must be 0 (no limit) or more")
	}
	if l.Window.Duration <= 0 && (l.PerEmail > 0 || l.PerAddress > 0) {
		v.add("auth.login_limit.window", "must be greater than 0")
	}
	o := a.OIDC
	if !o.Enabled() {
		if o.ClientID != "" || o.ClientSecret != "" || o.RedirectURL != "" {
			v.add("auth.oidc.issuer", "required with client_id, client_secret or redirect_url (the provider's issuer URL, e.g. https://accounts.google.com)")
		}
		return
	}
	v.baseURL("auth.oidc.issuer", o.Issuer)
	if o.ClientID == "" {
		v.add("auth.oidc.client_id", "required with an issuer")
	}
	v.baseURL("auth.oidc.redirect_url", o.RedirectURL)
	if !slices.Contains(o.Scopes, "openid") {
		v.add("auth.oidc.scopes", "must include openid, got %v", o.Scopes)
	}
}

func (v *validator) scheduler() {
	s := v.c.Scheduler
	if s.MaxPerUser <= 0 {
		v.add("scheduler.max_per_user", "must be greater than 0")
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"run_timeout", s.RunTimeout}, {"heartbeat_interval", s.HeartbeatInterval}, {"dead_after", s.DeadAfter}, {"min_interval", s.MinInterval}, {"grace", s.Grace}} {
		if d.v.Duration <= 0 {
			v.add("scheduler."+d.key, "must be greater than 0")
		}
	}
	if s.HeartbeatInterval.Duration > 0 && s.DeadAfter.Duration > 0 && s.DeadAfter.Duration < 2*s.HeartbeatInterval.Duration {
		v.add("scheduler.dead_after", "must be at least two heartbeat intervals (%s), got %s", 2*s.HeartbeatInterval.Duration, s.DeadAfter.Duration)
	}
}

var searchProviders = []string{SearchSearxng, SearchBrave, SearchTavily, SearchSerper}

// libreChatSearchProviders are LibreChat's search providers that Relay does not
// have. A librechat.yaml naming one loads with a warning (libreChatValues), and
// web_search answers that it is not available (docs/config.md "webSearch").
var libreChatSearchProviders = []string{"keenable"}

func (v *validator) webSearch() {
	w := v.c.WebSearch
	if w.SearchProvider != "" && !slices.Contains(searchProviders, w.SearchProvider) && !slices.Contains(libreChatSearchProviders, w.SearchProvider) {
		v.add("webSearch.searchProvider", "must be one of %s, or empty, got %q", strings.Join(searchProviders, ", "), w.SearchProvider)
	}
	if w.SafeSearch < SafeSearchOff || w.SafeSearch > SafeSearchStrict {
		v.add("webSearch.safeSearch", "must be 0 (off), 1 (moderate) or 2 (strict), got %d", w.SafeSearch)
	}
	v.baseURL("webSearch.searxngInstanceUrl", w.SearxngInstanceURL)
	v.baseURL("webSearch.braveApiUrl", w.BraveAPIURL)
	v.baseURL("webSearch.tavilyApiUrl", w.TavilyAPIURL)
	v.baseURL("webSearch.serperApiUrl", w.SerperAPIURL)
	if w.MaxResults < 1 || w.MaxResults > maxSearchResults {
		v.add("webSearch.maxResults", "must be from 1 to %d, got %d", maxSearchResults, w.MaxResults)
	}
	if w.Timeout.Duration <= 0 {
		v.add("webSearch.timeout", "must be positive")
	}
	if w.FetchPages < 0 || w.FetchPages > maxSearchResults {
		v.add("webSearch.fetchPages", "must be from 0 (off) to %d, got %d", maxSearchResults, w.FetchPages)
	} else if w.FetchPages > w.MaxResults && w.MaxResults >= 1 {
		v.add("webSearch.fetchPages", "%d is more than maxResults (%d)", w.FetchPages, w.MaxResults)
	}
	if w.FetchMaxBytes < 1 || w.FetchMaxBytes > maxFetchBytes {
		v.add("webSearch.fetchMaxBytes", "must be from 1 to %d (64 MiB), got %d", maxFetchBytes, w.FetchMaxBytes)
	}
	if w.FetchTimeout.Duration <= 0 {
		v.add("webSearch.fetchTimeout", "must be positive")
	}
}

// Limits of the web search settings: no provider returns more than 20 results
// to one request, and a page larger than 64 MiB is not a page to read.
const (
	maxSearchResults = 20
	maxFetchBytes    = 64 << 20
)

var injectModes = []string{InjectAuto, InjectAlways, InjectNever}

func (v *validator) rag() {
	r, fc := v.c.RAG, v.c.FileConfig
	if !slices.Contains(injectModes, r.InjectContext) {
		v.add("rag.injectContext", "must be one of %s, got %q", strings.Join(injectModes, ", "), r.InjectContext)
	}
	v.baseURL("rag.api_url", r.APIURL)
	e := r.Embeddings
	v.baseURL("rag.embeddings.baseURL", e.BaseURL)
	if (e.BaseURL == "") != (e.Model == "") {
		v.add("rag.embeddings", "baseURL and model go together: set both to embed chunks, or neither")
	}
	if e.Dimensions < 0 {
		v.add("rag.embeddings.dimensions", "must not be negative")
	}
	if r.VectorCacheMB < 0 {
		v.add("rag.vectorCacheMB", "must not be negative (0 turns the cache off)")
	}
	if r.APIURL != "" && e.Enabled() {
		v.add("rag.embeddings", "not used with rag.api_url, which embeds files itself; remove one")
	}
	if fc.ServerFileSizeLimit <= 0 {
		v.add("fileConfig.serverFileSizeLimit", "must be a number of MB greater than 0")
	}
	for _, l := range []struct {
		key  string
		n    int
		unit string
	}{
		{"maxDecodedMB", fc.MaxDecodedMB, "a number of MB"},
		{"maxTextMB", fc.MaxTextMB, "a number of MB"},
		{"maxChunks", fc.MaxChunks, "a number"},
		{"maxPages", fc.MaxPages, "a number"},
		{"maxPdfOperations", fc.MaxPDFOperations, "a number"},
	} {
		if l.n <= 0 {
			v.add("fileConfig."+l.key, "must be %s greater than 0", l.unit)
		}
	}
	if fc.ExtractTimeout.Duration <= 0 {
		v.add("fileConfig.extractTimeout", "must be a duration greater than 0, e.g. 2m")
	}
}

func (v *validator) summarization() {
	sm := v.c.Summarization
	if sm.MaxSummaryTokens < 1 {
		v.add("summarization.maxSummaryTokens", "must be at least 1")
	}
	if p := strings.TrimSpace(sm.Provider); p != "" && !slices.ContainsFunc(v.c.Providers(), func(k string) bool { return strings.EqualFold(k, p) }) {
		v.add("summarization.provider", "unknown provider %q (known: %s)", sm.Provider, strings.Join(v.c.Providers(), ", "))
	}
}

// secrets checks the keys of per-user secrets; its messages never hold a key.
func (v *validator) secrets() {
	s := v.c.SecretKeys
	if s.Key != "" {
		if _, err := secret.ParseKey(s.Key); err != nil {
			v.add("secrets.key", "%v", err)
		}
	}
	for i, k := range s.PreviousKeys {
		if _, err := secret.ParseKey(k); err != nil {
			v.add(fmt.Sprintf("secrets.previousKeys[%d]", i), "%v", err)
		}
	}
	if s.Key == "" && len(s.PreviousKeys) > 0 {
		v.add("secrets.key", "required with previousKeys: the key that seals from now on")
	}
}
