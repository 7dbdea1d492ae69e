package config

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/relay-ai/relay/internal/fault"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// libreChatSections are the top-level sections of LibreChat's configuration
// schema: the rows of docs/config.md's table "LibreChat key / Relay support".
// The files of testdata/librechat use every one of them and nothing else, so a
// section missing here, there or in the table fails a test.
var libreChatSections = []string{
	"actions",
	"balance",
	"cache",
	"cloudfront",
	"endpoints",
	"fileConfig",
	"fileStrategies",
	"fileStrategy",
	"filteredTools",
	"filters",
	"imageOutputType",
	"includedTools",
	"interface",
	"langfuse",
	"mcpServers",
	"mcpSettings",
	"memory",
	"messageFilter",
	"modelSpecs",
	"ocr",
	"rateLimits",
	"registration",
	"secureImageLinks",
	"skillSync",
	"speech",
	"summarization",
	"transactions",
	"turnstile",
	"version",
	"webSearch",
}

// corpus lists the LibreChat configurations of testdata/librechat.
func corpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "librechat", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("testdata/librechat holds %d configurations, want at least 5", len(files))
	}
	return files
}

// Every LibreChat configuration of the corpus loads; its warnings (the
// LibreChat keys Relay ignores, the keys and values it does not know, each at
// its line:column) are those of its golden file, <name>.warnings; and a strict
// check refuses exactly the files with unknown keys or values. Rewrite the
// golden files with go test ./internal/config -run TestLibreChatCorpus -update.
func TestLibreChatCorpus(t *testing.T) {
	var strict, lax int
	for _, file := range corpus(t) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			c, err := Load(file, envOf(nil))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := corpusWarnings(t, file, c)
			golden := strings.TrimSuffix(file, ".yaml") + ".warnings"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := gocmp.Diff(string(want), got); diff != "" {
				t.Errorf("warnings of %s (-%s +got):\n%s", file, golden, diff)
			}

			err = c.Strict()
			if len(c.Unknown) == 0 {
				lax++
				if err != nil {
					t.Errorf("Strict() = %v, want nil: the file has no unknown keys", err)
				}
				return
			}
			strict++
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Kind != fault.Invalid || len(fe.Fields) != len(c.Unknown) {
				t.Fatalf("Strict() = %v, want an invalid-config error with the %d unknown keys", err, len(c.Unknown))
			}
			for i, f := range fe.Fields {
				if got := f.Field + ": " + f.Message; got != c.Unknown[i] {
					t.Errorf("Strict() problem %d = %q, want %q", i, got, c.Unknown[i])
				}
			}
		})
	}
	if strict == 0 || lax == 0 {
		t.Errorf("%d files fail a strict check and %d pass it; the corpus needs both", strict, lax)
	}
}

// The corpus uses every top-level section of LibreChat's schema, and only those.
func TestLibreChatCorpusSections(t *testing.T) {
	used := map[string]bool{}
	for _, file := range corpus(t) {
		for _, kv := range pairs(parseYAML(t, file)) {
			used[kv[0].Value] = true
		}
	}
	got := slices.Sorted(maps.Keys(used))
	want := slices.Sorted(slices.Values(libreChatSections))
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("top-level keys of testdata/librechat (-LibreChat's sections +used):\n%s", diff)
	}
}

// docs/config.md's table "LibreChat key / Relay support" has a row for every
// top-level section of LibreChat's schema.
func TestLibreChatTableCoversSections(t *testing.T) {
	b, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, s := range libreChatSections {
		if !strings.Contains(doc, "\n| `"+s+"` |") {
			t.Errorf("docs/config.md has no row | `%s` | in its table of LibreChat keys", s)
		}
	}
}

var knownList = regexp.MustCompile(` \(known: [^)]*\)`)

// corpusWarnings writes the warnings of c, loaded from file, one a line in
// file order: "LINE:COL ignored: PATH" for a LibreChat key Relay ignores and
// "LINE:COL warning: MESSAGE" for an unknown key or value (without the list of
// known keys, which changes whenever Relay learns one).
func corpusWarnings(t *testing.T, file string, c *Config) string {
	t.Helper()
	type warning struct {
		line, col int
		text      string
	}
	var ws []warning
	doc := parseYAML(t, file)
	for _, p := range c.Ignored {
		k, err := keyAt(doc, p)
		if err != nil {
			t.Fatalf("ignored key %s: %v", p, err)
		}
		ws = append(ws, warning{k.Line, k.Column, "ignored: " + p})
	}
	for _, u := range c.Unknown {
		rest, ok := strings.CutPrefix(u, file+":")
		var line, col int
		var msg string
		if ok {
			var pos string
			pos, msg, _ = strings.Cut(rest, ": ")
			l, cl, _ := strings.Cut(pos, ":")
			line, _ = strconv.Atoi(l)
			col, _ = strconv.Atoi(cl)
		}
		if line == 0 || col == 0 {
			t.Fatalf("warning without a position in %s: %q", file, u)
		}
		ws = append(ws, warning{line, col, "warning: " + knownList.ReplaceAllString(msg, "")})
	}
	slices.SortFunc(ws, func(a, b warning) int { return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col)) })
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "%d:%d %s\n", w.line, w.col, w.text)
	}
	return b.String()
}

// parseYAML returns the top-level mapping of a YAML file.
func parseYAML(t *testing.T, file string) *yaml.Node {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatalf("%s is not a mapping", file)
	}
	return doc.Content[0]
}

