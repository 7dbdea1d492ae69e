package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/run"
	. "github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

type fixture struct {
	a, b  *Service // two schedulers on one database, as two processes
	runs  *run.Service
	model *llmtest.Model
	user  *auth.User
	clock *clock
}

// storeWithDigest is a SQLite store on t.TempDir() with the user Ann and her
// agent "digest" with the given instructions.
func storeWithDigest(t *testing.T, instructions string) (*store.DB, *auth.User, *agent.Service) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := auth.NewService(st, nil).CreateUser(ctx, auth.NewUser{Email: "ann@example.com", DisplayName: "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	agents := agent.NewService(st, agent.Rules{})
	if _, err := agents.Create(ctx, u, "digest", agent.Spec{Provider: "openAI", Model: "m", Instructions: instructions}); err != nil {
		t.Fatal(err)
	}
	return st, u, agents
}

func setup(t *testing.T, start time.Time) *fixture {
	t.Helper()
	st, u, agents := storeWithDigest(t, "Today is {{current_date}}.")
	model := llmtest.Func(func(req *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"Nothing new."}} })
	m := mcp.NewManager(nil, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	runs := &run.Service{Store: st, MCP: m, Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	runs.Log = discardLog()
	c := &clock{now: start}
	mk := func(name string) *Service {
		return &Service{Store: st, Agents: agents, Users: st, Runner: runs, Now: c.Now, Process: name, Log: discardLog()}
	}
	return &fixture{a: mk("a"), b: mk("b"), runs: runs, model: model, user: u, clock: c}
}

func str(s string) *string { return &s }

// waitFinished waits until every firing of the schedule has finished.
func (f *fixture) waitFinished(t *testing.T, id string, want int) []*Firing {
	t.Helper()
	var fs []*Firing
	poll.Until(t, 10*time.Second, fmt.Sprintf("%d finished firings", want), func() bool {
		var err error
		if fs, err = f.a.Store.ListFirings(context.Background(), id, 100); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, x := range fs {
			if x.FinishedAt != nil || x.Status == FiringSkipped {
				done++
			}
		}
		return len(fs) == want && done == want
	})
	return fs
}

func TestFiresOnceAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 3, 10, 17, 0, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Morning digest"), Prompt: str("Digest for {{current_date}}"),
		Cron: str("0 7 * * *"), Timezone: str("Pacific/Auckland")})
	if err != nil {
		t.Fatal(err)
	}
	// 07:00 in Auckland on 11 March is 18:00 UTC on the 10th (NZDT, +13).
	if want := time.Date(2026, 3, 10, 18, 0, 0, 0, time.UTC); !sc.NextRunAt.Equal(want) {
		t.Fatalf("next run %v, want %v", sc.NextRunAt, want)
	}
	f.clock.Set(time.Date(2026, 3, 10, 18, 0, 5, 0, time.UTC))
	var wg sync.WaitGroup
	for _, s := range []*Service{f.a, f.b, f.a, f.b} {
		wg.Go(func() { _ = s.Tick(ctx, f.clock.Now()) })
	}
	wg.Wait()
	fs := f.waitFinished(t, sc.ID, 1)
	if fs[0].Status != FiringSucceeded || fs[0].Prompt != "Digest for 2026-03-11 (3)" {
		t.Errorf("firing %+v", fs[0])
	}
	th, err := f.runs.Conversation(ctx, f.user, fs[0].ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if th.Title != "Morning digest — 2026-03-11 07:00 NZDT" || th.Messages[1].Text != "Nothing new." {
		t.Errorf("conversation %q: %+v", th.Title, th.Messages)
	}
	// The agent's own placeholders are rendered in the schedule's time zone too.
	if sys := f.model.Requests()[0].Messages[0].Content; sys != "Today is 2026-03-11 (3)." {
		t.Errorf("system message %q", sys)
	}
	got, _ := f.a.Get(ctx, f.user, sc.ID)
	if want := time.Date(2026, 3, 11, 18, 0, 0, 0, time.UTC); !got.NextRunAt.Equal(want) || got.LastStatus != string(FiringSucceeded) {
		t.Errorf("after firing: next %v, last status %q", got.NextRunAt, got.LastStatus)
	}
}

