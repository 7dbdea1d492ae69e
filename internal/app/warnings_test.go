package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/config"
)

// An endpoint key naming a variable that is not set is warned about, with
// its key path, as a missing key is: a custom or Azure endpoint then fails
// every run, a built-in one takes OPENAI_API_KEY (and the like) instead, and
// goes without authentication when that is not set either.
func TestWarningsUnsetKeyVariable(t *testing.T) {
	const body = `endpoints:
  openAI:
    apiKey: ${NOPE}
  anthropic:
    apiKey: ${NOPE_ANTHROPIC}
  custom:
    - {name: groq, baseURL: "https://api.groq.com/openai/v1", apiKey: "${GROQ_KEY}"}
    - {name: gateway, baseURL: "${GATEWAY_URL}/v1", apiKey: "sk-set-in-the-file"}
    - {name: fine, baseURL: "https://llm.example.com/v1", apiKey: "${SET_KEY}"}
  azureOpenAI:
    groups:
      - group: west
        apiKey: ${AZURE_WEST_KEY}
        instanceName: relay-west
        baseURL: https://gw.example.com/${INSTANCE_NAME}/${DEPLOYMENT_NAME}
        models: {gpt-4o: true}
`
	cfg, err := config.Load(writeConfig(t, t.TempDir(), body), testEnv(map[string]string{"SET_KEY": "sk-set", "ANTHROPIC_API_KEY": "sk-ant-from-env"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range Warnings(cfg) {
		if strings.Contains(w, "${") {
			got = append(got, w)
		}
	}
	want := []string{
		"endpoints.openAI: apiKey uses ${NOPE}, which is not set, and OPENAI_API_KEY is not set either: requests go without authentication",
		"endpoints.custom[0] (groq): apiKey uses ${GROQ_KEY}, which is not set in Relay's environment: every run of its agents fails until it is",
		"endpoints.custom[1] (gateway): baseURL uses ${GATEWAY_URL}, which is not set in Relay's environment: every run of its agents fails until it is",
		"endpoints.azureOpenAI.groups[0] (west): apiKey uses ${AZURE_WEST_KEY}, which is not set in Relay's environment: every run of its agents fails until it is",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// The built-in endpoint with its variable set, or with OPENAI_API_KEY
	// set, warns of nothing.
	for _, env := range []map[string]string{{"NOPE": "sk-nope"}, {"OPENAI_API_KEY": "sk-openai"}} {
		cfg, err := config.Load(writeConfig(t, t.TempDir(), "endpoints:\n  openAI:\n    apiKey: ${NOPE}\n"+
			"server:\n  data_dir: "+filepath.Join(t.TempDir(), "data")+"\n"), testEnv(env))
		if err != nil {
			t.Fatal(err)
		}
		if ws := Warnings(cfg); len(ws) > 0 {
			t.Errorf("with %v: %q", env, ws)
		}
	}
}
