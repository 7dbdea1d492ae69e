package app

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

// catalog is what GET /api/config tells clients of cfg (docs/api.md): the
// providers agents may name (config.Providers, but azureOpenAI only when a
// group serves models) with the models the config lists, the built-in tools
// (web_search when a search provider is set), the placeholders of
// instructions and the features that are on, and which of each provider's
// fields each user supplies (user_provided). Only names are taken from the
// config: never a key, an address or a header, which may hold secrets.
func catalog(cfg *config.Config) *httpapi.Catalog {
	c := &httpapi.Catalog{
		Placeholders: prompt.Placeholders(),
		Features: httpapi.Features{
			Memory:    !cfg.Memory.Disabled,
			Files:     true, // every relay serve stores and ingests files
			WebSearch: cfg.WebSearch.SearchProvider != "",
		},
	}
	models := func(l config.ModelList) []string { return append([]string{}, l...) }
	c.Providers = append(c.Providers,
		httpapi.CatalogProvider{Name: config.ProviderOpenAI, Models: models(cfg.Endpoints.OpenAI.Models.Default)},
		httpapi.CatalogProvider{Name: config.ProviderAnthropic, Models: models(cfg.Endpoints.Anthropic.Models.Default)},
		httpapi.CatalogProvider{Name: config.ProviderGoogle, Models: models(cfg.Endpoints.Google.Models.Default)},
	)
	if azure := azureModels(cfg); len(azure) > 0 {
		c.Providers = append(c.Providers, httpapi.CatalogProvider{Name: config.ProviderAzureOpenAI, Models: azure})
	}
	for _, e := range cfg.Endpoints.Custom {
		c.Providers = append(c.Providers, httpapi.CatalogProvider{Name: e.Name, Models: models(e.Models.Default)})
	}
	// Which fields each user supplies (PUT /api/endpoints/{name}/key): their
	// names, never a value.
	for i := range c.Providers {
		c.Providers[i].UserProvided = []string{}
		if ue, ok := cfg.Endpoints.UserEndpoint(c.Providers[i].Name); ok {
			c.Providers[i].UserProvided = append(c.Providers[i].UserProvided, ue.Fields...)
		}
	}
	tools := []string{prompt.FileSearch}
	if c.Features.WebSearch {
		tools = append(tools, prompt.WebSearch)
	}
	for _, name := range tools {
		t, _ := prompt.BuiltinTool(name)
		c.Tools = append(c.Tools, httpapi.CatalogTool{Name: t.Name, Description: t.Description})
	}
	return c
}

// azureModels lists the models the groups of endpoints.azureOpenAI serve
// (those not set to false), each once, sorted.
func azureModels(cfg *config.Config) []string {
	set := map[string]bool{}
	for _, g := range cfg.Endpoints.AzureOpenAI.Groups {
		for name, m := range g.Models {
			if !m.Off {
				set[name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// How long the models an endpoint listed (models.fetch) are kept, and how
// long its configured list stands in after asking it failed.
const (
	fetchedModelsTTL = 10 * time.Minute
	fetchFailedTTL   = time.Minute
)

// fetchingCatalog is the catalog of GET /api/config with the models of the
// endpoints whose models.fetch is on asked of the endpoints themselves
// (docs/config.md "Models from the endpoint"): each endpoint's list is kept
// for fetchedModelsTTL; when asking fails, or the endpoint's key is each
// user's own, its configured list stands in, and the failure is logged.
type fetchingCatalog struct {
	base   *httpapi.Catalog
	fetch  map[string]bool // the providers (lower case) to ask
	models run.Models
	log    *slog.Logger
	now    func() time.Time

	mu   sync.Mutex // held while asking: one request per endpoint at a time
	kept map[string]fetchedModels
}

type fetchedModels struct {
	ids   []string // nil: the configured list
	until time.Time
}

// newFetchingCatalog returns the catalog of cfg, asking endpoints through models.
func newFetchingCatalog(cfg *config.Config, models run.Models, log *slog.Logger) *fetchingCatalog {
	f := &fetchingCatalog{base: catalog(cfg), fetch: map[string]bool{}, models: models, log: log, now: time.Now, kept: map[string]fetchedModels{}}
	// An endpoint whose key each user gives has no key to ask it with.
	ask := func(name string) {
		if ue, ok := cfg.Endpoints.UserEndpoint(name); !ok || len(ue.Fields) == 0 {
			f.fetch[strings.ToLower(name)] = true
		}
	}
	if cfg.Endpoints.OpenAI.Models.Fetch {
		ask(config.ProviderOpenAI)
	}
	for _, e := range cfg.Endpoints.Custom {
		if e.Models.Fetch {
			ask(e.Name)
		}
	}
	return f
}

// Catalog is the catalog with the fetched lists of models in place.
func (f *fetchingCatalog) Catalog(ctx context.Context) *httpapi.Catalog {
	if len(f.fetch) == 0 {
		return f.base
	}
	c := *f.base
	c.Providers = slices.Clone(f.base.Providers)
	for i, p := range c.Providers {
		if f.fetch[strings.ToLower(p.Name)] {
			if ids := f.listed(ctx, p.Name); ids != nil {
				c.Providers[i].Models = ids
			}
		}
	}
	return &c
}

// listed returns the models provider's endpoint lists, nil to keep the
// configured ones.
func (f *fetchingCatalog) listed(ctx context.Context, provider string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := strings.ToLower(provider)
	if k, ok := f.kept[key]; ok && f.now().Before(k.until) {
		return k.ids
	}
	ids, err := f.ask(ctx, provider)
	if err != nil {
		f.log.Warn("listing an endpoint's models failed; its configured models stand in", slog.String("endpoint", provider), slog.Any("err", err))
		f.kept[key] = fetchedModels{until: f.now().Add(fetchFailedTTL)}
		return nil
	}
	f.kept[key] = fetchedModels{ids: ids, until: f.now().Add(fetchedModelsTTL)}
	return ids
}

func (f *fetchingCatalog) ask(ctx context.Context, provider string) ([]string, error) {
	m, _, err := f.models(ctx, "", provider, "")
	if err != nil {
		return nil, err
	}
	l, ok := m.(llm.Lister)
	if !ok {
		return nil, fault.New(fault.Invalid, "endpoint %q cannot list its models", provider)
	}
	ids, err := l.ListModels(ctx)
	if err == nil && ids == nil {
		ids = []string{}
	}
	return ids, err
}
