package config

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// librechatAzure is endpoints.azureOpenAI as LibreChat's documentation writes
// it: endpoint-level keys Relay ignores, a resource group with per-model
// deployments, a serverless group, and a group whose models take its
// deployment.
const librechatAzure = `endpoints:
  azureOpenAI:
    titleModel: gpt-4o-mini
    plugins: true
    assistants: true
    groups:
      - group: westus
        apiKey: ${WESTUS_API_KEY}
        instanceName: my-westus
        version: "2024-03-01-preview"
        additionalHeaders:
          X-Team: research
        models:
          gpt-4o:
            deploymentName: gpt-4o-prod
            version: "2024-10-21"
          gpt-3.5-turbo:
            deploymentName: gpt-35-turbo
          o1: true
          gpt-4: false
      - group: mistral
        apiKey: ${MISTRAL_KEY}
        baseURL: https://mistral-large.westus.inference.ai.azure.com/v1/chat/completions
        serverless: true
        models:
          mistral-large: true
      - group: sweden
        apiKey: sk-sweden-secret-1234
        instanceName: my-sweden
        deploymentName: gpt-4-turbo
        version: "2024-02-15-preview"
        baseURL: https://gateway.example.com/v1/acct/azure-openai/${INSTANCE_NAME}/${DEPLOYMENT_NAME}
        assistants: true
        addParams:
          seed: 7
        dropParams: [stop]
        models:
          gpt-4-turbo:
            assistants: true
`

func TestAzureLibreChatShape(t *testing.T) {
	c := mustLoadYAML(t, librechatAzure, map[string]string{"WESTUS_API_KEY": "sk-west-secret-5678"})
	groups := c.Endpoints.AzureOpenAI.Groups
	if len(groups) != 3 {
		t.Fatalf("groups = %d, want 3", len(groups))
	}
	if g := groups[0]; g.APIKey != "sk-west-secret-5678" || g.InstanceName != "my-westus" || g.AdditionalHeaders["X-Team"] != "research" {
		t.Errorf("westus = %+v: the key is expanded, instanceName and headers kept", g)
	}
	if g := groups[1]; g.APIKey != "${MISTRAL_KEY}" || !g.Serverless {
		t.Errorf("mistral = %+v: an unset variable stays as written, serverless read", g)
	}
	if g := groups[2]; !strings.Contains(g.BaseURL, "${INSTANCE_NAME}/${DEPLOYMENT_NAME}") || g.AddParams["seed"] != 7 || len(g.DropParams) != 1 {
		t.Errorf("sweden = %+v: baseURL placeholders kept, addParams and dropParams read", g)
	}
	wantIgnored := []string{
		"endpoints.azureOpenAI.assistants",
		"endpoints.azureOpenAI.groups[2].assistants",
		"endpoints.azureOpenAI.groups[2].models.gpt-4-turbo.assistants",
		"endpoints.azureOpenAI.plugins",
	}
	if d := cmp.Diff(wantIgnored, c.Ignored); d != "" {
		t.Errorf("ignored keys (-want +got):\n%s", d)
	}

	for _, tc := range []struct {
		model           string
		group           string
		deployment, ver string
	}{
		{"gpt-4o", "westus", "gpt-4o-prod", "2024-10-21"},                 // the model's own deployment and version
		{"gpt-3.5-turbo", "westus", "gpt-35-turbo", "2024-03-01-preview"}, // the group's version
		{"o1", "westus", "o1", "2024-03-01-preview"},                      // no deployment anywhere: the model's name
		{"mistral-large", "mistral", "", ""},                              // serverless: no deployment
		{"gpt-4-turbo", "sweden", "gpt-4-turbo", "2024-02-15-preview"},    // the group's deployment
	} {
		d, ok := c.Endpoints.Azure(tc.model)
		if !ok {
			t.Errorf("Azure(%q): not found", tc.model)
			continue
		}
		if d.Group.Group != tc.group || d.Deployment != tc.deployment || d.Version != tc.ver {
			t.Errorf("Azure(%q) = group %q, deployment %q, version %q; want %q, %q, %q", tc.model, d.Group.Group, d.Deployment, d.Version, tc.group, tc.deployment, tc.ver)
		}
	}
	for _, m := range []string{"gpt-4", "gpt-5", "GPT-4O"} {
		if _, ok := c.Endpoints.Azure(m); ok {
			t.Errorf("Azure(%q) found; want none (false, unlisted, or another case)", m)
		}
	}

	var out bytes.Buffer
	if err := c.WriteMasked(&out); err != nil {
		t.Fatal(err)
	}
	dump := out.String()
	for _, secret := range []string{"sk-west-secret-5678", "sk-sweden-secret-1234"} {
		if strings.Contains(dump, secret) {
			t.Errorf("config check prints an Azure key:\n%s", dump)
		}
	}
	for _, want := range []string{"apiKey: ${MISTRAL_KEY}", "o1: true", "gpt-4: false", "deploymentName: gpt-4o-prod", "X-Team: research"} {
		if !strings.Contains(dump, want) {
			t.Errorf("config check lacks %q:\n%s", want, dump)
		}
	}
	// The dump loads again to the same groups.
	again := mustLoadYAML(t, dump, nil)
	if d := cmp.Diff(c.Endpoints.AzureOpenAI.Groups[0].Models, again.Endpoints.AzureOpenAI.Groups[0].Models); d != "" {
		t.Errorf("models after a round trip (-want +got):\n%s", d)
	}
}

