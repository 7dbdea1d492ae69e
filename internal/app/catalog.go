package app

import (
	"maps"
	"slices"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/prompt"
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