func TestMissedAndOneOff(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	daily, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 6, 30, 0, 0, time.UTC)
	once, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Once"), Prompt: str("Go"), RunAt: &at})
	if err != nil {
		t.Fatal(err)
	}
	// Relay was down until 09:30: the 07:00 firing is past the 1-hour grace window
	// and is skipped; the 06:30 one-off too, and it disables itself.
	f.clock.Set(time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{daily.ID, once.ID} {
		fs := f.waitFinished(t, id, 1)
		if fs[0].Status != FiringSkipped || !strings.Contains(fs[0].Error, "grace window") {
			t.Errorf("%s: %+v", id, fs[0])
		}
	}
	d, _ := f.a.Get(ctx, f.user, daily.ID)
	if want := time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC); !d.NextRunAt.Equal(want) {
		t.Errorf("daily next %v, want %v", d.NextRunAt, want)
	}
	o, _ := f.a.Get(ctx, f.user, once.ID)
	if o.Enabled || o.NextRunAt != nil {
		t.Errorf("one-off after firing: enabled %v next %v", o.Enabled, o.NextRunAt)
	}

	// Paused, its time passed, it may still be changed; enabled again only
	// with a new time.
	renamed, err := f.a.Update(ctx, f.user, once.ID, Input{Name: str("Once, renamed")})
	if err != nil {
		t.Fatalf("renaming the fired one-off: %v", err)
	}
	if renamed.Name != "Once, renamed" || !renamed.UpdatedAt.Equal(f.clock.Now()) || renamed.UpdatedAt.Equal(renamed.CreatedAt) {
		t.Errorf("renamed: name %q, updated_at %v (created %v), want the new name, updated now", renamed.Name, renamed.UpdatedAt, renamed.CreatedAt)
	}
	// As the web UI's form saves it: every field sent again, run_at as it was.
	if _, err := f.a.Update(ctx, f.user, once.ID, Input{Name: str("Once"), RunAt: renamed.RunAt, Enabled: ptr(false)}); err != nil {
		t.Errorf("saving the fired one-off with its run_at as it was: %v", err)
	}
	_, err = f.a.Update(ctx, f.user, once.ID, Input{Enabled: ptr(true)})
	if err == nil || !strings.Contains(err.Error(), "give a new run_at") {
		t.Errorf("enabling the fired one-off without a new time: %v", err)
	}
	later := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	again, err := f.a.Update(ctx, f.user, once.ID, Input{Enabled: ptr(true), RunAt: &later})
	if err != nil || again.NextRunAt == nil || !again.NextRunAt.Equal(later) {
		t.Errorf("enabling the fired one-off at a new time: next %v, %v", again.NextRunAt, err)
	}
}

func ptr[T any](v T) *T { return &v }

// A schedule has cron or run_at, never both: the one given decides its type
// and replaces the other.
func TestCronOrRunAt(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	at := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	base := func() Input { return Input{AgentID: str("digest"), Name: str("x"), Prompt: str("p")} }

	both := base()
	both.Cron, both.RunAt = str("0 7 * * *"), &at
	if _, err := f.a.Create(ctx, f.user, both); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("cron and run_at: %v", err)
	}
	mismatch := base()
	mismatch.Cron, mismatch.Type = str("0 7 * * *"), ptr(Once)
	if _, err := f.a.Create(ctx, f.user, mismatch); err == nil || !strings.Contains(err.Error(), "once does not go with cron") {
		t.Errorf("type once with cron: %v", err)
	}

	daily := base()
	daily.Cron = str("0 7 * * *")
	sc, err := f.a.Create(ctx, f.user, daily)
	if err != nil {
		t.Fatal(err)
	}
	sc, err = f.a.Update(ctx, f.user, sc.ID, Input{RunAt: &at})
	if err != nil || sc.Type != Once || sc.Cron != "" || !sc.NextRunAt.Equal(at) {
		t.Fatalf("run_at given to a recurring schedule: %+v, %v; want a one-off at %v without cron", sc, err, at)
	}
	sc, err = f.a.Update(ctx, f.user, sc.ID, Input{Cron: str("0 8 * * *"), Type: ptr(Recurring)})
	if err != nil || sc.Type != Recurring || sc.RunAt != nil || sc.Cron != "0 8 * * *" {
		t.Fatalf("cron given to a one-off: %+v, %v; want recurring without run_at", sc, err)
	}
	if _, err := f.a.Update(ctx, f.user, sc.ID, Input{Type: ptr(Once)}); err == nil || !strings.Contains(err.Error(), "run_at") {
		t.Errorf("type once without run_at: %v", err)
	}
}

