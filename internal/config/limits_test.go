package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLimitsKeys(t *testing.T) {
	d := mustLoadYAML(t, "", nil)
	want := Limits{
		User: UserQuotas{Files: 1000, StorageMB: 5120, RunsPerMinute: 60, ConcurrentRuns: 10},
		API:  RateLimits{KeyPerMinute: 600, IPPerMinute: 1200},
	}
	if diff := cmp.Diff(want, d.Limits); diff != "" {
		t.Errorf("default limits (-want +got):\n%s", diff)
	}
	if got := []any{d.Server.ReadHeaderTimeout.Duration, d.Server.ReadTimeout.Duration, d.Server.IdleTimeout.Duration, d.Server.MaxHeaderBytes}; !cmp.Equal(got, []any{10 * time.Second, 5 * time.Minute, 2 * time.Minute, 65536}) {
		t.Errorf("default server timeouts = %v", got)
	}

	c := mustLoadYAML(t, `server:
  read_header_timeout: 2s
  read_timeout: 30s
  idle_timeout: 1m
  max_header_bytes: 8192
limits:
  include_admins: true
  user:
    files: 3
    storage_mb: 0
    runs_per_minute: 5
    concurrent_runs: 2
  api:
    key_per_minute: 100
    key_burst: 10
    ip_per_minute: 0
    ip_burst: 4
`, nil)
	want = Limits{IncludeAdmins: true,
		User: UserQuotas{Files: 3, RunsPerMinute: 5, ConcurrentRuns: 2},
		API:  RateLimits{KeyPerMinute: 100, KeyBurst: 10, IPBurst: 4},
	}
	if diff := cmp.Diff(want, c.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if got := []any{c.Server.ReadHeaderTimeout.Duration, c.Server.ReadTimeout.Duration, c.Server.IdleTimeout.Duration, c.Server.MaxHeaderBytes}; !cmp.Equal(got, []any{2 * time.Second, 30 * time.Second, time.Minute, 8192}) {
		t.Errorf("server timeouts = %v", got)
	}
}

func TestLimitsInvalid(t *testing.T) {
	_, err := loadYAML(t, `server:
  read_header_timeout: 0s
  read_timeout: -1s
  max_header_bytes: 100
limits:
  user:
    files: -1
    runs_per_minute: -2
  api:
    ip_burst: -1
`, nil)
	want := []string{
		"relay.yaml:2:24: server.read_header_timeout: must be greater than 0",
		"relay.yaml:3:17: server.read_timeout: must be greater than 0",
		"relay.yaml:4:21: server.max_header_bytes: must be at least 4096",
		"relay.yaml:7:12: limits.user.files: must be 0 (no limit) or more",
		"relay.yaml:8:22: limits.user.runs_per_minute: must be 0 (no limit) or more",
		"relay.yaml:10:15: limits.api.ip_burst: must be 0 (a minute's worth) or more",
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
