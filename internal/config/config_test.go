package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/relay-ai/relay/internal/fault"
)

// envOf returns a getenv over a fixed set of variables.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// loadYAML writes text to relay.yaml in a fresh working directory and loads it
// by name, so that positions in errors read "relay.yaml:LINE:COL".
func loadYAML(t *testing.T, text string, env map[string]string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("relay.yaml", []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load("relay.yaml", envOf(env))
}

func mustLoadYAML(t *testing.T, text string, env map[string]string) *Config {
	t.Helper()
	c, err := loadYAML(t, text, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// problems returns the "field: message" lines of an invalid-config error.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded; want an error")
	}
	if !fault.Is(err, fault.Invalid) {
		t.Fatalf("error kind = %s, want invalid: %v", fault.KindOf(err), err)
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("not a *fault.Error: %v", err)
	}
	var out []string
	for _, f := range fe.Fields {
		out = append(out, f.Field+": "+f.Message)
	}
	return out
}

var ignoreUnexported = cmpopts.IgnoreUnexported(Config{}, Endpoints{}, Endpoint{}, Models{}, AgentsEndpoint{}, MCPServer{}, Memory{}, WebSearch{})

func TestDefaultsWithoutFile(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := Load("", envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	if diff := cmp.Diff(want, c, ignoreUnexported); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if c.Path != "" || c.Ignored != nil {
		t.Errorf("Path = %q, Ignored = %q; want both empty", c.Path, c.Ignored)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"addr", c.Server.Addr, "127.0.0.1:3080"},
		{"data_dir", c.Server.DataDir, "./data"},
		{"max_body_bytes", c.Server.MaxBodyBytes, int64(1 << 20)},
		{"shutdown_timeout", c.Server.ShutdownTimeout.Duration, 30 * time.Second},
		{"log_level", c.Server.LogLevel, "info"},
		{"log_format", c.Server.LogFormat, "text"},
		{"memory_limit_mb", c.Server.MemoryLimitMB, int64(256)},
		{"gc_percent", c.Server.GCPercent, 150},
		{"procs", c.Server.Procs, 0},
		{"connect_timeout", c.Database.ConnectTimeout.Duration, 30 * time.Second},
		{"recursionLimit", c.Endpoints.Agents.RecursionLimit, 50},
		{"maxRecursionLimit", c.Endpoints.Agents.MaxRecursionLimit, 100},
		{"personalize", *c.Memory.Personalize, true},
		{"safeSearch", c.WebSearch.SafeSearch, SafeSearchModerate},
		{"webSearch.maxResults", c.WebSearch.MaxResults, 10},
		{"webSearch.timeout", c.WebSearch.Timeout.Duration, 15 * time.Second},
		{"webSearch.fetchPages", c.WebSearch.FetchPages, 0},
		{"webSearch.fetchMaxBytes", c.WebSearch.FetchMaxBytes, int64(1 << 20)},
		{"webSearch.fetchTimeout", c.WebSearch.FetchTimeout.Duration, 10 * time.Second},
		{"webSearch.allowPrivateAddresses", c.WebSearch.AllowPrivateAddresses, false},
		{"providers", strings.Join(c.Providers(), ","), "openAI,anthropic,google,azureOpenAI"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	engine, dsn, err := c.DB()
	if err != nil || engine != "sqlite" || dsn != filepath.Join("data", "relay.db") {
		t.Errorf("DB() = %q, %q, %v; want sqlite, data/relay.db", engine, dsn, err)
	}
	loc, err := c.Location()
	if err != nil || loc != time.Local {
		t.Errorf("Location() = %v, %v; want time.Local", loc, err)
	}
}

func TestDiscovery(t *testing.T) {
	tests := []struct {
		name     string
		files    []string // files to create, each with server.addr naming it
		flag     string
		env      map[string]string
		wantPath string // "" for defaults only
		wantFrom string // what chose wantPath
		wantErr  string
	}{
		{name: "flag wins over RELAY_CONFIG and ./relay.yaml", files: []string{"flag.yaml", "env.yaml", "relay.yaml"},
			flag: "flag.yaml", env: map[string]string{"RELAY_CONFIG": "env.yaml"}, wantPath: "flag.yaml", wantFrom: "--config"},
		{name: "RELAY_CONFIG wins over ./relay.yaml", files: []string{"env.yaml", "relay.yaml"},
			env: map[string]string{"RELAY_CONFIG": "env.yaml"}, wantPath: "env.yaml", wantFrom: "RELAY_CONFIG"},
		{name: "./relay.yaml when nothing names a file", files: []string{"relay.yaml"}, wantPath: "relay.yaml", wantFrom: "working directory"},
		{name: "empty RELAY_CONFIG is unset", files: []string{"relay.yaml"},
			env: map[string]string{"RELAY_CONFIG": ""}, wantPath: "relay.yaml", wantFrom: "working directory"},
		{name: "RELAY_CONFIG wins over CONFIG_PATH", files: []string{"env.yaml", "lc.yaml", "relay.yaml"},
			env: map[string]string{"RELAY_CONFIG": "env.yaml", "CONFIG_PATH": "lc.yaml"}, wantPath: "env.yaml", wantFrom: "RELAY_CONFIG"},
		{name: "CONFIG_PATH wins over ./relay.yaml and ./librechat.yaml", files: []string{"lc.yaml", "relay.yaml", "librechat.yaml"},
			env: map[string]string{"CONFIG_PATH": "lc.yaml"}, wantPath: "lc.yaml", wantFrom: "CONFIG_PATH"},
		{name: "empty CONFIG_PATH is unset", files: []string{"librechat.yaml"},
			env: map[string]string{"CONFIG_PATH": ""}, wantPath: "librechat.yaml", wantFrom: "working directory"},
		{name: "./relay.yaml wins over ./librechat.yaml", files: []string{"librechat.yaml", "relay.yaml"}, wantPath: "relay.yaml", wantFrom: "working directory"},
		{name: "./librechat.yaml when there is no ./relay.yaml", files: []string{"librechat.yaml"}, wantPath: "librechat.yaml", wantFrom: "working directory"},
		{name: "defaults when there is no file"},
		{name: "CONFIG_PATH file must exist", files: []string{"relay.yaml"},
			env: map[string]string{"CONFIG_PATH": "/app/librechat.yaml.gone"}, wantErr: "config file /app/librechat.yaml.gone (from CONFIG_PATH) does not exist"},
		{name: "CONFIG_PATH as a URL", files: []string{"relay.yaml"},
			env: map[string]string{"CONFIG_PATH": "https://example.com/librechat.yaml"}, wantErr: "config file https://example.com/librechat.yaml (from CONFIG_PATH): Relay reads a local file, not a URL; download it and name the file"},
		{name: "flag file must exist", files: []string{"relay.yaml"}, flag: "missing.yaml",
			wantErr: "config file missing.yaml (from --config) does not exist"},
		{name: "RELAY_CONFIG file must exist", files: []string{"relay.yaml"},
			env: map[string]string{"RELAY_CONFIG": "gone.yaml"}, wantErr: "config file gone.yaml (from RELAY_CONFIG) does not exist"},
		{name: "a directory is not a config file", files: []string{"relay.yaml"}, flag: ".",
			wantErr: "config file . (from --config) is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for i, f := range tt.files {
				text := "server:\n  addr: 127.0.0.1:" + string(rune('1'+i)) + "000\n"
				if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(tt.flag, envOf(tt.env))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Path != tt.wantPath {
				t.Errorf("Path = %q, want %q", c.Path, tt.wantPath)
			}
			if c.PathFrom != tt.wantFrom {
				t.Errorf("PathFrom = %q, want %q", c.PathFrom, tt.wantFrom)
			}
			wantAddr := Default().Server.Addr
			for i, f := range tt.files {
				if f == tt.wantPath {
					wantAddr = "127.0.0.1:" + string(rune('1'+i)) + "000"
				}
			}
			if c.Server.Addr != wantAddr {
				t.Errorf("addr = %q, want %q (from %s)", c.Server.Addr, wantAddr, tt.wantPath)
			}
		})
	}
}

func TestEnvOverrides(t *testing.T) {
	const file = `server:
  addr: 127.0.0.1:4000
  data_dir: /srv/relay
  timezone: Europe/Amsterdam
  log_level: warn
database:
  url: /srv/relay/file.db
`
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"file values without env", nil, func(t *testing.T, c *Config) {
			if c.Server.Addr != "127.0.0.1:4000" || c.Server.DataDir != "/srv/relay" || c.Server.Timezone != "Europe/Amsterdam" ||
				c.Server.LogLevel != "warn" || c.Database.URL != "/srv/relay/file.db" {
				t.Errorf("server = %+v, database.url = %q", c.Server, c.Database.URL)
			}
		}},
		{"every override beats the file", map[string]string{
			"RELAY_ADDR": ":9999", "RELAY_DATA_DIR": "/tmp/d", "RELAY_DATABASE_URL": "postgres://u@db:5432/relay",
			"RELAY_TIMEZONE": "UTC", "RELAY_LOG_LEVEL": "DEBUG",
		}, func(t *testing.T, c *Config) {
			if c.Server.Addr != ":9999" || c.Server.DataDir != "/tmp/d" || c.Server.Timezone != "UTC" || c.Server.LogLevel != "debug" {
				t.Errorf("server = %+v", c.Server)
			}
			if e, dsn, _ := c.DB(); e != "postgres" || dsn != "postgres://u@db:5432/relay" {
				t.Errorf("DB() = %q, %q", e, dsn)
			}
		}},
		{"empty values are unset", map[string]string{"RELAY_ADDR": "", "RELAY_LOG_LEVEL": ""}, func(t *testing.T, c *Config) {
			if c.Server.Addr != "127.0.0.1:4000" || c.Server.LogLevel != "warn" {
				t.Errorf("server = %+v", c.Server)
			}
		}},
		{"RELAY_DATA_DIR moves the default database", map[string]string{"RELAY_DATA_DIR": "/var/lib/relay", "RELAY_DATABASE_URL": ""},
			func(t *testing.T, c *Config) {
				c.Database.URL = ""
				if _, dsn, _ := c.DB(); dsn != "/var/lib/relay/relay.db" {
					t.Errorf("dsn = %q", dsn)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustLoadYAML(t, file, tt.env))
		})
	}

	t.Run("a bad override is reported by its variable", func(t *testing.T) {
		_, err := loadYAML(t, file, map[string]string{"RELAY_TIMEZONE": "Mars/Base"})
		want := []string{`env RELAY_TIMEZONE: server.timezone: unknown time zone "Mars/Base" (use an IANA name such as Europe/Amsterdam, or leave it empty for the local zone)`}
		if diff := cmp.Diff(want, problems(t, err)); diff != "" {
			t.Errorf("problems (-want +got):\n%s", diff)
		}
	})
	t.Run("env overrides apply without a file", func(t *testing.T) {
		t.Chdir(t.TempDir())
		c, err := Load("", envOf(map[string]string{"RELAY_ADDR": "0.0.0.0:80"}))
		if err != nil || c.Server.Addr != "0.0.0.0:80" {
			t.Fatalf("Load = %v, %v", c, err)
		}
	})
}

