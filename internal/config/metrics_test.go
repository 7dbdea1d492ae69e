package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetrics(t *testing.T) {
	c := mustLoadYAML(t, "metrics:\n  addr: 127.0.0.1:9464\n  token: ${METRICS_TOKEN}\n", map[string]string{"METRICS_TOKEN": "scrape-token-0123456789"})
	if c.Metrics.Addr != "127.0.0.1:9464" || c.Metrics.Token != "scrape-token-0123456789" {
		t.Errorf("metrics = %+v", c.Metrics)
	}
	if !slices.Contains(c.Secrets(envOf(nil)), "scrape-token-0123456789") {
		t.Error("metrics.token is not among the secrets logs mask")
	}
	var b strings.Builder
	if err := c.WriteMasked(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "scrape-token-0123456789") || !strings.Contains(out, "token: '****'") || !strings.Contains(out, "addr: 127.0.0.1:9464") {
		t.Errorf("dump:\n%s", out)
	}
	if c.Metrics.Token != "scrape-token-0123456789" {
		t.Error("masking changed the config itself")
	}
	if d := mustLoadYAML(t, "server:\n  addr: 127.0.0.1:3080\n", nil); d.Metrics != (Metrics{}) {
		t.Errorf("metrics on by default: %+v", d.Metrics)
	}
}

func TestMetricsInvalid(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"metrics:\n  addr: nine\n", []string{`relay.yaml:2:9: metrics.addr: "nine" is not a host:port address (e.g. 127.0.0.1:9090 or :9090)`}},
		{"server:\n  addr: 127.0.0.1:3080\nmetrics:\n  addr: :3080\n", []string{`relay.yaml:4:9: metrics.addr: ":3080" is server.addr's port: the metrics need a listener of their own (or set metrics.token to serve them on server.addr)`}},
		{"metrics:\n  token: short\n", []string{"relay.yaml:2:10: metrics.token: must be at least 16 characters"}},
		{"metrics:\n  token: \"a token with spaces in it\"\n", []string{"relay.yaml:2:10: metrics.token: must not contain spaces"}},
		{"metrics:\n  token: ${UNSET_METRICS_TOKEN}\n", []string{"relay.yaml:2:10: metrics.token: names an environment variable that is not set"}},
		{"metrics:\n  token: scrape-token-0123456789\n  pprof: true\n", []string{"relay.yaml:3:10: metrics.pprof: needs metrics.addr: the profiles are served on its listener only"}},
	} {
		_, err := loadYAML(t, tc.yaml, nil)
		got := problems(t, err)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.yaml, d)
		}
		if strings.Contains(err.Error(), "with spaces in it") {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	// A port of its own, on any host, is fine.
	mustLoadYAML(t, "server:\n  addr: 127.0.0.1:3080\nmetrics:\n  addr: 0.0.0.0:9464\n", nil)
	mustLoadYAML(t, "server:\n  addr: 127.0.0.1:3080\nmetrics:\n  addr: 10.0.0.5:3080\n", nil)
	if c := mustLoadYAML(t, "metrics:\n  addr: 127.0.0.1:9464\n  pprof: true\n", nil); !c.Metrics.Pprof {
		t.Errorf("metrics = %+v", c.Metrics)
	}
}
