package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRAGDefaults(t *testing.T) {
	c := mustLoadYAML(t, "server:\n  addr: :3080\n", nil)
	if c.RAG.InjectContext != InjectAuto || c.RAG.Embeddings.Enabled() || c.RAG.APIURL != "" {
		t.Errorf("rag = %+v, want injectContext auto, no embeddings, no API", c.RAG)
	}
	if c.FileConfig.ServerFileSizeLimit != 50 || c.FileConfig.UploadLimit() != 50<<20 {
		t.Errorf("fileConfig.serverFileSizeLimit = %d, want 50 (MB)", c.FileConfig.ServerFileSizeLimit)
	}
}

func TestRAGConfig(t *testing.T) {
	c := mustLoadYAML(t, `rag:
  injectContext: never
  embeddings:
    baseURL: http://embed.local/v1
    apiKey: sk-embed-secret-0042
    model: nomic-embed-text
    dimensions: 256
fileConfig:
  serverFileSizeLimit: 20
  fileLimit: 10
  endpoints:
    agents:
      fileSizeLimit: 5
`, nil)
	want := RAG{InjectContext: InjectNever, VectorCacheMB: DefaultVectorCacheMB, Embeddings: Embeddings{
		BaseURL: "http://embed.local/v1", APIKey: "sk-embed-secret-0042", Model: "nomic-embed-text", Dimensions: 256,
	}}
	if d := cmp.Diff(want, c.RAG); d != "" {
		t.Errorf("rag (-want +got):\n%s", d)
	}
	if c.FileConfig.UploadLimit() != 20<<20 {
		t.Errorf("upload limit = %d, want 20 MB", c.FileConfig.UploadLimit())
	}
	if d := cmp.Diff([]string{"fileConfig.endpoints", "fileConfig.fileLimit"}, c.Ignored); d != "" {
		t.Errorf("ignored keys (-want +got):\n%s", d)
	}
	var out bytes.Buffer
	if err := c.WriteMasked(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sk-embed-secret-0042") {
		t.Errorf("config check prints the embeddings key:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "apiKey: '****'") && !strings.Contains(out.String(), `apiKey: "****"`) {
		t.Errorf("config check does not show the masked key:\n%s", out.String())
	}
}

func TestRAGProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"bad values", `rag:
  injectContext: sometimes
  api_url: rag.local
  embeddings:
    baseURL: http://embed.local/v1
    dimensions: -1
  vectorCacheMB: -5
fileConfig:
  serverFileSizeLimit: 0
`, []string{
			`relay.yaml:2:18: rag.injectContext: must be one of auto, always, never, got "sometimes"`,
			`relay.yaml:3:12: rag.api_url: must be an http:// or https:// URL with a host, got "rag.local"`,
			`relay.yaml:5:5: rag.embeddings: baseURL and model go together: set both to embed chunks, or neither`,
			`relay.yaml:6:17: rag.embeddings.dimensions: must not be negative`,
			`relay.yaml:7:18: rag.vectorCacheMB: must not be negative (0 turns the cache off)`,
			`relay.yaml:9:24: fileConfig.serverFileSizeLimit: must be a number of MB greater than 0`,
		}},
		{"API and embeddings", `rag:
  api_url: http://rag:8000
  embeddings:
    baseURL: http://embed.local/v1
    model: m
`, []string{
			`relay.yaml:4:5: rag.embeddings: not used with rag.api_url, which embeds files itself; remove one`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, tt.yaml, nil)
			if d := cmp.Diff(tt.want, problems(t, err)); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}
