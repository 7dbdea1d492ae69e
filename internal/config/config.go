// Package config owns Relay's one configuration: its shape, its defaults, where it
// is read from (a relay.yaml or an existing librechat.yaml, then RELAY_*
// environment overrides), ${VAR} expansion, validation with the dotted path and
// file position of every bad field, and the masked dump that `relay config check`
// prints. It is loaded once at start-up and passed down; nothing reads it globally.
package config

import (
	"cmp"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/relay-ai/relay/internal/agent"
)

// Config is everything Relay is configured with.
type Config struct {
	Server    Server    `yaml:"server"`
	Database  Database  `yaml:"database"`
	Endpoints Endpoints `yaml:"endpoints"`
	// MCPServers are the MCP servers by name. Their values are kept raw: ${VAR}
	// and {{LIBRECHAT_USER_…}} placeholders are substituted by the MCP manager for
	// each connection, not at load time.
	MCPServers map[string]MCPServer `yaml:"mcpServers" relay:"raw"`
	// MCPOrder lists the names of MCPServers in the order the file declares them.
	MCPOrder []string `yaml:"-"`
	Agents   []Agent  `yaml:"agents"`
	Memory   Memory   `yaml:"memory"`
	// Summarization summarises the turns dropped to fit the context window.
	Summarization Summarization `yaml:"summarization"`
	WebSearch     WebSearch     `yaml:"webSearch"`
	// RAG configures retrieval from uploaded files.
	RAG RAG `yaml:"rag"`
	// FileConfig holds the upload limits, as librechat.yaml's fileConfig does.
	FileConfig FileConfig `yaml:"fileConfig"`
	Scheduler  Scheduler  `yaml:"scheduler"`
	// Limits are the per-user quotas and the API's rate limits.
	Limits Limits `yaml:"limits"`
	// Auth is how people sign in to the web UI: sessions, failed sign-ins,
	// OpenID Connect.
	Auth Auth `yaml:"auth"`
	// SecretKeys are the keys that seal per-user secrets at rest
	// (docs/config.md "secrets"). The field is not named Secrets: that is the
	// method listing every secret value.
	SecretKeys SecretKeys `yaml:"secrets"`
	// Metrics says where Prometheus scrapes Relay's metrics
	// (docs/observability.md); off unless addr or token is set.
	Metrics Metrics `yaml:"metrics"`

	// Path is the file the config was loaded from; "" when only defaults apply.
	Path string `yaml:"-"`
	// PathFrom says what chose Path: "--config", "RELAY_CONFIG", "CONFIG_PATH"
	// or "working directory" (./relay.yaml, then ./librechat.yaml).
	PathFrom string `yaml:"-"`
	// Ignored lists, sorted, the dotted paths of LibreChat keys present in the
	// file that Relay accepts and does not use, e.g. "interface" or
	// "endpoints.custom[0].titleMethod".
	Ignored []string `yaml:"-"`
	// Unknown lists, in file order, the keys of the file that neither Relay nor
	// its list of LibreChat keys knows, each as a warning with its position:
	// `relay.yaml:3:3: unknown key "adress" in server (known: addr, ...)`,
	// then the LibreChat values Relay does not have (a search provider, a
	// titleEndpoint such as bedrock).
	// Relay skips them, as LibreChat's schema strips them; Strict (`config
	// check --strict`) refuses them.
	Unknown []string `yaml:"-"`
	// DotEnv is the .env file Load read variables from, "" when there was none.
	DotEnv string `yaml:"-"`
	// getenv is the environment Load used, .env included.
	getenv func(string) (string, bool)

	// where maps a dotted path to where its value came from ("relay.yaml:7:13"
	// or "env RELAY_TIMEZONE"), so that validation can point at it.
	where map[string]string

	// Top-level librechat.yaml keys that Relay accepts and ignores.
	_ any `yaml:"version" relay:"ignored"`
	_ any `yaml:"cache" relay:"ignored"`
	_ any `yaml:"interface" relay:"ignored"`
	_ any `yaml:"registration" relay:"ignored"`
	_ any `yaml:"socialLogins" relay:"ignored"`
	_ any `yaml:"fileStrategy" relay:"ignored"`
	_ any `yaml:"fileStrategies" relay:"ignored"`
	_ any `yaml:"balance" relay:"ignored"`
	_ any `yaml:"transactions" relay:"ignored"`
	_ any `yaml:"speech" relay:"ignored"`
	_ any `yaml:"stt" relay:"ignored"`
	_ any `yaml:"tts" relay:"ignored"`
	_ any `yaml:"actions" relay:"ignored"`
	_ any `yaml:"rateLimits" relay:"ignored"`
	_ any `yaml:"modelSpecs" relay:"ignored"`
	_ any `yaml:"turnstile" relay:"ignored"`
	_ any `yaml:"ocr" relay:"ignored"`
	_ any `yaml:"includedTools" relay:"ignored"`
	_ any `yaml:"filteredTools" relay:"ignored"`
	_ any `yaml:"secureImageLinks" relay:"ignored"`
	_ any `yaml:"imageOutputType" relay:"ignored"`
	_ any `yaml:"ci" relay:"ignored"`
	_ any `yaml:"mcpSettings" relay:"ignored"`
	_ any `yaml:"scheduledTasks" relay:"ignored"`
	_ any `yaml:"langfuse" relay:"ignored"`
	_ any `yaml:"filters" relay:"ignored"`
	_ any `yaml:"messageFilter" relay:"ignored"`
	_ any `yaml:"skillSync" relay:"ignored"`
	_ any `yaml:"cloudfront" relay:"ignored"`
}

// Server is how Relay listens, logs and keeps its files.
type Server struct {
	// Addr is the host:port to listen on.
	Addr string `yaml:"addr"`
	// DataDir holds the SQLite database and uploaded files. A relative path is
	// relative to the working directory Relay is started in, not to the config
	// file, so that `relay serve` in a checkout and in a container behave alike.
	DataDir string `yaml:"data_dir"`
	// Timezone is the IANA zone used for dates in prompts and schedules; "" is
	// the process's local zone.
	Timezone string `yaml:"timezone"`
	// MaxBodyBytes caps the size of a request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ShutdownTimeout is how long in-flight requests may take to finish on stop.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json.
	LogFormat string `yaml:"log_format"`
	// MemoryLimitMB is a soft limit, in MiB, on the memory the process's Go
	// runtime uses (heap, goroutine stacks and its own); 0 means none. With a
	// limit the garbage collector can run seldom (GCPercent) while memory is
	// far below it, and as often as it must near it: many concurrent streams
	// then cost less CPU per token without using more memory than the limit.
	MemoryLimitMB int64 `yaml:"memory_limit_mb"`
	// GCPercent is the garbage collector's target (GOGC): how much the heap
	// may grow over what is live before a collection. -1 means collect only
	// at MemoryLimitMB.
	GCPercent int `yaml:"gc_percent"`
	// Procs is how many threads run the process's Go code at once
	// (GOMAXPROCS). 0 follows the load, from 1 up to the CPUs the process
	// may use (docs/config.md, server.procs).
	Procs int `yaml:"procs"`
	// CORSOrigins are the browser origins (scheme://host[:port]) allowed to
	// call /v1 from a web page, or "*" for any; none means no CORS headers.
	CORSOrigins []string `yaml:"cors_origins"`
	// ReadHeaderTimeout bounds the reading of a request's headers.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds the reading of a whole request, headers and body;
	// answers and streams are not bounded by it.
	ReadTimeout Duration `yaml:"read_timeout"`
	// IdleTimeout is how long a keep-alive connection may wait for its next request.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes caps the size of a request's headers.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// AllowedAddresses are the non-public addresses that outbound requests to
	// user-given URLs (schedule webhooks, web_search page fetches) may reach:
	// IP addresses, CIDRs, host names, each optionally with a port
	// (docs/config.md). All others are refused after name resolution.
	AllowedAddresses []string `yaml:"allowed_addresses"`
	// PublicURL is the URL people open to reach Relay (scheme://host[:port]
	// and an optional path), behind whatever proxy: the first start's setup
	// link, the OpenID Connect redirect and the session cookie's Secure flag
	// (an https URL) come from it. "" means http://<addr>.
	PublicURL string `yaml:"public_url"`
}

