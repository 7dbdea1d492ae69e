package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
)

func TestParseDotEnv(t *testing.T) {
	text := "# LibreChat .env\n" +
		"HOST=localhost\n" +
		"PORT = 3080 \n" +
		"export OPENAI_API_KEY=sk-abc # the key\n" +
		"HASH=a#b\n" +
		"EMPTY=\n" +
		"ONLY_COMMENT= # nothing\n" +
		"SINGLE='a $b #c'\n" +
		"DOUBLE=\"line1\\nline2\"\n" +
		"BACK=`x 'y' \"z\"`\n" +
		"MULTI=\"first\n" +
		"second\"\n" +
		"not a variable\n" +
		"   # indented comment\n" +
		"HOST=127.0.0.1\r\n"
	want := map[string]string{
		"HOST":           "127.0.0.1",
		"PORT":           "3080",
		"OPENAI_API_KEY": "sk-abc",
		"HASH":           "a#b",
		"EMPTY":          "",
		"ONLY_COMMENT":   "",
		"SINGLE":         "a $b #c",
		"DOUBLE":         "line1\nline2",
		"BACK":           `x 'y' "z"`,
		"MULTI":          "first\nsecond",
	}
	if diff := cmp.Diff(want, parseDotEnv(text)); diff != "" {
		t.Errorf("parseDotEnv (-want +got):\n%s", diff)
	}
}

