package config

import (
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/relay-ai/relay/internal/redact"
)

// masked replaces a secret in WriteMasked's output.
const masked = "****"

var (
	secretHeader = regexp.MustCompile(`(?i)authorization|token|key|secret|cookie|password`)
	secretEnv    = regexp.MustCompile(`(?i)key|token|secret|pass|credential`)
	placeholder  = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}|\{\{[A-Za-z_][A-Za-z0-9_]*\}\}`)
	authScheme   = regexp.MustCompile(`(?i)^(bearer|basic|token|bot|apikey)$`)
)

// WriteMasked writes the effective configuration (defaults, file and
// environment applied) as YAML, with every secret replaced by ****: API keys,
// secret-looking headers, MCP env values, arguments and URL parameters, MCP
// OAuth client secrets, and the database password. A value that is only a reference such as ${OPENAI_API_KEY}
// or "Bearer ${TOKEN}" holds no secret and is shown as written.
func (c *Config) WriteMasked(w io.Writer) error {
	if c.Path != "" {
		if _, err := fmt.Fprintf(w, "# Relay configuration loaded from %s, secrets masked.\n", c.Path); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintln(w, "# Relay configuration (built-in defaults), secrets masked."); err != nil {
		return err
	}
	if len(c.Ignored) > 0 {
		if _, err := fmt.Fprintf(w, "# Ignored LibreChat keys: %s\n", strings.Join(c.Ignored, ", ")); err != nil {
			return err
		}
	}
	m := c.masked()
	var doc yaml.Node
	if err := doc.Encode(m); err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	orderMCPServers(&doc, c.MCPOrder)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	return enc.Close()
}

// masked returns a copy of c with its secrets masked. It shares nothing that it
// changes with c.
func (c *Config) masked() *Config {
	m := *c
	m.Database.URL = maskURL(c.Database.URL)
	m.Endpoints.OpenAI = maskEndpoint(c.Endpoints.OpenAI)
	m.Endpoints.Anthropic = maskEndpoint(c.Endpoints.Anthropic)
	m.Endpoints.Google = maskEndpoint(c.Endpoints.Google)
	m.Endpoints.Custom = make([]CustomEndpoint, len(c.Endpoints.Custom))
	for i, e := range c.Endpoints.Custom {
		m.Endpoints.Custom[i] = CustomEndpoint{Name: e.Name, Endpoint: maskEndpoint(e.Endpoint), TokenConfig: e.TokenConfig}
	}
	m.Endpoints.AzureOpenAI.Groups = slices.Clone(c.Endpoints.AzureOpenAI.Groups)
	for i, g := range c.Endpoints.AzureOpenAI.Groups {
		ep := maskEndpoint(Endpoint{APIKey: g.APIKey, BaseURL: g.BaseURL, Headers: g.AdditionalHeaders, AddParams: g.AddParams})
		g.APIKey, g.BaseURL, g.AdditionalHeaders, g.AddParams = ep.APIKey, ep.BaseURL, ep.Headers, ep.AddParams
		m.Endpoints.AzureOpenAI.Groups[i] = g
	}
	if c.MCPServers != nil {
		m.MCPServers = make(map[string]MCPServer, len(c.MCPServers))
		for name, s := range c.MCPServers {
			s.Env = maskMap(s.Env, secretEnv)
			s.Headers = maskMap(s.Headers, secretHeader)
			s.Args = maskArgs(s.Args)
			s.URL = maskURL(s.URL)
			if s.OAuth != nil {
				o := *s.OAuth
				o.ClientSecret = maskValue(o.ClientSecret)
				o.AuthorizationURL, o.TokenURL, o.RevocationEndpoint = maskURL(o.AuthorizationURL), maskURL(o.TokenURL), maskURL(o.RevocationEndpoint)
				s.OAuth = &o
			}
			m.MCPServers[name] = s
		}
	}
	ws := &m.WebSearch
	for _, k := range []*string{&ws.SearxngAPIKey, &ws.BraveAPIKey, &ws.TavilyAPIKey, &ws.SerperAPIKey} {
		*k = maskValue(*k)
	}
	for _, u := range []*string{&ws.SearxngInstanceURL, &ws.BraveAPIURL, &ws.TavilyAPIURL, &ws.SerperAPIURL} {
		*u = maskURL(*u)
	}
	m.Auth.OIDC.ClientSecret = maskValue(c.Auth.OIDC.ClientSecret)
	m.Metrics.Token = maskValue(c.Metrics.Token)
	m.SecretKeys.Key = maskValue(c.SecretKeys.Key)
	m.SecretKeys.PreviousKeys = make([]string, len(c.SecretKeys.PreviousKeys))
	for i, k := range c.SecretKeys.PreviousKeys {
		m.SecretKeys.PreviousKeys[i] = maskValue(k)
	}
	m.Auth.OIDC.Scopes = slices.Clone(c.Auth.OIDC.Scopes)
	m.RAG.Embeddings.APIKey = maskValue(c.RAG.Embeddings.APIKey)
	m.RAG.Embeddings.BaseURL = maskURL(c.RAG.Embeddings.BaseURL)
	m.RAG.APIURL = maskURL(c.RAG.APIURL)
	return &m
}

func maskEndpoint(e Endpoint) Endpoint {
	e.APIKey = maskValue(e.APIKey)
	e.BaseURL = maskURL(e.BaseURL)
	e.Headers = maskMap(e.Headers, secretHeader)
	if e.AddParams != nil {
		ps := maps.Clone(e.AddParams)
		for k, v := range ps {
			if s, ok := v.(string); ok && secretHeader.MatchString(k) {
				ps[k] = maskValue(s)
			}
		}
		e.AddParams = ps
	}
	return e
}

// maskValue masks a secret unless it is empty or only a reference.
func maskValue(s string) string {
	if s == "" || isReference(s) {
		return s
	}
	return masked
}

// isReference reports whether s holds ${VAR} or {{VAR}} placeholders and nothing
// else but an authorization scheme such as "Bearer".
func isReference(s string) bool {
	if !placeholder.MatchString(s) {
		return false
	}
	for _, w := range strings.Fields(placeholder.ReplaceAllString(s, " ")) {
		if !authScheme.MatchString(w) {
			return false
		}
	}
	return true
}

// maskMap returns a copy of m with the values of secret-looking names masked.
func maskMap(m map[string]string, secret *regexp.Regexp) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if secret.MatchString(k) {
			v = maskValue(v)
		}
		out[k] = v
	}
	return out
}

// maskArgs masks the values of secret-looking command-line options
// (redact.ArgSecret): `--api-key VALUE`, `--token=VALUE` and `API_KEY=VALUE`.
func maskArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := slices.Clone(args)
	for i := range args {
		if prefix, v, ok := redact.ArgSecret(args, i); ok {
			out[i] = prefix + maskValue(v)
		}
	}
	return out
}

// userPassword finds the password of a URL's userinfo. It is matched rather
// than parsed so that a password url.Parse rejects is masked too.
var userPassword = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^/?#:@]*:([^/?#]*)@`)

