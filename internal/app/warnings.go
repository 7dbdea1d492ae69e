package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// Warnings lists what in a valid config will not work as its author may
// expect (docs/config.md, "Warnings"): a provider with no API key (requests go
// without authentication), an endpoint's apiKey or baseURL using a ${VAR}
// that is not set (its runs fail, or go without authentication), an apiKey or
// baseURL that says user_provided (each user must set theirs before the
// endpoint works for them), {{…}} placeholders in endpoints' headers that
// Relay does not fill, {{…}} in MCP URLs, headers and env that no user
// variable declares (or that name the conversation) and in MCP args (where no
// user variable goes), and config agents naming tools
// that no built-in or configured MCP server provides. `relay config check`
// prints them and `relay serve` logs them; none stops either.
func Warnings(cfg *config.Config) []string {
	var out []string
	used := map[string]bool{} // providers the config's agents use, lower case
	for _, a := range cfg.Agents {
		used[strings.ToLower(a.Provider)] = true
	}
	builtins := []struct {
		name, env string
		ep        config.Endpoint
	}{
		{config.ProviderOpenAI, "OPENAI_API_KEY", cfg.Endpoints.OpenAI},
		{config.ProviderAnthropic, "ANTHROPIC_API_KEY", cfg.Endpoints.Anthropic},
		{config.ProviderGoogle, "GOOGLE_KEY", cfg.Endpoints.Google},
	}
	for _, b := range builtins {
		at := "endpoints." + b.name
		out = append(out, headerPlaceholders(at, "headers", b.ep.Headers)...)
		envKey, _ := cfg.Getenv(b.env)
		switch ref := envRef.FindString(b.ep.APIKey); {
		case ref != "" && envKey == "":
			// The key is then taken from b.env, which is not set either.
			out = append(out, fmt.Sprintf("%s: apiKey uses %s, which is not set, and %s is not set either: requests go without authentication", at, ref, b.env))
		case b.ep.APIKey == userProvided && envKey != "":
			out = append(out, fmt.Sprintf("%s: apiKey is user_provided: each user's own key is sent, never %s", at, b.env))
		case b.ep.APIKey == "" && envKey == "" && (b.ep.BaseURL != "" || used[strings.ToLower(b.name)]):
			out = append(out, fmt.Sprintf("%s: no apiKey and %s is not set: requests go without authentication", at, b.env))
		}
	}
	for i, c := range cfg.Endpoints.Custom {
		at := fmt.Sprintf("endpoints.custom[%d] (%s)", i, c.Name)
		if c.APIKey == "" {
			out = append(out, fmt.Sprintf("%s: no apiKey: requests go without authentication (fine for a local server such as Ollama)", at))
		}
		out = append(out, unsetVariables(at, field{"apiKey", c.APIKey}, field{"baseURL", c.BaseURL})...)
		out = append(out, headerPlaceholders(at, "headers", c.Headers)...)
	}
	for i, g := range cfg.Endpoints.AzureOpenAI.Groups {
		at := fmt.Sprintf("endpoints.azureOpenAI.groups[%d] (%s)", i, g.Group)
		base := strings.NewReplacer("${INSTANCE_NAME}", "", "${DEPLOYMENT_NAME}", "").Replace(g.BaseURL)
		out = append(out, unsetVariables(at, field{"apiKey", g.APIKey}, field{"instanceName", g.InstanceName}, field{"baseURL", base})...)
		out = append(out, headerPlaceholders(at, "additionalHeaders", g.AdditionalHeaders)...)
	}
	for _, ue := range cfg.Endpoints.UserProvided() {
		out = append(out, fmt.Sprintf("endpoint %s: %s user_provided: each user sets their own (the Connections page, or relay endpoints key %s) before its agents work for them",
			ue.Name, strings.Join(ue.Fields, " and "), ue.Name))
	}
	for _, name := range cfg.MCPOrder {
		s := cfg.MCPServers[name]
		at := fmt.Sprintf("mcpServers.%s", name)
		// warn warns of the placeholders of a value (at where) that go as
		// written: in args every one but the user's details, since a user's
		// own values never go into a process's arguments, which every local
		// user can read.
		warn := func(where, value string, args bool) {
			declared := s.CustomUserVars
			if args {
				declared = nil
			}
			var undeclared, unknown, conv []string
			for _, m := range unfilled(value, declared) {
				switch {
				case slices.Contains(provider.ConversationPlaceholders, m):
					conv = append(conv, m)
				case strings.HasPrefix(m, "{{LIBRECHAT_"):
					unknown = append(unknown, m)
				default:
					undeclared = append(undeclared, m)
				}
			}
			if len(undeclared) > 0 {
				why := "not in its customUserVars, so no user has a value for it"
				if args {
					why = "Relay puts no user variable into a process's arguments (every local user can read them; env can hold it)"
				}
				out = append(out, fmt.Sprintf("%s.%s uses %s: %s; it is sent as written", at, where, strings.Join(undeclared, ", "), why))
			}
			if len(unknown) > 0 {
				out = append(out, fmt.Sprintf("%s.%s uses %s, which Relay does not fill: it is sent as written", at, where, strings.Join(unknown, ", ")))
			}
			if len(conv) > 0 {
				out = append(out, fmt.Sprintf("%s.%s uses %s: Relay fills the conversation's placeholders in endpoints' headers, not in MCP servers (their connections outlive a conversation); it is sent as written", at, where, strings.Join(conv, ", ")))
			}
		}
		warn("url", s.URL, false)
		for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
			warn("headers."+h, s.Headers[h], false)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			warn("env."+k, s.Env[k], false)
		}
		for i, arg := range s.Args {
			warn(fmt.Sprintf("args[%d]", i), arg, true)
		}
	}
	known := map[string]bool{builtin.FileSearchName: true, builtin.WebSearchName: true}
	for _, a := range cfg.Agents {
		for _, t := range a.Tools {
			if known[t] {
				continue
			}
			if _, server, ok := mcp.SplitKey(t); ok {
				if mcpServerNamed(cfg, server) {
					continue
				}
				out = append(out, fmt.Sprintf("agents %q: tool %q names MCP server %q, which is not in mcpServers", a.ID, t, server))
				continue
			}
			out = append(out, fmt.Sprintf("agents %q: unknown tool %q (built-in tools: %s; MCP tools are <tool>__mcp__<server>)", a.ID, t, strings.Join(slices.Sorted(maps.Keys(known)), ", ")))
		}
	}
	return out
}

