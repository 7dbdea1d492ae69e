package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/anthropic"
	"github.com/relay-ai/relay/internal/llm/google"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/sse"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// models resolves an agent's provider to a client built from the config's
// endpoints, created on first use: one client per provider, and for
// azureOpenAI one per group and deployment, found by the agent's model. A
// provider's key comes from its apiKey, else from the environment variable
// LibreChat uses (OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_KEY).
//
// An endpoint whose apiKey or baseURL says user_provided takes them from the
// user the client serves, through keys (docs/config.md, "Keys each user
// provides"): each user gets a client of their own, kept while their values
// are unchanged (see userClients). A user's base URL is reached through the
// outbound guard, as other addresses users choose are.
//
// An endpoint whose headers hold {{LIBRECHAT_USER_*}} placeholders gets a
// client per user too, with the user's details (looked up through users)
// filled in and masked in its errors and logs (docs/config.md, "Headers that
// name the user"). Other endpoints are as cheap as without: one map lookup
// says which endpoints name the user.
func models(cfg *config.Config, keys keyStore, users *headerUsers, log *slog.Logger) run.Models {
	var mu sync.Mutex
	clients := map[string]llm.Model{}
	own := newUserClients(maxUserClients)
	guarded := userHTTPClient(outboundGuard(cfg))
	// The headers of the providers (lower case) whose headers name the
	// user; Azure groups are asked each time, their options being made
	// each time anyway. Clients that fill the user in share one HTTP client.
	naming := map[string]map[string]string{}
	for name, h := range map[string]map[string]string{config.ProviderOpenAI: cfg.Endpoints.OpenAI.Headers,
		config.ProviderAnthropic: cfg.Endpoints.Anthropic.Headers, config.ProviderGoogle: cfg.Endpoints.Google.Headers} {
		if namesUser(h) {
			naming[strings.ToLower(name)] = h
		}
	}
	for _, c := range cfg.Endpoints.Custom {
		if namesUser(c.Headers) {
			naming[strings.ToLower(c.Name)] = c.Headers
		}
	}
	var namingHTTP *http.Client
	if len(naming) > 0 || slices.ContainsFunc(cfg.Endpoints.AzureOpenAI.Groups, func(g config.AzureGroup) bool { return namesUser(g.AdditionalHeaders) }) {
		namingHTTP = sse.NewHTTPClient(provider.DefaultConnectTimeout)
	}
	key := func(configured, envVar string) string {
		if configured != "" && !strings.HasPrefix(configured, "${") && configured != userProvided {
			return configured
		}
		v, _ := cfg.Getenv(envVar)
		return v
	}
	return func(ctx context.Context, userID, provider, model string) (llm.Model, mcp.Family, error) {
		p := strings.ToLower(provider)
		fam := mcp.FamilyOpenAI
		if p == "anthropic" {
			fam = mcp.FamilyAnthropic
		}
		name, fields := userFields(cfg, provider, model)
		var vals map[string]string
		if len(fields) > 0 {
			var err error
			if vals, err = userValues(ctx, keys, userID, name, fields); err != nil {
				return nil, "", err
			}
		}
		// mine is the user's value of a field that says user_provided, else
		// the configured one.
		mine := func(field, configured string) string {
			if configured == userProvided && vals != nil {
				return vals[field]
			}
			return configured
		}
		var httpc *http.Client
		if vals[config.FieldBaseURL] != "" {
			httpc = guarded
		}
		cacheKey := p
		var azure *openai.Options
		if strings.EqualFold(provider, config.ProviderAzureOpenAI) {
			opts, key, err := azureOptions(cfg, model, vals)
			if err != nil {
				return nil, "", err
			}
			opts.Logger, opts.HTTPClient = log, httpc
			azure, cacheKey = &opts, p+"\x00"+key
		}
		// The user, when the endpoint's headers name them.
		template := naming[p]
		if azure != nil && namesUser(azure.Headers) {
			template = azure.Headers
		}
		var who *mcp.User
		if template != nil {
			var err error
			if who, err = users.user(ctx, userID); err != nil {
				return nil, "", err
			}
		}
		perUser := vals != nil || template != nil
		var print string
		if perUser {
			built := []string{vals[config.FieldAPIKey], vals[config.FieldBaseURL]}
			if who != nil {
				built = append(built, who.ID, who.Email, who.Name, who.Username)
			}
			print = fingerprint(built...)
			if m, ok := own.get(userID+"\x00"+cacheKey, print); ok {
				return m, fam, nil
			}
		} else {
			mu.Lock()
			defer mu.Unlock()
			if m, ok := clients[cacheKey]; ok {
				return m, fam, nil
			}
		}
		// hdr gives an endpoint's headers as this client sends them, clog is
		// its logger.
		hdr, clog := markConversation, log
		var filled []string
		if template != nil {
			var headers map[string]string
			headers, filled = userHeaders(markConversation(template), who)
			hdr = func(map[string]string) map[string]string { return headers }
			clog = maskedLog(log, filled)
			if httpc == nil {
				httpc = namingHTTP
			}
			if azure != nil {
				azure.Headers, azure.Logger, azure.HTTPClient = headers, clog, httpc
			}
		}
		var m llm.Model
		switch p {
		case "openai":
			ep := cfg.Endpoints.OpenAI
			m = openai.New(openai.Options{BaseURL: mine(config.FieldBaseURL, ep.BaseURL), APIKey: key(mine(config.FieldAPIKey, ep.APIKey), "OPENAI_API_KEY"), Headers: hdr(ep.Headers), AddParams: ep.AddParams, DropParams: ep.DropParams, HTTPClient: httpc, Logger: clog})
		case "anthropic":
			ep := cfg.Endpoints.Anthropic
			m = anthropic.New(anthropic.Options{BaseURL: mine(config.FieldBaseURL, ep.BaseURL), APIKey: key(mine(config.FieldAPIKey, ep.APIKey), "ANTHROPIC_API_KEY"), Headers: hdr(ep.Headers), AddParams: ep.AddParams, DropParams: ep.DropParams, HTTPClient: httpc, Logger: clog})
		case "google":
			ep := cfg.Endpoints.Google
			m = google.New(google.Options{BaseURL: mine(config.FieldBaseURL, ep.BaseURL), APIKey: key(mine(config.FieldAPIKey, ep.APIKey), "GOOGLE_KEY"), Headers: hdr(ep.Headers), AddParams: ep.AddParams, DropParams: ep.DropParams, HTTPClient: httpc, Logger: clog})
		case strings.ToLower(config.ProviderAzureOpenAI):
			m = openai.New(*azure)
		default:
			for _, c := range cfg.Endpoints.Custom {
				if strings.EqualFold(c.Name, provider) {
					if c.BaseURL == "" {
						return nil, "", fault.New(fault.Invalid, "endpoints.custom %q has no baseURL", c.Name)
					}
					if err := customKeyUsable(c.Name, c.APIKey, c.BaseURL); err != nil {
						return nil, "", err
					}
					m = openai.New(openai.Options{BaseURL: mine(config.FieldBaseURL, c.BaseURL), APIKey: mine(config.FieldAPIKey, c.APIKey), Headers: hdr(c.Headers), AddParams: c.AddParams, DropParams: c.DropParams, HTTPClient: httpc, Logger: clog})
				}
			}
		}
		if m == nil {
			return nil, "", fault.New(fault.Invalid, "provider %q is not configured (endpoints: openAI, anthropic, google, or a custom name)", provider)
		}
		if perUser {
			m = maskedModel(m, filled)
			own.put(userID+"\x00"+cacheKey, print, m)
		} else {
			clients[cacheKey] = m
		}
		return m, fam, nil
	}
}

