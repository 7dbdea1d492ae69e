package app

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/anthropic"
	"github.com/relay-ai/relay/internal/llm/google"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// models resolves an agent's provider to a client built from the config's
// endpoints, one client per provider, created on first use. A provider's key
// comes from its apiKey, else from the environment variable LibreChat uses
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_KEY).
func models(e *env, cfg *config.Config, log *slog.Logger) run.Models {
	var mu sync.Mutex
	clients := map[string]llm.Model{}
	key := func(configured, envVar string) string {
		if configured != "" && !strings.HasPrefix(configured, "${") {
			return configured
		}
		v, _ := e.Getenv(envVar)
		return v
	}
	return func(provider, _ string) (llm.Model, mcp.Family, error) {
		p := strings.ToLower(provider)
		fam := mcp.FamilyOpenAI
		if p == "anthropic" {
			fam = mcp.FamilyAnthropic
		}
		mu.Lock()
		defer mu.Unlock()
		if m, ok := clients[p]; ok {
			return m, fam, nil
		}
		var m llm.Model
		switch p {
		case "openai":
			ep := cfg.Endpoints.OpenAI
			m = openai.New(openai.Options{BaseURL: ep.BaseURL, APIKey: key(ep.APIKey, "OPENAI_API_KEY"), Headers: ep.Headers, AddParams: ep.AddParams, DropParams: ep.DropParams, Logger: log})
		case "anthropic":
			ep := cfg.Endpoints.Anthropic
			m = anthropic.New(anthropic.Options{BaseURL: ep.BaseURL, APIKey: key(ep.APIKey, "ANTHROPIC_API_KEY"), Headers: ep.Headers, AddParams: ep.AddParams, DropParams: ep.DropParams, Logger: log})
		case "google":
			ep := cfg.Endpoints.Google
			m = google.New(google.Options{BaseURL: ep.BaseURL, APIKey: key(ep.APIKey, "GOOGLE_KEY"), Headers: ep.Headers, AddParams: ep.AddParams, DropParams: ep.DropParams, Logger: log})
		default:
			for _, c := range cfg.Endpoints.Custom {
				if strings.EqualFold(c.Name, provider) {
					if c.BaseURL == "" {
						return nil, "", fault.New(fault.Invalid, "endpoints.custom %q has no baseURL", c.Name)
					}
					m = openai.New(openai.Options{BaseURL: c.BaseURL, APIKey: c.APIKey, Headers: c.Headers, AddParams: c.AddParams, DropParams: c.DropParams, Logger: log})
				}
			}
		}
		if m == nil {
			return nil, "", fault.New(fault.Invalid, "provider %q is not configured (endpoints: openAI, anthropic, google, or a custom name)", provider)
		}
		clients[p] = m
		return m, fam, nil
	}
}

// runService builds the service that runs agents, over the opened services.
func runService(e *env, cfg *config.Config, svc *services, m *mcp.Manager, log *slog.Logger) (*run.Service, error) {
	prep, err := preparer(cfg, svc, m)
	if err != nil {
		return nil, err
	}
	return &run.Service{
		Store: svc.store, Prep: prep, Models: models(e, cfg, log), MCP: m, Log: log,
		Builtins: map[string]tool.Tool{
			builtin.SetMemoryName:    builtin.SetMemory(svc.memory),
			builtin.DeleteMemoryName: builtin.DeleteMemory(svc.memory),
			builtin.WebSearchName:    webSearchTool(e, cfg, log),
		},
		Parallel: 4, StepLimit: cfg.Endpoints.Agents.MaxRecursionLimit, DefaultSteps: cfg.Endpoints.Agents.RecursionLimit,
	}, nil
}