// maskURL masks the password and the secret-looking query parameters of a URL.
// It is also what makes a URL safe to quote in an error message.
func maskURL(s string) string {
	if m := userPassword.FindStringSubmatchIndex(s); m != nil {
		if pw := s[m[2]:m[3]]; pw != "" && !isReference(pw) {
			s = s[:m[2]] + masked + s[m[3]:]
		}
	}
	i := strings.IndexByte(s, '?')
	if i < 0 {
		return s
	}
	query, frag, hasFrag := strings.Cut(s[i+1:], "#")
	params := strings.Split(query, "&")
	for j, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if secretHeader.MatchString(name) {
			val, err := url.QueryUnescape(v)
			if err != nil {
				val = v
			}
			if mv := maskValue(val); mv != val {
				params[j] = k + "=" + mv
			}
		}
	}
	out := s[:i+1] + strings.Join(params, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// orderMCPServers puts the entries of mcpServers in the order of the file.
func orderMCPServers(doc *yaml.Node, order []string) {
	if len(order) == 0 {
		return
	}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "mcpServers" {
			continue
		}
		m := root.Content[i+1]
		rank := func(name string) int {
			if j := slices.Index(order, name); j >= 0 {
				return j
			}
			return len(order)
		}
		type pair struct{ k, v *yaml.Node }
		ps := make([]pair, 0, len(m.Content)/2)
		for j := 0; j+1 < len(m.Content); j += 2 {
			ps = append(ps, pair{m.Content[j], m.Content[j+1]})
		}
		slices.SortStableFunc(ps, func(a, b pair) int { return rank(a.k.Value) - rank(b.k.Value) })
		for j, p := range ps {
			m.Content[2*j], m.Content[2*j+1] = p.k, p.v
		}
	}
}
