// Package mcp is Relay's MCP client: one manager owning every connection to every
// MCP server (app-scoped and per user), the transports (stdio, SSE, streamable
// HTTP, and websocket, which is Relay's own), tool keys and their reverse mapping,
// tool calls with timeouts, progress and cancellation, and the formatting of tool
// results for each provider family.
package mcp

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Transport names, as written in the config's `type`.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable-http"
	TransportWebSocket      = "websocket"
)

// Scope says who shares a connection.
type Scope string

// The scopes of docs/mcp.md "Connections".
const (
	ScopeApp  Scope = "app"  // one connection for everyone
	ScopeUser Scope = "user" // one connection per user
)

// ServerConfig is how to reach one MCP server. Values may still hold `${VAR}` and
// `{{LIBRECHAT_USER_*}}` placeholders; they are substituted per connection.
type ServerConfig struct {
	Name string
	// Title is how people see the server's name (its config's title).
	Title     string
	Transport string
	Command   string
	Args      []string
	Env       map[string]string
	// Stderr is what to do with a stdio child's stderr: "inherit" passes it to
	// Relay's stderr; anything else (the default) discards it after logging.
	Stderr  string
	URL     string
	Headers map[string]string
	// Timeout bounds one request; progress notifications restart it.
	Timeout time.Duration
	// InitTimeout bounds connecting and initializing.
	InitTimeout time.Duration
	// Instructions is the text for the prompt; InstructionsFromServer uses the
	// server's own initialize instructions instead.
	Instructions           string
	InstructionsFromServer bool
	// Startup connects app-scoped servers when the manager starts.
	Startup    bool
	Scope      Scope
	SendUserID bool
	// UserVars are the names of the server's customUserVars: each user's own
	// values, substituted as {{NAME}} into url, headers and env of that user's
	// connection (see Options.Users).
	UserVars []UserVar
	// OAuth, when set, says each user authorizes Relay at the server (MCP
	// OAuth; requiresOAuth or an oauth block): its fields pin what the server
	// does not advertise. See Options.Users.
	OAuth *OAuthConfig
	// ElicitationTimeout is how long a question of the server waits for the
	// user's answer before it is declined (docs/mcp.md "Questions"); 0 means 5 min.
	ElicitationTimeout time.Duration
	// Roots are what roots/list answers; none by default.
	Roots []Root
	// Sampling, when Enabled, lets the server ask the model of the agent whose
	// call is in flight for a completion of at most MaxTokens (0: 1024).
	Sampling Sampling
}

// UserVar is one of a server's customUserVars, as the user is asked for it.
type UserVar struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// Root is one root Relay lists to a server (roots/list).
type Root struct {
	URI  string
	Name string
}

// Sampling is a server's sampling setting.
type Sampling struct {
	Enabled   bool
	MaxTokens int
}

// User is who a user-scoped connection is for, as the placeholders need it.
type User struct {
	ID       string
	Email    string
	Name     string
	Username string
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${VAR} with the variable's value; an unset variable stays literal.
func expandEnv(s string, getenv func(string) (string, bool)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := getenv(m[2 : len(m)-1]); ok {
			return v
		}
		return m
	})
}

// placeholder is a {{…}} placeholder and the value it stands for.
type placeholder struct{ text, value string }

// UserPlaceholders are the placeholders of a user's details that Relay fills,
// in the order of User's fields: id, email, name, username.
var UserPlaceholders = []string{"{{LIBRECHAT_USER_ID}}", "{{LIBRECHAT_USER_EMAIL}}", "{{LIBRECHAT_USER_NAME}}", "{{LIBRECHAT_USER_USERNAME}}"}

