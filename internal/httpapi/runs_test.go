package httpapi_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
)

var runIDPattern = regexp.MustCompile(`"run_id":"(run_[^"]+)"`)

// chatRun sends a message as who, waits until its run is stored and returns
// its id.
func (w *world) chatRun(t *testing.T, who, agentID, text string) string {
	t.Helper()
	code, body := w.chat(t, who, agentID, text)
	m := runIDPattern.FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("chat as %s: %d %s", who, code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.runs.Wait(ctx, m[1]); err != nil {
		t.Fatal(err)
	}
	return m[1]
}

type runPage struct {
	Data []struct {
		ID, Status, Text string
		AgentID          string `json:"agent_id"`
		ScheduleID       string `json:"schedule_id"`
		UserID           string `json:"user_id"`
		ConversationID   string `json:"conversation_id"`
		Usage            struct {
			TotalTokens int `json:"total_tokens"`
		}
		CreatedAt  time.Time  `json:"created_at"`
		StartedAt  *time.Time `json:"started_at"`
		FinishedAt *time.Time `json:"finished_at"`
	}
	NextCursor string `json:"next_cursor"`
}

// GET /api/runs lists the caller's runs, newest first, paged; users never
// see each other's; an admin chooses whose with user=.
func TestRunsList(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	w.agentAs(t, "ann", "helper", agent.Spec{Name: "Helper", Shared: true})
	var anns []string
	for _, text := range []string{"first question", "second question", "the third question is a long one with many more words than a title keeps"} {
		anns = append(anns, w.chatRun(t, "ann", "helper", text))
	}
	bobs := w.chatRun(t, "bob", "helper", "bob asks")

	var all []string
	cursor := ""
	for page := 0; ; page++ {
		var p runPage
		if code, body := w.do(t, "ann", "GET", "/api/runs?limit=2&cursor="+cursor, nil, &p); code != 200 {
			t.Fatalf("page %d: %d %s", page, code, body)
		}
		if len(p.Data) > 2 {
			t.Fatalf("page %d has %d runs", page, len(p.Data))
		}
		for _, r := range p.Data {
			all = append(all, r.ID)
			if r.UserID != w.users["ann"].ID || r.AgentID != "helper" || r.Status != "succeeded" || r.ConversationID == "" ||
				r.StartedAt == nil || r.FinishedAt == nil || r.Usage.TotalTokens == 0 {
				t.Errorf("run item %+v", r)
			}
		}
		if page == 0 {
			if p.Data[0].Text != "the third question is a long one with…" || p.Data[1].Text != "second question" {
				t.Errorf("texts: %q, %q", p.Data[0].Text, p.Data[1].Text)
			}
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if want := []string{anns[2], anns[1], anns[0]}; !slices.Equal(all, want) {
		t.Errorf("ann's runs %v, want %v (newest first)", all, want)
	}

	ids := func(who, query string) []string {
		var p runPage
		if code, body := w.do(t, who, "GET", "/api/runs"+query, nil, &p); code != 200 {
			t.Fatalf("%s GET /api/runs%s: %d %s", who, query, code, body)
		}
		var out []string
		for _, r := range p.Data {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids("bob", ""); !slices.Equal(got, []string{bobs}) {
		t.Errorf("bob's runs: %v", got)
	}
	if got := ids("bob", "?user=bob@example.com"); !slices.Equal(got, []string{bobs}) {
		t.Errorf("bob naming himself: %v", got)
	}
	if got := ids("admin", ""); len(got) != 0 {
		t.Errorf("the admin's own runs: %v", got)
	}
	if got := ids("admin", "?user=all"); len(got) != 4 {
		t.Errorf("everyone's runs: %v", got)
	}
	if got := ids("admin", "?user=ann@example.com&limit=1"); !slices.Equal(got, anns[2:]) {
		t.Errorf("ann's newest run as the admin sees it: %v", got)
	}
	if got := ids("ann", "?status=failed"); len(got) != 0 {
		t.Errorf("ann's failed runs: %v", got)
	}
	if got := ids("ann", "?agent_id=other"); len(got) != 0 {
		t.Errorf("ann's runs of another agent: %v", got)
	}
	for _, q := range []string{"?user=all", "?user=" + w.users["ann"].ID} {
		if code, body := w.do(t, "bob", "GET", "/api/runs"+q, nil, nil); code != 403 || !strings.Contains(body, "user") {
			t.Errorf("bob asking for %s: %d %s", q, code, body)
		}
	}
	for _, q := range []string{"?status=done", "?cursor=xyz", "?limit=0"} {
		if code, body := w.do(t, "ann", "GET", "/api/runs"+q, nil, nil); code != 400 {
			t.Errorf("GET /api/runs%s: %d %s", q, code, body)
		}
	}
	if code, _ := w.do(t, "admin", "GET", "/api/runs?user=nobody@example.com", nil, nil); code != 404 {
		t.Errorf("an unknown user: %d", code)
	}
}

// A run's trace has each model request's body, send and finish times and
// usage, and the agents of the run with their names.
func TestRunTrace(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	w.agentAs(t, "ann", "helper", agent.Spec{Name: "Helper"})
	id := w.chatRun(t, "ann", "helper", "hello")
	var d struct {
		Requests []struct {
			AgentID    string          `json:"agent_id"`
			Body       json.RawMessage `json:"body"`
			SentAt     time.Time       `json:"sent_at"`
			FinishedAt *time.Time      `json:"finished_at"`
			Usage      struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		ToolCalls []any `json:"tool_calls"`
		Agents    []struct{ ID, Name string }
	}
	if code, body := w.do(t, "ann", "GET", "/api/runs/"+id, nil, &d); code != 200 {
		t.Fatalf("GET the run: %d %s", code, body)
	}
	if len(d.Requests) != 1 {
		t.Fatalf("requests: %+v", d.Requests)
	}
	r := d.Requests[0]
	if r.AgentID != "helper" || !strings.Contains(string(r.Body), `"hello"`) || r.FinishedAt == nil || r.FinishedAt.Before(r.SentAt) || r.Usage.TotalTokens == 0 {
		t.Errorf("request: %+v", r)
	}
	if len(d.Agents) != 1 || d.Agents[0].ID != "helper" || d.Agents[0].Name != "Helper" {
		t.Errorf("agents: %+v", d.Agents)
	}
	if code, _ := w.do(t, "bob", "GET", "/api/runs/"+id, nil, nil); code != 404 {
		t.Errorf("bob reading ann's run: %d", code)
	}
}

// ?run_id= exports just those runs, in the order given; another user's run
// or an unknown one is a 404 for a user (an admin may name any); run_id
// does not combine with the other filters.
func TestRagasSelection(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	w.agentAs(t, "ann", "helper", agent.Spec{Name: "Helper", Shared: true})
	a := w.chatRun(t, "ann", "helper", "question A")
	w.chatRun(t, "ann", "helper", "question B")
	c := w.chatRun(t, "ann", "helper", "question C")
	bobs := w.chatRun(t, "bob", "helper", "bob's question")

	inputs := func(who, query string) (int, []string) {
		code, body := w.do(t, who, "GET", "/api/export/ragas?"+query, nil, nil)
		if code != 200 {
			return code, nil
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			var s struct {
				UserInput string `json:"user_input"`
			}
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			out = append(out, s.UserInput)
		}
		return code, out
	}
	if code, got := inputs("ann", "run_id="+c+"&run_id="+a+"&run_id="+c); code != 200 || !slices.Equal(got, []string{"question C", "question A"}) {
		t.Errorf("ann's selection: %d %v", code, got)
	}
	if code, got := inputs("ann", ""); code != 200 || len(got) != 3 {
		t.Errorf("ann's whole export: %d %v", code, got)
	}
	if code, got := inputs("admin", "run_id="+bobs+"&run_id="+a); code != 200 || !slices.Equal(got, []string{"bob's question", "question A"}) {
		t.Errorf("the admin's selection: %d %v", code, got)
	}
	for _, q := range []string{"run_id=" + a + "&run_id=" + bobs, "run_id=run_unknown"} {
		if code, body := w.do(t, "ann", "GET", "/api/export/ragas?"+q, nil, nil); code != 404 || !strings.Contains(body, "not_found") {
			t.Errorf("ann exporting %s: %d %s", q, code, body)
		}
	}
	if code, body := w.do(t, "ann", "GET", "/api/export/ragas?run_id="+a+"&agent=helper", nil, nil); code != 400 || !strings.Contains(body, `"agent"`) {
		t.Errorf("run_id with agent: %d %s", code, body)
	}
	// multi_turn is true or false; anything else is refused, never read as
	// false.
	if code, body := w.do(t, "ann", "GET", "/api/export/ragas?multi_turn=true&run_id="+a, nil, nil); code != 200 || !strings.Contains(body, `"user_input":[`) {
		t.Errorf("multi_turn=true: %d %s; want a multi-turn sample", code, body)
	}
	for _, v := range []string{"1", "yes"} {
		if code, body := w.do(t, "ann", "GET", "/api/export/ragas?multi_turn="+v, nil, nil); code != 400 || !strings.Contains(body, `"multi_turn"`) {
			t.Errorf("multi_turn=%s: %d %s; want 400 naming multi_turn", v, code, body)
		}
	}
}