// TestListHasLastStatus: the list of schedules says how each one's latest
// firing went, a firing run by hand included, as one schedule's GET does.
func TestListHasLastStatus(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	ran, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Ran"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Never"), Prompt: str("Go"), Cron: str("0 8 * * *")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.RunNow(ctx, f.user, ran.ID); err != nil {
		t.Fatal(err)
	}
	f.waitFinished(t, ran.ID, 1)
	list, err := f.a.List(ctx, f.user)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sc := range list {
		got[sc.Name] = sc.LastStatus
	}
	if want := map[string]string{"Ran": string(FiringSucceeded), "Never": ""}; got["Ran"] != want["Ran"] || got["Never"] != want["Never"] || len(got) != 2 {
		t.Errorf("last statuses %v, want %v", got, want)
	}
}

// TestRunNowAnswersTheQueuedFiring: the firing RunNow returns is the caller's
// own, as queued; the firing that runs is another, so that reading the one
// returned (an HTTP answer) never races with the run.
func TestRunNowAnswersTheQueuedFiring(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Now"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.a.RunNow(ctx, f.user, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.waitFinished(t, sc.ID, 1)
	if got.Status != FiringQueued || got.RunID != "" || got.FinishedAt != nil {
		t.Errorf("RunNow's firing changed after it returned: %+v", got)
	}
	if got.Prompt != "Go" {
		t.Errorf("RunNow's firing has the prompt %q, want the schedule's, as it is sent", got.Prompt)
	}
}