// userProvided is LibreChat's apiKey (or baseURL) for an endpoint whose users
// each enter their own.
const userProvided = config.UserProvided

// customKeyUsable refuses a custom endpoint whose key or address would be sent
// as written: a ${VAR} left because VAR is not set. The error names the
// variable, never a value.
func customKeyUsable(name, apiKey, baseURL string) error {
	return unsetVariable(fmt.Sprintf("endpoints.custom %q", name), field{"apiKey", apiKey}, field{"baseURL", baseURL})
}

// field is a config key and its value after ${VAR} expansion.
type field struct{ key, value string }

// unsetVariable refuses the first field still holding a ${VAR} reference,
// because VAR is not set in Relay's environment, naming the variable: the
// value would be sent as written. The reference holds no secret.
func unsetVariable(where string, fields ...field) error {
	for _, f := range fields {
		if ref := envRef.FindString(f.value); ref != "" {
			return fault.New(fault.Invalid, "%s: %s uses %s, which is not set in Relay's environment", where, f.key, ref)
		}
	}
	return nil
}

// envRef matches a ${VAR} reference left in a value because VAR was not set.
var envRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// azureOptions returns the client options for an azureOpenAI model, from the
// group that lists it, with the user's values (vals) of the fields that say
// user_provided, and the key of its client among the others: its
// group, deployment and API version. Requests go to
// https://<instanceName>.openai.azure.com, or to the group's baseURL with
// ${INSTANCE_NAME} and ${DEPLOYMENT_NAME} filled; a baseURL naming the
// deployment, and a serverless endpoint, take /chat/completions directly.
func azureOptions(cfg *config.Config, model string, vals map[string]string) (openai.Options, string, error) {
	d, ok := cfg.Endpoints.Azure(model)
	if !ok {
		return openai.Options{}, "", fault.New(fault.Invalid, "%s", config.AzureUnlisted(model))
	}
	g := *d.Group
	// The user's own key and address, for a group that takes them
	// (docs/config.md, "Keys each user provides").
	if g.APIKey == userProvided {
		g.APIKey = vals[config.FieldAPIKey]
	}
	if g.BaseURL == userProvided {
		g.BaseURL = vals[config.FieldBaseURL]
	}
	if err := unsetVariable(fmt.Sprintf("azureOpenAI group %q", g.Group),
		field{"apiKey", g.APIKey}, field{"instanceName", g.InstanceName}, field{"deployment", d.Deployment}, field{"version", d.Version},
		field{"baseURL", strings.NewReplacer("${INSTANCE_NAME}", "", "${DEPLOYMENT_NAME}", "").Replace(g.BaseURL)}); err != nil {
		return openai.Options{}, "", err
	}
	opts := openai.Options{
		APIKey: g.APIKey, Headers: markConversation(g.AdditionalHeaders), AddParams: g.AddParams, DropParams: g.DropParams,
		Azure: &openai.Azure{Deployment: d.Deployment, APIVersion: d.Version},
	}
	switch base := strings.TrimRight(g.BaseURL, "/"); {
	case g.Serverless:
		// LibreChat's examples give the whole chat-completions URL.
		opts.BaseURL = strings.TrimSuffix(base, "/chat/completions")
		opts.Azure.Direct = true
	case base == "":
		opts.BaseURL = "https://" + url.PathEscape(g.InstanceName) + ".openai.azure.com"
	default:
		base = strings.ReplaceAll(base, "${INSTANCE_NAME}", url.PathEscape(g.InstanceName))
		if strings.Contains(base, "${DEPLOYMENT_NAME}") {
			base = strings.ReplaceAll(base, "${DEPLOYMENT_NAME}", url.PathEscape(d.Deployment))
			opts.Azure.Direct = true
			opts.Azure.APIVersion = cmp.Or(d.Version, openai.DefaultAzureAPIVersion)
		}
		opts.BaseURL = base
	}
	return opts, g.Group + "\x00" + d.Deployment + "\x00" + d.Version, nil
}

