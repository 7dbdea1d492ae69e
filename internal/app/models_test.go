package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
)

// azureConfig is a config with three Azure groups in front of up: a
// resource behind a proxy, a gateway whose URL names the deployment, and a
// serverless endpoint. The end-to-end Azure tests of internal/cli
// (azure_test.go) use the same.
func azureConfig(dataDir, up string) string {
	return fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  azureOpenAI:
    titleModel: gpt-4o
    plugins: true
    groups:
      - group: west
        apiKey: ${AZURE_WEST_KEY}
        instanceName: relay-west
        baseURL: %[2]s
        version: "2024-06-01"
        additionalHeaders:
          X-Team: research
        models:
          gpt-4o:
            deploymentName: gpt-4o-prod
            version: "2024-10-21"
          gpt-4o-alias:
            deploymentName: gpt-4o-prod
            version: "2024-10-21"
          o1: true
      - group: gateway
        apiKey: sk-gateway-key-7777
        instanceName: relay-sweden
        deploymentName: gpt-4-turbo-dep
        baseURL: %[2]s/gw/${INSTANCE_NAME}/${DEPLOYMENT_NAME}
        models:
          gpt-4-turbo: true
      - group: mistral
        apiKey: sk-mistral-key-8888
        baseURL: %[2]s/v1/chat/completions
        serverless: true
        models:
          mistral-large: true
agents:
  - id: az-4o
    provider: azureOpenAI
    model: gpt-4o
  - id: az-o1
    provider: azureOpenAI
    model: o1
  - id: az-gateway
    provider: azureOpenAI
    model: gpt-4-turbo
  - id: az-serverless
    provider: azureOpenAI
    model: mistral-large
`, dataDir, up)
}

// TestAzureClientPerDeployment: models that share a group and deployment
// share a client; other deployments, groups and providers get their own.
func TestAzureClientPerDeployment(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(writeConfig(t, dir, azureConfig(filepath.Join(dir, "data"), "http://127.0.0.1:1")), testEnv(map[string]string{"AZURE_WEST_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	ms := models(cfg, nil, nil, slog.New(slog.DiscardHandler))
	client := func(provider, model string) any {
		t.Helper()
		m, _, err := ms(context.Background(), "u1", provider, model)
		if err != nil {
			t.Fatalf("%s/%s: %v", provider, model, err)
		}
		return m
	}
	gpt4o := client("azureOpenAI", "gpt-4o")
	if client("azureopenai", "gpt-4o") != gpt4o || client("azureOpenAI", "gpt-4o-alias") != gpt4o {
		t.Error("the same group and deployment got another client")
	}
	seen := map[any]string{gpt4o: "gpt-4o"}
	for _, m := range []string{"o1", "gpt-4-turbo", "mistral-large"} {
		c := client("azureOpenAI", m)
		if other, dup := seen[c]; dup {
			t.Errorf("%s shares the client of %s", m, other)
		}
		seen[c] = m
	}
	if _, _, err := ms(context.Background(), "u1", "azureOpenAI", "gpt-5"); err == nil || err.Error() != `azureOpenAI: no group lists model "gpt-5" (list it under a group's models in endpoints.azureOpenAI)` {
		t.Errorf("unlisted model: %v", err)
	}

	// A key whose variable is not set is named, not sent.
	cfg, err = config.Load(writeConfig(t, dir, azureConfig(filepath.Join(dir, "data"), "http://127.0.0.1:1")), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	ms = models(cfg, nil, nil, slog.New(slog.DiscardHandler))
	if _, _, err := ms(context.Background(), "u1", "azureOpenAI", "o1"); err == nil || !strings.Contains(err.Error(), `azureOpenAI group "west": apiKey uses ${AZURE_WEST_KEY}, which is not set`) {
		t.Errorf("unset key: %v", err)
	}
}

// A custom endpoint's key is never sent as written when it cannot be a key: a
// ${VAR} whose variable is not set is named, and user_provided (a key each
// user enters) asks for the user's own; a key that is set works.
func TestCustomEndpointKeysThatCannotBeSent(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - {name: unset, baseURL: "http://127.0.0.1:1/v1", apiKey: "${NOT_SET_KEY}"}
    - {name: perUser, baseURL: "http://127.0.0.1:1/v1", apiKey: user_provided}
    - {name: fine, baseURL: "http://127.0.0.1:1/v1", apiKey: "${SET_KEY}"}
`, filepath.Join(dir, "data"))), testEnv(map[string]string{"SET_KEY": "sk-secret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	ms := models(cfg, nil, nil, slog.New(slog.DiscardHandler))
	if _, _, err := ms(context.Background(), "u1", "unset", "m"); !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), `apiKey uses ${NOT_SET_KEY}, which is not set`) {
		t.Errorf("unset variable: %v", err)
	}
	if _, _, err := ms(context.Background(), "", "perUser", "m"); !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), `endpoint "perUser" needs your own API key`) {
		t.Errorf("user_provided: %v", err)
	}
	if _, _, err := ms(context.Background(), "u1", "fine", "m"); err != nil {
		t.Errorf("a key that is set: %v", err)
	}
}

// The memory agent runs when memory.agent is set, and not when its enabled
// is false or memory is disabled (docs/config.md "The memory agent").
func TestMemoryAgentEnabled(t *testing.T) {
	tests := []struct {
		name, memory string
		runs         bool
	}{
		{"set", "  agent:\n    provider: local\n    model: memory-model\n", true},
		{"enabled", "  agent:\n    enabled: true\n    provider: local\n    model: memory-model\n", true},
		{"not enabled", "  agent:\n    enabled: false\n    provider: local\n    model: memory-model\n", false},
		{"memory disabled", "  disabled: true\n  agent:\n    provider: local\n    model: memory-model\n", false},
		{"none", "  tokenLimit: 100\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+
				"\nendpoints:\n  custom:\n    - name: local\n      baseURL: http://127.0.0.1:1/v1\nmemory:\n"+tt.memory)
			cfg, err := config.Load(cfgPath, testEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			a, err := Open(context.Background(), cfg, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			ma := a.memoryAgent(nil, nil)
			if got := ma != nil; got != tt.runs {
				t.Fatalf("memory agent built = %v, want %v", got, tt.runs)
			}
			if ma != nil && (ma.Provider != "local" || ma.Model != "memory-model" || ma.Window != config.DefaultMessageWindowSize) {
				t.Errorf("memory agent = %+v", ma)
			}
		})
	}
}

// A titleEndpoint naming a LibreChat endpoint Relay does not have loads, and
// titles are then asked of the agent's own provider (docs/config.md,
// "Conversation titles").
func TestTitleModelOfLibreChatEndpoint(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "endpoints:\n  all:\n    titleConvo: true\n    titleEndpoint: bedrock\n    titleModel: small\n"+
		"  custom:\n    - name: local\n      baseURL: http://127.0.0.1:1/v1\n")
	cfg, err := config.Load(cfgPath, testEnv(nil))
	if err != nil {
		t.Fatalf("Load: %v; want titleEndpoint: bedrock to load", err)
	}
	m, ok := titleModel(cfg)(&agent.Agent{Spec: agent.Spec{Provider: "local", Model: "big"}})
	if !ok || m.Provider != "local" || m.Model != "small" {
		t.Errorf("title model = %+v, %v; want small on the agent's provider local", m, ok)
	}
}
