// Package mcp is Relay's MCP client: one manager owning every connection to every
// MCP server (app-scoped and per user), the transports (stdio, SSE, streamable
// HTTP, and websocket, which is Relay's own), tool keys and their reverse mapping,
// tool calls with timeouts, progress and cancellation, and the formatting of tool
// results for each provider family.
package mcp

import (
	"maps"
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

// The scopes of mcp.md.
const (
	ScopeApp  Scope = "app"  // one connection for everyone
	ScopeUser Scope = "user" // one connection per user
)

// ServerConfig is how to reach one MCP server. Values may still hold `${VAR}` and
// `{{LIBRECHAT_USER_*}}` placeholders; they are substituted per connection.
type ServerConfig struct {
	Name      string
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

// userPlaceholders replaces the {{LIBRECHAT_USER_*}} placeholders (nil user:
// none), inserting the user's values as they are, and adds each value it
// inserted to used.
func userPlaceholders(s string, u *User, used *[]string) string {
	if u == nil || !strings.Contains(s, "{{LIBRECHAT_USER_") {
		return s
	}
	for _, p := range [...]struct{ placeholder, value string }{
		{"{{LIBRECHAT_USER_ID}}", u.ID},
		{"{{LIBRECHAT_USER_EMAIL}}", u.Email},
		{"{{LIBRECHAT_USER_NAME}}", u.Name},
		{"{{LIBRECHAT_USER_USERNAME}}", u.Username},
	} {
		if strings.Contains(s, p.placeholder) {
			*used = append(*used, p.value)
		}
	}
	return strings.NewReplacer(
		"{{LIBRECHAT_USER_ID}}", u.ID,
		"{{LIBRECHAT_USER_EMAIL}}", u.Email,
		"{{LIBRECHAT_USER_NAME}}", u.Name,
		"{{LIBRECHAT_USER_USERNAME}}", u.Username,
	).Replace(s)
}

// Resolve returns a copy of c with the placeholders of mcp.md substituted in env,
// args, headers and url (getenv nil means the process environment).
//
// ${VAR} is expanded in the configured template first, and the user's values
// (user-scoped connections only) are inserted afterwards, verbatim: a user's
// name or email is something a user typed, and a "${OPENAI_API_KEY}" in it must
// reach the server as those characters, never as Relay's secret.
func (c ServerConfig) Resolve(u *User, getenv func(string) (string, bool)) ServerConfig {
	out, _ := c.resolve(u, getenv)
	return out
}

// resolve is Resolve, also returning every value it substituted (from the
// environment or the user), so that errors can mask them.
func (c ServerConfig) resolve(u *User, getenv func(string) (string, bool)) (ServerConfig, []string) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if c.Scope != ScopeUser {
		u = nil
	}
	var used []string
	lookup := func(k string) (string, bool) {
		v, ok := getenv(k)
		if ok {
			used = append(used, v)
		}
		return v, ok
	}
	sub := func(s string) string { return userPlaceholders(expandEnv(s, lookup), u, &used) }
	out := c
	out.URL = sub(c.URL)
	out.Args = make([]string, len(c.Args))
	for i, a := range c.Args {
		out.Args[i] = sub(a)
	}
	out.Env = maps.Clone(c.Env)
	for k, v := range out.Env {
		out.Env[k] = sub(v)
	}
	out.Headers = maps.Clone(c.Headers)
	for k, v := range out.Headers {
		out.Headers[k] = sub(v)
	}
	return out, used
}

// childEnv is the environment of a stdio server: a minimal inherited set plus the
// server's own env (mcp.md), never the whole of Relay's environment.
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