func TestAgentsToolLimits(t *testing.T) {
	c := mustLoadYAML(t, "server:\n  addr: :3080\n", nil)
	if a := c.Endpoints.Agents; a.MaxParallelTools != 4 || a.ToolTimeout.Duration != 0 {
		t.Errorf("defaults: maxParallelTools %d, toolTimeout %s; want 4 and 0", a.MaxParallelTools, a.ToolTimeout)
	}
	c = mustLoadYAML(t, "endpoints:\n  agents:\n    maxParallelTools: 2\n    toolTimeout: 1m30s\n", nil)
	if a := c.Endpoints.Agents; a.MaxParallelTools != 2 || a.ToolTimeout.Duration != 90*time.Second {
		t.Errorf("maxParallelTools %d, toolTimeout %s; want 2 and 1m30s", a.MaxParallelTools, a.ToolTimeout)
	}
	c = mustLoadYAML(t, "endpoints:\n  agents:\n    toolTimeout: ${TOOL_TIMEOUT}\n", map[string]string{"TOOL_TIMEOUT": "45"})
	if c.Endpoints.Agents.ToolTimeout.Duration != 45*time.Second {
		t.Errorf("toolTimeout from ${TOOL_TIMEOUT}=45: %s, want 45s", c.Endpoints.Agents.ToolTimeout)
	}
}

func TestAzureProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "model in two groups",
			yaml: `endpoints:
  azureOpenAI:
    groups:
      - group: a
        instanceName: res-a
        models:
          gpt-4o: true
      - group: b
        instanceName: res-b
        models:
          gpt-4o:
            deploymentName: other
`,
			want: []string{`relay.yaml:12:13: endpoints.azureOpenAI.groups[1].models.gpt-4o: model "gpt-4o" is already listed by endpoints.azureOpenAI.groups[0] (a); a model belongs to one group`},
		},
		{
			name: "no instanceName and no baseURL",
			yaml: `endpoints:
  azureOpenAI:
    groups:
      - group: a
        apiKey: k
        models: {gpt-4o: true}
`,
			want: []string{"relay.yaml:4:9: endpoints.azureOpenAI.groups[0]: needs an instanceName (the Azure resource's name) or a baseURL"},
		},
		{
			name: "serverless without baseURL, ${INSTANCE_NAME} without instanceName",
			yaml: `endpoints:
  azureOpenAI:
    groups:
      - group: a
        serverless: true
        models: {mistral: true}
      - group: b
        baseURL: https://gw.example.com/${INSTANCE_NAME}
        models: {gpt-4o: true}
`,
			want: []string{
				"relay.yaml:4:9: endpoints.azureOpenAI.groups[0].baseURL: required for a serverless group (the endpoint's URL)",
				"relay.yaml:8:18: endpoints.azureOpenAI.groups[1].baseURL: uses ${INSTANCE_NAME}, but the group has no instanceName",
			},
		},
		{
			name: "bad model value, no models, no name, duplicate group, bad baseURL",
			yaml: `endpoints:
  azureOpenAI:
    groups:
      - group: a
        instanceName: res
        models:
          gpt-4o: yes please
      - group: " "
        instanceName: res
      - group: a
        baseURL: ftp://files.example.com
        models: {o1: true}
`,
			want: []string{
				`relay.yaml:7:19: endpoints.azureOpenAI.groups[0].models.gpt-4o: expected true, false or a mapping with deploymentName and version, got "yes please"`,
				"relay.yaml:8:16: endpoints.azureOpenAI.groups[1].group: required (a name for the group)",
				"relay.yaml:8:9: endpoints.azureOpenAI.groups[1].models: list at least one model (name: true, or name: {deploymentName, version})",
				`relay.yaml:10:16: endpoints.azureOpenAI.groups[2].group: "a" is already the name of endpoints.azureOpenAI.groups[0]`,
				`relay.yaml:11:18: endpoints.azureOpenAI.groups[2].baseURL: must be an http:// or https:// URL with a host, got "ftp://files.example.com"`,
			},
		},
		{
			name: "an agent on a model no group lists",
			yaml: `endpoints:
  azureOpenAI:
    groups:
      - group: a
        instanceName: res
        models: {gpt-4o: true, gpt-4: false}
agents:
  - id: ok
    provider: azureOpenAI
    model: gpt-4o
  - id: off
    provider: azureopenai
    model: gpt-4
  - id: missing
    provider: azureOpenAI
    model: gpt-5
`,
			want: []string{
				`relay.yaml:13:12: agents[1].model: azureOpenAI: no group lists model "gpt-4" (list it under a group's models in endpoints.azureOpenAI)`,
				`relay.yaml:16:12: agents[2].model: azureOpenAI: no group lists model "gpt-5" (list it under a group's models in endpoints.azureOpenAI)`,
			},
		},
		{
			name: "tool limits",
			yaml: `endpoints:
  agents:
    maxParallelTools: 0
    toolTimeout: -5s
`,
			want: []string{
				"relay.yaml:3:23: endpoints.agents.maxParallelTools: must be at least 1",
				"relay.yaml:4:18: endpoints.agents.toolTimeout: must not be negative (0 leaves only each MCP server's own timeout)",
			},
		},
		{
			name: "tool timeout not a duration",
			yaml: `endpoints:
  agents:
    toolTimeout: soon
`,
			want: []string{`relay.yaml:3:18: endpoints.agents.toolTimeout: expected a duration such as "30s" or "2m", or a number of seconds, got "soon"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml, nil)
			if d := cmp.Diff(tc.want, problems(t, err)); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}