// unsetVariables warns of each field still holding a ${VAR} reference
// because VAR is not set: the endpoint refuses every run until it is
// (unsetVariable, which the provider clients apply, says the same).
func unsetVariables(at string, fields ...field) []string {
	var out []string
	for _, f := range fields {
		if ref := envRef.FindString(f.value); ref != "" {
			out = append(out, fmt.Sprintf("%s: %s uses %s, which is not set in Relay's environment: every run of its agents fails until it is", at, f.key, ref))
		}
	}
	return out
}

// mcpServerNamed reports whether a configured MCP server's name, normalised
// as tool keys write it, is server.
func mcpServerNamed(cfg *config.Config, server string) bool {
	for _, name := range cfg.MCPOrder {
		if name == server || mcp.NormaliseServer(name) == server {
			return true
		}
	}
	return false
}

// unfilled returns the {{…}} placeholders of s that an MCP server's config
// gets as written: every one but the user's details (mcp.UserPlaceholders), which
// Relay fills from the user's account, and the server's customUserVars
// (declared), which each user sets.
func unfilled(s string, declared map[string]config.UserVar) []string {
	var out []string
	for _, m := range placeholder.FindAllString(s, -1) {
		if _, ok := declared[m[2:len(m)-2]]; ok {
			continue
		}
		if !slices.Contains(mcp.UserPlaceholders, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

var placeholder = regexp.MustCompile(`\{\{[^{}]+\}\}`)

// filledInHeaders are the placeholders Relay fills in endpoints' headers:
// the user's details (mcp.UserPlaceholders) and the conversation's
// (provider.RequestHeader).
var filledInHeaders = slices.Concat(mcp.UserPlaceholders, provider.ConversationPlaceholders)

// headerPlaceholders warns of the {{…}} placeholders of an endpoint's headers
// (key, at the endpoint at) that Relay does not fill: they are sent as written.
func headerPlaceholders(at, key string, headers map[string]string) []string {
	var out []string
	for _, h := range slices.Sorted(maps.Keys(headers)) {
		var v []string
		for _, m := range placeholder.FindAllString(headers[h], -1) {
			if !slices.Contains(filledInHeaders, m) && !slices.Contains(v, m) {
				v = append(v, m)
			}
		}
		if len(v) > 0 {
			out = append(out, fmt.Sprintf("%s: %s.%s uses %s, which Relay does not fill: it is sent as written", at, key, h, strings.Join(v, ", ")))
		}
	}
	return out
}

// logConfigWarnings logs each of Warnings.
func logConfigWarnings(log *slog.Logger, cfg *config.Config) {
	for _, w := range Warnings(cfg) {
		log.Warn("config: " + w)
	}
}

// toolListWait bounds how long saving an agent waits for an MCP server's tool
// list (the manager caches it: this is paid once per connection).
const toolListWait = 5 * time.Second

// knownTools is the agent rule (agent.Rules.Tools) that refuses tool names no
// built-in tool or MCP server provides (docs/api.md, "POST /api/agents"): a
// built-in name; `all__mcp__<server>` of a configured server; or a tool key of
// an app-scoped server that lists that tool. A tool of a configured server
// whose tools cannot be listed now (unreachable, or user-scoped: each user's
// connection lists its own) is accepted and logged, so that an agent can be
// saved while a server is down; whether it has the tool is checked when the
// agent runs.
func knownTools(m *mcp.Manager, log *slog.Logger) func(context.Context, []string) ([]string, []string, error) {
	builtins := []string{builtin.FileSearchName, builtin.WebSearchName}
	list := func(ctx context.Context, server string) ([]mcp.Tool, error) {
		s, _ := m.Server(server)
		if s.Scope != mcp.ScopeApp {
			return nil, fmt.Errorf("%s is user-scoped: its tools are listed per user", server)
		}
		ctx, cancel := context.WithTimeout(ctx, toolListWait)
		defer cancel()
		return m.Tools(ctx, server, nil)
	}
	return func(ctx context.Context, names []string) ([]string, []string, error) {
		var unknown []string
		for _, name := range names {
			if slices.Contains(builtins, name) {
				continue
			}
			server, tool, err := m.Resolve(name)
			if err != nil {
				unknown = append(unknown, name)
				continue
			}
			if tool == mcp.AllTools {
				continue
			}
			tools, err := list(ctx, server)
			if err != nil {
				log.Warn("agent tool not checked: its MCP server's tools cannot be listed now", slog.String("tool", name), slog.String("mcp_server", server), slog.String("err", err.Error()))
				continue
			}
			if !slices.ContainsFunc(tools, func(t mcp.Tool) bool { return t.Key == name || t.Name == tool }) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) == 0 {
			return nil, nil, nil
		}
		known := slices.Clone(builtins)
		for _, s := range m.Servers() {
			tools, err := list(ctx, s.Name)
			if err != nil {
				known = append(known, mcp.Key(mcp.AllTools, s.Name)+" (its tools cannot be listed now)")
				continue
			}
			for _, t := range tools {
				known = append(known, t.Key)
			}
		}
		return unknown, known, nil
	}
}
