package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFileLimits(t *testing.T) {
	c := mustLoadYAML(t, "server:\n  addr: :3080\n", nil)
	want := FileConfig{ServerFileSizeLimit: 50, MaxDecodedMB: 256, MaxTextMB: 8, MaxChunks: 10000, MaxPages: 2000,
		MaxPDFOperations: 20_000_000, ExtractTimeout: Duration{2 * time.Minute}}
	if d := cmp.Diff(want, c.FileConfig); d != "" {
		t.Errorf("default fileConfig (-want +got):\n%s", d)
	}
	c = mustLoadYAML(t, `fileConfig:
  maxDecodedMB: 64
  maxTextMB: 2
  maxChunks: 500
  maxPages: 100
  maxPdfOperations: 1000000
  extractTimeout: 30s
`, nil)
	want = FileConfig{ServerFileSizeLimit: 50, MaxDecodedMB: 64, MaxTextMB: 2, MaxChunks: 500, MaxPages: 100,
		MaxPDFOperations: 1_000_000, ExtractTimeout: Duration{30 * time.Second}}
	if d := cmp.Diff(want, c.FileConfig); d != "" {
		t.Errorf("fileConfig (-want +got):\n%s", d)
	}
	_, err := loadYAML(t, `fileConfig:
  maxDecodedMB: 0
  maxTextMB: -1
  maxChunks: 0
  maxPages: 0
  maxPdfOperations: 0
  extractTimeout: 0s
`, nil)
	wantProblems := []string{
		`relay.yaml:2:17: fileConfig.maxDecodedMB: must be a number of MB greater than 0`,
		`relay.yaml:3:14: fileConfig.maxTextMB: must be a number of MB greater than 0`,
		`relay.yaml:4:14: fileConfig.maxChunks: must be a number greater than 0`,
		`relay.yaml:5:13: fileConfig.maxPages: must be a number greater than 0`,
		`relay.yaml:6:21: fileConfig.maxPdfOperations: must be a number greater than 0`,
		`relay.yaml:7:19: fileConfig.extractTimeout: must be a duration greater than 0, e.g. 2m`,
	}
	if d := cmp.Diff(wantProblems, problems(t, err)); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}
