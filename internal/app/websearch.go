package app

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/netguard"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// outboundGuard is the guard of requests to URLs users give, letting through
// the config's server.allowed_addresses (docs/config.md).
func outboundGuard(cfg *config.Config) *netguard.Guard {
	g, err := netguard.New(cfg.Server.AllowedAddresses)
	if err != nil {
		// Validation refused such a config already; refuse every non-public
		// address rather than allow any.
		return new(netguard.Guard)
	}
	return g
}

// webSearchTool builds the web_search tool of the config's webSearch section.
// A provider's key and SearXNG's address fall back to the environment
// variables LibreChat reads (SEARXNG_INSTANCE_URL, SEARXNG_API_KEY,
// SERPER_API_KEY, and BRAVE_API_KEY and TAVILY_API_KEY likewise) when the
// config leaves them empty or holds an unset ${VAR}. Without a usable
// provider the tool still exists, so that an agent listing it is told why it
// cannot search; the reason is logged once here.
func webSearchTool(cfg *config.Config, log *slog.Logger) tool.Tool {
	ws := cfg.WebSearch
	setting := func(configured, envVar string) string {
		if configured != "" && !strings.Contains(configured, "${") {
			return configured
		}
		v, _ := cfg.Getenv(envVar)
		return strings.TrimSpace(v)
	}
	o := builtin.WebSearchOptions{
		Provider:   ws.SearchProvider,
		MaxResults: ws.MaxResults,
		SafeSearch: int(ws.SafeSearch),
		Timeout:    ws.Timeout.Duration,
		Fetch: builtin.WebFetch{
			Pages:                 ws.FetchPages,
			MaxBytes:              ws.FetchMaxBytes,
			Timeout:               ws.FetchTimeout.Duration,
			AllowPrivateAddresses: ws.AllowPrivateAddresses,
			Guard:                 outboundGuard(cfg),
		},
		Log: log,
	}
	p := builtin.WebProvider{Name: ws.SearchProvider, Client: &http.Client{}}
	switch ws.SearchProvider {
	case "":
		o.Unavailable = "no search provider is configured (webSearch.searchProvider)"
		return builtin.WebSearch(o)
	case config.SearchSearxng:
		p.BaseURL = setting(ws.SearxngInstanceURL, "SEARXNG_INSTANCE_URL")
		p.APIKey = setting(ws.SearxngAPIKey, "SEARXNG_API_KEY")
	case config.SearchBrave:
		p.BaseURL, p.APIKey = ws.BraveAPIURL, setting(ws.BraveAPIKey, "BRAVE_API_KEY")
	case config.SearchTavily:
		p.BaseURL, p.APIKey = ws.TavilyAPIURL, setting(ws.TavilyAPIKey, "TAVILY_API_KEY")
	case config.SearchSerper:
		p.BaseURL, p.APIKey = ws.SerperAPIURL, setting(ws.SerperAPIKey, "SERPER_API_KEY")
	}
	s, err := builtin.NewWebSearcher(p)
	if err != nil {
		log.Warn("web search is not available", "tool", builtin.WebSearchName, "provider", ws.SearchProvider, "err", err)
		o.Unavailable = err.Error()
		return builtin.WebSearch(o)
	}
	o.Searcher = s
	return builtin.WebSearch(o)
}
