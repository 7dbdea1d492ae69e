package app

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"github.com/relay-ai/relay/internal/account"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/telemetry"
)

// mcpServers converts the config's mcpServers, in file order.
func mcpServers(cfg *config.Config) []mcp.ServerConfig {
	out := make([]mcp.ServerConfig, 0, len(cfg.MCPOrder))
	for _, name := range cfg.MCPOrder {
		s := cfg.MCPServers[name]
		out = append(out, mcp.ServerConfig{
			Name: name, Transport: s.Transport(), Command: s.Command, Args: s.Args, Env: s.Env, Stderr: s.Stderr,
			URL: s.URL, Headers: s.Headers, Timeout: s.RequestTimeout(), InitTimeout: s.ConnectTimeout(),
			Instructions: s.ServerInstructions.Text, InstructionsFromServer: s.ServerInstructions.FromServer(),
			Startup: s.ConnectsAtStartup(), Scope: mcp.Scope(s.Scope), SendUserID: s.SendsUserID(),
			UserVars: userVars(s.CustomUserVars), OAuth: oauthConfig(s), Title: s.Title,
			ElicitationTimeout: s.AnswerTimeout(), Roots: mcpRoots(s.Roots),
			Sampling: mcp.Sampling{Enabled: s.Sampling.Enabled, MaxTokens: s.Sampling.MaxTokens},
		})
	}
	return out
}

// oauthConfig is a server's OAuth settings, nil for a server without OAuth.
func oauthConfig(s config.MCPServer) *mcp.OAuthConfig {
	if !s.UsesOAuth() {
		return nil
	}
	o := s.OAuth
	if o == nil {
		return &mcp.OAuthConfig{}
	}
	return &mcp.OAuthConfig{
		AuthorizationURL: o.AuthorizationURL, TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
		Scope: o.Scope, RedirectURI: o.RedirectURI, TokenEndpointAuthMethod: o.AuthMethod(), RevocationURL: o.RevocationEndpoint,
	}
}

// userVars lists a server's customUserVars by name.
func userVars(vars map[string]config.UserVar) []mcp.UserVar {
	var out []mcp.UserVar
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, mcp.UserVar{Name: name, Title: vars[name].Title, Description: vars[name].Description})
	}
	return out
}

// mcpRoots converts a server's configured roots.
func mcpRoots(rs []config.MCPRoot) []mcp.Root {
	var out []mcp.Root
	for _, r := range rs {
		out = append(out, mcp.Root{URI: r.URI, Name: r.Name})
	}
	return out
}

// newMCPManager builds the manager for the config; users (nil: none) gives
// user-scoped connections each user's variables and authorization.
func newMCPManager(cfg *config.Config, log *slog.Logger, users mcp.Users, tel *telemetry.Telemetry) *mcp.Manager {
	return mcp.NewManager(mcpServers(cfg), mcp.Options{Logger: log, Getenv: cfg.Getenv, Version: version(), Users: users, Telemetry: tel})
}

// MCP builds the manager of the config's MCP servers, whose user-scoped
// connections carry each user's variables and authorization, with the
// service of users' accounts at those servers. The caller closes the
// manager.
func (a *App) MCP() (*mcp.Manager, *account.Service) {
	acct := accountService(a.Config, a.Vault, a.Log)
	m := newMCPManager(a.Config, a.Log, acct, a.tel)
	acct.MCP = m
	return m, acct
}

// OpenMCP builds the manager of the config's MCP servers for a program that
// uses them without serving, and returns it with the function that closes
// it. Only when a server needs something of each user (OAuth,
// customUserVars) is the database opened, for the manager to read it; it
// closes with the manager.
func OpenMCP(ctx context.Context, cfg *config.Config, opts Options) (*mcp.Manager, func(), error) {
	if !needsUsers(cfg) {
		m := newMCPManager(cfg, opts.logger(cfg), nil, opts.Telemetry)
		return m, func() { m.Close() }, nil
	}
	a, err := Open(ctx, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	m, _ := a.MCP()
	return m, func() { m.Close(); a.Close() }, nil
}
