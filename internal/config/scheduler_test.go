package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSchedulerKeys(t *testing.T) {
	c := mustLoadYAML(t, "scheduler:\n  run_timeout: 10m\n  heartbeat_interval: 2s\n  dead_after: 7\n  min_interval: 5m\n  grace: 10m\n  max_per_user: 3\n", nil)
	got := []time.Duration{c.Scheduler.RunTimeout.Duration, c.Scheduler.HeartbeatInterval.Duration, c.Scheduler.DeadAfter.Duration, c.Scheduler.MinInterval.Duration, c.Scheduler.Grace.Duration}
	if diff := cmp.Diff([]time.Duration{10 * time.Minute, 2 * time.Second, 7 * time.Second, 5 * time.Minute, 10 * time.Minute}, got); diff != "" {
		t.Errorf("scheduler (-want +got):\n%s", diff)
	}
	if c.Scheduler.MaxPerUser != 3 {
		t.Errorf("max_per_user = %d", c.Scheduler.MaxPerUser)
	}
	d := mustLoadYAML(t, "", nil).Scheduler
	if d.RunTimeout.Duration != 30*time.Minute || d.HeartbeatInterval.Duration != 5*time.Second || d.DeadAfter.Duration != 20*time.Second ||
		d.MinInterval.Duration != time.Minute || d.Grace.Duration != time.Hour || d.MaxPerUser != 50 {
		t.Errorf("defaults = %+v", d)
	}
}

func TestSchedulerInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"zero", "scheduler:\n  run_timeout: 0s\n  heartbeat_interval: 0s\n",
			[]string{
				"relay.yaml:2:16: scheduler.run_timeout: must be greater than 0",
				"relay.yaml:3:23: scheduler.heartbeat_interval: must be greater than 0",
			}},
		{"limits", "scheduler:\n  max_per_user: 0\n  min_interval: -1m\n  grace: 0s\n",
			[]string{
				"relay.yaml:2:17: scheduler.max_per_user: must be greater than 0",
				"relay.yaml:3:17: scheduler.min_interval: must be greater than 0",
				"relay.yaml:4:10: scheduler.grace: must be greater than 0",
			}},
		{"dead too soon", "scheduler:\n  heartbeat_interval: 5s\n  dead_after: 6s\n",
			[]string{"relay.yaml:3:15: scheduler.dead_after: must be at least two heartbeat intervals (10s), got 6s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml, nil)
			if diff := cmp.Diff(tc.want, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
