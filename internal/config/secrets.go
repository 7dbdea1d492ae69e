package config

import (
	"net/url"
	"strings"

	"github.com/relay-ai/relay/internal/redact"
)

// UserProvided is LibreChat's apiKey marker for a key each user enters: a
// marker, not a secret.
const UserProvided = "user_provided"

// Secrets lists the secret values of c that logs and errors must never show
// (docs/config.md, "Secrets in logs and errors"): the API keys of every
// provider, web search and embeddings, the values of secret-looking provider
// headers and of every MCP header, the secret-looking MCP env values and
// arguments, the client secrets of MCP oauth blocks, the passwords and
// secret-looking query values of the database, MCP and provider URLs, the keys of per-user secrets (secrets.key,
// secrets.previousKeys), and metrics.token. A value that names environment
// variables (${VAR}, as mcpServers keep them until connecting) contributes
// their values from getenv instead; {{user}} variables are filled per user and are not known here, and
// apiKey: user_provided is a marker, not a secret.
func (c *Config) Secrets(getenv func(string) (string, bool)) []string {
	var out []string
	add := func(v string) {
		if v == "" || v == UserProvided {
			return
		}
		if !placeholder.MatchString(v) {
			out = append(out, v)
			return
		}
		for _, ref := range placeholder.FindAllString(v, -1) {
			if strings.HasPrefix(ref, "${") && getenv != nil {
				if val, ok := getenv(ref[2 : len(ref)-1]); ok {
					out = append(out, val)
				}
			}
		}
		// What is left around the references (e.g. a literal token after
		// "Bearer ${PREFIX}") is secret too.
		for _, w := range strings.Fields(placeholder.ReplaceAllString(v, " ")) {
			if !authScheme.MatchString(w) {
				out = append(out, w)
			}
		}
	}
	addURL := func(raw string) {
		if raw == "" {
			return
		}
		if m := userPassword.FindStringSubmatch(raw); m != nil {
			add(m[1])
		}
		i := strings.IndexByte(raw, '?')
		if i < 0 {
			return
		}
		query, _, _ := strings.Cut(raw[i+1:], "#")
		for _, p := range strings.Split(query, "&") {
			k, v, ok := strings.Cut(p, "=")
			if !ok || v == "" {
				continue
			}
			if name, err := url.QueryUnescape(k); err == nil && secretHeader.MatchString(name) {
				if val, err := url.QueryUnescape(v); err == nil {
					add(val)
				} else {
					add(v)
				}
			}
		}
	}
	endpoint := func(e Endpoint) {
		add(e.APIKey)
		addURL(e.BaseURL)
		for k, v := range e.Headers {
			if secretHeader.MatchString(k) {
				add(v)
			}
		}
	}
	addURL(c.Database.URL)
	endpoint(c.Endpoints.OpenAI)
	endpoint(c.Endpoints.Anthropic)
	endpoint(c.Endpoints.Google)
	for _, e := range c.Endpoints.Custom {
		endpoint(e.Endpoint)
	}
	for _, g := range c.Endpoints.AzureOpenAI.Groups {
		endpoint(Endpoint{APIKey: g.APIKey, BaseURL: g.BaseURL, Headers: g.AdditionalHeaders})
	}
	for _, s := range c.MCPServers {
		for k, v := range s.Env {
			if secretEnv.MatchString(k) {
				add(v)
			}
		}
		for _, v := range s.Headers {
			add(v)
		}
		for _, v := range redact.ArgSecrets(s.Args) {
			add(v)
		}
		addURL(s.URL)
		if o := s.OAuth; o != nil {
			add(o.ClientSecret)
			addURL(o.AuthorizationURL)
			addURL(o.TokenURL)
			addURL(o.RevocationEndpoint)
		}
	}
	ws := c.WebSearch
	for _, k := range []string{ws.SearxngAPIKey, ws.BraveAPIKey, ws.TavilyAPIKey, ws.SerperAPIKey} {
		add(k)
	}
	add(c.Auth.OIDC.ClientSecret)
	add(c.Metrics.Token)
	add(c.SecretKeys.Key)
	for _, k := range c.SecretKeys.PreviousKeys {
		add(k)
	}
	add(c.RAG.Embeddings.APIKey)
	addURL(c.RAG.Embeddings.BaseURL)
	addURL(c.RAG.APIURL)
	return out
}