// An admin who runs another user's schedule by hand gets the firing's prompt
// as it is sent: the run is the owner's, and so are its placeholders.
func TestRunNowByAnAdminHasTheOwnersPrompt(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	admin, err := auth.NewService(f.a.Store.(*store.DB), nil).CreateUser(ctx, auth.NewUser{Email: "root@example.com", DisplayName: "Root", Role: auth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Now"), Prompt: str("Hello {{current_user}}"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.a.RunNow(ctx, admin, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	fs := f.waitFinished(t, sc.ID, 1)
	if got.Prompt != "Hello Ann" || fs[0].Prompt != "Hello Ann" {
		t.Errorf("RunNow answered the prompt %q and sent %q, want %q", got.Prompt, fs[0].Prompt, "Hello Ann")
	}
}

// A disabled user's schedules run nothing: their keys and sessions stopped,
// and so do the runs made in their name (docs/api.md "Users"). Enabled
// again, the user's schedule fires as before.
func TestDisabledUsersScheduleRunsNothing(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	users := auth.NewService(f.a.Store.(*store.DB), nil)
	if _, err := users.SetDisabled(ctx, f.user.ID, true); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 5, 1, 7, 0, 5, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	fs := f.waitFinished(t, sc.ID, 1)
	if fs[0].Status != FiringFailed || fs[0].RunID != "" || !strings.Contains(fs[0].Error, "disabled") {
		t.Errorf("the firing of a disabled user's schedule: %+v", fs[0])
	}
	if n := len(f.model.Requests()); n != 0 {
		t.Errorf("the model was asked %d times for a disabled user", n)
	}
	if _, err := users.SetDisabled(ctx, f.user.ID, false); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 5, 2, 7, 0, 5, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	fs = f.waitFinished(t, sc.ID, 2)
	if fs[0].Status != FiringSucceeded {
		t.Errorf("the firing once the user is enabled again: %+v", fs[0])
	}
}

// An admin who changes another user's schedule may give it only an agent
// its owner may use: the schedule runs as its owner (docs/api.md
// "Schedules"), and would otherwise fail and pause at its next firing.
func TestAdminEditChecksTheOwnersAgent(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	admin, err := auth.NewService(f.a.Store.(*store.DB), nil).CreateUser(ctx, auth.NewUser{Email: "root@example.com", DisplayName: "Root", Role: auth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	agents := f.a.Agents.(*agent.Service)
	if _, err := agents.Create(ctx, admin, "private", agent.Spec{Name: "Private", Provider: "openAI", Model: "m", Instructions: "Mine."}); err != nil {
		t.Fatal(err)
	}
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.a.Update(ctx, admin, sc.ID, Input{AgentID: str("private")})
	if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "the schedule's owner may use") {
		t.Errorf("an admin giving Ann's schedule an agent Ann may not use: %v, want agent_id refused", err)
	}
	if got, err := f.a.Update(ctx, admin, sc.ID, Input{Name: str("Renamed")}); err != nil || got.AgentID != "digest" {
		t.Errorf("an admin renaming Ann's schedule: %+v, %v", got, err)
	}

	// agent_name is there while the owner may use the agent, whoever looks.
	paused, err := f.a.Update(ctx, f.user, sc.ID, Input{Enabled: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	paused.AgentID = "private" // as if Ann's schedule named an agent she may not use
	if err := f.a.Store.UpdateSchedule(ctx, paused); err != nil {
		t.Fatal(err)
	}
	for _, who := range []*auth.User{f.user, admin} {
		if got, err := f.a.Get(ctx, who, sc.ID); err != nil || got.AgentName != "" {
			t.Errorf("as %s: agent_name %q, %v; want none, as Ann may not use the agent", who.DisplayName, got.AgentName, err)
		}
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	past := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	for name, in := range map[string]Input{
		"bad cron":       {AgentID: str("digest"), Name: str("x"), Prompt: str("p"), Cron: str("0 25 * * *")},
		"bad timezone":   {AgentID: str("digest"), Name: str("x"), Prompt: str("p"), Cron: str("0 7 * * *"), Timezone: str("Mars/Base")},
		"Go's Local":     {AgentID: str("digest"), Name: str("x"), Prompt: str("p"), Cron: str("0 7 * * *"), Timezone: str("Local")},
		"run_at in past": {AgentID: str("digest"), Name: str("x"), Prompt: str("p"), RunAt: &past},
		"unknown agent":  {AgentID: str("nope"), Name: str("x"), Prompt: str("p"), Cron: str("0 7 * * *")},
		"no prompt":      {AgentID: str("digest"), Name: str("x"), Cron: str("0 7 * * *")},
	} {
		if _, err := f.a.Create(ctx, f.user, in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Each scheduled firing tells Lag how late its run started; a firing asked
// for with RunNow is not scheduled and tells nothing.
func TestLag(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 3, 10, 6, 0, 0, 0, time.UTC))
	var (
		mu   sync.Mutex
		lags []time.Duration
	)
	f.a.Lag = func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		lags = append(lags, d)
	}
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Digest"), Prompt: str("Digest"),
		Cron: str("0 7 * * *"), Timezone: str("UTC")})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 3, 10, 7, 0, 5, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.waitFinished(t, sc.ID, 1)
	if _, err := f.a.RunNow(ctx, f.user, sc.ID); err != nil {
		t.Fatal(err)
	}
	f.waitFinished(t, sc.ID, 2)
	mu.Lock()
	defer mu.Unlock()
	if len(lags) != 1 || lags[0] != 5*time.Second {
		t.Errorf("lags %v, want one of 5s", lags)
	}
}

// afterOutage makes a schedule with cron at 09:30 and has its scheduler,
// with that grace window, come back at `back`, ticking as Run does while a
// schedule is due; it returns the two firings recorded.
func afterOutage(t *testing.T, cron string, grace time.Duration, back time.Time) (*fixture, *Schedule, []*Firing) {
	t.Helper()
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC))
	f.a.Opts.Grace = grace
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Often"), Prompt: str("Go"), Cron: str(cron)})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(back)
	for range 3 { // as Run ticks again at once while a schedule is due
		if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return f, sc, f.waitFinished(t, sc.ID, 2)
}

// After an outage longer than the grace window, the firing missed first is
// recorded as skipped, naming the others missed by more than the window, and
// the latest one still within it runs, once.
func TestSeveralMissed(t *testing.T) {
	ctx := context.Background()
	// Down from 09:30 to 12:45: 10:00 and 11:00 are missed by more than an
	// hour, 12:00 by 45 minutes.
	f, sc, fs := afterOutage(t, "0 * * * *", time.Hour, time.Date(2026, 5, 1, 12, 45, 0, 0, time.UTC))
	byTime := map[time.Time]*Firing{}
	for _, x := range fs {
		byTime[x.FireAt] = x
	}
	skipped, ran := byTime[time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)], byTime[time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)]
	if skipped == nil || skipped.Status != FiringSkipped || !strings.Contains(skipped.Error, "so were the 1 firings after it, up to 2026-05-01T12:00:00Z") {
		t.Errorf("the 10:00 firing: %+v", skipped)
	}
	if ran == nil || ran.Status != FiringSucceeded {
		t.Errorf("the 12:00 firing, 45 minutes late: %+v", ran)
	}
	got, _ := f.a.Get(ctx, f.user, sc.ID)
	if want := time.Date(2026, 5, 1, 13, 0, 0, 0, time.UTC); !got.NextRunAt.Equal(want) {
		t.Errorf("next run %v, want %v", got.NextRunAt, want)
	}
}

// After an outage shorter than the grace window that missed several
// firings, the latest runs, once, and the earlier ones are recorded: the
// first as skipped, naming the one that runs and how many more were missed.
func TestSeveralMissedWithinTheGrace(t *testing.T) {
	ctx := context.Background()
	// Down from 09:30 to 10:20: 09:45, 10:00 and 10:15 are missed, all within the window.
	f, sc, fs := afterOutage(t, "*/15 * * * *", 2*time.Hour, time.Date(2026, 5, 1, 10, 20, 0, 0, time.UTC))
	var got []string
	for _, x := range fs {
		got = append(got, x.FireAt.Format("15:04")+" "+string(x.Status))
	}
	slices.Sort(got)
	if want := []string{"09:45 skipped", "10:15 succeeded"}; !slices.Equal(got, want) {
		t.Errorf("firings %q, want %q", got, want)
	}
	for _, x := range fs {
		if x.Status == FiringSkipped && !strings.Contains(x.Error, "missed by 35m0s; the latest firing due since, at 2026-05-01T10:15:00Z, runs in its place, and so were the 1 firings between them missed") {
			t.Errorf("the skipped firing says %q", x.Error)
		}
	}
	got2, _ := f.a.Get(ctx, f.user, sc.ID)
	if want := time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC); !got2.NextRunAt.Equal(want) {
		t.Errorf("next run %v, want %v", got2.NextRunAt, want)
	}
}