// runService builds the service that runs agents with the MCP manager m.
func (a *App) runService(m *mcp.Manager) (*run.Service, error) {
	cfg := a.Config
	mods := instrumented(models(cfg, a.keys, a.users, a.Log), a.tel)
	prep, err := a.preparer(m, mods)
	if err != nil {
		return nil, err
	}
	memoryTools := a.tel.Tools(map[string]tool.Tool{
		builtin.SetMemoryName:    builtin.SetMemory(a.Memory),
		builtin.DeleteMemoryName: builtin.DeleteMemory(a.Memory),
	}, telemetry.Builtin)
	s := &run.Service{
		Store: a.Store, Prep: prep, Models: mods, MCP: m, Log: a.Log, Telemetry: a.tel,
		Builtins: map[string]tool.Tool{
			builtin.SetMemoryName:    memoryTools[builtin.SetMemoryName],
			builtin.DeleteMemoryName: memoryTools[builtin.DeleteMemoryName],
			builtin.WebSearchName:    a.tel.Tool(webSearchTool(cfg, a.Log), telemetry.Builtin),
		},
		Parallel: cfg.Endpoints.Agents.MaxParallelTools, ToolTimeout: cfg.Endpoints.Agents.ToolTimeout.Duration,
		StepLimit: cfg.Endpoints.Agents.MaxRecursionLimit, DefaultSteps: cfg.Endpoints.Agents.RecursionLimit,
	}
	titler := &run.Titler{Store: a.Store, Models: mods, For: titleModel(cfg), Log: a.Log}
	s.After = append(s.After, titler.After)
	if ma := a.memoryAgent(memoryTools, mods); ma != nil {
		s.After = append(s.After, ma.After)
	}
	return s, nil
}