// userFields returns the placeholders of a user (none for nil) and of their
// customUserVars values.
func userFields(u *User, vars map[string]string) []placeholder {
	var out []placeholder
	if u != nil {
		for i, v := range []string{u.ID, u.Email, u.Name, u.Username} {
			out = append(out, placeholder{UserPlaceholders[i], v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, placeholder{"{{" + k + "}}", vars[k]})
	}
	return out
}

// userPlaceholders replaces the placeholders of fields (the user's
// {{LIBRECHAT_USER_*}} and their {{VAR}} values) with their values, each
// passed through esc with the text of s before it, and adds each value it
// inserted, as typed and as escaped, to used. A value is inserted once: a
// placeholder it holds stays as typed.
func userPlaceholders(s string, fields []placeholder, used *[]string, esc func(v, before string) string) string {
	if len(fields) == 0 || !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		j += i
		b.WriteString(s[i:j])
		i = j + 2
		inserted := false
		for _, f := range fields {
			if strings.HasPrefix(s[j:], f.text) {
				v := esc(f.value, s[:j])
				*used = append(*used, f.value)
				if v != f.value {
					*used = append(*used, v)
				}
				b.WriteString(v)
				i, inserted = j+len(f.text), true
				break
			}
		}
		if !inserted {
			b.WriteString("{{")
		}
	}
}

// HeaderValue returns v, a header value of a model endpoint's config, with
// the {{LIBRECHAT_USER_*}} placeholders filled with u's values as in an MCP
// server's headers (control characters removed, see docs/mcp.md), and the
// values it inserted, as the user's and as inserted, for errors and logs to
// mask. A nil u fills each with "": a request for no user sends no
// placeholder as written (docs/config.md, "Headers that name the user").
func HeaderValue(v string, u *User) (string, []string) {
	if u == nil {
		u = &User{}
	}
	var used []string
	return userPlaceholders(v, userFields(u, nil), &used, headerSafe), used
}

// verbatim inserts a value as it is (stdio args and env: no shell reads them).
func verbatim(v, _ string) string { return v }

// urlEscape escapes a value for where it goes in a URL: in the query or the
// fragment with url.QueryEscape, in the path with url.PathEscape (a "/" or
// ".." in a value cannot leave its segment), and in the host (user info and
// port included) with every byte but letters, digits and "-._~"
// percent-encoded, so that no value can change the host a URL names: one that
// is not a valid host name part makes the URL invalid. See docs/mcp.md.
func urlEscape(v, before string) string {
	if strings.ContainsAny(before, "?#") {
		return url.QueryEscape(v)
	}
	if k := strings.Index(before, "://"); k >= 0 && !strings.Contains(before[k+3:], "/") {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			c := v[i]
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	return url.PathEscape(v)
}

// headerSafe makes a value safe in a header: control characters (CR and LF,
// which would end the header and start another, NUL and the rest; tab is
// kept) are removed. See docs/mcp.md.
func headerSafe(v, _ string) string {
	if !strings.ContainsFunc(v, isHeaderControl) {
		return v
	}
	return strings.Map(func(r rune) rune {
		if isHeaderControl(r) {
			return -1
		}
		return r
	}, v)
}

func isHeaderControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// Resolve returns a copy of c with the placeholders of docs/mcp.md substituted in env,
// args, headers and url (getenv nil means the process environment).
//
// ${VAR} is expanded in the configured template first, and the user's values
// (user-scoped connections only) are inserted afterwards: a user's name or
// email is something a user typed, and a "${OPENAI_API_KEY}" in it must reach
// the server as those characters, never as Relay's secret. In the URL each
// value is URL-encoded for its place (urlEscape), in headers it is made
// header-safe (headerSafe), in args and env it is inserted as it is.
func (c ServerConfig) Resolve(u *User, getenv func(string) (string, bool)) ServerConfig {
	out, _ := c.resolve(u, nil, getenv)
	return out
}

// resolve is Resolve with the user's customUserVars values (vars), also
// returning every value it substituted (from the environment or the user), so
// that errors can mask them. Only the server's declared UserVars are
// substituted, and never into args: a process's arguments can be read by
// every local user.
func (c ServerConfig) resolve(u *User, vars map[string]string, getenv func(string) (string, bool)) (ServerConfig, []string) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if c.Scope != ScopeUser {
		u, vars = nil, nil
	}
	declared := map[string]string{}
	for _, uv := range c.UserVars {
		if v, ok := vars[uv.Name]; ok {
			declared[uv.Name] = v
		}
	}
	fields := userFields(u, declared)
	argFields := userFields(u, nil)
	var used []string
	lookup := func(k string) (string, bool) {
		v, ok := getenv(k)
		if ok {
			used = append(used, v)
		}
		return v, ok
	}
	sub := func(s string, esc func(v, before string) string) string {
		return userPlaceholders(expandEnv(s, lookup), fields, &used, esc)
	}
	out := c
	out.URL = sub(c.URL, urlEscape)
	out.Args = make([]string, len(c.Args))
	for i, a := range c.Args {
		out.Args[i] = userPlaceholders(expandEnv(a, lookup), argFields, &used, verbatim)
	}
	out.Env = maps.Clone(c.Env)
	for k, v := range out.Env {
		out.Env[k] = sub(v, verbatim)
	}
	out.Headers = maps.Clone(c.Headers)
	for k, v := range out.Headers {
		out.Headers[k] = sub(v, headerSafe)
	}
	if c.OAuth != nil {
		// The operator's, like the rest of the config: ${VAR} only, so that
		// a client secret can stay out of the file (docs/config.md).
		o := *c.OAuth
		for _, f := range []*string{&o.AuthorizationURL, &o.TokenURL, &o.ClientID, &o.ClientSecret, &o.Scope, &o.RedirectURI, &o.RevocationURL} {
			*f = expandEnv(*f, lookup)
		}
		out.OAuth = &o
	}
	return out, used
}

// childEnv is the environment of a stdio server: a minimal inherited set plus the
// server's own env (docs/mcp.md), never the whole of Relay's environment.
func childEnv(extra map[string]string) []string {
	inherit := []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT", "NODE_PATH", "NODE_OPTIONS"}
	var env []string
	for _, k := range inherit {
		if v, ok := os.LookupEnv(k); ok {
			if _, overridden := extra[k]; !overridden {
				env = append(env, k+"="+v)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// MissingVars returns the names of the server's customUserVars that its url,
// headers or env use and vars has no value for, sorted.
func (c ServerConfig) MissingVars(vars map[string]string) []string {
	var out []string
	for _, uv := range c.UserVars {
		k := uv.Name
		if _, ok := vars[k]; ok {
			continue
		}
		p := "{{" + k + "}}"
		uses := strings.Contains(c.URL, p)
		for _, m := range []map[string]string{c.Headers, c.Env} {
			for _, v := range m {
				uses = uses || strings.Contains(v, p)
			}
		}
		if uses {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// fillsAlike reports whether users a and b fill the config's
// {{LIBRECHAT_USER_*}} placeholders alike, so that a connection made for
// one is right for the other.
func (c ServerConfig) fillsAlike(a, b *User, getenv func(string) (string, bool)) bool {
	if a == nil || b == nil {
		return a == b
	}
	if *a == *b {
		return true
	}
	ra, _ := c.resolve(a, nil, getenv)
	rb, _ := c.resolve(b, nil, getenv)
	return ra.URL == rb.URL && slices.Equal(ra.Args, rb.Args) && maps.Equal(ra.Env, rb.Env) && maps.Equal(ra.Headers, rb.Headers)
}

// ResolveVars is Resolve with the user's customUserVars values.
func (c ServerConfig) ResolveVars(u *User, vars map[string]string, getenv func(string) (string, bool)) ServerConfig {
	out, _ := c.resolve(u, vars, getenv)
	return out
}