// An edit made on a clock a little behind that of the process which claimed
// the firing does not point the schedule back at that firing: the schedule
// goes on firing every day, once.
func TestEditRightAfterAClaimElsewhere(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	f.b.Now = func() time.Time { return f.clock.Now().Add(2 * time.Second) }
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 5, 1, 6, 59, 58, 0, time.UTC))
	if err := f.b.Tick(ctx, f.b.Now()); err != nil { // b's clock reads 07:00:00
		t.Fatal(err)
	}
	f.waitFinished(t, sc.ID, 1)
	f.clock.Set(time.Date(2026, 5, 1, 6, 59, 59, 0, time.UTC))
	edited, err := f.a.Update(ctx, f.user, sc.ID, Input{Name: str("Renamed")})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC); !edited.NextRunAt.Equal(want) {
		t.Errorf("next run after the edit %v, want %v", edited.NextRunAt, want)
	}
	for day := 2; day <= 4; day++ {
		f.clock.Set(time.Date(2026, 5, day, 7, 0, 1, 0, time.UTC))
		for _, s := range []*Service{f.a, f.b} {
			if err := s.Tick(ctx, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		f.waitFinished(t, sc.ID, day)
	}
}

// The minimum interval holds on every night of the year ahead, whenever the
// schedule is made: 01:00 and 03:00 in Amsterdam are one real hour apart on
// the night clocks go forward, in March, and a schedule made in January that
// fires then is refused too.
func TestMinIntervalAcrossDaylightSaving(t *testing.T) {
	ctx := context.Background()
	for _, made := range []time.Time{time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)} {
		f := setup(t, made)
		f.a.Opts.MinInterval = 2 * time.Hour
		_, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Night"), Prompt: str("Go"),
			Cron: str("0 1,3 * * *"), Timezone: str("Europe/Amsterdam")})
		if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "fires every 1h0m0s") {
			t.Errorf("made on %s: %v, want the minimum interval refused", made.Format(time.DateOnly), err)
		}
		if _, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Night"), Prompt: str("Go"),
			Cron: str("0 1,4 * * *"), Timezone: str("Europe/Amsterdam")}); err != nil {
			t.Errorf("made on %s, firing 01:00 and 04:00: %v", made.Format(time.DateOnly), err)
		}
		// Many firings a day: 01:50 and 03:10 are ten minutes apart that night.
		f.a.Opts.MinInterval = 15 * time.Minute
		_, err = f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Often"), Prompt: str("Go"),
			Cron: str("10,30,50 * * * *"), Timezone: str("Europe/Amsterdam")})
		if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "fires every 10m0s") {
			t.Errorf("made on %s, firing three times an hour: %v, want the minimum interval refused", made.Format(time.DateOnly), err)
		}
	}
}