// instrumented returns models whose clients tel measures and traces
// (docs/observability.md); with tel nil, models itself.
func instrumented(models run.Models, tel *telemetry.Telemetry) run.Models {
	if tel == nil {
		return models
	}
	return func(ctx context.Context, userID, provider, model string) (llm.Model, mcp.Family, error) {
		m, fam, err := models(ctx, userID, provider, model)
		if err != nil {
			return nil, "", err
		}
		return tel.Model(m, strings.ToLower(provider)), fam, nil
	}
}

// titleModel returns the model that titles an agent's new conversations:
// the titleModel of its endpoint's title settings (docs/config.md,
// "Conversation titles") on their titleEndpoint, the agent's own provider
// and model by default; ok is false without titleConvo: true.
func titleModel(cfg *config.Config) func(a *agent.Agent) (run.TitleModel, bool) {
	return func(a *agent.Agent) (run.TitleModel, bool) {
		t := cfg.Endpoints.TitlesFor(a.Provider)
		if !t.On() {
			return run.TitleModel{}, false
		}
		m := run.TitleModel{Provider: cmp.Or(t.TitleEndpoint, a.Provider), Model: t.TitleModel, Prompt: t.TitlePrompt, Template: t.TitlePromptTemplate}
		if m.Model == "" || m.Model == config.CurrentModel {
			m.Model = a.Model
		}
		return m, true
	}
}

// memoryAgent returns the memory agent of the config's memory.agent, or nil
// when there is none, it is not enabled or memory is disabled (docs/config.md).
func (a *App) memoryAgent(tools map[string]tool.Tool, mod run.Models) *run.MemoryAgent {
	cfg := a.Config
	c := cfg.Memory.Agent
	if !cfg.Memory.RunsAgent() {
		return nil
	}
	return &run.MemoryAgent{
		Memory: a.Memory, Tools: tools, Store: a.Store, Models: mod, Agents: a.Store.GetAgent,
		Log:     a.Log.With(slog.String("part", "memory_agent")),
		AgentID: c.ID, Provider: c.Provider, Model: c.Model, Instructions: c.Instructions, ModelParameters: c.ModelParameters,
		Window: cfg.Memory.MessageWindowSize,
	}
}
