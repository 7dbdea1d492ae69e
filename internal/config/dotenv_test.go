package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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