// A firing missed by the grace window exactly is still within it, and runs.
func TestMissedByTheGraceExactly(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Two-hourly"), Prompt: str("Go"), Cron: str("0 */2 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 5, 1, 13, 0, 0, 0, time.UTC)) // 12:00 was an hour ago
	for range 2 {
		if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fs := f.waitFinished(t, sc.ID, 2)
	var got []string
	for _, x := range fs {
		got = append(got, x.FireAt.Format("15:04")+" "+string(x.Status))
	}
	slices.Sort(got)
	if want := []string{"10:00 skipped", "12:00 succeeded"}; !slices.Equal(got, want) {
		t.Errorf("firings %q, want %q", got, want)
	}
}

// lookMisses is a store whose look for a schedule's running firing comes too
// early to see one: that of a process which looked just before another
// queued a firing.
type lookMisses struct{ Store }

func (lookMisses) RunningFiring(context.Context, string) (*Firing, error) { return nil, nil }

// Of many "run now" asked at once on two processes, one firing runs and the
// others are refused as running already. A firing due while it runs is
// recorded as skipped, even by a process that looked before it was queued.
func TestRunNowOnceAtATime(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	release := make(chan struct{})
	done := sync.OnceFunc(func() { close(release) })
	t.Cleanup(done)
	slow := llmtest.Func(func(*llm.Request) llmtest.Turn { <-release; return llmtest.Turn{Text: []string{"Done."}} })
	f.runs.Models = func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
		return slow, mcp.FamilyOpenAI, nil
	}
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, 12)
	)
	for i := range errs {
		s := []*Service{f.a, f.b}[i%2]
		wg.Go(func() {
			<-start
			_, errs[i] = s.RunNow(ctx, f.user, sc.ID)
		})
	}
	close(start)
	wg.Wait()
	ran := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ran++
		case !fault.Is(err, fault.Conflict) || !strings.Contains(err.Error(), "is running already"):
			t.Errorf("RunNow: %v, want a conflict: running already", err)
		}
	}
	if ran != 1 {
		t.Fatalf("%d of %d RunNow at once were queued, want 1", ran, len(errs))
	}

	f.clock.Set(time.Date(2026, 5, 1, 7, 0, 5, 0, time.UTC))
	f.b.Store = lookMisses{f.b.Store}
	if err := f.b.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	done()
	fs := f.waitFinished(t, sc.ID, 2)
	due, byHand := fs[0], fs[1]
	if due.Status != FiringSkipped || !strings.Contains(due.Error, "the previous firing ("+byHand.ID+") was still running") {
		t.Errorf("the firing due while one ran by hand: %+v", due)
	}
	if byHand.Status != FiringSucceeded || !byHand.FireAt.Equal(time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("the firing run by hand: %+v", byHand)
	}
	got, err := f.a.Get(ctx, f.user, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC); !got.NextRunAt.Equal(want) {
		t.Errorf("next run %v, want %v", got.NextRunAt, want)
	}
}

