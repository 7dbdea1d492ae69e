package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/run/runtest"
)

type conversationPage struct {
	Data []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// The conversation list is paged as a schedule's history is: most recently
// updated first, next_cursor back as cursor for the older ones, none on the
// last page, so that every conversation is reached, past the largest page.
// q keeps the titles that contain it, paged the same way. A bad cursor or
// limit is a 400; another user's conversations are never listed.
func TestConversationsPaged(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	const n = 1100
	start := time.Date(2026, 3, 19, 0, 0, 0, 0, time.UTC)
	for i := range n {
		title := fmt.Sprintf("Chat %04d", i)
		if i%100 == 7 {
			title = fmt.Sprintf("Morning digest — %04d", i)
		}
		c := &run.Conversation{ID: fmt.Sprintf("conv_%04d", i), UserID: w.users["ann"].ID, AgentID: "helper", Title: title,
			CreatedAt: start, UpdatedAt: start.Add(time.Duration(i) * time.Minute)}
		if err := w.store.CreateConversation(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.CreateConversation(t.Context(), &run.Conversation{ID: "conv_bob", UserID: w.users["bob"].ID, AgentID: "helper",
		Title: "Morning digest — bob", CreatedAt: start, UpdatedAt: start}); err != nil {
		t.Fatal(err)
	}
	all := func(path string) ([]string, int) {
		t.Helper()
		var got []string
		for pages := 1; ; pages++ {
			var p conversationPage
			if code, body := w.do(t, "ann", "GET", path, nil, &p); code != 200 {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			for _, c := range p.Data {
				got = append(got, c.ID)
			}
			if p.NextCursor == nil {
				return got, pages
			}
			if pages > 20 || *p.NextCursor == "" {
				t.Fatalf("page %d: next_cursor %v", pages, p.NextCursor)
			}
			u, _ := url.Parse(path)
			v := u.Query()
			v.Set("cursor", *p.NextCursor)
			path = u.Path + "?" + v.Encode()
		}
	}
	got, pages := all("/api/conversations?limit=1000")
	if pages != 2 || len(got) != n || got[0] != fmt.Sprintf("conv_%04d", n-1) || got[n-1] != "conv_0000" {
		t.Fatalf("%d pages: %d conversations from %s to %s, want 2 pages of %d, most recent first", pages, len(got), got[0], got[len(got)-1], n)
	}
	for i := 1; i < n; i++ {
		if got[i] >= got[i-1] {
			t.Fatalf("conversation %d (%s) is not older than %s", i, got[i], got[i-1])
		}
	}

	// Fifty by default, each page starting after the last of the one before.
	var first, second conversationPage
	w.do(t, "ann", "GET", "/api/conversations", nil, &first)
	if len(first.Data) != 50 || first.NextCursor == nil {
		t.Fatalf("first page: %d conversations, next_cursor %v; want 50 and a cursor", len(first.Data), first.NextCursor)
	}
	w.do(t, "ann", "GET", "/api/conversations?cursor="+url.QueryEscape(*first.NextCursor), nil, &second)
	if len(second.Data) != 50 || second.Data[0].ID != fmt.Sprintf("conv_%04d", n-51) {
		t.Errorf("second page starts at %v, want conv_%04d", second.Data[:1], n-51)
	}

	// The title search covers every conversation, not the first page's.
	got, pages = all("/api/conversations?limit=4&q=" + url.QueryEscape("  morning DIGEST "))
	var want []string
	for i := n - 1; i >= 0; i-- {
		if i%100 == 7 {
			want = append(want, fmt.Sprintf("conv_%04d", i))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || pages != 3 {
		t.Errorf("q=morning digest in pages of 4: %d pages of %v, want 3 of %v", pages, got, want)
	}
	if got, _ := all("/api/conversations?q=%25"); len(got) != 0 {
		t.Errorf("q=%% lists %v, want none: no title holds a %%", got)
	}

	// Bob sees his own only, with ann's cursor too.
	var p conversationPage
	w.do(t, "bob", "GET", "/api/conversations?cursor="+url.QueryEscape(*first.NextCursor), nil, &p)
	if len(p.Data) != 1 || p.Data[0].ID != "conv_bob" || p.NextCursor != nil {
		t.Errorf("bob's list: %+v, want conv_bob alone", p)
	}
	for _, q := range []string{"cursor=not-a-cursor", "cursor=%20", "limit=0", "limit=1001", "limit=x"} {
		var e apiError
		code, body := w.do(t, "ann", "GET", "/api/conversations?"+q, nil, nil)
		_ = json.Unmarshal([]byte(body), &e)
		name, _, _ := strings.Cut(q, "=")
		if code != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, name) {
			t.Errorf("%s: %d %s, want 400 invalid naming %s", q, code, body, name)
		}
	}
}

// stallingModel streams a first piece of the answer to the agent's "stop
// me", then waits for its run to be stopped; it passes the rest to Model.
type stallingModel struct{ llm.Model }

func (m stallingModel) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	if runtest.Asker(req) != "a" || req.Messages[len(req.Messages)-1].Content != "stop me" {
		return m.Model.Stream(ctx, req, emit)
	}
	emit(llm.Event{Kind: llm.EventText, Text: "The first half"})
	<-ctx.Done()
	return &llm.Turn{Text: "The first half"}, context.Cause(ctx)
}

// An answer stopped by its user, or cut by a failure, says how it ended
// (run_status) when its conversation is read again, as its run.finished event
// said it live: a reload must not pass a cut-off answer for a whole one. A
// whole answer and the user's messages say nothing.
func TestConversationAnswersSayHowTheirRunEnded(t *testing.T) {
	rt := runtest.NewTeam(t, map[string]agent.Spec{"a": {}}, func(_ string, req *llm.Request) llmtest.Turn {
		if req.Messages[len(req.Messages)-1].Content == "fail me" {
			return llmtest.Turn{Text: []string{"Half of it"}, Err: errors.New("the provider hung up")}
		}
		return llmtest.Turn{Text: []string{"A whole answer."}}
	})
	scripted := rt.Runs.Models
	rt.Runs.Models = func(ctx context.Context, userID, provider, model string) (llm.Model, mcp.Family, error) {
		m, f, err := scripted(ctx, userID, provider, model)
		return stallingModel{m}, f, err
	}
	tm := serveTeam(t, rt)

	code, out := tm.post(t, "/api/chat", `{"agent_id":"a","text":"answer me"}`)
	conv := regexp.MustCompile(`"conversation_id":"(conv_[^"]+)"`).FindStringSubmatch(out)
	if code != 200 || conv == nil {
		t.Fatalf("chat: %d %s", code, out)
	}
	if code, out := tm.post(t, "/api/chat", `{"agent_id":"a","text":"fail me","conversation_id":"`+conv[1]+`"}`); code != 200 ||
		!strings.Contains(out, `"run_status":"failed"`) {
		t.Errorf("the failed run's stream: %d %s; want its answer in run.finished with run_status failed", code, out)
	}

	// Stopped once the first piece is streamed.
	req, _ := http.NewRequest("POST", tm.srv.URL+"/api/chat", strings.NewReader(`{"agent_id":"a","text":"stop me","conversation_id":"`+conv[1]+`"}`))
	req.Header.Set("Authorization", "Bearer "+tm.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	for {
		line, err := stream.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the first piece: %v", err)
		}
		if strings.HasPrefix(line, "event: message.delta") {
			break
		}
	}
	if code, out := tm.post(t, "/api/runs/"+resp.Header.Get("Relay-Run-Id")+"/abort", ""); code != 200 || !strings.Contains(out, `"status":"cancelled"`) {
		t.Fatalf("abort: %d %s", code, out)
	}
	if rest, _ := io.ReadAll(stream); !strings.Contains(string(rest), `"run_status":"cancelled"`) {
		t.Errorf("the stopped run's stream ends:\n%s\nwant its answer in run.finished with run_status cancelled", rest)
	}

	code, out = tm.post(t, "/api/chat", `{"agent_id":"a","text":"answer me again","conversation_id":"`+conv[1]+`"}`)
	if code != 200 {
		t.Fatalf("chat after the stop: %d %s", code, out)
	}
	code, _, out = tm.send(t, "GET", "/api/conversations/"+conv[1], nil)
	var thread struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &thread); code != 200 || err != nil {
		t.Fatalf("GET the conversation: %d %s (%v)", code, out, err)
	}
	type said struct{ Role, Text, RunStatus string }
	var got []said
	for _, m := range thread.Messages {
		s := said{Role: m["role"].(string), Text: m["text"].(string)}
		if v, ok := m["run_status"]; ok {
			s.RunStatus = fmt.Sprint(v)
		}
		got = append(got, s)
	}
	want := []said{
		{"user", "answer me", ""}, {"assistant", "A whole answer.", ""},
		{"user", "fail me", ""}, {"assistant", "Half of it", "failed"},
		{"user", "stop me", ""}, {"assistant", "The first half", "cancelled"},
		{"user", "answer me again", ""}, {"assistant", "A whole answer.", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the conversation's messages (-want +got):\n%s", d)
	}
}
