package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// GET /api/config tells a signed-in client the providers with the models the
// config lists, the built-in tools, the placeholders and the features, and
// nothing secret: no key, no address with its credentials, no header.
func TestConfigEndpointHasNoSecrets(t *testing.T) {
	dir := t.TempDir()
	secrets := []string{"sk-openai-SECRET1", "sk-ant-SECRET2", "hdr-SECRET3", "pw-SECRET4", "sk-ollama-SECRET5", "az-SECRET6",
		"inst-secret7", "brave-SECRET8", "127.0.0.1:11434", "searx.internal"}
	cfg := fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  openAI:
    apiKey: sk-openai-SECRET1
    models: {default: [gpt-4o, gpt-4o-mini]}
  anthropic:
    apiKey: sk-ant-SECRET2
    headers: {X-Token: hdr-SECRET3}
  custom:
    - name: ollama
      baseURL: http://relay:pw-SECRET4@127.0.0.1:11434/v1
      apiKey: sk-ollama-SECRET5
      models: {default: [llama3.1]}
  azureOpenAI:
    groups:
      - group: west
        apiKey: az-SECRET6
        instanceName: inst-secret7
        version: "2024-06-01"
        models:
          gpt-4o-az: true
          retired: false
webSearch:
  searchProvider: brave
  braveApiKey: brave-SECRET8
  braveApiUrl: https://searx.internal/brave
memory:
  disabled: true
`, filepath.Join(dir, "data"))
	s := startServer(t, writeConfig(t, dir, cfg), map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	req, _ := http.NewRequest("GET", s.base+"/api/config", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/config: %d %s", resp.StatusCode, raw)
	}
	for _, secret := range secrets {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the answer holds %q: %s", secret, raw)
		}
	}
	var got struct {
		Providers []struct {
			Name   string
			Models []string
		}
		Tools        []struct{ Name, Description string }
		Placeholders []struct{ Name, Description string }
		Features     map[string]bool
		Version      string
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	var providers []string
	for _, p := range got.Providers {
		providers = append(providers, fmt.Sprintf("%s%v", p.Name, p.Models))
	}
	if want := []string{"openAI[gpt-4o gpt-4o-mini]", "anthropic[]", "google[]", "azureOpenAI[gpt-4o-az]", "ollama[llama3.1]"}; !slices.Equal(providers, want) {
		t.Errorf("providers %v, want %v", providers, want)
	}
	var tools, placeholders []string
	for _, tl := range got.Tools {
		tools = append(tools, tl.Name)
	}
	for _, p := range got.Placeholders {
		placeholders = append(placeholders, p.Name)
	}
	if !slices.Equal(tools, []string{"file_search", "web_search"}) || !slices.Contains(placeholders, "{{current_date}}") {
		t.Errorf("tools %v, placeholders %v", tools, placeholders)
	}
	if got.Features["memory"] || !got.Features["files"] || !got.Features["web_search"] || got.Version == "" {
		t.Errorf("features %v, version %q", got.Features, got.Version)
	}
	if code := s.call(t, "", "GET", "/api/config", "", nil); code != 401 {
		t.Errorf("without a key: %d", code)
	}
}