// Auth is how people sign in to the web UI (docs/api.md "Authentication").
type Auth struct {
	// SessionTTL is how long a session lasts unused; each use moves its end.
	SessionTTL Duration `yaml:"session_ttl"`
	// LoginLimit bounds failed sign-ins.
	LoginLimit LoginLimit `yaml:"login_limit"`
	// OIDC is sign-in with an OpenID Connect provider; off without an issuer.
	OIDC OIDC `yaml:"oidc"`
}

// SecretKeys are the keys of per-user secrets (docs/config.md "secrets"):
// MCP customUserVars, user_provided endpoint keys and MCP OAuth grants are
// sealed with Key and opened with it or any of PreviousKeys. Each is 32 bytes
// as base64 or 64 hex digits. Both are masked in dumps and logs.
type SecretKeys struct {
	// Key seals; "" means RELAY_SECRETS_KEY, else (SQLite only) the key file
	// secret.key beside the database.
	Key string `yaml:"key,omitempty"`
	// PreviousKeys open what older keys sealed, until `relay secrets rotate`
	// has re-sealed it with Key.
	PreviousKeys []string `yaml:"previousKeys,omitempty"`
}

// Metrics says where Relay's Prometheus metrics are served
// (docs/observability.md). With neither field set there is no /metrics.
type Metrics struct {
	// Addr is the host:port of a listener of its own that answers GET
	// /metrics without authentication, for an address only Prometheus
	// reaches; "" means none.
	Addr string `yaml:"addr"`
	// Token, when set, has server.addr answer GET /metrics too, to requests
	// that send Authorization: Bearer <token>. Masked in dumps and logs.
	Token string `yaml:"token,omitempty"`
	// Pprof has the listener of Addr also serve Go's runtime profiles (CPU,
	// heap, goroutines, …) under /debug/pprof/, without authentication.
	Pprof bool `yaml:"pprof,omitempty"`
}

// SecretKeyFile is the key file used when no key is configured: secret.key
// beside the SQLite database, or "" for Postgres, whose replicas must share
// a configured key.
func (c *Config) SecretKeyFile() string {
	engine, dsn, err := c.DB()
	if err != nil || engine != "sqlite" {
		return ""
	}
	return filepath.Join(filepath.Dir(dsn), "secret.key")
}

// LoginLimit bounds failed sign-ins per email and per client address within
// a window; 0 means no limit for each.
type LoginLimit struct {
	PerEmail   int      `yaml:"per_email"`
	PerAddress int      `yaml:"per_address"`
	Window     Duration `yaml:"window"`
}

// OIDC is sign-in with an OpenID Connect provider (docs/config.md "auth").
type OIDC struct {
	// Issuer is the provider's issuer URL; "" turns OIDC off.
	Issuer string `yaml:"issuer,omitempty"`
	// ClientID and ClientSecret are Relay's credentials at the provider. The
	// secret is masked in dumps and logs.
	ClientID     string `yaml:"client_id,omitempty"`
	ClientSecret string `yaml:"client_secret,omitempty"`
	// RedirectURL is where the provider sends the browser back; "" means
	// <server.public_url>/api/auth/oidc/callback.
	RedirectURL string `yaml:"redirect_url,omitempty"`
	// Scopes are asked for; openid is always among them.
	Scopes []string `yaml:"scopes,omitempty"`
	// Label is the sign-in button's text.
	Label string `yaml:"label,omitempty"`
	// AutoCreate makes a user (role user) for a person the provider knows
	// and Relay does not; nil means true.
	AutoCreate *bool `yaml:"auto_create,omitempty"`
}

// Enabled reports whether OIDC sign-in is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// OIDCRedirectURL returns where the provider sends people back: redirect_url, or
// the callback route under the public URL.
func (c *Config) OIDCRedirectURL() string {
	if c.Auth.OIDC.RedirectURL != "" {
		return c.Auth.OIDC.RedirectURL
	}
	return c.PublicURL() + "/api/auth/oidc/callback"
}

