package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/relay-ai/relay/internal/fault"
)

// FuzzLoad checks that any config file, however broken, loads or is refused
// with a fault.Invalid error naming its problems: never a panic, never an
// error of another kind.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"server:\n  addr: :3080\n",
		"endpoints:\n  custom:\n    - name: mock\n      baseURL: http://127.0.0.1:1/v1\n      apiKey: ${KEY}\n      models: {default: [m]}\n",
		"mcpServers:\n  e:\n    command: node\n    args: [a, stdio]\n    headers: {X: '{{LIBRECHAT_USER_ID}}'}\n",
		"agents:\n  - {id: a, provider: openAI, model: gpt-4o, tools: [x__mcp__e], edges: [{from: a, to: b, edgeType: handoff}]}\n",
		"memory:\n  agent: {provider: openAI, model: m}\n  tokenLimit: -1\n",
		"a: &a [*a]\n",
		"- - - [\n",
		"server: {addr: [1, 2]}\nlimits: 7\n",
		"\x00\xff: \"\\u0000\"\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "relay.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		getenv := func(name string) (string, bool) {
			if name == "KEY" {
				return "sk-test", true
			}
			return "", false
		}
		c, err := Load(path, getenv)
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Kind != fault.Invalid {
				t.Fatalf("Load: %v (%T), want a fault.Invalid error", err, err)
			}
			return
		}
		if c == nil {
			t.Fatal("Load returned neither a config nor an error")
		}
	})
}