// An edit that leaves the timing as it was leaves the next firing where it is:
// a firing due and not yet claimed (its process stalled) still runs after a
// rename, a form sending every field unchanged included. An edit of the timing
// computes the next firing anew, from now.
func TestEditKeepsTheDueFiring(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 5, 1, 7, 0, 0, 0, time.UTC)
	f.clock.Set(due.Add(5 * time.Second))
	yes := true
	for name, in := range map[string]Input{
		"a new name":            {Name: str("x")},
		"every field unchanged": {Name: str("x"), Cron: str("0 7 * * *"), Timezone: str("UTC"), Enabled: &yes},
		"a new prompt":          {Prompt: str("Go on")},
	} {
		got, err := f.b.Update(ctx, f.user, sc.ID, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.NextRunAt == nil || !got.NextRunAt.Equal(due) {
			t.Errorf("%s: next run %v, want %v still", name, got.NextRunAt, due)
		}
	}
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	fs := f.waitFinished(t, sc.ID, 1)
	if fs[0].Status != FiringSucceeded || !fs[0].FireAt.Equal(due) {
		t.Errorf("the firing due at the edit: %+v", fs[0])
	}

	f.clock.Set(time.Date(2026, 5, 2, 7, 0, 5, 0, time.UTC)) // the next one due, not yet claimed
	for _, tc := range []struct {
		name string
		in   Input
		want time.Time
	}{
		{"a new time zone", Input{Timezone: str("Europe/Amsterdam")}, time.Date(2026, 5, 3, 5, 0, 0, 0, time.UTC)},
		{"a new cron", Input{Cron: str("30 8 * * *")}, time.Date(2026, 5, 3, 6, 30, 0, 0, time.UTC)}, // 08:30 in Amsterdam, passed today
		{"paused", Input{Enabled: new(bool)}, time.Time{}},
		{"resumed", Input{Enabled: &yes}, time.Date(2026, 5, 3, 6, 30, 0, 0, time.UTC)},
	} {
		got, err := f.b.Update(ctx, f.user, sc.ID, tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (got.NextRunAt == nil) != tc.want.IsZero() || (got.NextRunAt != nil && !got.NextRunAt.Equal(tc.want)) {
			t.Errorf("%s: next run %v, want %v", tc.name, got.NextRunAt, tc.want)
		}
	}
}

// A one-off schedule due and not yet claimed may be renamed, and still fires.
func TestEditKeepsTheDueOneOff(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	at := time.Date(2026, 5, 1, 7, 0, 0, 0, time.UTC)
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Once"), Prompt: str("Go"), RunAt: &at})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(at.Add(5 * time.Second))
	got, err := f.b.Update(ctx, f.user, sc.ID, Input{Name: str("x"), RunAt: &at})
	if err != nil {
		t.Fatal(err)
	}
	if got.NextRunAt == nil || !got.NextRunAt.Equal(at) || !got.Enabled {
		t.Errorf("after the rename: next run %v, enabled %v; want %v, true", got.NextRunAt, got.Enabled, at)
	}
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if fs := f.waitFinished(t, sc.ID, 1); fs[0].Status != FiringSucceeded || !fs[0].FireAt.Equal(at) {
		t.Errorf("the one-off firing: %+v", fs[0])
	}
}

// A scheduler told to close claims nothing more: a firing that comes due is
// left for others, and run-now is refused as unavailable. Its Run, stopped,
// returns once the firing it ran has recorded its end, the run's.
func TestCloseStopsClaimingAndWaitsForFirings(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	release := make(chan struct{})
	slow := llmtest.Func(func(*llm.Request) llmtest.Turn { <-release; return llmtest.Turn{Text: []string{"Done."}} })
	f.runs.Models = func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
		return slow, mcp.FamilyOpenAI, nil
	}
	running, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Running"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	due, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Due"), Prompt: str("Go"), Cron: str("5 6 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.RunNow(ctx, f.user, running.ID); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	f.a.Log = slog.New(&onMessage{msg: "waiting for the firings this process runs to record their end", seen: sync.OnceFunc(func() { close(waiting) })})
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	var atReturn []*Firing // the running schedule's firings when Run returned
	go func() {
		err := f.a.Run(runCtx)
		atReturn, _ = f.a.Store.ListFirings(ctx, running.ID, 10)
		stopped <- err
	}()

	f.a.Close()
	f.clock.Set(time.Date(2026, 5, 1, 6, 5, 1, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if fs, err := f.a.Store.ListFirings(ctx, due.ID, 10); err != nil || len(fs) != 0 {
		t.Errorf("a closed scheduler claimed %d firings (%v); want none", len(fs), err)
	}
	if _, err := f.a.RunNow(ctx, f.user, due.ID); !fault.Is(err, fault.Unavailable) {
		t.Errorf("RunNow on a closed scheduler: %v; want unavailable", err)
	}
	if err := f.b.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the other process claiming the due firing", func() bool {
		fs, err := f.b.Store.ListFirings(ctx, due.ID, 10)
		return err == nil && len(fs) == 1 && fs[0].ClaimedBy == "b"
	})

	stop()
	// Run, stopped, waits for the firing: the model answers then.
	select {
	case <-waiting:
	case err := <-stopped:
		t.Fatalf("Run returned (%v) with its firing still running", err)
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if len(atReturn) != 1 || atReturn[0].Status != FiringSucceeded {
		t.Errorf("the firings run by the closed scheduler, when its Run returned: %+v; want one, recorded succeeded", atReturn)
	}
}

// onMessage is a log handler that calls seen when a record with msg is logged.
type onMessage struct {
	msg  string
	seen func()
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.seen()
	}
	return nil
}
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *onMessage) WithGroup(string) slog.Handler      { return h }

