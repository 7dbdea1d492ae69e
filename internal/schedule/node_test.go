package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/run"
	. "github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
)

// cluster is two processes, a and b, on one database, each with its node,
// scheduler and run service; a's model answers only when released, so its
// runs stay running as long as a test needs.
type cluster struct {
	st           *store.DB
	user         *auth.User
	clock        *clock
	liveA, liveB *Liveness
	a, b         *Service
	runsA, runsB *run.Service
	// release lets a's model answer; logA is what a's scheduler logs.
	release func()
	logA    *logBuffer
}

// logBuffer is a log that a test reads while it is written.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func setupCluster(t *testing.T, start time.Time) *cluster {
	t.Helper()
	ctx := context.Background()
	st, u, agents := storeWithDigest(t, "Digest.")
	release := make(chan struct{})
	var once sync.Once
	slow := llmtest.Func(func(*llm.Request) llmtest.Turn { <-release; return llmtest.Turn{Text: []string{"late"}} })
	fast := llmtest.Func(func(*llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"done"}} })
	m := mcp.NewManager(nil, mcp.Options{})
	c := &clock{now: start}
	cl := &cluster{st: st, user: u, clock: c, logA: &logBuffer{}}
	cl.release = func() { once.Do(func() { close(release) }) }
	// Both processes run on this host, as pids 101 and 102, both alive.
	alive := func(pid int) bool { return pid == 101 || pid == 102 }
	mk := func(model *llmtest.Model, pid int) (*Liveness, *run.Service, *Service) {
		live := &Liveness{Store: st, Now: c.Now, Alive: alive, Log: discardLog(), Host: "host-a", PID: pid}
		runs := &run.Service{Store: st.OnNode(live.ID()), MCP: m, Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
			Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
				return model, mcp.FamilyOpenAI, nil
			}, Log: discardLog()}
		live.Abandon, runs.TakenForDead = runs.Abandon, live.Lost
		s := &Service{Store: st, Agents: agents, Users: st, Runner: runs, Now: c.Now, Log: discardLog(), Live: live}
		if err := live.Register(ctx); err != nil {
			t.Fatal(err)
		}
		return live, runs, s
	}
	cl.liveA, cl.runsA, cl.a = mk(slow, 101)
	cl.liveB, cl.runsB, cl.b = mk(fast, 102)
	cl.a.Log = slog.New(slog.NewTextHandler(cl.logA, nil))
	t.Cleanup(func() {
		cl.release()
		m.Close()
	})
	return cl
}

