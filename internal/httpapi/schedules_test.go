package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/schedule"
)

// The preview gives the times the scheduler would fire at, in the schedule's
// time zone: across Europe/Amsterdam's spring-forward night a skipped 02:30
// fires once at 03:00, and a repeated one in autumn fires once.
func TestSchedulePreview(t *testing.T) {
	w := setupWorld(t, "ann")
	times := func(query string) (int, []string, string) {
		var out struct{ Times []string }
		code, body := w.do(t, "ann", "GET", "/api/schedules/preview?"+query, nil, &out)
		return code, out.Times, body
	}
	for _, tc := range []struct {
		name, now, query string
		want             []string
	}{
		{"spring forward", "2026-03-27T12:00:00Z", "cron=30+2+*+*+*&timezone=Europe/Amsterdam&count=3",
			[]string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"fall back", "2026-10-24T12:00:00Z", "cron=30+2+*+*+*&timezone=Europe/Amsterdam&count=2",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"weekdays across the change", "2026-03-27T12:00:00Z", "cron=0+7+*+*+MON-FRI&timezone=Europe/Amsterdam&count=2",
			[]string{"2026-03-30T07:00:00+02:00", "2026-03-31T07:00:00+02:00"}},
		{"five by default, UTC by default", "2026-03-27T12:00:00Z", "cron=@daily",
			[]string{"2026-03-28T00:00:00Z", "2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z"}},
		{"a one-off", "2026-03-27T12:00:00Z", "run_at=2026-04-01T09:00:00Z&timezone=Europe/Amsterdam",
			[]string{"2026-04-01T11:00:00+02:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.now, _ = time.Parse(time.RFC3339, tc.now)
			code, got, body := times(tc.query)
			if code != 200 || !slices.Equal(got, tc.want) {
				t.Errorf("%d %s\n got %v\nwant %v", code, body, got, tc.want)
			}
		})
	}
	if _, got, _ := times("cron=*+*+*+*+*&count=20"); len(got) != 20 {
		t.Errorf("20 times asked, %d given", len(got))
	}

	w.now = time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ query, field string }{
		{"cron=61+*+*+*+*", "cron"},
		{"cron=0+7+*+*", "cron"},
		{"cron=", "cron"},
		{"cron=0+0+30+2+*", "cron"}, // never fires
		{"cron=@daily&timezone=Mars/Olympus", "timezone"},
		{"cron=@daily&count=21", "count"},
		{"cron=@daily&count=0", "count"},
		{"cron=@daily&count=x", "count"},
		{"run_at=2026-03-01T00:00:00Z", "run_at"},
		{"run_at=tomorrow", "run_at"},
		{"cron=@daily&run_at=2026-04-01T09:00:00Z", "run_at"},
	} {
		code, _, body := times(tc.query)
		var e apiError
		_ = json.Unmarshal([]byte(body), &e)
		if code != 400 || len(e.Error.Fields) == 0 || e.Error.Fields[0].Field != tc.field {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.query, code, body, tc.field)
		}
	}
}

