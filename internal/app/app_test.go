package app

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/config"
)

// testKey is a bootstrap key of the tests.
const testKey = "rk-TESTtestTESTtestTESTtestTESTtestTESTtest"

// testEnv is a hermetic environment: only the variables given.
func testEnv(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// writeConfig writes a config file into dir and returns its path.
func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVersionFromBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/relay-ai/relay", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name                  string
		bi                    *debug.BuildInfo
		version, commit, date string // the -X values
		want                  BuildInfo
	}{
		{"no build info", nil, "", "", "", BuildInfo{Version: "dev", Commit: "unknown", Date: "unknown"}},
		{"go build in a work tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamped.Settings[:3]},
			"", "", "", BuildInfo{Version: "dev", Commit: "0123456789abcdef", Date: "2026-01-02T03:04:05Z"}},
		{"stamped and modified", stamped, "", "", "", BuildInfo{Version: "v1.2.3", Commit: "0123456789abcdef", Date: "2026-01-02T03:04:05Z", Modified: true}},
		{"-X values win", stamped, "v2.0.0", "fedcba", "2026-03-04T05:06:07Z", BuildInfo{Version: "v2.0.0", Commit: "fedcba", Date: "2026-03-04T05:06:07Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := [3]string{Version, Commit, Date}
			t.Cleanup(func() { Version, Commit, Date = old[0], old[1], old[2] })
			Version, Commit, Date = tc.version, tc.commit, tc.date
			if d := cmp.Diff(tc.want, readBuild(tc.bi)); d != "" {
				t.Errorf("readBuild (-want +got):\n%s", d)
			}
		})
	}
	b := BuildInfo{Version: "v1.2.3", Commit: "0123abc", Date: "2026-01-02T03:04:05Z", Modified: true}
	want := fmt.Sprintf("relay v1.2.3 (commit 0123abc-modified, built 2026-01-02T03:04:05Z, %s %s/%s)", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if got := b.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestLoggerMasksSecrets: what the config and the environment hold as secrets
// never reaches the log, whatever carries it.
func TestLoggerMasksSecrets(t *testing.T) {
	const apiKey, header, mcpToken = "sk-logger-test-0001", "hdr-logger-test-0002", "mcp-logger-test-0003"
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "endpoints:\n  custom:\n    - name: gw\n      baseURL: http://127.0.0.1:1/v1\n      apiKey: "+apiKey+
		"\n      headers:\n        X-Api-Key: "+header+"\nmcpServers:\n  remote:\n    url: http://127.0.0.1:1/mcp\n    headers:\n      Authorization: Bearer ${MCP_TOKEN}\n")
	vars := map[string]string{"MCP_TOKEN": mcpToken, "RELAY_BOOTSTRAP_API_KEY": testKey}
	var buf bytes.Buffer
	cfg, err := config.Load(cfgPath, testEnv(vars))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		cfg.Server.LogFormat = format
		log := Logger(cfg, &buf).With(slog.String("auth", "Bearer "+mcpToken))
		log.Error("calling gw with "+apiKey, slog.Any("err", fmt.Errorf("401: %s", header)), slog.Group("req", slog.String("key", testKey)))
	}
	out := buf.String()
	for _, s := range []string{apiKey, header, mcpToken, testKey} {
		if strings.Contains(out, s) {
			t.Errorf("the log holds %q:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "[redacted]"); n != 8 {
		t.Errorf("%d masks in the log, want 8:\n%s", n, out)
	}
}