// PublicURL returns server.public_url without a trailing slash, or
// http://<addr> (a wildcard host as 127.0.0.1) when it is not set.
func (c *Config) PublicURL() string {
	if u := strings.TrimRight(c.Server.PublicURL, "/"); u != "" {
		return u
	}
	host, port, err := net.SplitHostPort(c.Server.Addr)
	if err != nil {
		return "http://" + c.Server.Addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Limits are the per-user quotas and the API's rate limits (docs/config.md
// "limits"); 0 means no limit for each.
type Limits struct {
	// IncludeAdmins applies the quotas and the per-key rate limit to admins
	// too; by default they are exempt.
	IncludeAdmins bool `yaml:"include_admins"`
	// User holds what one user may store and run.
	User UserQuotas `yaml:"user"`
	// API holds the request rates of one API key and one client address.
	API RateLimits `yaml:"api"`
}

// UserQuotas are what one user may store and run. The schedule quota is
// scheduler.max_per_user.
type UserQuotas struct {
	// Files is how many files a user may store.
	Files int `yaml:"files"`
	// StorageMB is how many MiB a user's files may hold together.
	StorageMB int64 `yaml:"storage_mb"`
	// RunsPerMinute is how many runs a user may start per minute.
	RunsPerMinute int `yaml:"runs_per_minute"`
	// ConcurrentRuns is how many runs of a user may run at once (per process).
	ConcurrentRuns int `yaml:"concurrent_runs"`
}

// RateLimits are token buckets: a rate per minute and a burst (0: a minute's worth).
type RateLimits struct {
	KeyPerMinute int `yaml:"key_per_minute"`
	KeyBurst     int `yaml:"key_burst"`
	IPPerMinute  int `yaml:"ip_per_minute"`
	IPBurst      int `yaml:"ip_burst"`
}

// Database names the store. See Config.DB for the forms URL takes.
type Database struct {
	// URL is a SQLite file (a path, sqlite:PATH or sqlite://PATH) or a
	// postgres:// URL; "" means SQLite at <data_dir>/relay.db.
	URL string `yaml:"url"`
	// ConnectTimeout bounds how long start-up waits for the database.
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// WriteBehind, when more than 0 (SQLite only), lets the records of runs
	// wait up to that long to be committed with others', after their run
	// has gone on (docs/config.md, "Writing behind").
	WriteBehind Duration `yaml:"write_behind"`
}

// The built-in provider names, as librechat.yaml spells them.
const (
	ProviderOpenAI      = "openAI"
	ProviderAnthropic   = "anthropic"
	ProviderGoogle      = "google"
	ProviderAzureOpenAI = "azureOpenAI"
)

// libreChatEndpoints are the endpoint names librechat.yaml gives a meaning
// that are not providers of Relay's. A titleEndpoint naming one is a warning
// (docs/config.md "Conversation titles").
var libreChatEndpoints = []string{"agents", "assistants", "azureAssistants", "bedrock", "custom", "gptPlugins"}

// reservedEndpoints are the names a custom endpoint may not take: the built-in
// providers and libreChatEndpoints.
var reservedEndpoints = append([]string{ProviderOpenAI, ProviderAnthropic, ProviderGoogle, ProviderAzureOpenAI}, libreChatEndpoints...)

// Endpoints configures the model providers, as librechat.yaml's `endpoints` does.
type Endpoints struct {
	OpenAI    Endpoint `yaml:"openAI"`
	Anthropic Endpoint `yaml:"anthropic"`
	Google    Endpoint `yaml:"google"`
	// Custom are OpenAI-compatible providers (Ollama, vLLM, OpenRouter, …); each
	// name becomes a provider agents may use.
	Custom []CustomEndpoint `yaml:"custom"`
	// AzureOpenAI is the azureOpenAI provider: Azure OpenAI resources in
	// groups, each listing the models it serves.
	AzureOpenAI AzureOpenAI    `yaml:"azureOpenAI,omitempty"`
	Agents      AgentsEndpoint `yaml:"agents"`
	// All holds the settings LibreChat shares across endpoints; those it
	// sets win over each endpoint's own.
	All AllEndpoints `yaml:"all,omitempty"`

	_ any `yaml:"assistants" relay:"ignored"`
	_ any `yaml:"azureAssistants" relay:"ignored"`
	_ any `yaml:"bedrock" relay:"ignored"`
	_ any `yaml:"gptPlugins" relay:"ignored"`
}

// Titles are LibreChat's settings for naming a new conversation after its
// first turn with a model (docs/config.md, "Conversation titles").
type Titles struct {
	// TitleConvo turns model-made titles on; nil means not set here.
	TitleConvo *bool `yaml:"titleConvo,omitempty"`
	// TitleModel is the model asked; "" or "current_model" means the
	// agent's own.
	TitleModel string `yaml:"titleModel,omitempty"`
	// TitleEndpoint is the provider the title model is asked on; "" means
	// the agent's.
	TitleEndpoint string `yaml:"titleEndpoint,omitempty"`
	// TitlePrompt is the instruction sent, with {convo} standing for the
	// conversation; "" means Relay's own.
	TitlePrompt string `yaml:"titlePrompt,omitempty" relay:"raw"`
	// TitlePromptTemplate writes the conversation into {convo}, with {input}
	// for the user's message and {output} for the answer.
	TitlePromptTemplate string `yaml:"titlePromptTemplate,omitempty" relay:"raw"`
}

// AllEndpoints is endpoints.all: the settings shared by every endpoint.
type AllEndpoints struct {
	Titles `yaml:",inline"`

	_ any `yaml:"streamRate" relay:"ignored"`
	_ any `yaml:"titleMethod" relay:"ignored"`
	_ any `yaml:"titleMessageRole" relay:"ignored"`
	_ any `yaml:"titleTiming" relay:"ignored"`
	_ any `yaml:"summarize" relay:"ignored"`
	_ any `yaml:"summaryModel" relay:"ignored"`
}

// IsZero reports whether endpoints.all sets nothing Relay uses.
func (a AllEndpoints) IsZero() bool { return a.Titles == Titles{} }

// Endpoint is how Relay reaches one provider.
type Endpoint struct {
	APIKey  string `yaml:"apiKey,omitempty"`
	BaseURL string `yaml:"baseURL,omitempty"`
	Models  Models `yaml:"models,omitempty"`
	// Headers are added to every request to the provider.
	Headers map[string]string `yaml:"headers,omitempty"`
	// AddParams are merged into every request body.
	AddParams map[string]any `yaml:"addParams,omitempty"`
	// DropParams are removed from every request body.
	DropParams []string `yaml:"dropParams,omitempty"`
	// Titles name the conversations of the endpoint's agents.
	Titles `yaml:",inline"`

	_ any `yaml:"titleMethod" relay:"ignored"`
	_ any `yaml:"titleMessageRole" relay:"ignored"`
	_ any `yaml:"titleTiming" relay:"ignored"`
	_ any `yaml:"summarize" relay:"ignored"`
	_ any `yaml:"summaryModel" relay:"ignored"`
	_ any `yaml:"streamRate" relay:"ignored"`
	_ any `yaml:"plugins" relay:"ignored"`
	_ any `yaml:"modelDisplayLabel" relay:"ignored"`
	_ any `yaml:"iconURL" relay:"ignored"`
	_ any `yaml:"forcePrompt" relay:"ignored"`
	_ any `yaml:"directEndpoint" relay:"ignored"`
	_ any `yaml:"customParams" relay:"ignored"`
	_ any `yaml:"customOrder" relay:"ignored"`
	_ any `yaml:"vertex" relay:"ignored"`
}

// CustomEndpoint is an OpenAI-compatible provider with a name of its own.
type CustomEndpoint struct {
	Name     string `yaml:"name"`
	Endpoint `yaml:",inline"`
	// TokenConfig gives, by model name, what Relay cannot know of the
	// endpoint's models: their context window (LibreChat's shape, where
	// prompt and completion are prices).
	TokenConfig map[string]TokenConfig `yaml:"tokenConfig,omitempty"`

	_ any `yaml:"apiKeyPreview" relay:"ignored"`
}

// TokenConfig is one model's entry of a custom endpoint's tokenConfig.
type TokenConfig struct {
	// Context is the model's context window in tokens; 0 means unknown.
	Context int `yaml:"context"`
	// Prompt and Completion are LibreChat's prices per million tokens; Relay
	// accepts and does not use them.
	Prompt     float64 `yaml:"prompt,omitempty"`
	Completion float64 `yaml:"completion,omitempty"`

	_ any `yaml:"cacheRead" relay:"ignored"`
	_ any `yaml:"cacheWrite" relay:"ignored"`
}

// ContextWindow returns the context window the config gives a provider's
// model (a custom endpoint's tokenConfig), or 0 when it gives none.
func (e *Endpoints) ContextWindow(provider, model string) int {
	for i := range e.Custom {
		if !strings.EqualFold(e.Custom[i].Name, provider) {
			continue
		}
		if tc, ok := e.Custom[i].TokenConfig[model]; ok {
			return tc.Context
		}
	}
	return 0
}

// Models lists the models a provider offers: `{default: [...]}`, or the list
// itself, as LibreChat's endpoints.anthropic writes it.
type Models struct {
	Default ModelList `yaml:"default,omitempty"`
	// Fetch lists the models from the endpoint's own /models (OpenAI and
	// custom endpoints), cached for a while, Default being the list when the
	// endpoint cannot be asked (docs/config.md "Models from the endpoint").
	Fetch bool `yaml:"fetch,omitempty"`

	_ any `yaml:"userIdQuery" relay:"ignored"`
}

// decodeList reads the list form, `models: [a, b]`, as `models: {default: [a, b]}`.
func (m *Models) decodeList(n *yaml.Node) error { return n.Decode(&m.Default) }

// IsZero reports whether no model is listed; it keeps an empty `models:` out of dumps.
func (m Models) IsZero() bool { return len(m.Default) == 0 && !m.Fetch }

// AzureOpenAI is endpoints.azureOpenAI in librechat.yaml's shape. An agent
// with provider azureOpenAI and model M is served by the one group that lists M.
type AzureOpenAI struct {
	Groups []AzureGroup `yaml:"groups,omitempty"`
	// Titles name the conversations of agents on azureOpenAI.
	Titles `yaml:",inline"`

	_ any `yaml:"plugins" relay:"ignored"`
	_ any `yaml:"assistants" relay:"ignored"`
	_ any `yaml:"streamRate" relay:"ignored"`
	_ any `yaml:"titleMethod" relay:"ignored"`
	_ any `yaml:"titleMessageRole" relay:"ignored"`
	_ any `yaml:"titleTiming" relay:"ignored"`
	_ any `yaml:"summarize" relay:"ignored"`
	_ any `yaml:"summaryModel" relay:"ignored"`
	_ any `yaml:"customOrder" relay:"ignored"`
}

// IsZero reports whether no group is configured; it keeps an empty
// azureOpenAI out of dumps.
func (a AzureOpenAI) IsZero() bool { return len(a.Groups) == 0 && a.Titles == Titles{} }

// AzureGroup is one Azure OpenAI resource (or serverless endpoint) and the
// models it serves.
type AzureGroup struct {
	// Group names the group; unique.
	Group string `yaml:"group"`
	// APIKey is sent in the api-key header. Secret: masked in dumps.
	APIKey string `yaml:"apiKey,omitempty"`
	// InstanceName is the resource's name: requests go to
	// https://<instanceName>.openai.azure.com unless BaseURL says otherwise.
	InstanceName string `yaml:"instanceName,omitempty"`
	// DeploymentName is the deployment of a model that names none of its own.
	DeploymentName string `yaml:"deploymentName,omitempty"`
	// Version is the api-version of a model that names none of its own.
	Version string `yaml:"version,omitempty"`
	// BaseURL replaces the resource's address (a proxy or a gateway). It may
	// hold ${INSTANCE_NAME} and ${DEPLOYMENT_NAME}, filled per model; with
	// ${DEPLOYMENT_NAME} it addresses the deployment itself. With Serverless it
	// is the serverless endpoint.
	BaseURL string `yaml:"baseURL,omitempty"`
	// AdditionalHeaders are added to every request.
	AdditionalHeaders map[string]string `yaml:"additionalHeaders,omitempty"`
	// Serverless marks a serverless inference endpoint at BaseURL, which takes
	// the model in the request body rather than a deployment in the path.
	Serverless bool `yaml:"serverless,omitempty"`
	// AddParams are merged into every request body.
	AddParams map[string]any `yaml:"addParams,omitempty"`
	// DropParams are removed from every request body.
	DropParams []string `yaml:"dropParams,omitempty"`
	// Models are the models the group serves, by the name agents use.
	Models map[string]AzureModel `yaml:"models,omitempty"`

	_ any `yaml:"assistants" relay:"ignored"`
	_ any `yaml:"forcePrompt" relay:"ignored"`
}

// AzureModel is one entry of an Azure group's models: `true` (the group's
// deployment and version), `false` (not offered), or a mapping that names its
// own deploymentName and version.
type AzureModel struct {
	DeploymentName string `yaml:"deploymentName,omitempty"`
	Version        string `yaml:"version,omitempty"`
	// Off is set by `false`: the model is not offered.
	Off bool `yaml:"-"`

	_ any `yaml:"assistants" relay:"ignored"`
}

// decodeScalar reads the `true` and `false` forms of a model entry.
func (m *AzureModel) decodeScalar(n *yaml.Node) error {
	switch strings.ToLower(n.Value) {
	case "true":
		*m = AzureModel{}
	case "false":
		*m = AzureModel{Off: true}
	default:
		return fmt.Errorf("expected true, false or a mapping with deploymentName and version, got %s", describeNode(n))
	}
	return nil
}

// MarshalYAML writes the entry as it is written in the file: true, false or
// the mapping.
func (m AzureModel) MarshalYAML() (any, error) {
	switch {
	case m.Off:
		return false, nil
	case m.DeploymentName == "" && m.Version == "":
		return true, nil
	}
	return struct {
		DeploymentName string `yaml:"deploymentName,omitempty"`
		Version        string `yaml:"version,omitempty"`
	}{m.DeploymentName, m.Version}, nil
}

// AzureDeployment is where an Azure OpenAI model is served, resolved from the
// group that lists it.
type AzureDeployment struct {
	// Group is the group that lists the model.
	Group *AzureGroup
	// Deployment is the model's deploymentName, else the group's, else the
	// model's name. Serverless groups have none.
	Deployment string
	// Version is the model's version, else the group's; "" means the client's
	// default.
	Version string
}

// Azure returns where model is served: the group of endpoints.azureOpenAI
// that lists it (and does not set it to false), with its deployment and API
// version. ok is false when no group lists it.
func (e *Endpoints) Azure(model string) (d AzureDeployment, ok bool) {
	for i := range e.AzureOpenAI.Groups {
		g := &e.AzureOpenAI.Groups[i]
		m, listed := g.Models[model]
		if !listed || m.Off {
			continue
		}
		d = AzureDeployment{Group: g, Deployment: cmp.Or(m.DeploymentName, g.DeploymentName, model), Version: cmp.Or(m.Version, g.Version)}
		if g.Serverless {
			d.Deployment = ""
		}
		return d, true
	}
	return AzureDeployment{}, false
}

// AzureUnlisted says that no group of endpoints.azureOpenAI lists model, in
// words for the person who configured the agent.
func AzureUnlisted(model string) string {
	return fmt.Sprintf("azureOpenAI: no group lists model %q (list it under a group's models in endpoints.azureOpenAI)", model)
}

// AgentsEndpoint holds the limits librechat.yaml sets under endpoints.agents,
// and the run loop's tool limits.
type AgentsEndpoint struct {
	// RecursionLimit is the step limit of an agent that sets none.
	RecursionLimit int `yaml:"recursionLimit"`
	// MaxRecursionLimit caps every agent's recursion_limit.
	MaxRecursionLimit int `yaml:"maxRecursionLimit"`
	// MaxParallelTools bounds the tool calls of one turn that run at once.
	// Relay-only.
	MaxParallelTools int `yaml:"maxParallelTools"`
	// ToolTimeout bounds each tool call; 0 leaves only each MCP server's own
	// timeout. Relay-only.
	ToolTimeout Duration `yaml:"toolTimeout"`
	// Titles apply to every agent whose provider's endpoint does not set
	// them.
	Titles `yaml:",inline"`

	// MaxToolResultChars cuts longer tool results before they are sent to
	// the model; 0 means 30% of the agent's token budget at 4 characters a
	// token, at most 400,000 (LibreChat's default).
	MaxToolResultChars int `yaml:"maxToolResultChars"`

	_ any `yaml:"disableBuilder" relay:"ignored"`
	_ any `yaml:"capabilities" relay:"ignored"`
	_ any `yaml:"maxCitations" relay:"ignored"`
	_ any `yaml:"maxCitationsPerFile" relay:"ignored"`
	_ any `yaml:"minRelevanceScore" relay:"ignored"`
	_ any `yaml:"allowedProviders" relay:"ignored"`
	_ any `yaml:"streamRate" relay:"ignored"`
	_ any `yaml:"baseURL" relay:"ignored"`
	_ any `yaml:"titleMethod" relay:"ignored"`
	_ any `yaml:"titleMessageRole" relay:"ignored"`
	_ any `yaml:"titleTiming" relay:"ignored"`
	_ any `yaml:"maxToolCallArgBytes" relay:"ignored"`
	_ any `yaml:"maxToolCallArgBytesByTool" relay:"ignored"`
	_ any `yaml:"maxDeltaEventsPerTurn" relay:"ignored"`
	_ any `yaml:"maxSubagents" relay:"ignored"`
	_ any `yaml:"statefulCodeSessions" relay:"ignored"`
	_ any `yaml:"eventDriven" relay:"ignored"`
	_ any `yaml:"backgroundTasks" relay:"ignored"`
	_ any `yaml:"skills" relay:"ignored"`
	_ any `yaml:"remoteApi" relay:"ignored"`
	_ any `yaml:"toolApproval" relay:"ignored"`
	_ any `yaml:"checkpointer" relay:"ignored"`
}

// The MCP transports.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable-http"
	TransportWebSocket      = "websocket"
)

// The connection scopes of an MCP server.
const (
	// ScopeApp servers have one connection shared by every user.
	ScopeApp = "app"
	// ScopeUser servers have one connection per user.
	ScopeUser = "user"
)

// MCPServer is one entry of mcpServers, with the keys of librechat.yaml.
type MCPServer struct {
	// Type is stdio, sse, streamable-http or websocket ("http" is read as
	// streamable-http); "" means inferred, see Transport.
	Type    string            `yaml:"type,omitempty"`
	Command string            `yaml:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty"`
	// Stderr says what to do with the child's stderr, as given (e.g. "inherit").
	Stderr  string            `yaml:"stderr,omitempty"`
	URL     string            `yaml:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Timeout is the limit of one request, in milliseconds.
	Timeout int `yaml:"timeout"`
	// InitTimeout is the limit to connect and initialize, in milliseconds.
	InitTimeout        int                `yaml:"initTimeout"`
	ServerInstructions ServerInstructions `yaml:"serverInstructions,omitempty"`
	// Startup false defers connecting to first use. Never nil after Load.
	Startup     *bool  `yaml:"startup,omitempty"`
	ChatMenu    *bool  `yaml:"chatMenu,omitempty"`
	IconPath    string `yaml:"iconPath,omitempty"`
	Title       string `yaml:"title,omitempty"`
	Description string `yaml:"description,omitempty"`
	// Scope is ScopeApp or ScopeUser. Never empty after Load.
	Scope string `yaml:"scope,omitempty"`
	// Retrieval marks the server's tools as retrieval tools: their results are
	// the retrieved contexts of a Ragas export. Relay-only.
	Retrieval bool `yaml:"retrieval,omitempty"`
	// SendUserID adds the user's id to tools/call on user-scoped connections.
	// Never nil after Load.
	SendUserID *bool `yaml:"sendUserId,omitempty"`
	// ElicitationTimeout is how long a question the server asks during a tool
	// call waits for the user's answer, in milliseconds, before it is declined
	// (docs/mcp.md "Questions"). Relay-only.
	ElicitationTimeout int `yaml:"elicitationTimeout"`
	// Roots are the roots Relay lists when the server asks (roots/list); none
	// by default. Relay-only.
	Roots []MCPRoot `yaml:"roots,omitempty"`
	// Sampling lets the server ask the model of the agent whose call is in
	// flight for a completion (sampling/createMessage). Off by default.
	// Relay-only.
	Sampling MCPSampling `yaml:"sampling,omitempty"`

	// RequiresOAuth says each user authorizes Relay at the server (MCP OAuth)
	// before using it; an oauth block implies it. Such a server is user-scoped.
	RequiresOAuth bool `yaml:"requiresOAuth,omitempty"`
	// OAuth pins the authorization server's endpoints and a pre-registered
	// client, for servers that do not advertise them (docs/mcp.md "OAuth").
	OAuth *MCPOAuth `yaml:"oauth,omitempty"`
	// CustomUserVars are values each user sets for themselves (an API key, an
	// account name), substituted as {{NAME}} into url, headers and env of that
	// user's connection. Such a server is user-scoped.
	CustomUserVars map[string]UserVar `yaml:"customUserVars,omitempty"`

	_ any `yaml:"oauth_headers" relay:"ignored"`
	_ any `yaml:"apiKey" relay:"ignored"`
	_ any `yaml:"obo" relay:"ignored"`
	_ any `yaml:"sseReadTimeout" relay:"ignored"`
}

// MCPOAuth is an MCP server's oauth block, with LibreChat's keys.
type MCPOAuth struct {
	AuthorizationURL string `yaml:"authorization_url,omitempty"`
	TokenURL         string `yaml:"token_url,omitempty"`
	ClientID         string `yaml:"client_id,omitempty"`
	ClientSecret     string `yaml:"client_secret,omitempty"`
	// Scope is space-separated.
	Scope       string `yaml:"scope,omitempty"`
	RedirectURI string `yaml:"redirect_uri,omitempty"`
	// TokenExchangeMethod is how the client authenticates at the token
	// endpoint: DefaultPost (client_secret_post) or BasicAuthHeader
	// (client_secret_basic).
	TokenExchangeMethod string `yaml:"token_exchange_method,omitempty"`
	// TokenEndpointAuthMethods are the methods the token endpoint accepts,
	// when the server does not advertise them.
	TokenEndpointAuthMethods []string `yaml:"token_endpoint_auth_methods_supported,omitempty"`
	RevocationEndpoint       string   `yaml:"revocation_endpoint,omitempty"`

	_ any `yaml:"grant_types_supported" relay:"ignored"`
	_ any `yaml:"response_types_supported" relay:"ignored"`
	_ any `yaml:"code_challenge_methods_supported" relay:"ignored"`
	_ any `yaml:"skip_code_challenge_check" relay:"ignored"`
	_ any `yaml:"revocation_endpoint_auth_methods_supported" relay:"ignored"`
}

// AuthMethod returns the token endpoint's client authentication method the
// block names: client_secret_post, client_secret_basic, none, or "" (decided
// by the authorization server's metadata).
func (o *MCPOAuth) AuthMethod() string {
	switch o.TokenExchangeMethod {
	case "DefaultPost":
		return "client_secret_post"
	case "BasicAuthHeader":
		return "client_secret_basic"
	}
	for _, m := range o.TokenEndpointAuthMethods {
		if m == "client_secret_post" || m == "client_secret_basic" || m == "none" {
			return m
		}
	}
	return ""
}

// UserVar describes one of a server's customUserVars, as the UI asks for it.
type UserVar struct {
	Title       string `yaml:"title,omitempty"`
	Description string `yaml:"description,omitempty"`
}

// UsesOAuth reports whether each user authorizes Relay at the server.
func (s MCPServer) UsesOAuth() bool { return s.RequiresOAuth || s.OAuth != nil }

// setDefaults fills the values an absent key leaves, before the entry is decoded,
// so that an explicit `timeout: 0` is seen (and rejected) as such.
func (s *MCPServer) setDefaults() {
	s.Timeout = 60000
	s.InitTimeout = 30000
	s.ElicitationTimeout = 300000
}

// MCPRoot is one root of an MCP server's roots/list answer.
type MCPRoot struct {
	URI  string `yaml:"uri"`
	Name string `yaml:"name,omitempty"`
}

// MCPSampling is an MCP server's `sampling` key.
type MCPSampling struct {
	Enabled bool `yaml:"enabled"`
	// MaxTokens bounds a completion the server asks for; 0 means 1024.
	MaxTokens int `yaml:"maxTokens,omitempty"`
}

// AnswerTimeout returns ElicitationTimeout as a duration.
func (s MCPServer) AnswerTimeout() time.Duration {
	return time.Duration(s.ElicitationTimeout) * time.Millisecond
}

// Transport returns the transport the server uses: Type, or when it is absent
// stdio for a command, websocket for a ws:// or wss:// URL and sse for any other
// URL. It returns "" when there is nothing to infer from.
func (s MCPServer) Transport() string {
	switch {
	case s.Type == "http":
		return TransportStreamableHTTP
	case s.Type != "":
		return s.Type
	case s.Command != "":
		return TransportStdio
	case hasPrefixFold(s.URL, "ws://") || hasPrefixFold(s.URL, "wss://"):
		return TransportWebSocket
	case s.URL != "":
		return TransportSSE
	}
	return ""
}

// RequestTimeout returns Timeout as a duration.
func (s MCPServer) RequestTimeout() time.Duration {
	return time.Duration(s.Timeout) * time.Millisecond
}

// ConnectTimeout returns InitTimeout as a duration.
func (s MCPServer) ConnectTimeout() time.Duration {
	return time.Duration(s.InitTimeout) * time.Millisecond
}

// ConnectsAtStartup reports whether the server is connected at start-up (the default).
func (s MCPServer) ConnectsAtStartup() bool { return s.Startup == nil || *s.Startup }

// SendsUserID reports whether tools/call carries the user's id (the default).
func (s MCPServer) SendsUserID() bool { return s.SendUserID == nil || *s.SendUserID }

// Agent is an agent defined in the config file. Relay upserts these at start-up
// and marks them as managed by the config.
type Agent struct {
	ID         string `yaml:"id"`
	agent.Spec `yaml:",inline"`
}

// setDefaults makes a config agent shared unless its entry says `shared: false`:
// the operator's agents are meant for everyone on the server.
func (a *Agent) setDefaults() { a.Shared = true }

// Summarization is librechat.yaml's summarization section: when a
// conversation no longer fits the agent's token budget, the turns that are
// dropped are summarised by a model and the summary is sent in their place.
// Off unless Enabled.
type Summarization struct {
	// Enabled turns summarisation on; without it the other keys do nothing.
	Enabled bool `yaml:"enabled"`
	// Provider and Model make the summary; empty means the agent's own.
	Provider string `yaml:"provider,omitempty"`
	Model    string `yaml:"model,omitempty"`
	// Parameters are model parameters of the summary request.
	Parameters map[string]any `yaml:"parameters,omitempty"`
	// Prompt is the instruction the summariser gets; empty means Relay's.
	Prompt string `yaml:"prompt,omitempty"`
	// MaxSummaryTokens bounds the summary; it is kept free of the budget.
	MaxSummaryTokens int `yaml:"maxSummaryTokens"`

	_ any `yaml:"reserveRatio" relay:"ignored"`
	_ any `yaml:"trigger" relay:"ignored"`
	_ any `yaml:"contextPruning" relay:"ignored"`
	_ any `yaml:"updatePrompt" relay:"ignored"`
	_ any `yaml:"retainRecent" relay:"ignored"`
}

// Scheduler bounds scheduled runs and sets how Relay processes sharing one
// database watch each other: each serving process heartbeats, and one that
// stops heartbeating for DeadAfter counts as dead, so its running runs and
// firings are failed and the schedules it held fire again elsewhere.
type Scheduler struct {
	// RunTimeout is the longest a scheduled run may take; it is then stopped and failed.
	RunTimeout Duration `yaml:"run_timeout"`
	// HeartbeatInterval is how often a serving process marks itself alive.
	HeartbeatInterval Duration `yaml:"heartbeat_interval"`
	// DeadAfter is how long a process may go without a heartbeat before the
	// others take it for dead. It must exceed two heartbeats and any clock skew
	// between the hosts.
	DeadAfter Duration `yaml:"dead_after"`
	// MaxPerUser is how many schedules one user may have.
	MaxPerUser int `yaml:"max_per_user"`
	// MinInterval is the shortest time allowed between two firings of one
	// cron schedule.
	MinInterval Duration `yaml:"min_interval"`
	// Grace is how late a missed firing may still run (at start-up, after
	// downtime); firings missed by more are recorded as skipped.
	Grace Duration `yaml:"grace"`
}

// Memory configures the memory tool that keeps facts about a user, and the
// memory agent that updates them after each run (docs/config.md).
type Memory struct {
	Disabled bool `yaml:"disabled"`
	// ValidKeys, when set, are the only keys memories may be stored under.
	ValidKeys []string `yaml:"validKeys,omitempty"`
	// TokenLimit caps the tokens of a user's memories; 0 means no cap.
	TokenLimit int `yaml:"tokenLimit"`
	// Personalize lets users turn memory on and off for themselves. Never nil after Load.
	Personalize *bool `yaml:"personalize"`
	// MessageWindowSize is how many of the conversation's latest messages the
	// memory agent reads after each run.
	MessageWindowSize int `yaml:"messageWindowSize"`
	// Agent is the memory agent; nil means none runs, and so does one whose
	// Enabled is false. RunsAgent says whether it runs.
	Agent *MemoryAgent `yaml:"agent"`

	_ any `yaml:"charLimit" relay:"ignored"`
	_ any `yaml:"maxInputTokens" relay:"ignored"`
}

// RunsAgent reports whether the memory agent runs after each run: memory is
// not disabled, memory.agent is set and its enabled is not false
// (docs/config.md "The memory agent").
func (m Memory) RunsAgent() bool {
	return !m.Disabled && m.Agent != nil && (m.Agent.Enabled == nil || *m.Agent.Enabled)
}

// DefaultMessageWindowSize is memory.messageWindowSize when none is set, as in LibreChat.
const DefaultMessageWindowSize = 5

// MemoryAgent names the model that updates a user's memory after each run:
// a stored agent (ID), whose provider, model, instructions and parameters it
// takes, or a Provider and Model of its own.
type MemoryAgent struct {
	// Enabled false turns the memory agent off while keeping its settings, as
	// in LibreChat; nil means on.
	Enabled  *bool  `yaml:"enabled,omitempty"`
	ID       string `yaml:"id"`
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	// Instructions replace the default instructions of the memory agent (and
	// those of the agent ID names).
	Instructions    string         `yaml:"instructions"`
	ModelParameters map[string]any `yaml:"model_parameters"`
}

// The web search providers.
const (
	SearchSearxng = "searxng"
	SearchBrave   = "brave"
	SearchTavily  = "tavily"
	SearchSerper  = "serper"
)

// WebSearch configures the web_search tool.
type WebSearch struct {
	// SearchProvider is searxng, brave, tavily or serper; "" means the tool is off.
	SearchProvider     string `yaml:"searchProvider,omitempty"`
	SearxngInstanceURL string `yaml:"searxngInstanceUrl,omitempty"`
	SearxngAPIKey      string `yaml:"searxngApiKey,omitempty"`
	BraveAPIKey        string `yaml:"braveApiKey,omitempty"`
	TavilyAPIKey       string `yaml:"tavilyApiKey,omitempty"`
	SerperAPIKey       string `yaml:"serperApiKey,omitempty"`
	// BraveAPIURL, TavilyAPIURL and SerperAPIURL replace the providers' public
	// addresses, for a proxy, a self-hosted gateway or tests; "" means the
	// provider's own. Relay-only.
	BraveAPIURL  string `yaml:"braveApiUrl,omitempty"`
	TavilyAPIURL string `yaml:"tavilyApiUrl,omitempty"`
	SerperAPIURL string `yaml:"serperApiUrl,omitempty"`
	// SafeSearch is 0 (off), 1 (moderate) or 2 (strict).
	SafeSearch SafeSearch `yaml:"safeSearch"`
	// AnswerLanguage names the language the model is told to answer in, at the
	// end of the web_search rules in the prompt ("" for the user's own).
	AnswerLanguage string `yaml:"answerLanguage,omitempty"`
	// MaxResults caps the results given to the model, 1 to 20. Relay-only.
	MaxResults int `yaml:"maxResults"`
	// Timeout bounds one request to the search provider. Relay-only.
	Timeout Duration `yaml:"timeout"`
	// FetchPages is how many of the top results are also fetched, their pages'
	// text given to the model with the results; 0 turns fetching off. Relay-only.
	FetchPages int `yaml:"fetchPages"`
	// FetchMaxBytes caps what is read of each fetched page. Relay-only.
	FetchMaxBytes int64 `yaml:"fetchMaxBytes"`
	// FetchTimeout bounds the fetch of one page, redirects included. Relay-only.
	FetchTimeout Duration `yaml:"fetchTimeout"`
	// AllowPrivateAddresses lets page fetches reach loopback, private,
	// link-local and other non-public addresses, which are refused by default
	// so that a search result cannot make Relay read its own network.
	// Relay-only.
	AllowPrivateAddresses bool `yaml:"allowPrivateAddresses"`

	_ any `yaml:"firecrawlApiKey" relay:"ignored"`
	_ any `yaml:"firecrawlApiUrl" relay:"ignored"`
	_ any `yaml:"firecrawlVersion" relay:"ignored"`
	_ any `yaml:"firecrawlOptions" relay:"ignored"`
	_ any `yaml:"jinaApiKey" relay:"ignored"`
	_ any `yaml:"jinaApiUrl" relay:"ignored"`
	_ any `yaml:"cohereApiKey" relay:"ignored"`
	_ any `yaml:"scraperType" relay:"ignored"`
	_ any `yaml:"scraperProvider" relay:"ignored"`
	_ any `yaml:"rerankerType" relay:"ignored"`
	_ any `yaml:"scraperTimeout" relay:"ignored"`
	_ any `yaml:"keenableApiKey" relay:"ignored"`
	_ any `yaml:"keenableApiUrl" relay:"ignored"`
	_ any `yaml:"keenableSearchOptions" relay:"ignored"`
	_ any `yaml:"keenableScraperOptions" relay:"ignored"`
	_ any `yaml:"searxngSearchOptions" relay:"ignored"`
	_ any `yaml:"tavilySearchOptions" relay:"ignored"`
	_ any `yaml:"tavilyScraperOptions" relay:"ignored"`
}

// Default returns the configuration Relay runs with when no file and no
// environment override says otherwise.
func Default() *Config {
	personalize := true
	return &Config{
		Server: Server{
			Addr:            "127.0.0.1:3080",
			DataDir:         "./data",
			MaxBodyBytes:    1 << 20,
			ShutdownTimeout: Duration{30 * time.Second},
			LogLevel:        "info",
			LogFormat:       "text",
			MemoryLimitMB:   256,
			GCPercent:       150,

			ReadHeaderTimeout: Duration{10 * time.Second},
			ReadTimeout:       Duration{5 * time.Minute},
			IdleTimeout:       Duration{2 * time.Minute},
			MaxHeaderBytes:    64 << 10,
		},
		Limits: Limits{
			User: UserQuotas{Files: 1000, StorageMB: 5 << 10, RunsPerMinute: 60, ConcurrentRuns: 10},
			API:  RateLimits{KeyPerMinute: 600, IPPerMinute: 1200},
		},
		Database: Database{ConnectTimeout: Duration{30 * time.Second}},
		Auth: Auth{
			SessionTTL: Duration{7 * 24 * time.Hour},
			LoginLimit: LoginLimit{PerEmail: 10, PerAddress: 30, Window: Duration{15 * time.Minute}},
			OIDC:       OIDC{Scopes: []string{"openid", "email", "profile"}, Label: "Single sign-on", AutoCreate: ptr(true)},
		},
		Scheduler: Scheduler{
			RunTimeout:        Duration{30 * time.Minute},
			HeartbeatInterval: Duration{5 * time.Second},
			DeadAfter:         Duration{20 * time.Second},
			MaxPerUser:        50,
			MinInterval:       Duration{time.Minute},
			Grace:             Duration{time.Hour},
		},
		Endpoints: Endpoints{
			Agents: AgentsEndpoint{RecursionLimit: 50, MaxRecursionLimit: 100, MaxParallelTools: 4},
		},
		Memory:        Memory{Personalize: &personalize, MessageWindowSize: DefaultMessageWindowSize},
		Summarization: Summarization{MaxSummaryTokens: 1024},
		WebSearch: WebSearch{
			SafeSearch:    SafeSearchModerate,
			MaxResults:    10,
			Timeout:       Duration{15 * time.Second},
			FetchMaxBytes: 1 << 20,
			FetchTimeout:  Duration{10 * time.Second},
		},
		RAG: RAG{InjectContext: InjectAuto, VectorCacheMB: DefaultVectorCacheMB},
		FileConfig: FileConfig{
			ServerFileSizeLimit: 50,
			MaxDecodedMB:        256,
			MaxTextMB:           8,
			MaxChunks:           10000,
			MaxPages:            2000,
			MaxPDFOperations:    20_000_000,
			ExtractTimeout:      Duration{2 * time.Minute},
		},
	}
}

// Providers returns the provider names agents may use: the built-in ones, then
// every custom endpoint in file order.
func (c *Config) Providers() []string { return c.Endpoints.providers() }

func (e *Endpoints) providers() []string {
	ps := []string{ProviderOpenAI, ProviderAnthropic, ProviderGoogle, ProviderAzureOpenAI}
	for _, c := range e.Custom {
		ps = append(ps, c.Name)
	}
	return ps
}

// isProvider reports whether name, without regard to case, is a provider.
func (e *Endpoints) isProvider(name string) bool {
	return slices.ContainsFunc(e.providers(), func(p string) bool { return strings.EqualFold(p, name) })
}

// Location returns the time zone of Server.Timezone, or the process's local
// zone when it is empty.
func (c *Config) Location() (*time.Location, error) {
	if c.Server.Timezone == "" {
		return time.Local, nil
	}
	return time.LoadLocation(c.Server.Timezone)
}

// DefaultVectorCacheMB is rag.vectorCacheMB when none is set: the vectors of
// about 170,000 chunks of 384 dimensions.
const DefaultVectorCacheMB = 64

// The values of rag.injectContext.
const (
	InjectAuto   = "auto"
	InjectAlways = "always"
	InjectNever  = "never"
)

// RAG configures retrieval from uploaded files. With nothing set, retrieval is
// full text in the database.
type RAG struct {
	// APIURL, when set, sends ingestion and search to a LibreChat-compatible
	// RAG API (POST /embed, POST /query) instead of Relay's own.
	APIURL string `yaml:"api_url,omitempty"`
	// InjectContext says when files attached to a conversation put retrieved
	// passages into the system prompt: auto (when the agent has no
	// file_search), always, or never. Never empty after Load.
	InjectContext string `yaml:"injectContext"`
	// Embeddings, when its baseURL and model are set, embeds every chunk and
	// makes search hybrid (vectors and full text).
	Embeddings Embeddings `yaml:"embeddings"`
	// VectorCacheMB is how much memory, in MB, hybrid search may hold the
	// vectors of searched files in, least recently used dropped first; 0
	// reads them from the database at each search. Relay-only.
	VectorCacheMB int `yaml:"vectorCacheMB"`
}

// Embeddings is an OpenAI-compatible /embeddings endpoint.
type Embeddings struct {
	// BaseURL is the API's base, e.g. https://api.openai.com/v1.
	BaseURL string `yaml:"baseURL,omitempty"`
	// APIKey is secret: masked in dumps, never logged.
	APIKey string `yaml:"apiKey,omitempty"`
	Model  string `yaml:"model,omitempty"`
	// Dimensions, when above 0, asks the model for vectors of that length.
	Dimensions int `yaml:"dimensions,omitempty"`
}

// Enabled reports whether embeddings are configured.
func (e Embeddings) Enabled() bool { return e.BaseURL != "" && e.Model != "" }

// FileConfig holds the upload limits of librechat.yaml's fileConfig that Relay
// uses, and Relay's own limits on reading a file's text (docs/config.md).
type FileConfig struct {
	// ServerFileSizeLimit caps an upload, in MB. Never 0 after Load.
	ServerFileSizeLimit int `yaml:"serverFileSizeLimit"`
	// MaxDecodedMB caps the bytes one file decodes to (PDF streams, a
	// DOCX's document), in MB; over it the file fails.
	MaxDecodedMB int `yaml:"maxDecodedMB"`
	// MaxTextMB caps the text extracted from one file, in MB; the rest is
	// dropped and the file's note says so.
	MaxTextMB int `yaml:"maxTextMB"`
	// MaxChunks caps the chunks of one file; the rest are dropped and the
	// file's note says so.
	MaxChunks int `yaml:"maxChunks"`
	// MaxPages caps the pages of a PDF or DOCX; over it the file fails.
	MaxPages int `yaml:"maxPages"`
	// MaxPDFOperations caps the content-stream operators a PDF's pages run
	// (a form drawn counts 1000); over it the file fails.
	MaxPDFOperations int `yaml:"maxPdfOperations"`
	// ExtractTimeout bounds the reading of one file's text; past it the
	// file fails.
	ExtractTimeout Duration `yaml:"extractTimeout"`

	_ any `yaml:"endpoints" relay:"ignored"`
	_ any `yaml:"avatarSizeLimit" relay:"ignored"`
	_ any `yaml:"fileSizeLimit" relay:"ignored"`
	_ any `yaml:"totalSizeLimit" relay:"ignored"`
	_ any `yaml:"fileLimit" relay:"ignored"`
	_ any `yaml:"supportedMimeTypes" relay:"ignored"`
	_ any `yaml:"disabled" relay:"ignored"`
	_ any `yaml:"imageGeneration" relay:"ignored"`
	_ any `yaml:"clientImageResize" relay:"ignored"`
	_ any `yaml:"ocr" relay:"ignored"`
	_ any `yaml:"text" relay:"ignored"`
	_ any `yaml:"stt" relay:"ignored"`
	_ any `yaml:"fileTokenLimit" relay:"ignored"`
	_ any `yaml:"checkType" relay:"ignored"`
}

// UploadLimit is the upload cap in bytes.
func (f FileConfig) UploadLimit() int64 { return int64(f.ServerFileSizeLimit) << 20 }

// CurrentModel is the titleModel that means the agent's own model, as in
// LibreChat.
const CurrentModel = "current_model"

// TitlesFor returns the title settings of an agent on provider: each key from
// endpoints.all when set there, else from the provider's endpoint, else from
// endpoints.agents. A titleEndpoint that is not a provider (a LibreChat
// endpoint Relay does not have, such as bedrock) counts as not set.
func (e *Endpoints) TitlesFor(provider string) Titles {
	var own Titles
	switch {
	case strings.EqualFold(provider, ProviderOpenAI):
		own = e.OpenAI.Titles
	case strings.EqualFold(provider, ProviderAnthropic):
		own = e.Anthropic.Titles
	case strings.EqualFold(provider, ProviderGoogle):
		own = e.Google.Titles
	case strings.EqualFold(provider, ProviderAzureOpenAI):
		own = e.AzureOpenAI.Titles
	default:
		for _, c := range e.Custom {
			if strings.EqualFold(c.Name, provider) {
				own = c.Titles
				break
			}
		}
	}
	layers := []Titles{e.All.Titles, own, e.Agents.Titles}
	var t Titles
	for _, l := range layers {
		if t.TitleConvo == nil {
			t.TitleConvo = l.TitleConvo
		}
		t.TitleModel = cmp.Or(t.TitleModel, l.TitleModel)
		if t.TitleEndpoint == "" && e.isProvider(l.TitleEndpoint) {
			t.TitleEndpoint = l.TitleEndpoint
		}
		t.TitlePrompt = cmp.Or(t.TitlePrompt, l.TitlePrompt)
		t.TitlePromptTemplate = cmp.Or(t.TitlePromptTemplate, l.TitlePromptTemplate)
	}
	return t
}

// titleSetting is the title settings written at path.
type titleSetting struct {
	path string
	Titles
}

// titleSettings lists every place title settings are written, with its path.
func (e *Endpoints) titleSettings() []titleSetting {
	ts := []titleSetting{
		{"endpoints.all", e.All.Titles},
		{"endpoints." + ProviderOpenAI, e.OpenAI.Titles},
		{"endpoints." + ProviderAnthropic, e.Anthropic.Titles},
		{"endpoints." + ProviderGoogle, e.Google.Titles},
		{"endpoints." + ProviderAzureOpenAI, e.AzureOpenAI.Titles},
		{"endpoints.agents", e.Agents.Titles},
	}
	for i, c := range e.Custom {
		ts = append(ts, titleSetting{fmt.Sprintf("endpoints.custom[%d]", i), c.Titles})
	}
	return ts
}

// On reports whether model-made titles are turned on.
func (t Titles) On() bool { return t.TitleConvo != nil && *t.TitleConvo }