// PATCH enabled pauses a schedule (no next firing) and resumes it (the next
// one from now); a schedule shows its agent's name. A schedule whose agent
// was unshared from its owner can still be paused.
func TestSchedulePauseResume(t *testing.T) {
	w := setupWorld(t, "ann", "vic")
	w.agentAs(t, "ann", "digest", agent.Spec{Name: "Morning digest"})
	w.share(t, "digest", w.userShare("vic", "viewer"))
	type sched struct {
		ID        string
		Enabled   bool
		AgentName string     `json:"agent_name"`
		NextRunAt *time.Time `json:"next_run_at"`
	}
	var sc sched
	if code, body := w.do(t, "vic", "POST", "/api/schedules", `{"agent_id":"digest","name":"daily","prompt":"news?","cron":"0 7 * * *","timezone":"Europe/Amsterdam"}`, &sc); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	if sc.AgentName != "Morning digest" || sc.NextRunAt == nil || !sc.NextRunAt.Equal(time.Date(2026, 3, 21, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("created: %+v", sc)
	}
	sc = sched{ID: sc.ID} // the answers leave out what is unset
	if code, body := w.do(t, "vic", "PATCH", "/api/schedules/"+sc.ID, `{"enabled":false}`, &sc); code != 200 || sc.Enabled || sc.NextRunAt != nil {
		t.Errorf("pause: %d %s", code, body)
	}
	w.now = time.Date(2026, 4, 2, 12, 0, 0, 0, time.UTC)
	if code, body := w.do(t, "vic", "PATCH", "/api/schedules/"+sc.ID, `{"enabled":true}`, &sc); code != 200 || !sc.Enabled || sc.NextRunAt == nil ||
		!sc.NextRunAt.Equal(time.Date(2026, 4, 3, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("resume: %d %s", code, body)
	}
	var list struct{ Data []sched }
	w.do(t, "vic", "GET", "/api/schedules", nil, &list)
	if len(list.Data) != 1 || list.Data[0].AgentName != "Morning digest" {
		t.Errorf("list: %+v", list.Data)
	}

	w.share(t, "digest")
	if code, body := w.do(t, "vic", "PATCH", "/api/schedules/"+sc.ID, `{"enabled":false}`, &sc); code != 200 || sc.Enabled {
		t.Errorf("pausing after the agent was unshared: %d %s", code, body)
	}
	if code, body := w.do(t, "vic", "PATCH", "/api/schedules/"+sc.ID, `{"enabled":true}`, nil); code != 400 || !strings.Contains(body, "agent_id") {
		t.Errorf("resuming after the agent was unshared: %d %s", code, body)
	}
}

// A run_at without its offset, or that is no time at all, is a problem of
// run_at; unknown fields are still refused, and a value of the wrong type is
// named by its field.
func TestScheduleRunAtNamed(t *testing.T) {
	w := setupWorld(t, "ann")
	w.agentAs(t, "ann", "digest", agent.Spec{Name: "Morning digest"})
	for _, tc := range []struct{ body, field, says string }{
		{`{"agent_id":"digest","name":"n","prompt":"p","run_at":"2030-01-01T00:00:00"}`, "run_at", "with its offset"},
		{`{"agent_id":"digest","name":"n","prompt":"p","run_at":"tomorrow"}`, "run_at", "RFC 3339"},
		{`{"agent_id":"digest","name":"n","prompt":"p","run_at":"2030-01-01T00:00:00Z","color":"red"}`, "color", "unknown field"},
		{`{"agent_id":"digest","name":"n","prompt":"p","cron":"0 7 * * *","enabled":"yes"}`, "enabled", "expected boolean"},
	} {
		var got struct {
			Error struct {
				Fields []struct{ Field, Message string }
			}
		}
		code, body := w.do(t, "ann", "POST", "/api/schedules", tc.body, nil)
		_ = json.Unmarshal([]byte(body), &got)
		if code != 400 || len(got.Error.Fields) != 1 || got.Error.Fields[0].Field != tc.field || !strings.Contains(got.Error.Fields[0].Message, tc.says) {
			t.Errorf("%s: %d %s; want 400 naming %s", tc.body, code, body, tc.field)
		}
	}
	// A run_at that is no time is named with every other problem.
	var got struct {
		Error struct {
			Fields []struct{ Field, Message string }
		}
	}
	code, body := w.do(t, "ann", "POST", "/api/schedules", `{"name":"","prompt":"","timezone":"X/Y","cron":"0 7 * * *","run_at":"tomorrow"}`, nil)
	_ = json.Unmarshal([]byte(body), &got)
	var fields []string
	for _, f := range got.Error.Fields {
		fields = append(fields, f.Field)
	}
	slices.Sort(fields)
	if want := []string{"agent_id", "name", "prompt", "run_at", "run_at", "timezone"}; code != 400 || !slices.Equal(fields, want) {
		t.Errorf("a bad run_at among other problems: %d %s; want 400 naming %q", code, body, want)
	}
}

// A schedule's history is paged as the run list is: newest first, next_cursor
// back as cursor for the older firings, none on the last page. Paging reaches
// past the largest page, and a cursor of one schedule shows nothing of
// another's; a bad cursor or limit is a 400.
func TestScheduleRunsPaged(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	w.agentAs(t, "ann", "digest", agent.Spec{Name: "Morning digest"})
	var sc struct{ ID string }
	if code, body := w.do(t, "ann", "POST", "/api/schedules", `{"agent_id":"digest","name":"every minute","prompt":"news?","cron":"* * * * *"}`, &sc); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	// A day and a bit of an every-minute schedule: more than one page of 1000.
	const n = 1500
	start := time.Date(2026, 3, 19, 0, 0, 0, 0, time.UTC)
	for i := range n {
		f := &schedule.Firing{ID: fmt.Sprintf("fire_%04d", i), ScheduleID: sc.ID, FireAt: start.Add(time.Duration(i) * time.Minute),
			Prompt: "news?", Status: schedule.FiringSucceeded}
		if err := w.store.CreateFiring(t.Context(), f); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Data []struct {
			ID     string    `json:"id"`
			FireAt time.Time `json:"fire_at"`
		} `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}
	var got []string
	path := "/api/schedules/" + sc.ID + "/runs?limit=1000"
	for pages := 0; ; pages++ {
		var p page
		if code, body := w.do(t, "ann", "GET", path, nil, &p); code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		for _, f := range p.Data {
			got = append(got, f.ID)
		}
		if p.NextCursor == nil {
			if pages != 1 {
				t.Errorf("%d pages of 1000, want 2", pages+1)
			}
			break
		}
		if pages > 2 || *p.NextCursor == "" {
			t.Fatalf("page %d: next_cursor %v", pages, p.NextCursor)
		}
		path = "/api/schedules/" + sc.ID + "/runs?limit=1000&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if len(got) != n || got[0] != fmt.Sprintf("fire_%04d", n-1) || got[n-1] != "fire_0000" {
		t.Fatalf("paged %d firings from %s to %s, want %d newest first", len(got), got[0], got[len(got)-1], n)
	}
	for i := 1; i < n; i++ {
		if got[i] >= got[i-1] {
			t.Fatalf("firing %d (%s) is not older than %s", i, got[i], got[i-1])
		}
	}

	// Fifty by default, each page starting after the last of the one before.
	var first, second page
	w.do(t, "ann", "GET", "/api/schedules/"+sc.ID+"/runs", nil, &first)
	if len(first.Data) != 50 || first.NextCursor == nil {
		t.Fatalf("first page: %d firings, next_cursor %v; want 50 and a cursor", len(first.Data), first.NextCursor)
	}
	w.do(t, "ann", "GET", "/api/schedules/"+sc.ID+"/runs?cursor="+url.QueryEscape(*first.NextCursor), nil, &second)
	if len(second.Data) != 50 || second.Data[0].ID != fmt.Sprintf("fire_%04d", n-51) {
		t.Errorf("second page starts at %v, want fire_%04d", second.Data[:1], n-51)
	}

	// Another user's schedule stays not found, cursor or not.
	if code, body := w.do(t, "bob", "GET", "/api/schedules/"+sc.ID+"/runs?cursor="+url.QueryEscape(*first.NextCursor), nil, nil); code != 404 {
		t.Errorf("bob pages ann's schedule: %d %s, want 404", code, body)
	}
	for _, q := range []string{"cursor=not-a-cursor", "cursor=%20", "limit=0", "limit=1001", "limit=x"} {
		var e apiError
		code, body := w.do(t, "ann", "GET", "/api/schedules/"+sc.ID+"/runs?"+q, nil, nil)
		_ = json.Unmarshal([]byte(body), &e)
		if code != 400 || e.Error.Code != "invalid" {
			t.Errorf("%s: %d %s, want 400 invalid", q, code, body)
		}
	}
}