// The .env beside the config file feeds ${VAR} and the RELAY_* overrides, and
// never wins over the real environment.
func TestLoadDotEnv(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := filepath.Join("conf")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "endpoints:\n  custom:\n    - name: groq\n      baseURL: ${GROQ_URL}\n      apiKey: ${GROQ_KEY}\n"
	env := "GROQ_URL=https://api.groq.com/openai/v1\nGROQ_KEY='from-file'\nRELAY_ADDR=127.0.0.1:7000\nRELAY_TIMEZONE=UTC\n"
	for name, text := range map[string]string{filepath.Join(dir, "librechat.yaml"): cfg, filepath.Join(dir, ".env"): env, ".env": "GROQ_URL=http://wrong\n"} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real := map[string]string{"CONFIG_PATH": filepath.Join(dir, "librechat.yaml"), "GROQ_KEY": "from-env", "RELAY_TIMEZONE": "Europe/Amsterdam"}
	c, err := Load("", envOf(real))
	if err != nil {
		t.Fatal(err)
	}
	if c.DotEnv != filepath.Join(dir, ".env") {
		t.Errorf("DotEnv = %q", c.DotEnv)
	}
	e := c.Endpoints.Custom[0]
	if e.BaseURL != "https://api.groq.com/openai/v1" || e.APIKey != "from-env" {
		t.Errorf("custom endpoint = baseURL %q apiKey %q; want the .env beside the config, the real environment first", e.BaseURL, e.APIKey)
	}
	if c.Server.Addr != "127.0.0.1:7000" || c.Server.Timezone != "Europe/Amsterdam" {
		t.Errorf("addr %q timezone %q; want RELAY_ADDR from .env and RELAY_TIMEZONE from the real environment", c.Server.Addr, c.Server.Timezone)
	}
	for name, want := range map[string]string{"GROQ_KEY": "from-env", "RELAY_ADDR": "127.0.0.1:7000"} {
		if v, _ := c.Getenv(name); v != want {
			t.Errorf("Getenv(%s) = %q, want %q", name, v, want)
		}
	}
	if _, ok := c.Getenv("NOT_SET_ANYWHERE"); ok {
		t.Error("Getenv found a variable set nowhere")
	}

	// Without a config file, the working directory's .env is read.
	d, err := Load("", envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Getenv("GROQ_URL"); d.Path != "" || d.DotEnv != ".env" || v != "http://wrong" {
		t.Errorf("defaults: Path %q DotEnv %q GROQ_URL %q", d.Path, d.DotEnv, v)
	}
}

// A librechat.yaml of a newer LibreChat loads: its unknown keys are warnings
// with their position, the LibreChat keys Relay does not use are listed as
// ignored, and the keys Relay uses still take effect.
func TestNewerLibreChatConfigLoads(t *testing.T) {
	c, err := Load("testdata/newer/librechat.yaml", envOf(map[string]string{"GROQ_API_KEY": "gsk-1"}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	for _, u := range c.Unknown {
		w, _, _ := strings.Cut(u, " (known:")
		got = append(got, w)
	}
	const f = "testdata/newer/librechat.yaml"
	want := []string{
		f + `:7:1: unknown key "permissions" at top level`,
		f + `:12:1: filters is not in effect: Relay does not filter personal data out of messages, files or tool calls`,
		f + `:15:3: unknown key "allowedAddresses" in endpoints`,
		f + `:35:5: unknown key "cwd" in mcpServers.files`,
		f + `:39:5: unknown key "requestHeaders" in mcpServers.search`,
		f + `:41:5: unknown key "proxy" in mcpServers.search`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	for _, k := range []string{"langfuse", "filters", "memory.maxInputTokens"} {
		if !slices.Contains(c.Ignored, k) {
			t.Errorf("Ignored = %v, want %s: a LibreChat key Relay does not use", c.Ignored, k)
		}
	}
	if !c.Endpoints.Custom[0].Models.Fetch || slices.Contains(c.Ignored, "endpoints.custom[0].models.fetch") {
		t.Errorf("models.fetch: %v, ignored %v; want it read", c.Endpoints.Custom[0].Models.Fetch, c.Ignored)
	}
	if e := c.Endpoints.Custom[0]; e.APIKey != "gsk-1" || c.Memory.TokenLimit != 2000 || c.Endpoints.Agents.MaxToolResultChars != 20000 || c.MCPServers["files"].Command != "npx" {
		t.Errorf("the keys Relay uses did not take effect: %+v", c)
	}
}

// --env-file is read in place of the .env beside the config, before the
// config is looked for (so it may name it), and the real environment wins
// over it; a missing file is an error naming the flag.
func TestLoadWithEnvFile(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "conf", "librechat.yaml")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfgPath, "endpoints:\n  custom:\n    - name: groq\n      apiKey: ${GROQ_API_KEY}\n      baseURL: ${GROQ_URL}\n")
	write(filepath.Join(dir, "conf", ".env"), "GROQ_URL=http://beside\nGROQ_API_KEY=beside\n")
	envFile := filepath.Join(dir, "prod.env")
	write(envFile, "CONFIG_PATH="+cfgPath+"\nGROQ_URL=http://from-env-file\nGROQ_API_KEY=file-key\n")

	c, err := LoadWithEnvFile("", envFile, envOf(map[string]string{"GROQ_API_KEY": "real-key"}))
	if err != nil {
		t.Fatalf("LoadWithEnvFile: %v", err)
	}
	if c.Path != cfgPath || c.PathFrom != "CONFIG_PATH" || c.DotEnv != envFile {
		t.Errorf("Path %q from %q, DotEnv %q; want the config the env file names, and the env file", c.Path, c.PathFrom, c.DotEnv)
	}
	if e := c.Endpoints.Custom[0]; e.BaseURL != "http://from-env-file" || e.APIKey != "real-key" {
		t.Errorf("baseURL %q apiKey %q; want the env file's URL (not the .env beside the config) and the real environment's key", e.BaseURL, e.APIKey)
	}
	missing := filepath.Join(dir, "missing.env")
	if _, err := LoadWithEnvFile(cfgPath, missing, envOf(nil)); err == nil || err.Error() != "reading the --env-file "+missing+": no such file or directory" {
		t.Errorf("a missing --env-file: %v", err)
	}
}

// A file that cannot be read is named with the reason, in the error's
// message, which is all the command line prints of it.
func TestUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir(DefaultFile, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load("", envOf(nil))
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Kind != fault.Invalid || fe.Message != "reading config file relay.yaml: is a directory" {
		t.Errorf("relay.yaml a directory: %#v", err)
	}

	cfgDir := filepath.Join(dir, "conf")
	if err := os.MkdirAll(filepath.Join(cfgDir, DotEnvFile), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(cfgDir, "relay.yaml")
	if err := os.WriteFile(cfgPath, []byte("server:\n  addr: :8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfgPath, envOf(nil)); !errors.As(err, &fe) || fe.Message != "reading "+filepath.Join(cfgDir, DotEnvFile)+": is a directory" {
		t.Errorf(".env a directory: %v", err)
	}
	if _, err := LoadWithEnvFile(cfgPath, cfgDir, envOf(nil)); !errors.As(err, &fe) || fe.Message != "reading the --env-file "+cfgDir+": is a directory" {
		t.Errorf("--env-file a directory: %v", err)
	}
}