func TestLibreChatFile(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-openai-from-env-0006", "OPENROUTER_KEY": "or-from-env-0007", "APP_TITLE": "Relay"}
	c, err := Load("testdata/librechat.yaml", envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	wantIgnored := []string{
		"cache",
		"endpoints.agents.capabilities",
		"endpoints.agents.disableBuilder",
		"endpoints.custom[0].modelDisplayLabel",
		"fileStrategy",
		"interface",
		"registration",
		"version",
		"webSearch.firecrawlApiKey",
		"webSearch.rerankerType",
	}
	if diff := cmp.Diff(wantIgnored, c.Ignored); diff != "" {
		t.Errorf("Ignored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"scheduled-tasks", "weather-api", "realtime-data", "ANVS-IAEA-Wetten", "NEO NL", "legacy-weather", "per-user"}, c.MCPOrder); diff != "" {
		t.Errorf("MCPOrder (-want +got):\n%s", diff)
	}

	type server struct {
		Transport, Scope     string
		Timeout, InitTimeout int
		Startup, FromServer  bool
		Instructions         string
	}
	wantServers := map[string]server{
		"scheduled-tasks":  {TransportStdio, ScopeApp, 30000, 30000, true, false, ""},
		"weather-api":      {TransportSSE, ScopeApp, 15000, 30000, true, false, ""},
		"realtime-data":    {TransportWebSocket, ScopeApp, 10000, 30000, true, false, ""},
		"ANVS-IAEA-Wetten": {TransportStreamableHTTP, ScopeApp, 60000, 30000, true, false, "When using search tools, synthesize results into a clear answer in the user's language.\n"},
		"NEO NL":           {TransportStreamableHTTP, ScopeApp, 60000, 30000, true, true, ""},
		"legacy-weather":   {TransportSSE, ScopeApp, 60000, 30000, true, false, ""},
		"per-user":         {TransportStreamableHTTP, ScopeUser, 60000, 30000, false, false, ""},
	}
	gotServers := map[string]server{}
	for name, s := range c.MCPServers {
		gotServers[name] = server{s.Transport(), s.Scope, s.Timeout, s.InitTimeout, s.ConnectsAtStartup(), s.ServerInstructions.FromServer(), s.ServerInstructions.Text}
	}
	if diff := cmp.Diff(wantServers, gotServers); diff != "" {
		t.Errorf("mcpServers (-want +got):\n%s", diff)
	}
	if got := c.MCPServers["NEO NL"].Type; got != TransportStreamableHTTP {
		t.Errorf(`type "http" read as %q, want streamable-http`, got)
	}
	if got := c.MCPServers["weather-api"].Headers["Authorization"]; got != "Bearer ${WEATHER_API_KEY}" {
		t.Errorf("mcpServers headers are expanded: %q", got)
	}

	if got := c.Endpoints.OpenAI.APIKey; got != env["OPENAI_API_KEY"] {
		t.Errorf("openAI.apiKey = %q, want it expanded", got)
	}
	if diff := cmp.Diff([]string{"openAI", "anthropic", "google", "azureOpenAI", "Ollama", "OpenRouter"}, c.Providers()); diff != "" {
		t.Errorf("Providers (-want +got):\n%s", diff)
	}
	or := c.Endpoints.Custom[1]
	if diff := cmp.Diff(ModelList{"meta-llama/llama-3-70b-instruct", "openai/gpt-4o"}, or.Models.Default); diff != "" {
		t.Errorf("models given as mappings (-want +got):\n%s", diff)
	}
	if or.Headers["X-Title"] != "Relay" || or.Headers["Authorization"] != "Bearer or-from-env-0007" {
		t.Errorf("custom headers = %q", or.Headers)
	}
	if or.AddParams["temperature"] != 0.2 {
		t.Errorf("addParams = %v", or.AddParams)
	}
	if a := c.Endpoints.Agents; a.RecursionLimit != 50 || a.MaxRecursionLimit != 100 {
		t.Errorf("endpoints.agents = %+v", a)
	}

	if len(c.Agents) != 2 {
		t.Fatalf("agents = %d, want 2", len(c.Agents))
	}
	if a := c.Agents[0]; a.ID != "researcher" || !a.Shared || a.Instructions != "Answer with sources. Never reveal ${OPENAI_API_KEY}." {
		t.Errorf("agents[0] = %+v; want shared by default and instructions unexpanded", a)
	}
	if c.Agents[1].Shared {
		t.Errorf("agents[1].shared = true, want the file's false")
	}
	if m := c.Memory; m.TokenLimit != 10000 || len(m.ValidKeys) != 3 || !*m.Personalize {
		t.Errorf("memory = %+v", m)
	}
	if w := c.WebSearch; w.SearchProvider != SearchSerper || w.SerperAPIKey != "${SERPER_API_KEY}" || w.SafeSearch != SafeSearchModerate {
		t.Errorf("webSearch = %+v", w)
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"in server", "server:\n  addr: :3080\n  adress: :4000\n", []string{
			`relay.yaml:3:3: unknown key "adress" in server (known: addr, data_dir, timezone, max_body_bytes, shutdown_timeout, log_level, log_format, memory_limit_mb, gc_percent, procs, cors_origins, read_header_timeout, read_timeout, idle_timeout, max_header_bytes, allowed_addresses, public_url)`,
		}},
		{"at top level", "version: 1.2.8\nservers:\n  addr: :3080\n", []string{
			`relay.yaml:2:1: unknown key "servers" at top level (known: server, database, endpoints, mcpServers, agents, memory, summarization, webSearch, rag, fileConfig, scheduler, limits, auth, secrets, metrics)`,
		}},
		{"in a custom endpoint", "endpoints:\n  custom:\n    - name: Groq\n      baseURL: https://api.groq.com/openai/v1\n      titelConvo: true\n", []string{
			`relay.yaml:5:7: unknown key "titelConvo" in endpoints.custom[0] (known: name, apiKey, baseURL, models, headers, addParams, dropParams, titleConvo, titleModel, titleEndpoint, titlePrompt, titlePromptTemplate, tokenConfig)`,
		}},
		{"in an MCP server", "mcpServers:\n  fs:\n    command: npx\n    argz: [a]\n", []string{
			`relay.yaml:4:5: unknown key "argz" in mcpServers.fs (known: type, command, args, env, stderr, url, headers, timeout, initTimeout, serverInstructions, startup, chatMenu, iconPath, title, description, scope, retrieval, sendUserId, elicitationTimeout, roots, sampling, requiresOAuth, oauth, customUserVars)`,
		}},
		{"in an MCP server with a spaced name", "mcpServers:\n  \"NEO NL\":\n    url: http://x/mcp\n    header: {}\n", []string{
			`relay.yaml:4:5: unknown key "header" in mcpServers["NEO NL"] (known: type, command, args, env, stderr, url, headers, timeout, initTimeout, serverInstructions, startup, chatMenu, iconPath, title, description, scope, retrieval, sendUserId, elicitationTimeout, roots, sampling, requiresOAuth, oauth, customUserVars)`,
		}},
		{"in an agent edge", "agents:\n  - id: a\n    provider: openAI\n    model: m\n    edges:\n      - from: a\n        to: b\n        kind: direct\n", []string{
			`relay.yaml:8:9: unknown key "kind" in agents[0].edges[0] (known: from, to, edgeType, prompt, excludeResults, promptKey, description)`,
		}},
		{"in an Azure group and model", "endpoints:\n  azureOpenAI:\n    groups:\n      - group: a\n        instanceName: res\n        apiVersion: \"2024-10-21\"\n        models:\n          gpt-4o:\n            deployment: x\n", []string{
			`relay.yaml:6:9: unknown key "apiVersion" in endpoints.azureOpenAI.groups[0] (known: group, apiKey, instanceName, deploymentName, version, baseURL, additionalHeaders, serverless, addParams, dropParams, models)`,
			`relay.yaml:9:13: unknown key "deployment" in endpoints.azureOpenAI.groups[0].models.gpt-4o (known: deploymentName, version)`,
		}},
		{"memory turned off as it cannot be", "memory:\n  enabled: false\n  agent:\n    enabled: false\n    id: a\n", []string{
			`relay.yaml:2:3: unknown key "enabled" in memory (known: disabled, validKeys, tokenLimit, personalize, messageWindowSize, agent); memory is on unless memory.disabled is true`,
		}},
		{"several, in file order, beside ignored keys", "interface:\n  x: 1\nmemory:\n  tokenlimit: 5\npermissions:\n  a: b\nserver:\n  adress: x\n", []string{
			`relay.yaml:4:3: unknown key "tokenlimit" in memory (known: disabled, validKeys, tokenLimit, personalize, messageWindowSize, agent)`,
			`relay.yaml:5:1: unknown key "permissions" at top level (known: server, database, endpoints, mcpServers, agents, memory, summarization, webSearch, rag, fileConfig, scheduler, limits, auth, secrets, metrics)`,
			`relay.yaml:8:3: unknown key "adress" in server (known: addr, data_dir, timezone, max_body_bytes, shutdown_timeout, log_level, log_format, memory_limit_mb, gc_percent, procs, cors_origins, read_header_timeout, read_timeout, idle_timeout, max_header_bytes, allowed_addresses, public_url)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadYAML(t, tt.yaml, nil)
			if err != nil {
				t.Fatalf("Load: %v; want unknown keys to be warnings only", err)
			}
			if diff := cmp.Diff(tt.want, c.Unknown); diff != "" {
				t.Errorf("Unknown (-want +got):\n%s", diff)
			}
		})
	}
}

// LibreChat's keys for what Relay does not have (tracing to Langfuse, PII
// filters, skills, CloudFront, tool approval, ...) are listed as ignored
// LibreChat keys, not warned about as unknown keys (typos), those that guard
// data or tool calls warned about as not in effect too; what is below them
// is not read.
func TestLibreChatKeysIgnored(t *testing.T) {
	c, err := loadYAML(t, `langfuse:
  secretKey: ${LANGFUSE_SECRET_KEY}
filters:
  messages: {pii: {starterPatterns: [sk_prefix]}}
messageFilter: {pii: {}}
skillSync: {github: {enabled: true}}
cloudfront: {domain: https://cdn.example.com}
summarization:
  updatePrompt: Update it.
  retainRecent: {turns: 4}
memory:
  maxInputTokens: 8000
endpoints:
  agents:
    toolApproval: {enabled: true}
    maxSubagents: 3
  custom:
    - name: gw
      baseURL: http://gw.example/v1
      apiKeyPreview: sk-...
      tokenConfig:
        m: {context: 1000, cacheRead: 0.3}
webSearch:
  searxngSearchOptions: {engines: [wikipedia]}
  keenableApiKey: k
  adress: x
`, map[string]string{"LANGFUSE_SECRET_KEY": "sk-lf-secret-0001"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{
		"cloudfront", "endpoints.agents.maxSubagents", "endpoints.agents.toolApproval",
		"endpoints.custom[0].apiKeyPreview", "endpoints.custom[0].tokenConfig.m.cacheRead",
		"filters", "langfuse", "memory.maxInputTokens", "messageFilter", "skillSync",
		"summarization.retainRecent", "summarization.updatePrompt",
		"webSearch.keenableApiKey", "webSearch.searxngSearchOptions",
	}
	if diff := cmp.Diff(want, c.Ignored); diff != "" {
		t.Errorf("Ignored (-want +got):\n%s", diff)
	}
	// The safeguards among them are warned about as not in effect, and a
	// typo beside them is still an unknown key.
	var warned []string
	for _, u := range c.Unknown {
		w, _, _ := strings.Cut(u, " (known:")
		warned = append(warned, w)
	}
	wantWarned := []string{
		"relay.yaml:3:1: filters is not in effect: Relay does not filter personal data out of messages, files or tool calls",
		"relay.yaml:5:1: messageFilter is not in effect: Relay does not filter personal data out of messages, files or tool calls",
		"relay.yaml:15:5: endpoints.agents.toolApproval is not in effect: a tool call in Relay is never held for approval",
		`relay.yaml:26:3: unknown key "adress" in webSearch`,
	}
	if diff := cmp.Diff(wantWarned, warned); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	if got := c.Endpoints.ContextWindow("gw", "m"); got != 1000 {
		t.Errorf("tokenConfig.m.context = %d, want 1000 beside the ignored cacheRead", got)
	}
}

// memory.agent.enabled: false turns the memory agent off, as in LibreChat;
// the agent's other settings, and the other memory keys, stay as written.
func TestMemoryAgentEnabled(t *testing.T) {
	const agent = "endpoints:\n  custom:\n    - name: local\n      baseURL: http://localhost:11434/v1\nmemory:\n  tokenLimit: 300\n"
	tests := []struct {
		name, yaml string
		runs       bool
	}{
		{"no agent", agent, false},
		{"agent", agent + "  agent:\n    provider: local\n    model: m\n", true},
		{"enabled: true", agent + "  agent:\n    enabled: true\n    provider: local\n    model: m\n", true},
		{"enabled: false", agent + "  agent:\n    enabled: false\n    provider: local\n    model: m\n", false},
		{"enabled: false with an id", agent + "  agent:\n    enabled: false\n    id: curator\n", false},
		// An agent that is off is not checked: its provider may be gone.
		{"enabled: false, provider gone", agent + "  agent:\n    enabled: false\n    provider: bedrock\n", false},
		{"enabled, memory disabled", agent + "  disabled: true\n  agent:\n    enabled: true\n    provider: local\n    model: m\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadYAML(t, tt.yaml, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(c.Unknown) != 0 {
				t.Errorf("Unknown = %q, want none: enabled is a key of memory.agent", c.Unknown)
			}
			if got := c.Memory.RunsAgent(); got != tt.runs {
				t.Errorf("RunsAgent() = %v, want %v", got, tt.runs)
			}
			if c.Memory.TokenLimit != 300 || c.Memory.MessageWindowSize != DefaultMessageWindowSize {
				t.Errorf("memory = %+v; the other keys changed", c.Memory)
			}
		})
	}
	// A memory agent that runs is still checked.
	_, err := loadYAML(t, agent+"  agent:\n    enabled: true\n    provider: bedrock\n    model: m\n", nil)
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], `memory.agent.provider: unknown provider "bedrock"`) {
		t.Errorf("problems = %q, want the enabled agent's provider refused", got)
	}
}

// TestUnknownKeysBesideErrors checks that an unknown key does not hide, or
// add to, the problems that make a config invalid: a duplicate key and a
// wrong type stay fatal.
func TestUnknownKeysBesideErrors(t *testing.T) {
	_, err := loadYAML(t, "server:\n  addr: :1\n  addr: :2\n  adress: x\nmcpServers:\n  x:\n    url: http://h/mcp\n    timeout: abc\n    cwd: /tmp\n", nil)
	want := []string{
		`relay.yaml:3:3: duplicate key "addr" in server (first at line 2)`,
		`relay.yaml:8:14: mcpServers.x.timeout: expected an integer, got "abc"`,
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestMalformedYAML(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"missing colon", "server:\n  addr: :3080\n  data_dir\n  timezone: UTC\n", "relay.yaml:3: malformed YAML: could not find expected ':'"},
		{"bad indentation", "server:\n  addr: :3080\n bad: x\n", "relay.yaml:2: malformed YAML: did not find expected key"},
		{"tab indentation", "server:\n\taddr: :3080\n", "relay.yaml:2: malformed YAML: found character that cannot start any token"},
		{"not a mapping", "- a\n- b\n", `relay.yaml:1:1: the file must be a mapping of keys such as server, endpoints and mcpServers, got a list`},
		{"two documents", "server:\n  addr: :3080\n---\nendpoints:\n  custom: []\n", "relay.yaml:4: a second YAML document (after ---): a config file is one document"},
		{"broken second document", "server:\n  addr: :3080\n---\nendpoints: [\n", "relay.yaml:4: malformed YAML: did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, tt.yaml, nil)
			if diff := cmp.Diff([]string{tt.want}, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A document marker that starts the file, or ends it, is no second document.
func TestDocumentMarkers(t *testing.T) {
	for _, y := range []string{"---\nserver:\n  addr: :4000\n", "server:\n  addr: :4000\n---\n", "server:\n  addr: :4000\n---\n---\n...\n"} {
		c, err := loadYAML(t, y, nil)
		if err != nil || c.Server.Addr != ":4000" {
			t.Errorf("%q: addr %q, %v", y, c.Server.Addr, err)
		}
	}
}

func TestTypeErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"integer", "mcpServers:\n  x:\n    url: http://h/mcp\n    timeout: abc\n",
			`relay.yaml:4:14: mcpServers.x.timeout: expected an integer, got "abc"`},
		{"fractional integer", "endpoints:\n  agents:\n    recursionLimit: 2.9\n",
			`relay.yaml:3:21: endpoints.agents.recursionLimit: expected a whole number, got 2.9`},
		{"boolean", "mcpServers:\n  x:\n    command: npx\n    startup: maybe\n",
			`relay.yaml:4:14: mcpServers.x.startup: expected true or false, got "maybe"`},
		{"duration", "server:\n  shutdown_timeout: soon\n",
			`relay.yaml:2:21: server.shutdown_timeout: expected a duration such as "30s" or "2m", or a number of seconds, got "soon"`},
		{"list expected", "mcpServers:\n  x:\n    command: npx\n    args: {a: b}\n",
			`relay.yaml:4:11: mcpServers.x.args: expected a list of strings, got a mapping`},
		{"mapping expected", "server: :3080\n",
			`relay.yaml:1:9: server: expected a mapping, got ":3080"`},
		{"list of agents expected", "agents:\n  id: a\n",
			`relay.yaml:2:3: agents: expected a list, got a mapping`},
		{"string expected", "agents:\n  - id: a\n    provider: openAI\n    model: [a, b]\n",
			`relay.yaml:4:12: agents[0].model: expected a string, got a list`},
		{"safe search", "webSearch:\n  safeSearch: strict\n",
			`relay.yaml:2:15: webSearch.safeSearch: expected 0, 1, 2, true or false, got "strict"`},
		{"edge ids", "agents:\n  - id: a\n    provider: openAI\n    model: m\n    edges:\n      - from: {x: 1}\n        to: b\n",
			`relay.yaml:6:15: agents[0].edges[0].from: must be an agent id or a list of agent ids`},
		{"serverInstructions", "mcpServers:\n  x:\n    command: npx\n    serverInstructions: [a]\n",
			`relay.yaml:4:25: mcpServers.x.serverInstructions: expected true, false or a text, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, tt.yaml, nil)
			if diff := cmp.Diff([]string{tt.want}, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScalarForms(t *testing.T) {
	c := mustLoadYAML(t, `server:
  shutdown_timeout: 45
database:
  connect_timeout: 1m30s
mcpServers:
  x:
    command: npx
    stderr: 2
    env:
      PORT: 8080
    serverInstructions: false
  y:
    command: npx
    serverInstructions: "true"
webSearch:
  safeSearch: 2
`, nil)
	if got := c.Server.ShutdownTimeout.Duration; got != 45*time.Second {
		t.Errorf("shutdown_timeout = %v, want 45s", got)
	}
	if got := c.Database.ConnectTimeout.Duration; got != 90*time.Second {
		t.Errorf("connect_timeout = %v, want 1m30s", got)
	}
	x := c.MCPServers["x"]
	if x.Stderr != "2" || x.Env["PORT"] != "8080" || !x.ServerInstructions.IsZero() {
		t.Errorf("x = %+v", x)
	}
	if !c.MCPServers["y"].ServerInstructions.FromServer() {
		t.Errorf(`serverInstructions "true" = %+v, want the server's own`, c.MCPServers["y"].ServerInstructions)
	}
	if c.WebSearch.SafeSearch != SafeSearchStrict {
		t.Errorf("safeSearch = %d", c.WebSearch.SafeSearch)
	}
}

func TestExpansion(t *testing.T) {
	env := map[string]string{"KEY": "sk-expanded", "HOST": "llm.internal", "LIMIT": "2048", "TZ_NAME": "UTC", "EMPTY": ""}
	c := mustLoadYAML(t, `server:
  timezone: ${TZ_NAME}
  addr: ${EMPTY}
endpoints:
  openAI:
    apiKey: ${KEY}
    baseURL: "https://${HOST}/v1"
    headers:
      X-Unset: "${NOT_SET}"
      X-Dollar: "$KEY"
      X-Both: "${KEY}-${NOT_SET}"
memory:
  tokenLimit: ${LIMIT}
mcpServers:
  x:
    url: "https://${HOST}/mcp"
    headers:
      Authorization: "Bearer ${KEY}"
    env:
      TOKEN: ${KEY}
agents:
  - id: a
    provider: openAI
    model: ${HOST}
    instructions: "Use ${KEY} wisely"
    edges:
      - from: a
        to: b
        prompt: "Summarize ${KEY}"
`, env)
	tests := []struct {
		name, got, want string
	}{
		{"whole string", c.Endpoints.OpenAI.APIKey, "sk-expanded"},
		{"embedded", c.Endpoints.OpenAI.BaseURL, "https://llm.internal/v1"},
		{"unset stays literal", c.Endpoints.OpenAI.Headers["X-Unset"], "${NOT_SET}"},
		{"$VAR is not a reference", c.Endpoints.OpenAI.Headers["X-Dollar"], "$KEY"},
		{"set and unset together", c.Endpoints.OpenAI.Headers["X-Both"], "sk-expanded-${NOT_SET}"},
		{"set to empty leaves the default", c.Server.Addr, "127.0.0.1:3080"},
		{"timezone", c.Server.Timezone, "UTC"},
		{"not in mcpServers url", c.MCPServers["x"].URL, "https://${HOST}/mcp"},
		{"not in mcpServers headers", c.MCPServers["x"].Headers["Authorization"], "Bearer ${KEY}"},
		{"not in mcpServers env", c.MCPServers["x"].Env["TOKEN"], "${KEY}"},
		{"agent model", c.Agents[0].Model, "llm.internal"},
		{"not in agent instructions", c.Agents[0].Instructions, "Use ${KEY} wisely"},
		{"not in edge prompts", c.Agents[0].Edges[0].Prompt, "Summarize ${KEY}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	t.Run("unquoted reference can be a number", func(t *testing.T) {
		if c.Memory.TokenLimit != 2048 {
			t.Errorf("tokenLimit = %d, want 2048", c.Memory.TokenLimit)
		}
	})
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"server", `server:
  addr: localhost
  data_dir: ""
  timezone: Mars/Base
  max_body_bytes: 0
  shutdown_timeout: 0s
  log_level: verbose
  log_format: xml
  memory_limit_mb: -1
  gc_percent: 0
  procs: -2
`, []string{
			`relay.yaml:2:9: server.addr: "localhost" is not a host:port address (e.g. 127.0.0.1:3080 or :3080)`,
			`relay.yaml:3:13: server.data_dir: required`,
			`relay.yaml:4:13: server.timezone: unknown time zone "Mars/Base" (use an IANA name such as Europe/Amsterdam, or leave it empty for the local zone)`,
			`relay.yaml:5:19: server.max_body_bytes: must be greater than 0`,
			`relay.yaml:6:21: server.shutdown_timeout: must be greater than 0`,
			`relay.yaml:7:14: server.log_level: must be one of debug, info, warn, error, got "verbose"`,
			`relay.yaml:8:15: server.log_format: must be text or json, got "xml"`,
			`relay.yaml:9:20: server.memory_limit_mb: must be 0 (no limit) or more`,
			`relay.yaml:10:15: server.gc_percent: must be greater than 0, or -1 to collect only at server.memory_limit_mb`,
			`relay.yaml:11:10: server.procs: must be 0 (follow the load) or a number of threads`,
		}},
		{"collecting only at a limit that is not there", "server:\n  memory_limit_mb: 0\n  gc_percent: -1\n", []string{
			`relay.yaml:3:15: server.gc_percent: -1 needs server.memory_limit_mb, or memory would grow without bound`,
		}},
		{"allowed addresses", "server:\n  allowed_addresses: [\"10.0.0.5\", \"fd00::/8\", \"host.docker.internal:11434\", \"http://10.0.0.6\", \"10.0.0.0/40\"]\n", []string{
			`relay.yaml:2:22: server.allowed_addresses[3]: "http://10.0.0.6": a URL: give an address, a CIDR or a host name, with no scheme (give an IP address, a CIDR or a host name, each with an optional :port)`,
			`relay.yaml:2:22: server.allowed_addresses[4]: "10.0.0.0/40": not a valid CIDR (give an IP address, a CIDR or a host name, each with an optional :port)`,
		}},
		{"cors origins", "server:\n  cors_origins: [\"https://app.example.com\", \"*\", app.example.com, \"https://x.example/path\"]\n", []string{
			`relay.yaml:2:17: server.cors_origins[2]: "app.example.com" is not an origin (scheme://host[:port], e.g. https://app.example.com) or "*"`,
			`relay.yaml:2:17: server.cors_origins[3]: "https://x.example/path" is not an origin (scheme://host[:port], e.g. https://app.example.com) or "*"`,
		}},
		{"public url", "server:\n  public_url: relay.example.com\n", []string{
			`relay.yaml:2:15: server.public_url: "relay.example.com" is not the URL people open (scheme://host[:port][/path], e.g. https://relay.example.com)`,
		}},
		{"auth", "auth:\n  session_ttl: 30s\n  login_limit: {per_email: -1, per_address: 5, window: 0}\n", []string{
			`relay.yaml:2:16: auth.session_ttl: must be at least 1m, got 30s`,
			`relay.yaml:3:28: auth.login_limit.per_email: must be 0 (no limit) or more`,
			`relay.yaml:3:56: auth.login_limit.window: must be greater than 0`,
		}},
		{"oidc without an issuer", "auth:\n  oidc:\n    client_id: relay\n", []string{
			`relay.yaml:3:5: auth.oidc.issuer: required with client_id, client_secret or redirect_url (the provider's issuer URL, e.g. https://accounts.google.com)`,
		}},
		{"oidc", "auth:\n  oidc:\n    issuer: accounts.example.com\n    redirect_url: ftp://x\n    scopes: [email]\n", []string{
			`relay.yaml:3:13: auth.oidc.issuer: must be an http:// or https:// URL with a host, got "accounts.example.com"`,
			`relay.yaml:3:5: auth.oidc.client_id: required with an issuer`,
			`relay.yaml:4:19: auth.oidc.redirect_url: must be an http:// or https:// URL with a host, got "ftp://x"`,
			`relay.yaml:5:13: auth.oidc.scopes: must include openid, got [email]`,
		}},
		{"database", "database:\n  url: mysql://root:hunter2@db/relay\n  connect_timeout: 0\n", []string{
			`relay.yaml:2:8: database.url: unsupported scheme "mysql" (use a SQLite file path, sqlite://PATH or postgres://…)`,
			`relay.yaml:3:20: database.connect_timeout: must be greater than 0`,
		}},
		{"write behind too long", "database:\n  write_behind: 2s\n", []string{
			`relay.yaml:2:17: database.write_behind: must be between 0 and 1s`,
		}},
		{"write behind on postgres", "database:\n  url: postgres://relay@db/relay\n  write_behind: 100ms\n", []string{
			`relay.yaml:3:17: database.write_behind: is for SQLite only: with postgres, other processes read what this one writes`,
		}},
		{"custom endpoints", `endpoints:
  openAI:
    baseURL: api.openai.com/v1
  custom:
    - baseURL: http://localhost:11434/v1
    - name: groq
      baseURL: https://api.groq.com/openai/v1
    - name: Groq
      baseURL: ftp://x
    - name: OpenAI
      baseURL: "${OPENAI_PROXY}/v1"
    - name: Agents
      baseURL: "ftp://${HOST}"
    - name: ollama
      baseUrl: http://localhost:11434/v1
`, []string{
			`relay.yaml:3:14: endpoints.openAI.baseURL: must be an http:// or https:// URL with a host, got "api.openai.com/v1"`,
			`relay.yaml:5:7: endpoints.custom[0].name: required`,
			`relay.yaml:8:13: endpoints.custom[2].name: "Groq" is already the name of endpoints.custom[1] (names are compared without case)`,
			`relay.yaml:9:16: endpoints.custom[2].baseURL: must be an http:// or https:// URL with a host, got "ftp://x"`,
			`relay.yaml:10:13: endpoints.custom[3].name: "OpenAI" is a built-in endpoint name; choose another`,
			`relay.yaml:12:13: endpoints.custom[4].name: "Agents" is a built-in endpoint name; choose another`,
			`relay.yaml:13:16: endpoints.custom[4].baseURL: must be an http:// or https:// URL`,
			`relay.yaml:14:7: endpoints.custom[5].baseURL: required: the address of the OpenAI-compatible API (or user_provided)`,
		}},
		{"recursion limits", "endpoints:\n  agents:\n    recursionLimit: 200\n    maxRecursionLimit: 100\n", []string{
			`relay.yaml:3:21: endpoints.agents.recursionLimit: 200 is more than maxRecursionLimit (100)`,
		}},
		{"recursion limits at least 1", "endpoints:\n  agents:\n    recursionLimit: 0\n    maxRecursionLimit: -1\n", []string{
			`relay.yaml:3:21: endpoints.agents.recursionLimit: must be at least 1`,
			`relay.yaml:4:24: endpoints.agents.maxRecursionLimit: must be at least 1`,
		}},
		{"mcp servers", `mcpServers:
  a-stdio:
    type: stdio
    args: [x]
  b-ws:
    type: websocket
    url: http://localhost:3002
  c-sse:
    url: ftp://localhost/sse
  d-http:
    type: http
  e-placeholder:
    type: streamable-http
    url: "https://{{LIBRECHAT_USER_ID}}.example.com/mcp"
  f-env:
    url: "${MCP_URL}"
  g-bad-placeholder:
    type: websocket
    url: "http://${HOST}/ws"
  h-nothing:
    title: Nothing
  i-timeouts:
    command: npx
    timeout: 0
    initTimeout: -5
    scope: everyone
  j-type:
    type: grpc
    url: http://x
`, []string{
			`relay.yaml:3:5: mcpServers.a-stdio.command: required for a stdio server`,
			`relay.yaml:7:10: mcpServers.b-ws.url: must be a ws:// or wss:// URL with a host, got "http://localhost:3002"`,
			`relay.yaml:9:10: mcpServers.c-sse.url: must be a http:// or https:// URL with a host, got "ftp://localhost/sse"`,
			`relay.yaml:11:5: mcpServers.d-http.url: required (a http:// or https:// URL)`,
			`relay.yaml:19:10: mcpServers.g-bad-placeholder.url: must be a ws:// or wss:// URL`,
			`relay.yaml:21:5: mcpServers.h-nothing: needs a command (stdio) or a url`,
			`relay.yaml:24:14: mcpServers.i-timeouts.timeout: must be greater than 0 (milliseconds)`,
			`relay.yaml:25:18: mcpServers.i-timeouts.initTimeout: must be greater than 0 (milliseconds)`,
			`relay.yaml:26:12: mcpServers.i-timeouts.scope: must be app or user, got "everyone"`,
			`relay.yaml:28:11: mcpServers.j-type.type: must be one of stdio, sse, streamable-http (or http), websocket, got "grpc"`,
		}},
		{"mcp servers of each user", `mcpServers:
  a-app-oauth:
    url: https://x.example.com/sse
    requiresOAuth: true
    scope: app
  b-stdio-oauth:
    command: npx
    oauth: {client_id: x}
  c-oauth-keys:
    type: streamable-http
    url: https://x.example.com/mcp
    oauth:
      authorization_url: https://as.example.com/authorize
      client_secret: s
      token_exchange_method: Basic
  d-vars:
    command: npx
    customUserVars:
      1KEY: {title: Key}
      LIBRECHAT_X: {title: X}
      GOOD_KEY: {title: Good}
`, []string{
			`relay.yaml:5:12: mcpServers.a-app-oauth.scope: must be user (or absent) for a server with requiresOAuth, oauth or customUserVars: each user has their own connection`,
			`relay.yaml:7:5: mcpServers.b-stdio-oauth.type: OAuth needs an sse or streamable-http server, got stdio`,
			`relay.yaml:13:7: mcpServers.c-oauth-keys.oauth: authorization_url and token_url go together: give both or neither`,
			`relay.yaml:14:22: mcpServers.c-oauth-keys.oauth.client_secret: needs client_id`,
			`relay.yaml:15:30: mcpServers.c-oauth-keys.oauth.token_exchange_method: must be DefaultPost or BasicAuthHeader, got "Basic"`,
			`relay.yaml:19:13: mcpServers.d-vars.customUserVars.1KEY: a variable name is letters, digits and _, not starting with a digit`,
			`relay.yaml:20:20: mcpServers.d-vars.customUserVars.LIBRECHAT_X: LIBRECHAT_ names are Relay's own placeholders`,
		}},
		{"agents", `endpoints:
  agents:
    maxRecursionLimit: 30
  custom:
    - name: Ollama
      baseURL: http://localhost:11434/v1
agents:
  - id: "bad id!"
    provider: ollama
    model: llama3
  - id: twin
    provider: openAI
    model: gpt-4o
  - id: twin
    provider: mistral
    model: ""
    recursion_limit: 50
    tools: [web_search, web_search]
    edges:
      - from: twin
        to: "no good"
        edgeType: sideways
  - provider: openAI
    model: gpt-4o
`, []string{
			`relay.yaml:8:9: agents[0].id: "bad id!" is not an agent id (1 to 64 letters, digits, _ or -)`,
			`relay.yaml:14:9: agents[2].id: "twin" is already the id of agents[1]`,
			`relay.yaml:15:15: agents[2].provider: unknown provider "mistral" (known: openAI, anthropic, google, azureOpenAI, Ollama)`,
			`relay.yaml:16:12: agents[2].model: required`,
			`relay.yaml:18:12: agents[2].tools[1]: duplicate tool "web_search"`,
			`relay.yaml:17:22: agents[2].recursion_limit: at most 30 (endpoints.agents.maxRecursionLimit)`,
			`relay.yaml:21:13: agents[2].edges[0].to[0]: "no good" is not an agent id`,
			`relay.yaml:22:19: agents[2].edges[0].edgeType: must be handoff or direct`,
			`relay.yaml:23:5: agents[3].id: required`,
		}},
		{"memory and web search", `memory:
  validKeys: [preferences, Work-Info]
  tokenLimit: -1
webSearch:
  searchProvider: bing
  safeSearch: 3
  searxngInstanceUrl: searx.local
`, []string{
			`relay.yaml:2:14: memory.validKeys[1]: "Work-Info" must be lower-case letters and _`,
			`relay.yaml:3:15: memory.tokenLimit: must not be negative`,
			`relay.yaml:5:19: webSearch.searchProvider: must be one of searxng, brave, tavily, serper, or empty, got "bing"`,
			`relay.yaml:6:15: webSearch.safeSearch: must be 0 (off), 1 (moderate) or 2 (strict), got 3`,
			`relay.yaml:7:23: webSearch.searxngInstanceUrl: must be an http:// or https:// URL with a host, got "searx.local"`,
		}},
		{"memory agent: id and provider both, negative window", `memory:
  messageWindowSize: -2
  agent:
    id: memo
    provider: openAI
    model: gpt-4o-mini
`, []string{
			`relay.yaml:2:22: memory.messageWindowSize: must be at least 1 (the default is 5), got -2`,
			`relay.yaml:4:9: memory.agent.id: give either id (a stored agent) or provider and model, not both`,
		}},
		{"memory agent: unknown provider, missing model", `memory:
  agent:
    provider: mistral
    instructions: Remember.
`, []string{
			`relay.yaml:3:15: memory.agent.provider: unknown provider "mistral" (known: openAI, anthropic, google, azureOpenAI)`,
			`relay.yaml:3:5: memory.agent.model: required with provider`,
		}},
		{"memory agent: model without provider", "memory:\n  agent:\n    model: gpt-4o\n", []string{
			`relay.yaml:3:5: memory.agent.provider: required with model`,
		}},
		{"memory agent: empty", "memory:\n  agent: {}\n", []string{
			`relay.yaml:2:10: memory.agent: give id (a stored agent) or provider and model`,
		}},
		{"memory agent: id with model_parameters", "memory:\n  agent:\n    id: memo\n    model_parameters: {temperature: 0.2}\n", []string{
			`relay.yaml:4:23: memory.agent.model_parameters: only with provider and model: the agent "memo" has its own`,
		}},
		{"memory agent: not an agent id", "memory:\n  agent:\n    id: not an id\n", []string{
			`relay.yaml:3:9: memory.agent.id: "not an id" is not an agent id (1 to 64 letters, digits, _ or -)`,
		}},
		{"web search limits and addresses", `webSearch:
  searchProvider: brave
  braveApiUrl: ftp://brave.local
  maxResults: 0
  timeout: 0s
  fetchPages: 25
  fetchMaxBytes: 0
  fetchTimeout: -1s
`, []string{
			`relay.yaml:3:16: webSearch.braveApiUrl: must be an http:// or https:// URL with a host, got "ftp://brave.local"`,
			`relay.yaml:4:15: webSearch.maxResults: must be from 1 to 20, got 0`,
			`relay.yaml:5:12: webSearch.timeout: must be positive`,
			`relay.yaml:6:15: webSearch.fetchPages: must be from 0 (off) to 20, got 25`,
			`relay.yaml:7:18: webSearch.fetchMaxBytes: must be from 1 to 67108864 (64 MiB), got 0`,
			`relay.yaml:8:17: webSearch.fetchTimeout: must be positive`,
		}},
		{"web search fetches no more pages than it has results", "webSearch:\n  maxResults: 3\n  fetchPages: 4\n", []string{
			`relay.yaml:3:15: webSearch.fetchPages: 4 is more than maxResults (3)`,
		}},
		{"type errors are not reported twice", "agents:\n  - id: a\n    provider: [openAI]\n    model: m\n", []string{
			`relay.yaml:3:15: agents[0].provider: expected a string, got a list`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, tt.yaml, nil)
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("valid after flags change it", func(t *testing.T) {
		c := mustLoadYAML(t, "server:\n  addr: :3080\n", nil)
		c.Server.Addr = "nonsense"
		got := problems(t, c.Validate())
		want := []string{`relay.yaml:2:9: server.addr: "nonsense" is not a host:port address (e.g. 127.0.0.1:3080 or :3080)`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("problems (-want +got):\n%s", diff)
		}
	})
	t.Run("error text lists every problem", func(t *testing.T) {
		_, err := loadYAML(t, "server:\n  log_level: loud\n  log_format: xml\n", nil)
		want := `invalid config relay.yaml: relay.yaml:2:14: server.log_level: must be one of debug, info, warn, error, got "loud"; ` +
			`relay.yaml:3:15: server.log_format: must be text or json, got "xml"`
		if err == nil || err.Error() != want {
			t.Errorf("error = %v\nwant    %s", err, want)
		}
	})
}

func TestMCPDefaults(t *testing.T) {
	c := mustLoadYAML(t, `mcpServers:
  plain:
    command: npx
  user-env:
    command: npx
    env:
      USER_ID: "{{LIBRECHAT_USER_ID}}"
  user-args:
    command: npx
    args: ["--user", "{{LIBRECHAT_USER_EMAIL}}"]
  user-header:
    url: http://h/mcp
    headers:
      X-User: "{{LIBRECHAT_USER_USERNAME}}"
  forced-app:
    url: "http://h/{{LIBRECHAT_USER_ID}}"
    scope: app
    sendUserId: false
    startup: false
`, nil)
	tests := []struct {
		name                 string
		scope                string
		startup, sendsUserID bool
	}{
		{"plain", ScopeApp, true, true},
		{"user-env", ScopeUser, true, true},
		{"user-args", ScopeUser, true, true},
		{"user-header", ScopeUser, true, true},
		{"forced-app", ScopeApp, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := c.MCPServers[tt.name]
			if s.Scope != tt.scope || s.ConnectsAtStartup() != tt.startup || s.SendsUserID() != tt.sendsUserID {
				t.Errorf("scope %q startup %v sendUserId %v; want %q %v %v", s.Scope, s.ConnectsAtStartup(), s.SendsUserID(), tt.scope, tt.startup, tt.sendsUserID)
			}
			if s.RequestTimeout() != time.Minute || s.ConnectTimeout() != 30*time.Second {
				t.Errorf("timeouts %v, %v; want 1m, 30s", s.RequestTimeout(), s.ConnectTimeout())
			}
		})
	}
}

func TestTransport(t *testing.T) {
	tests := []struct {
		name string
		s    MCPServer
		want string
	}{
		{"explicit", MCPServer{Type: "sse", URL: "ws://x"}, TransportSSE},
		{"http alias", MCPServer{Type: "http", URL: "http://x"}, TransportStreamableHTTP},
		{"command", MCPServer{Command: "npx", URL: "http://x"}, TransportStdio},
		{"ws url", MCPServer{URL: "ws://x"}, TransportWebSocket},
		{"wss url", MCPServer{URL: "WSS://x"}, TransportWebSocket},
		{"http url", MCPServer{URL: "https://x/sse"}, TransportSSE},
		{"nothing", MCPServer{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Transport(); got != tt.want {
				t.Errorf("Transport() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDB(t *testing.T) {
	tests := []struct {
		name, url, engine, dsn, err string
	}{
		{name: "default", url: "", engine: "sqlite", dsn: "data/relay.db"},
		{name: "plain relative path", url: "relay.db", engine: "sqlite", dsn: "relay.db"},
		{name: "plain absolute path", url: "/var/lib/relay/relay.db", engine: "sqlite", dsn: "/var/lib/relay/relay.db"},
		{name: "sqlite: path", url: "sqlite:relay.db", engine: "sqlite", dsn: "relay.db"},
		{name: "sqlite:// relative", url: "sqlite://data/relay.db", engine: "sqlite", dsn: "data/relay.db"},
		{name: "sqlite:/// absolute", url: "sqlite:///abs/path.db", engine: "sqlite", dsn: "/abs/path.db"},
		{name: "sqlite without a path", url: "sqlite://", err: "database.url: sqlite URL needs a file path, e.g. sqlite:///var/lib/relay/relay.db"},
		{name: "postgres", url: "postgres://relay:pw@db:5432/relay?sslmode=disable", engine: "postgres", dsn: "postgres://relay:pw@db:5432/relay?sslmode=disable"},
		{name: "postgresql", url: "postgresql://relay@localhost/relay", engine: "postgres", dsn: "postgresql://relay@localhost/relay"},
		{name: "postgres without host", url: "postgres:///relay", err: "database.url: postgres URL needs a host, e.g. postgres://relay@localhost:5432/relay"},
		{name: "unparsable postgres hides the password", url: "postgres://relay:s3cr%t@db/relay", err: "database.url: not a valid postgres URL (check that special characters in the password are percent-encoded)"},
		{name: "mysql", url: "mysql://root:hunter2@x", err: `database.url: unsupported scheme "mysql" (use a SQLite file path, sqlite://PATH or postgres://…)`},
		{name: "key=value DSN", url: "host=db user=relay password=hunter2", err: "database.url: looks like a key=value connection string; write it as postgres://user:password@host:5432/dbname"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Server.DataDir = "data"
			c.Database.URL = tt.url
			engine, dsn, err := c.DB()
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || engine != tt.engine || dsn != tt.dsn {
				t.Errorf("DB() = %q, %q, %v; want %q, %q", engine, dsn, err, tt.engine, tt.dsn)
			}
		})
	}
}

func TestWriteMasked(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY":     "sk-openai-from-env-0006",
		"OPENROUTER_KEY":     "or-from-env-0007",
		"APP_TITLE":          "Relay",
		"RELAY_DATABASE_URL": "postgres://relay:db-password-0008@db.internal:5432/relay?sslmode=disable",
	}
	c, err := Load("testdata/librechat.yaml", envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	c.WebSearch.BraveAPIKey = "brave-secret-0009"
	c.WebSearch.TavilyAPIURL = "https://tavily.gateway.example/?token=tavily-url-secret-0011"
	c.Endpoints.Google.APIKey = "AIza-google-secret-0010"
	var b strings.Builder
	if err := c.WriteMasked(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()

	secrets := []string{
		"sk-openai-from-env-0006", "or-from-env-0007", "db-password-0008", "brave-secret-0009", "AIza-google-secret-0010",
		"tavily-url-secret-0011", "sk-ant-literal-secret-0001", "mcp-arg-secret-0002", "ghp_literal-secret-0003", "query-secret-0004", "literal-header-secret-0005",
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("output contains the secret %q", s)
		}
	}
	shown := []string{
		"# Ignored LibreChat keys: cache, endpoints.agents.capabilities,",
		"serperApiKey: ${SERPER_API_KEY}",
		"Authorization: Bearer ${WEATHER_API_KEY}",
		"Authorization: Bearer ${MCP_KEY}",
		"DATABASE_URL: ${DATABASE_URL}",
		"X-Api-Key: '{{MY_SERVICE_KEY}}'",
		"url: postgres://relay:****@db.internal:5432/relay?sslmode=disable",
		"url: https://weather.example.com/sse?api_key=****&units=metric",
		"X-Title: Relay",
		"tavilyApiUrl: https://tavily.gateway.example/?token=****",
		"- --api-key\n      - '****'",
		"GITHUB_TOKEN: '****'",
		"NODE_ENV: production",
		"serverInstructions: true",
		"instructions: Answer with sources. Never reveal ${OPENAI_API_KEY}.",
	}
	for _, s := range shown {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	if i, j := strings.Index(out, "scheduled-tasks:"), strings.Index(out, "per-user:"); i < 0 || j < i {
		t.Errorf("mcpServers are not in file order")
	}
	if c.Endpoints.OpenAI.APIKey != "sk-openai-from-env-0006" || c.MCPServers["scheduled-tasks"].Env["GITHUB_TOKEN"] != "ghp_literal-secret-0003" {
		t.Errorf("WriteMasked changed the config it was called on")
	}

	t.Run("round trip", func(t *testing.T) {
		dir := t.TempDir()
		c := Default()
		c.Endpoints.OpenAI.APIKey = "${OPENAI_API_KEY}"
		var b strings.Builder
		if err := c.WriteMasked(&b); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "dump.yaml")
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p, envOf(nil))
		if err != nil {
			t.Fatalf("the dump does not load: %v\n%s", err, b.String())
		}
		got.Path, got.PathFrom = "", ""
		if diff := cmp.Diff(c, got, ignoreUnexported, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	})
}

func TestMasking(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"literal", "sk-123", masked},
		{"empty", "", ""},
		{"reference", "${KEY}", "${KEY}"},
		{"bearer reference", "Bearer ${KEY}", "Bearer ${KEY}"},
		{"user placeholder", "{{LIBRECHAT_USER_ID}}", "{{LIBRECHAT_USER_ID}}"},
		{"literal around a reference", "sk-${KEY}", masked},
		{"bearer literal", "Bearer abc", masked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maskValue(tt.in); got != tt.want {
				t.Errorf("maskValue(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	urls := []struct {
		name, in, want string
	}{
		{"password", "postgres://u:pw@h/db", "postgres://u:****@h/db"},
		{"unparsable password", "postgres://u:p%zz@h/db", "postgres://u:****@h/db"},
		{"password reference", "postgres://u:${PW}@h/db", "postgres://u:${PW}@h/db"},
		{"no password", "postgres://u@h/db", "postgres://u@h/db"},
		{"query", "https://h/x?token=abc&v=1#top", "https://h/x?token=****&v=1#top"},
		{"file path", "/var/lib/relay.db", "/var/lib/relay.db"},
	}
	for _, tt := range urls {
		t.Run("url "+tt.name, func(t *testing.T) {
			if got := maskURL(tt.in); got != tt.want {
				t.Errorf("maskURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	args := []struct {
		name     string
		in, want []string
	}{
		{"flag and value", []string{"--token", "abc", "--verbose"}, []string{"--token", masked, "--verbose"}},
		{"flag=value", []string{"--api-key=abc"}, []string{"--api-key=" + masked}},
		{"env assignment", []string{"-e", "GITHUB_TOKEN=ghp"}, []string{"-e", "GITHUB_TOKEN=" + masked}},
		{"reference", []string{"--token", "${T}"}, []string{"--token", "${T}"}},
		{"harmless", []string{"-y", "@modelcontextprotocol/server-everything"}, []string{"-y", "@modelcontextprotocol/server-everything"}},
	}
	for _, tt := range args {
		t.Run("args "+tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, maskArgs(tt.in)); diff != "" {
				t.Errorf("maskArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	c := mustLoadYAML(t, `mcpServers:
  first: &remote
    type: streamable-http
    url: https://a.example.com/mcp
    timeout: 5000
    oauth: {client_id: x}
  second:
    <<: *remote
    url: https://b.example.com/mcp
endpoints:
  azureOpenAI:
    groups: []
  custom:
    - &ollama
      name: Ollama
      baseURL: http://localhost:11434/v1
      titleConvo: true
    - <<: *ollama
      name: Ollama2
`, nil)
	second := c.MCPServers["second"]
	if second.URL != "https://b.example.com/mcp" || second.Timeout != 5000 || second.Transport() != TransportStreamableHTTP {
		t.Errorf("second = %+v; want the anchor's keys with its own url", second)
	}
	if got := c.Endpoints.Custom[1]; got.Name != "Ollama2" || got.BaseURL != "http://localhost:11434/v1" {
		t.Errorf("custom[1] = %+v", got)
	}
	if !c.Endpoints.TitlesFor("Ollama2").On() {
		t.Errorf("custom[1] titles = %+v; want titleConvo from the anchor", c.Endpoints.Custom[1].Titles)
	}
	if second.OAuth == nil || second.OAuth.ClientID != "x" || second.Scope != ScopeUser {
		t.Errorf("second.OAuth = %+v, scope %q; want the anchor's oauth block, user scope", second.OAuth, second.Scope)
	}
	if len(c.Ignored) != 0 {
		t.Errorf("Ignored = %v; want none", c.Ignored)
	}
}

func TestEmptyFile(t *testing.T) {
	for _, text := range []string{"", "# only a comment\n", "---\n"} {
		c := mustLoadYAML(t, text, nil)
		if c.Path != "relay.yaml" {
			t.Errorf("%q: Path = %q", text, c.Path)
		}
		if diff := cmp.Diff(Default(), c, ignoreUnexported, cmpopts.IgnoreFields(Config{}, "Path", "PathFrom")); diff != "" {
			t.Errorf("%q: config (-want +got):\n%s", text, diff)
		}
	}
}

func TestTitles(t *testing.T) {
	c := mustLoadYAML(t, `endpoints:
  all:
    titleModel: gpt-4o-mini
    streamRate: 25
  openAI:
    titleConvo: true
    titleModel: gpt-4o
    titlePrompt: "Name this: {convo} ${HOME}"
  anthropic:
    titleConvo: false
  agents:
    titleConvo: true
    titleEndpoint: openAI
  custom:
    - name: Ollama
      baseURL: http://localhost:11434/v1
      titleModel: current_model
      titlePromptTemplate: "Q: {input} A: {output}"
`, map[string]string{"HOME": "/root"})
	yes := true
	tests := []struct {
		provider string
		want     Titles
	}{
		// endpoints.all wins, then the endpoint, then endpoints.agents.
		{"openAI", Titles{TitleConvo: &yes, TitleModel: "gpt-4o-mini", TitleEndpoint: "openAI", TitlePrompt: "Name this: {convo} ${HOME}"}},
		{"ollama", Titles{TitleConvo: &yes, TitleModel: "gpt-4o-mini", TitleEndpoint: "openAI", TitlePromptTemplate: "Q: {input} A: {output}"}},
		{"google", Titles{TitleConvo: &yes, TitleModel: "gpt-4o-mini", TitleEndpoint: "openAI"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, c.Endpoints.TitlesFor(tt.provider)); diff != "" {
			t.Errorf("TitlesFor(%q) (-want +got):\n%s", tt.provider, diff)
		}
	}
	if c.Endpoints.TitlesFor("anthropic").On() {
		t.Error("anthropic's titleConvo: false is overridden by endpoints.agents")
	}
	if diff := cmp.Diff([]string{"endpoints.all.streamRate"}, c.Ignored); diff != "" {
		t.Errorf("Ignored (-want +got):\n%s", diff)
	}

	_, err := loadYAML(t, "endpoints:\n  all:\n    titleEndpoint: opneAI\n", nil)
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], `endpoints.all.titleEndpoint: "opneAI" is not a provider`) {
		t.Errorf("problems = %q; want titleEndpoint refused", got)
	}
}

// A titleEndpoint naming a LibreChat endpoint Relay does not have (bedrock)
// loads with a warning, as a LibreChat value Relay does not have does, and
// counts as not set: titles fall back to the next layer's titleEndpoint, else
// to the agent's provider.
func TestTitleEndpointOfLibreChat(t *testing.T) {
	c, err := loadYAML(t, `endpoints:
  all:
    titleConvo: true
    titleEndpoint: bedrock
  agents:
    titleEndpoint: openAI
  custom:
    - name: ollama
      baseURL: http://localhost:11434/v1
      titleEndpoint: azureAssistants
`, nil)
	if err != nil {
		t.Fatalf("Load: %v; want a LibreChat endpoint to be a warning", err)
	}
	want := []string{
		`relay.yaml:4:20: endpoints.all.titleEndpoint: "bedrock" is a LibreChat endpoint Relay does not have; titles are made as if titleEndpoint were not set (known: openAI, anthropic, google, azureOpenAI, ollama)`,
		`relay.yaml:10:22: endpoints.custom[0].titleEndpoint: "azureAssistants" is a LibreChat endpoint Relay does not have; titles are made as if titleEndpoint were not set (known: openAI, anthropic, google, azureOpenAI, ollama)`,
	}
	if diff := cmp.Diff(want, c.Unknown); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	if err := c.Strict(); err == nil {
		t.Error("Strict() = nil; want the LibreChat endpoints refused, as unknown values are")
	}
	for provider, want := range map[string]string{"ollama": "openAI", "anthropic": "openAI"} {
		if got := c.Endpoints.TitlesFor(provider).TitleEndpoint; got != want {
			t.Errorf("TitlesFor(%q).TitleEndpoint = %q, want %q (bedrock skipped)", provider, got, want)
		}
	}

	// Without another layer, the default: the agent's provider ("").
	c = mustLoadYAML(t, "endpoints:\n  all:\n    titleConvo: true\n    titleEndpoint: bedrock\n", nil)
	if got := c.Endpoints.TitlesFor("openAI"); got.TitleEndpoint != "" || !got.On() {
		t.Errorf("TitlesFor(openAI) = %+v, want titles on, with no titleEndpoint", got)
	}
}

func TestMemoryAgentConfig(t *testing.T) {
	if c := mustLoadYAML(t, "server:\n  addr: :3080\n", nil); c.Memory.MessageWindowSize != 5 || c.Memory.Agent != nil {
		t.Errorf("defaults: window %d, agent %+v", c.Memory.MessageWindowSize, c.Memory.Agent)
	}
	c := mustLoadYAML(t, `endpoints:
  custom:
    - name: Ollama
      baseURL: http://127.0.0.1:11434/v1
memory:
  messageWindowSize: 8
  agent:
    provider: ollama
    model: llama3.1:8b
    instructions: Keep notes.
    model_parameters: {temperature: 0.2}
`, nil)
	want := &MemoryAgent{Provider: "ollama", Model: "llama3.1:8b", Instructions: "Keep notes.", ModelParameters: map[string]any{"temperature": 0.2}}
	if diff := cmp.Diff(want, c.Memory.Agent); diff != "" || c.Memory.MessageWindowSize != 8 {
		t.Errorf("window %d, agent (-want +got):\n%s", c.Memory.MessageWindowSize, diff)
	}
	if c := mustLoadYAML(t, "memory:\n  agent:\n    id: memo\n    instructions: Keep notes.\n", nil); c.Memory.Agent.ID != "memo" {
		t.Errorf("agent %+v", c.Memory.Agent)
	}
}

// A provider's models may be a list of names, as LibreChat writes them for
// endpoints.anthropic, or LibreChat's {default: [...]}.
func TestModelsListForm(t *testing.T) {
	c := mustLoadYAML(t, "endpoints:\n  anthropic:\n    models: [claude-sonnet-4-5, \"${EXTRA_MODEL}\"]\n  openAI:\n    models:\n      default: [gpt-4.1]\n", map[string]string{"EXTRA_MODEL": "claude-opus-4-1"})
	if got := c.Endpoints.Anthropic.Models.Default; !slices.Equal(got, ModelList{"claude-sonnet-4-5", "claude-opus-4-1"}) {
		t.Errorf("endpoints.anthropic.models = %q", got)
	}
	if got := c.Endpoints.OpenAI.Models.Default; !slices.Equal(got, ModelList{"gpt-4.1"}) {
		t.Errorf("endpoints.openAI.models.default = %q", got)
	}
	_, err := loadYAML(t, "endpoints:\n  anthropic:\n    models: [claude-sonnet-4-5, [x]]\n", nil)
	want := []string{`relay.yaml:3:13: endpoints.anthropic.models: item 1: expected a model name or a mapping with a name, got a list`}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A search provider LibreChat has and Relay does not loads with a warning that
// a strict check refuses; any other is still a config error.
func TestLibreChatSearchProvider(t *testing.T) {
	c := mustLoadYAML(t, "webSearch:\n  searchProvider: keenable\n", nil)
	want := []string{`relay.yaml:2:19: webSearch.searchProvider: "keenable" is a LibreChat search provider Relay does not have; web_search answers that it is not available (known: searxng, brave, tavily, serper)`}
	if diff := cmp.Diff(want, c.Unknown); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	if err := c.Strict(); err == nil {
		t.Error("Strict() = nil, want the warning as a problem")
	}
	_, err := loadYAML(t, "webSearch:\n  searchProvider: bing\n", nil)
	if diff := cmp.Diff([]string{`relay.yaml:2:19: webSearch.searchProvider: must be one of searxng, brave, tavily, serper, or empty, got "bing"`}, problems(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A whole number written as a float (2.0, 5e1) is taken for an integer key.
func TestWholeFloatForInteger(t *testing.T) {
	for y, want := range map[string]int{"2.0": 2, "5e1": 50} {
		c, err := loadYAML(t, "endpoints:\n  agents:\n    recursionLimit: "+y+"\n", nil)
		if err != nil || c.Endpoints.Agents.RecursionLimit != want {
			t.Errorf("recursionLimit: %s gave %d, %v; want %d", y, c.Endpoints.Agents.RecursionLimit, err, want)
		}
	}
}