// A schedule whose agent is gone fails its firing once, saying so, and is
// paused rather than failing at every firing after.
func TestScheduleOfADeletedAgentIsPaused(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Every minute"), Prompt: str("Go"), Cron: str("* * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.a.Agents.(interface {
		Delete(context.Context, *auth.User, string) error
	}).Delete(ctx, f.user, "digest"); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 5, 1, 6, 1, 0, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	fs := f.waitFinished(t, sc.ID, 1)
	if fs[0].Status != FiringFailed || !strings.Contains(fs[0].Error, `"digest"`) || !strings.Contains(fs[0].Error, "the schedule is paused") {
		t.Errorf("the firing of a schedule whose agent is gone: %s %q; want failed, naming the agent and saying the schedule is paused", fs[0].Status, fs[0].Error)
	}
	got, err := f.a.Get(ctx, f.user, sc.ID)
	if err != nil || got.Enabled || got.NextRunAt != nil {
		t.Errorf("the schedule after: %+v, %v; want it paused", got, err)
	}
	f.clock.Set(time.Date(2026, 5, 1, 6, 2, 0, 0, time.UTC))
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if fs, _ := f.a.Store.ListFirings(ctx, sc.ID, 10); len(fs) != 1 {
		t.Errorf("%d firings after the pause, want the one", len(fs))
	}
}

// After an outage of days, a daily schedule has no firing within the grace
// window: the firing missed first is recorded as skipped, saying how many more
// were missed (docs/config.md, scheduler.grace), and the next one is the next
// day's.
func TestMissedForDays(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("Go"), Cron: str("0 7 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	// Down from 06:00 on 1 May to 10:00 on 4 May: 07:00 on the 1st, 2nd, 3rd
	// and 4th are missed, all by more than the hour of grace.
	f.clock.Set(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	for range 3 {
		if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fs := f.waitFinished(t, sc.ID, 1)
	if fs[0].Status != FiringSkipped || !strings.Contains(fs[0].Error, "so were the 3 firings after it, the last at 2026-05-04T07:00:00Z") {
		t.Errorf("the firing missed first: %+v", fs[0])
	}
	got, _ := f.a.Get(ctx, f.user, sc.ID)
	if want := time.Date(2026, 5, 5, 7, 0, 0, 0, time.UTC); !got.NextRunAt.Equal(want) {
		t.Errorf("next run %v, want %v", got.NextRunAt, want)
	}
}

// racingStore is the real store, with another request of the same user
// storing a schedule right after each count of the user's schedules: the
// moment two requests at once both find room under the quota.
type racingStore struct {
	Store
	other func(ctx context.Context) error
}

func (s racingStore) CountSchedules(ctx context.Context, userID string) (int, error) {
	n, err := s.Store.CountSchedules(ctx, userID)
	if err == nil {
		err = s.other(ctx)
	}
	return n, err
}

// Two requests at once cannot pass the quota of schedules together: the one
// stored second is refused as any request over it is, and nothing more is
// stored.
func TestScheduleQuotaHoldsForRequestsAtOnce(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 3, 10, 17, 0, 0, 0, time.UTC))
	in := Input{AgentID: str("digest"), Name: str("Morning digest"), Prompt: str("Digest"), Cron: str("0 7 * * *")}
	if _, err := f.a.Create(ctx, f.user, in); err != nil {
		t.Fatal(err)
	}
	s := &Service{Agents: f.a.Agents, Users: f.a.Users, Runner: f.a.Runner, Now: f.a.Now, Process: "a", Log: f.a.Log,
		Opts: Options{MaxPerUser: 2},
		Store: racingStore{Store: f.a.Store, other: func(ctx context.Context) error {
			_, err := f.b.Create(ctx, f.user, in) // the other request
			return err
		}}}
	_, err := s.Create(ctx, f.user, in)
	if fault.KindOf(err) != fault.QuotaExceeded || !strings.Contains(err.Error(), "quota exceeded: schedules (2)") {
		t.Errorf("the request stored second: %v; want the quota's refusal", err)
	}
	if n, err := f.a.Store.CountSchedules(ctx, f.user.ID); err != nil || n != 2 {
		t.Errorf("%d schedules stored (%v); want 2", n, err)
	}
}