// firings returns the schedule's firings, oldest first.
func (c *cluster) firings(t *testing.T, id string) []*Firing {
	t.Helper()
	fs, err := c.st.ListFirings(context.Background(), id, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(fs)-1; i < j; i, j = i+1, j-1 {
		fs[i], fs[j] = fs[j], fs[i]
	}
	return fs
}

// waitFiring waits until the schedule's n-th firing (from 1) satisfies ok.
func (c *cluster) waitFiring(t *testing.T, id string, n int, ok func(*Firing) bool) *Firing {
	t.Helper()
	var fs []*Firing
	poll.Until(t, 10*time.Second, fmt.Sprintf("firing %d in the state wanted", n), func() bool {
		fs = c.firings(t, id)
		return len(fs) >= n && ok(fs[n-1])
	})
	return fs[n-1]
}

// ignoreIDs compares what a reap failed by its counts only.
var ignoreIDs = cmpopts.IgnoreFields(Reaped{}, "FiringIDs")

func running(f *Firing) bool { return f.Status == FiringRunning && f.RunID != "" }

// startOnA creates an every-minute schedule and has a fire it at 10:01; the
// run hangs. It returns the schedule and the running firing.
func (c *cluster) startOnA(t *testing.T) (*Schedule, *Firing) {
	t.Helper()
	ctx := context.Background()
	sc, err := c.a.Create(ctx, c.user, Input{AgentID: str("digest"), Name: str("Every minute"), Prompt: str("Go"), Cron: str("* * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	c.clock.Set(time.Date(2026, 5, 1, 10, 1, 0, 0, time.UTC))
	for _, l := range []*Liveness{c.liveA, c.liveB} {
		if err := c.st.HeartbeatNode(ctx, l.ID(), c.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.a.Tick(ctx, c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f := c.waitFiring(t, sc.ID, 1, running)
	if f.ClaimedBy != c.liveA.ID() {
		t.Fatalf("firing claimed by %q, want a's node %q", f.ClaimedBy, c.liveA.ID())
	}
	if node, err := c.st.RunNode(ctx, f.RunID); err != nil || node != c.liveA.ID() {
		t.Fatalf("run's node = %q, %v; want a's %q", node, err, c.liveA.ID())
	}
	return sc, f
}

func TestDeadProcessWorkFailedAndNextFiringRuns(t *testing.T) {
	ctx := context.Background()
	c := setupCluster(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
	sc, first := c.startOnA(t)
	// Its webhook hears of the firing b fails for a, as of any firing's end.
	hook, received := receiver(t)
	c.a.Guard, c.b.Guard = guard(t, "127.0.0.1"), guard(t, "127.0.0.1")
	c.liveB.Failed = c.b.NotifyFailed
	if _, err := c.a.Update(ctx, c.user, sc.ID, Input{NotifyURL: str(hook.URL + "/hook")}); err != nil {
		t.Fatal(err)
	}

	// a stops heartbeating at 10:01 (it was killed). b heartbeats on; before
	// DeadAfter nothing happens.
	c.clock.Set(time.Date(2026, 5, 1, 10, 1, 15, 0, time.UTC))
	if err := c.st.HeartbeatNode(ctx, c.liveB.ID(), c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r, err := c.liveB.Reap(ctx); err != nil || !cmp.Equal(r, Reaped{}) {
		t.Fatalf("reap before dead_after = %+v, %v; want nothing", r, err)
	}
	c.clock.Set(time.Date(2026, 5, 1, 10, 1, 21, 0, time.UTC))
	r, err := c.liveB.Reap(ctx)
	if err != nil || !cmp.Equal(r, Reaped{Runs: 1, Firings: 1, FiringIDs: []string{first.ID}}) {
		t.Fatalf("reap after dead_after = %+v, %v; want a's run and firing", r, err)
	}
	select {
	case body := <-received:
		firing, _ := body["firing"].(map[string]any)
		if firing["id"] != first.ID || firing["status"] != string(FiringFailed) || firing["error"] != ReasonDead {
			t.Errorf("webhook body %v", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook for the firing failed with its process")
	}
	got, err := c.st.GetRun(ctx, first.RunID)
	if err != nil || got.Status != run.StatusFailed || got.Error != ReasonDead {
		t.Errorf("a's run: %+v, %v; want failed with %q", got, err, ReasonDead)
	}
	if f, _ := c.st.GetFiring(ctx, first.ID); f.Status != FiringFailed || f.Error != ReasonDead {
		t.Errorf("a's firing: %+v", f)
	}
	if _, err := c.st.GetNode(ctx, c.liveA.ID()); !fault.Is(err, fault.NotFound) {
		t.Errorf("a's node after the reap: %v; want it gone", err)
	}
	if r, err := c.liveA.Reap(ctx); err != nil || !cmp.Equal(r, Reaped{}) {
		t.Errorf("a second reap = %+v, %v; want nothing", r, err)
	}

	// The 10:02 firing runs on b: the dead one does not make it "still running".
	c.clock.Set(time.Date(2026, 5, 1, 10, 2, 0, 0, time.UTC))
	if err := c.b.Tick(ctx, c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	next := c.waitFiring(t, sc.ID, 2, func(f *Firing) bool { return f.FinishedAt != nil })
	if next.Status != FiringSucceeded || next.ClaimedBy != c.liveB.ID() || !next.FireAt.Equal(c.clock.Now()) {
		t.Errorf("the 10:02 firing: %+v; want succeeded on b", next)
	}
}

func TestFiringWaitsForASuspectProcess(t *testing.T) {
	ctx := context.Background()
	c := setupCluster(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
	sc, first := c.startOnA(t)

	// a was killed at 10:01:50; at 10:02 it has missed two heartbeats but is not
	// dead yet: the 10:02 firing is neither run nor skipped, it stays due.
	c.clock.Set(time.Date(2026, 5, 1, 10, 1, 50, 0, time.UTC))
	for _, l := range []*Liveness{c.liveA, c.liveB} {
		if err := c.st.HeartbeatNode(ctx, l.ID(), c.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	c.clock.Set(time.Date(2026, 5, 1, 10, 2, 1, 0, time.UTC))
	if err := c.st.HeartbeatNode(ctx, c.liveB.ID(), c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := c.b.Tick(ctx, c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if fs := c.firings(t, sc.ID); len(fs) != 1 {
		t.Fatalf("firings while a is suspect: %+v; want only the first", fs)
	}
	// Once a heartbeats again it is no longer suspect (a tick now would skip
	// the firing as before).
	if err := c.st.HeartbeatNode(ctx, c.liveA.ID(), c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if c.liveB.Suspect(ctx, c.liveA.ID()) {
		t.Fatal("a heartbeated but is still suspect")
	}
	// Then a falls silent for good: at 10:02:22 it has been silent for 21 s and
	// is dead, and the 10:02 firing runs, late, on b.
	c.clock.Set(time.Date(2026, 5, 1, 10, 2, 22, 0, time.UTC))
	if err := c.st.HeartbeatNode(ctx, c.liveB.ID(), c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r, err := c.liveB.Reap(ctx); err != nil || r.Runs != 1 {
		t.Fatalf("reap = %+v, %v", r, err)
	}
	if err := c.b.Tick(ctx, c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	next := c.waitFiring(t, sc.ID, 2, func(f *Firing) bool { return f.FinishedAt != nil })
	if next.Status != FiringSucceeded || next.ClaimedBy != c.liveB.ID() || !next.FireAt.Equal(time.Date(2026, 5, 1, 10, 2, 0, 0, time.UTC)) {
		t.Errorf("the 10:02 firing: %+v; want it run late on b, not skipped", next)
	}
	if f, _ := c.st.GetFiring(ctx, first.ID); f.Status != FiringFailed {
		t.Errorf("a's firing: %+v", f)
	}
}

func TestRestartOnSameHostReapsAtOnce(t *testing.T) {
	ctx := context.Background()
	c := setupCluster(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
	_, first := c.startOnA(t)
	// A moment later a process starts on this host: a's pid is gone, so a is
	// dead without waiting for DeadAfter, and its run fails at once.
	n, err := c.st.GetNode(ctx, c.liveA.ID())
	if err != nil {
		t.Fatal(err)
	}
	n.PID = 103 // a's process is gone
	fresh := &Liveness{Store: c.st, Now: c.clock.Now, Host: "host-a", PID: 104, Alive: func(pid int) bool { return pid != 103 }}
	if !fresh.Dead(n, c.clock.Now()) {
		t.Fatal("a node of this host whose process is gone is not dead")
	}
	// Another host's node is judged by its heartbeat alone.
	other := *n
	other.Host = "elsewhere"
	if fresh.Dead(&other, c.clock.Now()) {
		t.Error("a fresh node of another host is dead")
	}
	// A node of this host with this process's pid is a predecessor's (pid 1 in
	// a container): dead.
	same := *n
	same.PID = 104
	if !fresh.Dead(&same, c.clock.Now()) {
		t.Error("a node with this process's pid that is not this process's is alive")
	}
	// One that registered since this process began is another server of
	// this very process (as tests run two): alive.
	since := same
	since.StartedAt = time.Now()
	if fresh.Dead(&since, c.clock.Now()) {
		t.Error("a node this process registered for another of its servers is dead")
	}
	kill := func(pid int) bool { return pid != 101 }
	restarted := &Liveness{Store: c.st, Now: c.clock.Now, Host: "host-a", PID: 105, Alive: kill}
	if r, err := restarted.Reap(ctx); err != nil || r.Runs != 1 {
		t.Fatalf("reap = %+v, %v; want a's run", r, err)
	}
	if got, _ := c.st.GetRun(ctx, first.RunID); got.Status != run.StatusFailed {
		t.Errorf("a's run is %s", got.Status)
	}
}

func TestHeartbeatsAndStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := setupCluster(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
	_, first := c.startOnA(t)
	c.liveA.Interval = 5 * time.Millisecond
	// Taken for dead while stalled: it registers again on its next heartbeat.
	if _, ok, err := c.st.ReapNode(ctx, c.liveA.ID(), c.clock.Now(), "test"); err != nil || !ok {
		t.Fatalf("ReapNode: %v %v", ok, err)
	}
	done := make(chan error)
	go func() { done <- c.liveA.Run(ctx) }()
	poll.Until(t, 5*time.Second, "registration of a again", func() bool {
		_, err := c.st.GetNode(ctx, c.liveA.ID())
		return err == nil
	})
	c.clock.Set(time.Date(2026, 5, 1, 10, 5, 0, 0, time.UTC))
	poll.Until(t, 5*time.Second, fmt.Sprintf("a's heartbeat at %v", c.clock.Now()), func() bool {
		n, err := c.st.GetNode(ctx, c.liveA.ID())
		return err == nil && n.HeartbeatAt.Equal(c.clock.Now())
	})
	// A second run on a, started after it came back, fails when a stops.
	sc2, err := c.a.Create(ctx, c.user, Input{AgentID: str("digest"), Name: str("Another"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.a.RunNow(ctx, c.user, sc2.ID); err != nil {
		t.Fatal(err)
	}
	f2 := c.waitFiring(t, sc2.ID, 1, running)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.GetNode(context.Background(), c.liveA.ID()); !fault.Is(err, fault.NotFound) {
		t.Errorf("a's node after stop: %v", err)
	}
	bg := context.Background()
	if got, _ := c.st.GetRun(bg, f2.RunID); got.Status != run.StatusFailed || got.Error != ReasonStopped {
		t.Errorf("the run a had at stop: %s %q; want failed with %q", got.Status, got.Error, ReasonStopped)
	}
	if got, _ := c.st.GetRun(bg, first.RunID); got.Status != run.StatusFailed || !strings.Contains(got.Error, "test") {
		t.Errorf("the run failed while a was taken for dead: %s %q", got.Status, got.Error)
	}
}

// A process taken for dead while it stalled (stopped past dead_after) gives up
// its work when it resumes, whether a write of its run or its heartbeat tells
// it so: the run and the firing that another process failed stay failed, with
// one run.finished and one answer, and nothing of what the run did after the
// reap is stored. It then registers again and runs new work.
func TestTakenForDeadGivesItsWorkUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat bool // the heartbeat finds it out before the run writes again
	}{{"found by a write", false}, {"found by the heartbeat", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := setupCluster(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
			_, first := c.startOnA(t)
			// a stalls at 10:01 in its run's model call; at 10:01:21 b takes it
			// for dead and fails its run and firing.
			c.clock.Set(time.Date(2026, 5, 1, 10, 1, 21, 0, time.UTC))
			if err := c.st.HeartbeatNode(ctx, c.liveB.ID(), c.clock.Now()); err != nil {
				t.Fatal(err)
			}
			if r, err := c.liveB.Reap(ctx); err != nil || !cmp.Equal(r, Reaped{Runs: 1, Firings: 1}, ignoreIDs) {
				t.Fatalf("reap = %+v, %v; want a's run and firing", r, err)
			}
			failed, err := c.st.GetRun(ctx, first.RunID)
			if err != nil {
				t.Fatal(err)
			}

			c.liveA.Interval = 5 * time.Millisecond
			lctx, stop := context.WithCancel(ctx)
			lived := make(chan error, 1)
			startLive := func() { go func() { lived <- c.liveA.Run(lctx) }() }
			registered := func() {
				t.Helper()
				poll.Until(t, 5*time.Second, "a registered again", func() bool {
					_, err := c.st.GetNode(ctx, c.liveA.ID())
					return err == nil
				})
			}
			if tc.heartbeat {
				startLive()
				registered()
			}
			// a resumes: its model answers, and its run goes on to its end.
			c.release()
			if err := c.runsA.Wait(ctx, first.RunID); err != nil {
				t.Fatal(err)
			}
			// a's scheduler is done with the firing once it has tried to save
			// its outcome: refused, as logged, or saved over b's.
			poll.Until(t, 5*time.Second, "a's scheduler done with the firing", func() bool {
				f, err := c.st.GetFiring(ctx, first.ID)
				return err == nil && (f.Status != FiringFailed || f.Error != ReasonDead) ||
					strings.Contains(c.logA.String(), "the firing's outcome not saved")
			})

			got, err := c.st.GetRun(ctx, first.RunID)
			if err != nil || got.Status != run.StatusFailed || got.Error != ReasonDead ||
				got.ResponseMessageID != failed.ResponseMessageID || !got.FinishedAt.Equal(*failed.FinishedAt) {
				t.Errorf("a's run after a resumed: %+v, %v; want it as b failed it: %+v", got, err, failed)
			}
			evs, err := c.st.ListEvents(ctx, first.RunID, 0)
			if err != nil {
				t.Fatal(err)
			}
			finishes := 0
			var stored []string
			for _, e := range evs {
				stored = append(stored, fmt.Sprintf("%d %s", e.Seq, e.Type))
				if e.Type == run.EventRunFinished {
					finishes++
				}
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Errorf("a's run's events are not numbered 1, 2, …: %s", strings.Join(stored, ", "))
					break
				}
			}
			if finishes != 1 || evs[len(evs)-1].Type != run.EventRunFinished {
				t.Errorf("a's run has %d run.finished events, last %q; want one, last", finishes, evs[len(evs)-1].Type)
			}
			msgs, err := c.st.ListMessages(ctx, got.ConversationID)
			if err != nil {
				t.Fatal(err)
			}
			answers := 0
			for _, m := range msgs {
				if m.ParentID == got.UserMessageID {
					answers++
				}
			}
			if answers != 1 {
				t.Errorf("the run's message has %d answers, want 1", answers)
			}
			if rqs, err := c.st.ListModelRequests(ctx, first.RunID); err != nil || len(rqs) != 0 {
				t.Errorf("model requests stored after the reap: %d, %v", len(rqs), err)
			}
			if f, err := c.st.GetFiring(ctx, first.ID); err != nil || f.Status != FiringFailed || f.Error != ReasonDead {
				t.Errorf("a's firing: %+v, %v; want failed with %q", f, err, ReasonDead)
			}

			// Registered again, a runs new work as before.
			if !tc.heartbeat {
				startLive()
				registered()
			}
			r, err := c.runsA.Start(ctx, c.user, run.ChatRequest{AgentID: "digest", Text: "Again"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.runsA.Wait(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			if got, err := c.st.GetRun(ctx, r.ID); err != nil || got.Status != run.StatusSucceeded {
				t.Errorf("a run started after a registered again: %+v, %v; want succeeded", got, err)
			}
			stop()
			if err := <-lived; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// flakyNodes is a node store whose heartbeats fail while down: the database
// could not be reached.
type flakyNodes struct {
	NodeStore
	down     atomic.Bool
	failures atomic.Int32
}

func (f *flakyNodes) HeartbeatNode(ctx context.Context, id string, at time.Time) error {
	if f.down.Load() {
		f.failures.Add(1)
		return errors.New("connection refused")
	}
	return f.NodeStore.HeartbeatNode(ctx, id, at)
}

// A database away for longer than dead_after makes every process miss its
// heartbeats: the first back does not take the others for dead, since the
// time it could not reach the database does not count. One that then stays
// silent for dead_after is dead.
func TestDatabaseOutageTakesNobodyForDead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := setupCluster(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
	_, first := c.startOnA(t) // both heartbeat at 10:01
	flaky := &flakyNodes{NodeStore: c.st}
	c.liveB.Store, c.liveB.Interval = flaky, 5*time.Millisecond
	done := make(chan error, 1)
	go func() { done <- c.liveB.Run(ctx) }()

	flaky.down.Store(true)
	c.clock.Set(time.Date(2026, 5, 1, 10, 2, 0, 0, time.UTC)) // a minute without the database
	poll.Until(t, 5*time.Second, "b's heartbeat failing", func() bool { return flaky.failures.Load() > 0 })
	flaky.down.Store(false)
	poll.Until(t, 5*time.Second, "b's heartbeat at 10:02", func() bool {
		n, err := c.st.GetNode(ctx, c.liveB.ID())
		return err == nil && n.HeartbeatAt.Equal(c.clock.Now())
	})
	if r, err := c.liveB.Reap(ctx); err != nil || !cmp.Equal(r, Reaped{}) {
		t.Fatalf("b's reap as the database came back = %+v, %v; want nothing: a's heartbeat is late only by the outage", r, err)
	}
	if got, err := c.st.GetRun(ctx, first.RunID); err != nil || got.Status != run.StatusRunning {
		t.Fatalf("a's run after the outage: %+v, %v; want it running", got, err)
	}

	// a stays silent for dead_after after b is back: it is dead.
	c.clock.Set(time.Date(2026, 5, 1, 10, 2, 21, 0, time.UTC))
	poll.Until(t, 5*time.Second, "b's heartbeat at 10:02:21", func() bool {
		n, err := c.st.GetNode(ctx, c.liveB.ID())
		return err == nil && n.HeartbeatAt.Equal(c.clock.Now())
	})
	if r, err := c.liveB.Reap(ctx); err != nil || !cmp.Equal(r, Reaped{Runs: 1, Firings: 1}, ignoreIDs) {
		t.Errorf("b's reap dead_after later = %+v, %v; want a's run and firing", r, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
