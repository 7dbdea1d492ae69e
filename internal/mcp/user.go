package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Users supplies what a user's connection needs of the user beyond the
// {{LIBRECHAT_USER_*}} placeholders.
type Users interface {
	// Vars returns the user's values of a server's customUserVars; a value
	// the user has not set is absent.
	Vars(ctx context.Context, server, userID string) (map[string]string, error)
	// Authorization gives a user's connection to an OAuth server its
	// bearer token.
	Authorization(server string, u *User) Authorization
}

// VarsRequiredError says a server cannot be used until the user sets values
// of its customUserVars.
type VarsRequiredError struct {
	Server  string
	Missing []string
}

func (e *VarsRequiredError) Error() string {
	return fmt.Sprintf("MCP server %q needs your settings: set %s for it (on the Connections page, or with `relay mcp vars %s --set-stdin`)",
		e.Server, strings.Join(e.Missing, ", "), e.Server)
}

// NeedsUser reports whether err says the user must act before a server can
// be used (set variables, connect an account), as opposed to a failure of
// the server.
func NeedsUser(err error) bool {
	_, ok := userError(err)
	return ok
}

// userError is the error in err's chain that says what the user must do,
// and whether there is one.
func userError(err error) (error, bool) {
	var vars *VarsRequiredError
	var auth *AuthRequiredError
	switch {
	case errors.As(err, &auth):
		return auth, true
	case errors.As(err, &vars):
		return vars, true
	}
	return err, false
}

// userConfig is a connection's config with its user's variables, checked to
// be complete.
type userConfig struct {
	ServerConfig
	vars map[string]string
	auth Authorization
}

func (c userConfig) resolve(u *User, vars map[string]string, getenv func(string) (string, bool)) (userConfig, []string) {
	out, used := c.ServerConfig.resolve(u, vars, getenv)
	return userConfig{ServerConfig: out, vars: vars, auth: c.auth}, used
}

// userConfig loads what the connection of user uid needs of them: the values
// of the server's customUserVars and, for an OAuth server, their
// authorization, which must have a token to send.
func (c *conn) userConfig(ctx context.Context, uid string) (userConfig, error) {
	out := userConfig{ServerConfig: c.cfg}
	// The variables first: an OAuth server's authorization is for its url
	// with the user's values in it (docs/mcp.md "Per-user variables"), so a
	// user who has set neither is told to set them before connecting.
	if c.cfg.Scope == ScopeUser && len(c.cfg.UserVars) > 0 {
		if c.m.opts.Users != nil && uid != "" {
			vars, err := c.m.opts.Users.Vars(ctx, c.cfg.Name, uid)
			if err != nil {
				return out, fmt.Errorf("reading your settings for %q: %w", c.cfg.Name, err)
			}
			out.vars = vars
		}
		if missing := c.cfg.MissingVars(out.vars); len(missing) > 0 {
			return out, &VarsRequiredError{Server: c.cfg.Name, Missing: missing}
		}
	}
	if c.cfg.OAuth != nil {
		if c.m.opts.Users == nil || uid == "" {
			return out, &AuthRequiredError{Server: c.cfg.Name, Reason: "it acts for a signed-in user only"}
		}
		out.auth = c.m.opts.Users.Authorization(c.cfg.Name, c.user)
		if out.auth == nil {
			return out, &AuthRequiredError{Server: c.cfg.Name, Reason: "no account of yours is known here"}
		}
		// Asked before the server, so that a user who has not connected is
		// told at once, without the server being asked.
		if _, err := out.auth.Token(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}