// pathStep is one step of a dotted path: .name, [index] or ["name"].
var pathStep = regexp.MustCompile(`^(?:\.?([A-Za-z0-9_-]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\])`)

// keyAt returns the key node that ends a dotted path such as
// endpoints.custom[0].titleMethod or mcpServers["NEO NL"].apiKey.
func keyAt(n *yaml.Node, path string) (*yaml.Node, error) {
	var key *yaml.Node
	for rest := path; rest != ""; {
		m := pathStep.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("cannot read %q", rest)
		}
		rest = rest[len(m[0]):]
		if m[2] != "" {
			i, _ := strconv.Atoi(m[2])
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return nil, fmt.Errorf("no item %d", i)
			}
			n, key = n.Content[i], nil
			continue
		}
		name := m[1]
		if m[3] != "" {
			name, _ = strconv.Unquote(m[3])
		}
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("no key %q", name)
		}
		ps := pairs(n)
		i := slices.IndexFunc(ps, func(kv [2]*yaml.Node) bool { return kv[0].Value == name })
		if i < 0 {
			return nil, fmt.Errorf("no key %q", name)
		}
		key, n = ps[i][0], ps[i][1]
	}
	if key == nil {
		return nil, errors.New("the path does not end with a key")
	}
	return key, nil
}

// The keys Relay reads from the corpus take effect: each file configures what
// it says it does.
func TestLibreChatCorpusTakesEffect(t *testing.T) {
	load := func(t *testing.T, name string) *Config {
		t.Helper()
		c, err := Load(filepath.Join("testdata", "librechat", name+".yaml"), envOf(nil))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		return c
	}
	t.Run("minimal", func(t *testing.T) {
		c := load(t, "minimal")
		e := c.Endpoints.Custom[0]
		if e.Name != "Ollama" || !slices.Equal(e.Models.Default, ModelList{"llama3.2", "qwen2.5:14b"}) || !c.Endpoints.TitlesFor("ollama").On() {
			t.Errorf("endpoints.custom[0] = %+v", e)
		}
	})
	t.Run("agents-mcp", func(t *testing.T) {
		c := load(t, "agents-mcp")
		if got := c.Endpoints.Anthropic.Models.Default; !slices.Equal(got, ModelList{"claude-sonnet-4-5", "claude-haiku-4-5"}) {
			t.Errorf("endpoints.anthropic.models = %q, want the list", got)
		}
		scopes := map[string]string{}
		for name, s := range c.MCPServers {
			scopes[name] = s.Transport() + " " + s.Scope
		}
		want := map[string]string{
			"github": "streamable-http user", "filesystem": "stdio app", "google-drive": "streamable-http user",
			"jira": "sse user", "crm": "streamable-http user", "market-data": "websocket app",
		}
		if diff := gocmp.Diff(want, scopes); diff != "" {
			t.Errorf("MCP transports and scopes (-want +got):\n%s", diff)
		}
		if c.Memory.Agent == nil || c.Memory.Agent.ID != "memory-curator" || c.Endpoints.Agents.RecursionLimit != 40 || c.WebSearch.SafeSearch != SafeSearchStrict {
			t.Errorf("memory.agent %+v, endpoints.agents.recursionLimit %d, webSearch.safeSearch %d", c.Memory.Agent, c.Endpoints.Agents.RecursionLimit, c.WebSearch.SafeSearch)
		}
	})
	t.Run("azure", func(t *testing.T) {
		c := load(t, "azure")
		// model: group, deployment, API version ("" for the client's default)
		for model, want := range map[string][3]string{
			"gpt-4o":             {"eastus2", "gpt-4o-2024-11-20", "2024-10-21"},
			"gpt-4o-mini":        {"eastus2", "gpt-4o-mini", "2024-10-21"},
			"gpt-4.1":            {"swedencentral", "gpt-4.1", "2025-01-01-preview"},
			"mistral-large-2411": {"mistral-serverless", "", ""},
		} {
			d, ok := c.Endpoints.Azure(model)
			if !ok {
				t.Errorf("Azure(%q): no group serves it", model)
				continue
			}
			if got := [3]string{d.Group.Group, d.Deployment, d.Version}; got != want {
				t.Errorf("Azure(%q) = %q, want %q", model, got, want)
			}
		}
		if _, ok := c.Endpoints.Azure("gpt-35-turbo"); ok {
			t.Error("gpt-35-turbo is false in its group, yet served")
		}
	})
	t.Run("newest", func(t *testing.T) {
		c := load(t, "newest")
		if c.Endpoints.Agents.MaxToolResultChars != 60000 || c.Endpoints.ContextWindow("OpenRouter", "anthropic/claude-sonnet-4.5") != 200000 {
			t.Errorf("endpoints.agents.maxToolResultChars %d, context window %d", c.Endpoints.Agents.MaxToolResultChars, c.Endpoints.ContextWindow("OpenRouter", "anthropic/claude-sonnet-4.5"))
		}
		if s := c.Summarization; !s.Enabled || s.Model != "gpt-4.1-mini" || s.MaxSummaryTokens != 2048 {
			t.Errorf("summarization = %+v", s)
		}
		if c.WebSearch.SearchProvider != "keenable" || c.Memory.TokenLimit != 4000 || c.MCPServers["repo-tools"].Command != "node" {
			t.Errorf("webSearch.searchProvider %q, memory.tokenLimit %d, mcpServers.repo-tools %+v", c.WebSearch.SearchProvider, c.Memory.TokenLimit, c.MCPServers["repo-tools"])
		}
	})
}
