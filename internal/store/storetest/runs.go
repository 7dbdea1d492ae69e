package storetest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/turn"
)

// newID returns a fresh id with the given prefix.
func newID(prefix string) string { return prefix + rand.Text()[:16] }

func newConversation(userID string, minute int) *run.Conversation {
	return &run.Conversation{
		ID: newID("conv_"), UserID: userID, AgentID: "agent_helper", Title: "Trip «planning» 🚀",
		CreatedAt: at(minute), UpdatedAt: at(minute + 1),
	}
}

func createConversation(t *testing.T, s store.Store, userID string, minute int) *run.Conversation {
	t.Helper()
	c := newConversation(userID, minute)
	must(t, s.CreateConversation(t.Context(), c), "CreateConversation")
	return c
}

func newMessage(convID, parentID string, role run.Role, text string, minute int) *run.Message {
	return &run.Message{ID: newID("msg_"), ConversationID: convID, ParentID: parentID, Role: role, Text: text, CreatedAt: at(minute)}
}

func addMessage(t *testing.T, s store.Store, m *run.Message) *run.Message {
	t.Helper()
	must(t, s.AddMessage(t.Context(), m), "AddMessage "+m.Text)
	return m
}

func newRun(userID, convID, msgID string, minute int) *run.Run {
	return &run.Run{
		ID: newID("run_"), UserID: userID, AgentID: "agent_helper", ConversationID: convID, UserMessageID: msgID,
		Status: run.StatusQueued, CreatedAt: at(minute),
	}
}

// finishRun marks a run succeeded.
func finishRun(t *testing.T, s store.Store, id string) {
	t.Helper()
	r := getRun(t, s, id)
	end := at(30)
	r.Status, r.FinishedAt = run.StatusSucceeded, &end
	must(t, s.UpdateRun(t.Context(), r), "UpdateRun to succeeded")
}

func createRun(t *testing.T, s store.Store, r *run.Run) *run.Run {
	t.Helper()
	must(t, s.CreateRun(t.Context(), r), "CreateRun")
	return r
}

func getRun(t *testing.T, s store.Store, id string) *run.Run {
	t.Helper()
	r, err := s.GetRun(t.Context(), id)
	must(t, err, "GetRun "+id)
	return r
}

// chat is a user with a conversation holding one user message and a run
// answering it: what most tests of runs start from.
type chat struct {
	user *auth.User
	conv *run.Conversation
	msg  *run.Message
	run  *run.Run
}

func newChat(t *testing.T, s store.Store, email string) chat {
	t.Helper()
	u := createUser(t, s, email)
	c := createConversation(t, s, u.ID, 1)
	m := addMessage(t, s, newMessage(c.ID, "", run.RoleUser, "Hello", 2))
	r := createRun(t, s, newRun(u.ID, c.ID, m.ID, 3))
	return chat{user: u, conv: c, msg: m, run: r}
}

func event(runID string, seq int64, data string) run.Event {
	e := run.Event{RunID: runID, Seq: seq, Type: "message.delta", CreatedAt: at(int(seq % 60))}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

// wantClosed checks that the event log of r, a run failed for a dead process,
// ends with an error event and run.finished saying failed with reason and
// naming its answer, numbered after the events it had.
func wantClosed(t *testing.T, s store.Store, r *run.Run, reason string) {
	t.Helper()
	evs, err := s.ListEvents(t.Context(), r.ID, 0)
	must(t, err, "ListEvents")
	n := len(evs)
	if n < 2 || evs[n-2].Type != run.EventError || evs[n-1].Type != run.EventRunFinished {
		t.Errorf("events of failed run %s end with %v; want error, run.finished", r.ID, evs)
		return
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d of run %s has seq %d", i, r.ID, e.Seq)
		}
	}
	var failed struct {
		Message string
		AgentID string `json:"agent_id"`
	}
	var fin struct {
		Status  run.Status
		Error   string
		Message *run.Message
	}
	if err := json.Unmarshal(evs[n-2].Data, &failed); err != nil || failed.Message != reason || failed.AgentID != r.AgentID {
		t.Errorf("error event of run %s: %s (%v); want the reason and the agent", r.ID, evs[n-2].Data, err)
	}
	if err := json.Unmarshal(evs[n-1].Data, &fin); err != nil || fin.Status != run.StatusFailed || fin.Error != reason ||
		fin.Message == nil || fin.Message.ID != r.ResponseMessageID || r.ResponseMessageID == "" {
		t.Errorf("run.finished of run %s: %s (%v); want failed, the reason and its answer %q", r.ID, evs[n-1].Data, err, r.ResponseMessageID)
	}
}

func appendEvents(t *testing.T, s store.Store, events ...run.Event) []run.Event {
	t.Helper()
	must(t, s.AppendEvents(t.Context(), events), "AppendEvents")
	return events
}

func listEvents(t *testing.T, s store.Store, runID string, after int64) []run.Event {
	t.Helper()
	es, err := s.ListEvents(t.Context(), runID, after)
	must(t, err, fmt.Sprintf("ListEvents(%q, %d)", runID, after))
	if es == nil {
		t.Fatalf("ListEvents returned nil, want a list")
	}
	return es
}

func seqs(es []run.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func messageIDs(ms []*run.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func conversationIDs(cs []*run.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func toolCall(runID, id string, minute int) *run.ToolCall {
	return &run.ToolCall{
		RunID: runID, AgentID: "agent_helper",
		ToolRecord: turn.ToolRecord{
			ID: id, Name: "web_search", Arguments: `{"query":"weather «Utrecht»"}`, Result: "Sunny, 21°C",
			Duration: 1500 * time.Millisecond, Step: 1,
		},
		CreatedAt: at(minute),
	}
}

func listToolCalls(t *testing.T, s store.Store, runID string) []run.ToolCall {
	t.Helper()
	cs, err := s.ListToolCalls(t.Context(), runID)
	must(t, err, "ListToolCalls")
	if cs == nil {
		t.Fatalf("ListToolCalls returned nil, want a list")
	}
	return cs
}

func listModelRequests(t *testing.T, s store.Store, runID string) []run.ModelRequest {
	t.Helper()
	rs, err := s.ListModelRequests(t.Context(), runID)
	must(t, err, "ListModelRequests")
	if rs == nil {
		t.Fatalf("ListModelRequests returned nil, want a list")
	}
	return rs
}

// aboutNow fails t unless ts is in [before, now+1s] and in stored form.
func aboutNow(t *testing.T, what string, ts time.Time, before time.Time) {
	t.Helper()
	wantUTC(t, what, ts)
	if ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("%s = %v, want about now", what, ts)
	}
}

// exactBody is a request body whose bytes JSONB, or any decode and encode, would
// change: key order, duplicate keys, spacing, escapes, number forms, and
// characters that Go's encoder escapes.
const exactBody = "{\"z\":1,  \"a\": \"é «ü» 🚀 <b>&amp;</b> & <\",\n\t\"k\": 1, \"k\": 2, " +
	"\"n\": [1.50, 1E2, -0, 1e-7], \"esc\": \"\\u00e9\\u003c\\/\", \"empty\": {\"y\": [], \"x\": {}}}"

var runTests = []test{
	{"ConversationCreateAndGet", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "conv@example.com")
		c := newConversation(u.ID, 10)
		must(t, s.CreateConversation(t.Context(), c), "CreateConversation")
		if c.CreatedAt != stored(at(10)) || c.UpdatedAt != stored(at(11)) {
			t.Errorf("CreateConversation left times %v, %v; want %v, %v", c.CreatedAt, c.UpdatedAt, stored(at(10)), stored(at(11)))
		}
		nonZeroFields(t, "the created conversation", *c)
		got, err := s.GetConversation(t.Context(), c.ID)
		must(t, err, "GetConversation")
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("GetConversation (-want +got):\n%s", d)
		}
		wantUTC(t, "GetConversation", got.CreatedAt, got.UpdatedAt)
	}},
	{"ConversationZeroTimes", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "conv@example.com")
		before := time.Now().Add(-time.Second)
		c := &run.Conversation{ID: newID("conv_"), UserID: u.ID, AgentID: "a", Title: "t"}
		must(t, s.CreateConversation(t.Context(), c), "CreateConversation")
		aboutNow(t, "CreatedAt", c.CreatedAt, before)
		if c.UpdatedAt != c.CreatedAt {
			t.Errorf("UpdatedAt = %v, want CreatedAt %v for a new conversation", c.UpdatedAt, c.CreatedAt)
		}
	}},
	{"ConversationRefused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "conv@example.com")
		c := createConversation(t, s, u.ID, 1)
		again := newConversation(u.ID, 2)
		again.ID = c.ID
		wantKind(t, s.CreateConversation(ctx, again), fault.Conflict, "CreateConversation with a taken id")
		err := s.CreateConversation(ctx, newConversation("user_missing", 1))
		wantKind(t, err, fault.NotFound, "CreateConversation for a missing user")
		if !strings.Contains(err.Error(), "user_missing") {
			t.Errorf("error %q does not name the user", err)
		}
		noID := newConversation(u.ID, 1)
		noID.ID = ""
		wantKind(t, s.CreateConversation(ctx, noID), fault.Invalid, "CreateConversation without an id")
	}},
	{"ConversationNotFound", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c, err := s.GetConversation(ctx, "conv_missing")
		wantKind(t, err, fault.NotFound, "GetConversation of a missing conversation")
		if c != nil {
			t.Errorf("GetConversation returned %+v with its error", c)
		}
		if !strings.Contains(err.Error(), "conv_missing") {
			t.Errorf("error %q does not name the conversation", err)
		}
		wantKind(t, s.UpdateConversation(ctx, newConversation("user_x", 1)), fault.NotFound, "UpdateConversation of a missing conversation")
		wantKind(t, s.DeleteConversation(ctx, "conv_missing"), fault.NotFound, "DeleteConversation of a missing conversation")
	}},
	{"ConversationUpdate", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		c := createConversation(t, s, alice.ID, 1)
		edit := *c
		edit.Title, edit.AgentID, edit.UpdatedAt = "Renamed", "agent_other", at(40)
		edit.UserID, edit.CreatedAt = bob.ID, at(50)
		must(t, s.UpdateConversation(ctx, &edit), "UpdateConversation")
		want := *c
		want.Title, want.AgentID, want.UpdatedAt = "Renamed", "agent_other", stored(at(40))
		got, err := s.GetConversation(ctx, c.ID)
		must(t, err, "GetConversation")
		if d := cmp.Diff(&want, got); d != "" {
			t.Errorf("after UpdateConversation, want title, agent and UpdatedAt changed, user and CreatedAt kept (-want +got):\n%s", d)
		}
		before := time.Now().Add(-time.Second)
		edit.UpdatedAt = time.Time{}
		must(t, s.UpdateConversation(ctx, &edit), "UpdateConversation with a zero UpdatedAt")
		aboutNow(t, "UpdatedAt written back", edit.UpdatedAt, before)
	}},
	{"ConversationRename", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		c := createConversation(t, s, alice.ID, 1)
		must(t, s.RenameConversation(ctx, c.ID, "Trip «plans» 🚀", nil), "RenameConversation")
		want := *c
		want.Title = "Trip «plans» 🚀"
		got, err := s.GetConversation(ctx, c.ID)
		must(t, err, "GetConversation")
		if d := cmp.Diff(&want, got); d != "" {
			t.Errorf("after RenameConversation, want the title changed and UpdatedAt kept (-want +got):\n%s", d)
		}
		stale := c.Title
		err = s.RenameConversation(ctx, c.ID, "Made in the background", &stale)
		wantKind(t, err, fault.Conflict, "RenameConversation from a title no longer there")
		current := want.Title
		must(t, s.RenameConversation(ctx, c.ID, "Again", &current), "RenameConversation from the current title")
		if got, _ := s.GetConversation(ctx, c.ID); got.Title != "Again" {
			t.Errorf("title %q, want Again", got.Title)
		}
		err = s.RenameConversation(ctx, "conv_missing", "x", nil)
		wantKind(t, err, fault.NotFound, "RenameConversation of a missing conversation")
		err = s.RenameConversation(ctx, "conv_missing", "x", &current)
		wantKind(t, err, fault.NotFound, "RenameConversation from a title of a missing conversation")
	}},
	{"ConversationListMostRecentFirst", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		var cs []*run.Conversation
		for i, updated := range []int{20, 40, 10, 30} {
			c := newConversation(alice.ID, 0)
			c.ID = fmt.Sprintf("conv_%d", i)
			c.UpdatedAt = at(updated)
			must(t, s.CreateConversation(ctx, c), "CreateConversation")
			cs = append(cs, c)
		}
		tieA, tieB := newConversation(alice.ID, 0), newConversation(alice.ID, 0)
		tieA.ID, tieB.ID = "conv_tie_a", "conv_tie_b"
		tieA.UpdatedAt, tieB.UpdatedAt = at(25), at(25)
		must(t, s.CreateConversation(ctx, tieB), "CreateConversation")
		must(t, s.CreateConversation(ctx, tieA), "CreateConversation")
		createConversation(t, s, bob.ID, 50)

		got, err := s.ListConversations(ctx, alice.ID, 0)
		must(t, err, "ListConversations")
		want := []*run.Conversation{cs[1], cs[3], tieB, tieA, cs[0], cs[2]}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ListConversations, want most recently updated first, ties by id last first (-want +got):\n%s", d)
		}

		cs[2].UpdatedAt = at(45)
		must(t, s.UpdateConversation(ctx, cs[2]), "UpdateConversation")
		got, err = s.ListConversations(ctx, alice.ID, 2)
		must(t, err, "ListConversations")
		if d := cmp.Diff([]string{cs[2].ID, cs[1].ID}, conversationIDs(got)); d != "" {
			t.Errorf("ListConversations with limit 2 after an update (-want +got):\n%s", d)
		}

		got, err = s.ListConversations(ctx, "user_missing", 10)
		must(t, err, "ListConversations of an unknown user")
		if got == nil || len(got) != 0 {
			t.Errorf("ListConversations of an unknown user = %#v, want an empty list", got)
		}
	}},
	{"ConversationListLimits", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "many@example.com")
		const n = store.DefaultConversationLimit + 5
		for i := range n {
			createConversation(t, s, u.ID, i%60)
		}
		for _, tc := range []struct{ limit, want int }{
			{0, store.DefaultConversationLimit},
			{-1, store.DefaultConversationLimit},
			{7, 7},
			{n, n},
			{store.MaxListLimit + 1, n},
		} {
			got, err := s.ListConversations(ctx, u.ID, tc.limit)
			must(t, err, fmt.Sprintf("ListConversations limit %d", tc.limit))
			if len(got) != tc.want {
				t.Errorf("ListConversations with limit %d returned %d, want %d", tc.limit, len(got), tc.want)
			}
		}
	}},
	{"ConversationPage", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		add := func(userID, id, title string, minute int) *run.Conversation {
			t.Helper()
			c := newConversation(userID, 0)
			c.ID, c.Title, c.UpdatedAt = id, title, at(minute)
			must(t, s.CreateConversation(ctx, c), "CreateConversation "+id)
			return c
		}
		// Seven conversations whose ids run against their times, two of them
		// tied: the order is by time, the id only breaks ties. Bob's are in
		// between.
		titles := []string{"Permits 2025", "permit renewal", "50% off", "a_b", `back\slash`, "Ünïcode PERMIT", "Lunch"}
		minutes := []int{50, 40, 40, 30, 20, 10, 5}
		var want []string
		for i, title := range titles {
			id := fmt.Sprintf("conv_%c", 'a'+i)
			add(alice.ID, id, title, minutes[i])
			add(bob.ID, fmt.Sprintf("conv_bob_%d", i), title, minutes[i]+1)
			want = append(want, id)
		}
		want[1], want[2] = want[2], want[1] // tied at 40: the last id first
		pageAll := func(q run.ConversationQuery) []string {
			t.Helper()
			var got []string
			for n := 0; ; n++ {
				p, err := s.ConversationPage(ctx, q)
				must(t, err, fmt.Sprintf("ConversationPage %+v, page %d", q, n))
				if q.Limit > 0 && len(p.Conversations) > q.Limit {
					t.Fatalf("page %d has %d conversations, limit %d", n, len(p.Conversations), q.Limit)
				}
				got = append(got, conversationIDs(p.Conversations)...)
				if p.NextCursor == "" {
					return got
				}
				if n > 10 {
					t.Fatal("ConversationPage never ended")
				}
				q.Cursor = p.NextCursor
			}
		}
		for _, limit := range []int{1, 2, 3, 6, 7, 0} {
			if d := cmp.Diff(want, pageAll(run.ConversationQuery{UserID: alice.ID, Limit: limit})); d != "" {
				t.Errorf("pages of %d (-want +got):\n%s", limit, d)
			}
		}
		p, err := s.ConversationPage(ctx, run.ConversationQuery{UserID: alice.ID, Limit: 7})
		must(t, err, "ConversationPage of all seven")
		if len(p.Conversations) != 7 || p.NextCursor != "" {
			t.Errorf("a page holding every conversation: %v, next cursor %q; want no next cursor", conversationIDs(p.Conversations), p.NextCursor)
		}
		got, err := s.GetConversation(ctx, "conv_a")
		must(t, err, "GetConversation")
		if d := cmp.Diff(got, p.Conversations[0]); d != "" {
			t.Errorf("paged conversation differs from GetConversation (-want +got):\n%s", d)
		}

		// The title filter pages too; it ignores case and matches LIKE's own
		// characters as themselves.
		for _, tc := range []struct {
			title string
			want  []string
		}{
			{"PERMIT", []string{"conv_a", "conv_b", "conv_f"}},
			{"%", []string{"conv_c"}},
			{"_", []string{"conv_d"}},
			{`\`, []string{"conv_e"}},
			{`k\s`, []string{"conv_e"}},
			{"nothing like it", nil},
		} {
			for _, limit := range []int{1, 2, 0} {
				got := pageAll(run.ConversationQuery{UserID: alice.ID, Title: tc.title, Limit: limit})
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("title %q, pages of %d (-want +got):\n%s", tc.title, limit, d)
				}
			}
		}

		// A conversation updated after the first page was read moves to the
		// first page: the next one starts after the last conversation read,
		// not at an offset, and does not list it again.
		first, err := s.ConversationPage(ctx, run.ConversationQuery{UserID: alice.ID, Limit: 3})
		must(t, err, "ConversationPage first")
		moved, err := s.GetConversation(ctx, "conv_e")
		must(t, err, "GetConversation")
		moved.UpdatedAt = at(55)
		must(t, s.UpdateConversation(ctx, moved), "UpdateConversation")
		add(alice.ID, "conv_newest", "Newest", 59)
		second, err := s.ConversationPage(ctx, run.ConversationQuery{UserID: alice.ID, Limit: 3, Cursor: first.NextCursor})
		must(t, err, "ConversationPage second")
		if d := cmp.Diff([]string{"conv_d", "conv_f", "conv_g"}, conversationIDs(second.Conversations)); d != "" {
			t.Errorf("the second page after an update (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"conv_newest", "conv_e", "conv_a", "conv_c", "conv_b", "conv_d", "conv_f", "conv_g"},
			pageAll(run.ConversationQuery{UserID: alice.ID, Limit: 2})); d != "" {
			t.Errorf("pages of 2 after the update (-want +got):\n%s", d)
		}

		// A cursor lists only its own user's conversations.
		p, err = s.ConversationPage(ctx, run.ConversationQuery{UserID: bob.ID, Limit: 100, Cursor: first.NextCursor})
		must(t, err, "ConversationPage of bob")
		if len(p.Conversations) != 4 || p.NextCursor != "" {
			t.Errorf("bob's conversations before conv_b: %v (next cursor %q), want 4", conversationIDs(p.Conversations), p.NextCursor)
		}
		for _, c := range p.Conversations {
			if c.UserID != bob.ID || !c.UpdatedAt.Before(stored(at(40))) {
				t.Errorf("bob's page holds %+v", c)
			}
		}
		if p, err := s.ConversationPage(ctx, run.ConversationQuery{UserID: "user_missing"}); err != nil || p.Conversations == nil || len(p.Conversations) != 0 || p.NextCursor != "" {
			t.Errorf("ConversationPage of an unknown user = %+v, %v; want an empty page", p, err)
		}
		for _, c := range []string{"not a cursor!", "bm9zcGFjZQ", "MjAyNS0wMy0wNCBmaXJl"} {
			_, err := s.ConversationPage(ctx, run.ConversationQuery{UserID: alice.ID, Cursor: c})
			wantKind(t, err, fault.Invalid, fmt.Sprintf("ConversationPage with cursor %q", c))
		}
	}},
	{"ConversationDeleteCascades", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		gone := newChat(t, s, "gone@example.com")
		kept := newChat(t, s, "kept@example.com")
		var answers []*run.Message
		for _, c := range []chat{gone, kept} {
			answer := newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, "Hi", 4)
			answer.RunID = c.run.ID
			answers = append(answers, addMessage(t, s, answer))
			appendEvents(t, s, event(c.run.ID, 1, `{"text":"Hi"}`), event(c.run.ID, 2, `{}`))
			must(t, s.AddModelRequest(ctx, &run.ModelRequest{RunID: c.run.ID, Seq: 1, AgentID: "a", Body: json.RawMessage(`{}`)}), "AddModelRequest")
			must(t, s.AddToolCall(ctx, toolCall(c.run.ID, "call_1", 5)), "AddToolCall")
		}

		// Not while its run is going: the run would go on, unstoppable, and
		// fail to store its answer.
		for _, status := range []run.Status{run.StatusQueued, run.StatusRunning} {
			r := getRun(t, s, gone.run.ID)
			r.Status = status
			must(t, s.UpdateRun(ctx, r), "UpdateRun to "+string(status))
			err := s.DeleteConversation(ctx, gone.conv.ID)
			wantKind(t, err, fault.Conflict, "DeleteConversation with a run "+string(status))
			if err != nil && !strings.Contains(err.Error(), gone.run.ID) {
				t.Errorf("DeleteConversation with a run going: %v, which does not name the run", err)
			}
		}
		finishRun(t, s, gone.run.ID)
		must(t, s.DeleteConversation(ctx, gone.conv.ID), "DeleteConversation")

		_, err := s.GetConversation(ctx, gone.conv.ID)
		wantKind(t, err, fault.NotFound, "GetConversation of a deleted conversation")
		for _, id := range []string{gone.msg.ID, answers[0].ID} {
			_, err := s.GetMessage(ctx, id)
			wantKind(t, err, fault.NotFound, "GetMessage of a deleted conversation's message")
		}
		if ms, err := s.ListMessages(ctx, gone.conv.ID); err != nil || len(ms) != 0 {
			t.Errorf("ListMessages of a deleted conversation = %v, %v; want none", ms, err)
		}
		_, err = s.GetRun(ctx, gone.run.ID)
		wantKind(t, err, fault.NotFound, "GetRun of a deleted conversation's run")
		if es := listEvents(t, s, gone.run.ID, 0); len(es) != 0 {
			t.Errorf("a deleted conversation's run still has events %+v", es)
		}
		if rs := listModelRequests(t, s, gone.run.ID); len(rs) != 0 {
			t.Errorf("a deleted conversation's run still has model requests %+v", rs)
		}
		if cs := listToolCalls(t, s, gone.run.ID); len(cs) != 0 {
			t.Errorf("a deleted conversation's run still has tool calls %+v", cs)
		}
		// Rows of the deleted run's ids can be written again: nothing of it is left.
		again := newRun(gone.user.ID, kept.conv.ID, kept.msg.ID, 1)
		again.ID = gone.run.ID
		createRun(t, s, again)
		appendEvents(t, s, event(again.ID, 1, `{}`))
		must(t, s.AddToolCall(ctx, toolCall(again.ID, "call_1", 5)), "AddToolCall for a reused run id")

		if ms, err := s.ListMessages(ctx, kept.conv.ID); err != nil || len(ms) != 2 {
			t.Errorf("the other conversation's messages = %v, %v; want both kept", ms, err)
		}
		getRun(t, s, kept.run.ID)
		if n := len(listEvents(t, s, kept.run.ID, 0)); n != 2 {
			t.Errorf("the other run has %d events, want 2", n)
		}
		if n := len(listModelRequests(t, s, kept.run.ID)); n != 1 {
			t.Errorf("the other run has %d model requests, want 1", n)
		}
		if n := len(listToolCalls(t, s, kept.run.ID)); n != 1 {
			t.Errorf("the other run has %d tool calls, want 1", n)
		}
		wantKind(t, s.DeleteConversation(ctx, gone.conv.ID), fault.NotFound, "DeleteConversation twice")
	}},

	{"MessageRoundTrip", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "msg@example.com")
		tool := &turn.ToolRecord{
			ID: "call_1", Name: "mcp__github__search", Arguments: `{"q":"relay <&>"}`, Result: "found «3» 🚀",
			IsError: true, Duration: 1234567891 * time.Nanosecond, Step: 2,
			Sources: []tool.Source{{Kind: tool.SourceFile, Anchor: `\ue202turn0file0`, FileID: "file_1", FileName: "a «b».pdf", Page: 2, Relevance: 0.5, Snippet: "x"}},
		}
		// A message keeps its tool calls' records without their contexts, which
		// are stored with the run's tool calls only.
		nonZeroFields(t, "the tool record", *tool, "Contexts")
		m := &run.Message{
			ID: newID("msg_"), ConversationID: c.conv.ID, ParentID: c.msg.ID, Role: run.RoleAssistant,
			AgentID: "agent_writer", Text: "Here «you» go 🚀\n<b>&</b>", RunID: c.run.ID, RunStatus: run.StatusCancelled,
			CreatedAt: at(9), Sources: tool.Sources,
			Parts: []run.Part{
				{Type: run.PartToolCall, AgentID: "agent_writer", Tool: tool},
				{Type: run.PartText, AgentID: "agent_writer", Text: "Here «you» go 🚀\n<b>&</b>"},
				{Type: run.PartError, AgentID: "agent_other", Text: "step limit"},
			},
		}
		nonZeroFields(t, "the message", *m)
		must(t, s.AddMessage(ctx, m), "AddMessage")
		if m.CreatedAt != stored(at(9)) {
			t.Errorf("AddMessage left CreatedAt %v, want %v", m.CreatedAt, stored(at(9)))
		}
		// RunStatus is its run's, as the run ended.
		end := at(10)
		c.run.Status, c.run.Error, c.run.ResponseMessageID, c.run.FinishedAt = run.StatusCancelled, "aborted by the user", m.ID, &end
		must(t, s.UpdateRun(ctx, c.run), "UpdateRun to cancelled")
		got, err := s.GetMessage(ctx, m.ID)
		must(t, err, "GetMessage")
		if d := cmp.Diff(m, got); d != "" {
			t.Errorf("GetMessage (-want +got):\n%s", d)
		}
		wantUTC(t, "GetMessage", got.CreatedAt)

		plain, err := s.GetMessage(ctx, c.msg.ID)
		must(t, err, "GetMessage")
		if d := cmp.Diff(c.msg, plain, equal); d != "" {
			t.Errorf("GetMessage of a message without parent, agent, parts or run (-want +got):\n%s", d)
		}
	}},
	{"MessageRunStatus", func(t *testing.T, s store.Store) {
		// An answer says how its run ended when the run did not succeed, read
		// one by one or listed; a whole answer, one of a run still going, one
		// whose run is gone and a user's message say nothing.
		ctx := t.Context()
		c := newChat(t, s, "status@example.com")
		want := map[string]run.Status{c.msg.ID: ""}
		for i, st := range []run.Status{run.StatusSucceeded, run.StatusFailed, run.StatusCancelled, run.StatusRunning, run.StatusQueued} {
			r := createRun(t, s, newRun(c.user.ID, c.conv.ID, c.msg.ID, 4+i))
			m := newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, "answer of a run "+string(st), 10+i)
			m.RunID = r.ID
			addMessage(t, s, m)
			r.Status, r.ResponseMessageID = st, m.ID
			must(t, s.UpdateRun(ctx, r), "UpdateRun to "+string(st))
			want[m.ID] = ""
			if st == run.StatusFailed || st == run.StatusCancelled {
				want[m.ID] = st
			}
		}
		orphan := newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, "answer of a run that is not stored", 20)
		orphan.RunID = "run_missing"
		addMessage(t, s, orphan)
		want[orphan.ID] = ""

		listed, err := s.ListMessages(ctx, c.conv.ID)
		must(t, err, "ListMessages")
		got := map[string]run.Status{}
		for _, m := range listed {
			got[m.ID] = m.RunStatus
			one, err := s.GetMessage(ctx, m.ID)
			must(t, err, "GetMessage")
			if one.RunStatus != m.RunStatus {
				t.Errorf("message %q: GetMessage says RunStatus %q, ListMessages %q", m.Text, one.RunStatus, m.RunStatus)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("RunStatus of the listed messages, by id (-want +got):\n%s", d)
		}
	}},
	{"MessageZeroTimeIsNow", func(t *testing.T, s store.Store) {
		c := newChat(t, s, "msg@example.com")
		m := newMessage(c.conv.ID, "", run.RoleUser, "now", 0)
		m.CreatedAt = time.Time{}
		before := time.Now().Add(-time.Second)
		addMessage(t, s, m)
		aboutNow(t, "CreatedAt", m.CreatedAt, before)
	}},
	{"MessageTree", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "tree@example.com")
		root := c.msg
		first := addMessage(t, s, newMessage(c.conv.ID, root.ID, run.RoleAssistant, "first answer", 10))
		regenerated := addMessage(t, s, newMessage(c.conv.ID, root.ID, run.RoleAssistant, "regenerated answer", 11))
		followUp := addMessage(t, s, newMessage(c.conv.ID, first.ID, run.RoleUser, "follow-up", 12))
		edited := addMessage(t, s, newMessage(c.conv.ID, root.ID, run.RoleUser, "an edit of the question", 8))

		got, err := s.ListMessages(ctx, c.conv.ID)
		must(t, err, "ListMessages")
		want := []*run.Message{root, edited, first, regenerated, followUp}
		if d := cmp.Diff(want, got, equal); d != "" {
			t.Errorf("ListMessages, want every branch, oldest first (-want +got):\n%s", d)
		}
		var children []string
		for _, m := range got {
			if m.ParentID == root.ID {
				children = append(children, m.Text)
			}
		}
		if d := cmp.Diff([]string{"an edit of the question", "first answer", "regenerated answer"}, children); d != "" {
			t.Errorf("children of the first message (-want +got):\n%s", d)
		}
	}},
	{"MessageTiesOrderedByID", func(t *testing.T, s store.Store) {
		c := newChat(t, s, "tie@example.com")
		for _, id := range []string{"msg_c", "msg_a", "msg_b"} {
			m := newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, id, 30)
			m.ID = id
			addMessage(t, s, m)
		}
		got, err := s.ListMessages(t.Context(), c.conv.ID)
		must(t, err, "ListMessages")
		if d := cmp.Diff([]string{c.msg.ID, "msg_a", "msg_b", "msg_c"}, messageIDs(got)); d != "" {
			t.Errorf("messages created at the same time, want them by id (-want +got):\n%s", d)
		}
	}},
	{"MessageRefused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "msg@example.com")
		other := createConversation(t, s, c.user.ID, 5)

		dup := newMessage(c.conv.ID, "", run.RoleUser, "dup", 3)
		dup.ID = c.msg.ID
		wantKind(t, s.AddMessage(ctx, dup), fault.Conflict, "AddMessage with a taken id")

		err := s.AddMessage(ctx, newMessage("conv_missing", "", run.RoleUser, "x", 3))
		wantKind(t, err, fault.NotFound, "AddMessage to a missing conversation")
		if !strings.Contains(err.Error(), "conv_missing") {
			t.Errorf("error %q does not name the conversation", err)
		}

		err = s.AddMessage(ctx, newMessage(c.conv.ID, "msg_missing", run.RoleUser, "x", 3))
		wantKind(t, err, fault.NotFound, "AddMessage with a missing parent")
		if !strings.Contains(err.Error(), "msg_missing") {
			t.Errorf("error %q does not name the parent", err)
		}
		wantKind(t, s.AddMessage(ctx, newMessage(other.ID, c.msg.ID, run.RoleUser, "x", 3)), fault.Invalid,
			"AddMessage with a parent in another conversation")

		noID := newMessage(c.conv.ID, "", run.RoleUser, "x", 3)
		noID.ID = ""
		wantKind(t, s.AddMessage(ctx, noID), fault.Invalid, "AddMessage without an id")
		wantKind(t, s.AddMessage(ctx, newMessage(c.conv.ID, "", "", "x", 3)), fault.Invalid, "AddMessage without a role")

		if ms, err := s.ListMessages(ctx, other.ID); err != nil || len(ms) != 0 {
			t.Errorf("refused messages were stored: %v, %v", ms, err)
		}
	}},
	{"MessageNotFound", func(t *testing.T, s store.Store) {
		m, err := s.GetMessage(t.Context(), "msg_missing")
		wantKind(t, err, fault.NotFound, "GetMessage of a missing message")
		if m != nil {
			t.Errorf("GetMessage returned %+v with its error", m)
		}
		ms, err := s.ListMessages(t.Context(), "conv_missing")
		must(t, err, "ListMessages of an unknown conversation")
		if ms == nil || len(ms) != 0 {
			t.Errorf("ListMessages of an unknown conversation = %#v, want an empty list", ms)
		}
	}},

	{"RunCreateAndGet", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "run@example.com")
		answer := addMessage(t, s, newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, "done", 9))
		started, finished := at(10), at(12)
		r := &run.Run{
			ID: newID("run_"), UserID: c.user.ID, AgentID: "agent_writer", ConversationID: c.conv.ID,
			UserMessageID: c.msg.ID, ResponseMessageID: answer.ID, Status: run.StatusFailed, Error: "provider «down» <503>",
			Usage: llm.Usage{PromptTokens: 1200, CompletionTokens: 340, TotalTokens: 1540}, CreatedAt: at(9),
			StartedAt: &started, FinishedAt: &finished,
		}
		nonZeroFields(t, "the run", *r)
		must(t, s.CreateRun(ctx, r), "CreateRun")
		if r.CreatedAt != stored(at(9)) || *r.StartedAt != stored(at(10)) || *r.FinishedAt != stored(at(12)) {
			t.Errorf("CreateRun left times %v, %v, %v; want them in stored form", r.CreatedAt, *r.StartedAt, *r.FinishedAt)
		}
		got := getRun(t, s, r.ID)
		if d := cmp.Diff(r, got); d != "" {
			t.Errorf("GetRun (-want +got):\n%s", d)
		}
		wantUTC(t, "GetRun", got.CreatedAt, *got.StartedAt, *got.FinishedAt)

		queued := getRun(t, s, c.run.ID)
		if queued.StartedAt != nil || queued.FinishedAt != nil || queued.ResponseMessageID != "" || queued.Error != "" {
			t.Errorf("a new queued run = %+v; want no times, response or error", queued)
		}
	}},
	{"RunDefaults", func(t *testing.T, s store.Store) {
		c := newChat(t, s, "run@example.com")
		r := newRun(c.user.ID, c.conv.ID, c.msg.ID, 0)
		r.Status, r.CreatedAt = "", time.Time{}
		before := time.Now().Add(-time.Second)
		createRun(t, s, r)
		if r.Status != run.StatusQueued {
			t.Errorf("CreateRun with no status left %q, want %q", r.Status, run.StatusQueued)
		}
		aboutNow(t, "CreatedAt", r.CreatedAt, before)
		if got := getRun(t, s, r.ID); got.Status != run.StatusQueued {
			t.Errorf("stored status %q, want %q", got.Status, run.StatusQueued)
		}
	}},
	{"RunRefused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "run@example.com")
		dup := newRun(c.user.ID, c.conv.ID, c.msg.ID, 4)
		dup.ID = c.run.ID
		wantKind(t, s.CreateRun(ctx, dup), fault.Conflict, "CreateRun with a taken id")

		err := s.CreateRun(ctx, newRun(c.user.ID, "conv_missing", c.msg.ID, 4))
		wantKind(t, err, fault.NotFound, "CreateRun in a missing conversation")
		if !strings.Contains(err.Error(), `conversation "conv_missing"`) {
			t.Errorf("error %q does not name the conversation", err)
		}
		err = s.CreateRun(ctx, newRun("user_missing", c.conv.ID, c.msg.ID, 4))
		wantKind(t, err, fault.NotFound, "CreateRun for a missing user")
		if !strings.Contains(err.Error(), `user "user_missing"`) {
			t.Errorf("error %q does not name the user", err)
		}

		noID := newRun(c.user.ID, c.conv.ID, c.msg.ID, 4)
		noID.ID = ""
		wantKind(t, s.CreateRun(ctx, noID), fault.Invalid, "CreateRun without an id")
		bad := newRun(c.user.ID, c.conv.ID, c.msg.ID, 4)
		bad.Status = "paused"
		wantKind(t, s.CreateRun(ctx, bad), fault.Invalid, "CreateRun with an unknown status")
		r := getRun(t, s, c.run.ID)
		r.Status = "paused"
		wantKind(t, s.UpdateRun(ctx, r), fault.Invalid, "UpdateRun to an unknown status")
		if got := getRun(t, s, c.run.ID); got.Status != run.StatusQueued {
			t.Errorf("a refused update changed the status to %q", got.Status)
		}
	}},
	{"RunUpdate", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "run@example.com")
		r := getRun(t, s, c.run.ID)

		started := at(20)
		r.Status, r.StartedAt = run.StatusRunning, &started
		must(t, s.UpdateRun(ctx, r), "UpdateRun to running")
		if *r.StartedAt != stored(at(20)) {
			t.Errorf("UpdateRun left StartedAt %v, want %v", *r.StartedAt, stored(at(20)))
		}
		if d := cmp.Diff(r, getRun(t, s, r.ID)); d != "" {
			t.Errorf("GetRun after starting (-want +got):\n%s", d)
		}

		answer := addMessage(t, s, newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, "answer", 21))
		finished := at(22)
		r.Status, r.Error, r.FinishedAt, r.ResponseMessageID = run.StatusCancelled, "aborted by the user", &finished, answer.ID
		r.Usage = llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}
		edit := *r
		edit.UserID, edit.AgentID, edit.ConversationID, edit.UserMessageID, edit.CreatedAt = "user_x", "agent_x", "conv_x", "msg_x", at(59)
		must(t, s.UpdateRun(ctx, &edit), "UpdateRun to cancelled")
		if *edit.FinishedAt != stored(at(22)) {
			t.Errorf("UpdateRun left FinishedAt %v, want %v", *edit.FinishedAt, stored(at(22)))
		}
		want := *r
		want.FinishedAt = edit.FinishedAt
		if d := cmp.Diff(&want, getRun(t, s, r.ID)); d != "" {
			t.Errorf("GetRun after finishing, want status, error, usage, response and times changed, the rest kept (-want +got):\n%s", d)
		}

		r.Status, r.Error, r.ResponseMessageID, r.StartedAt, r.FinishedAt = run.StatusQueued, "", "", nil, nil
		must(t, s.UpdateRun(ctx, r), "UpdateRun clearing fields")
		if got := getRun(t, s, r.ID); got.StartedAt != nil || got.FinishedAt != nil || got.ResponseMessageID != "" || got.Error != "" {
			t.Errorf("UpdateRun did not clear times, response and error: %+v", got)
		}

		missing := newRun(c.user.ID, c.conv.ID, c.msg.ID, 1)
		missing.ID = "run_missing"
		wantKind(t, s.UpdateRun(ctx, missing), fault.NotFound, "UpdateRun of a missing run")
		got, err := s.GetRun(ctx, "run_missing")
		wantKind(t, err, fault.NotFound, "GetRun of a missing run")
		if got != nil {
			t.Errorf("GetRun returned %+v with its error", got)
		}
	}},
	{"RunFailStale", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "stale@example.com")
		mk := func(status run.Status, created int, started, finished *int) *run.Run {
			r := newRun(c.user.ID, c.conv.ID, c.msg.ID, created)
			r.ID, r.Status = "run_"+string(status)+fmt.Sprint(created), status
			if started != nil {
				ts := at(*started)
				r.StartedAt = &ts
			}
			if finished != nil {
				ts := at(*finished)
				r.FinishedAt = &ts
			}
			return createRun(t, s, r)
		}
		ptr := func(i int) *int { return &i }
		stale := []*run.Run{
			c.run,                                  // queued, created at minute 3
			mk(run.StatusQueued, 10, nil, nil),     // queued, never started
			mk(run.StatusRunning, 5, ptr(20), nil), // started before the cutoff
		}
		fresh := []*run.Run{
			mk(run.StatusRunning, 10, ptr(40), nil), // created before the cutoff, started after
			mk(run.StatusQueued, 40, nil, nil),      // created after the cutoff
			mk(run.StatusSucceeded, 10, ptr(11), ptr(12)),
			mk(run.StatusFailed, 10, ptr(11), ptr(12)),
			mk(run.StatusCancelled, 10, ptr(11), ptr(12)),
		}

		// Questions: a stale run's pending one and answered one, a fresh run's pending one.
		ask := func(id string, r *run.Run) *run.Elicitation {
			e := &run.Elicitation{ID: id, RunID: r.ID, UserID: c.user.ID, Server: "forms", ToolCallID: "call_1", Mode: "form",
				Message: "Which?", CreatedAt: at(21), ExpiresAt: at(50)}
			must(t, s.CreateElicitation(ctx, e), "CreateElicitation "+id)
			return e
		}
		waiting, answered, fresher := ask("eli_waiting", stale[2]), ask("eli_answered", stale[2]), ask("eli_fresh", fresh[0])
		must(t, s.SettleElicitation(ctx, answered.ID, run.ElicitationAnswered, "accept", json.RawMessage(`{"pick":"a"}`), at(22)), "SettleElicitation")

		before := time.Now().Add(-time.Second)
		n, err := s.FailStaleRuns(ctx, at(30), "relay restarted «mid-run»")
		must(t, err, "FailStaleRuns")
		if n != len(stale) {
			t.Errorf("FailStaleRuns marked %d runs, want %d", n, len(stale))
		}
		for _, r := range stale {
			got := getRun(t, s, r.ID)
			if got.Status != run.StatusFailed || got.Error != "relay restarted «mid-run»" || got.FinishedAt == nil {
				t.Errorf("stale run %s = %+v; want failed, with the reason and a finish time", r.ID, got)
				continue
			}
			aboutNow(t, "FinishedAt of a stale run", *got.FinishedAt, before)
			wantClosed(t, s, got, "relay restarted «mid-run»")
			if d := cmp.Diff(r.StartedAt, got.StartedAt); d != "" {
				t.Errorf("FailStaleRuns changed StartedAt of %s (-want +got):\n%s", r.ID, d)
			}
		}
		for _, r := range fresh {
			if d := cmp.Diff(r, getRun(t, s, r.ID)); d != "" {
				t.Errorf("FailStaleRuns changed run %s (-want +got):\n%s", r.ID, d)
			}
		}
		got, err := s.GetElicitation(ctx, waiting.ID)
		must(t, err, "GetElicitation")
		if got.Status != run.ElicitationCancelled || got.Action != "cancel" || got.AnsweredAt == nil {
			t.Errorf("a stale run's pending question = %+v; want cancelled, action cancel, with a time", got)
		}
		wantKind(t, s.SettleElicitation(ctx, waiting.ID, run.ElicitationAnswered, "accept", nil, at(31)), fault.Conflict,
			"answering the question of a failed run")
		for _, e := range []*run.Elicitation{answered, fresher} {
			got, err := s.GetElicitation(ctx, e.ID)
			must(t, err, "GetElicitation")
			if want := map[string]run.ElicitationStatus{answered.ID: run.ElicitationAnswered, fresher.ID: run.ElicitationPending}[e.ID]; got.Status != want {
				t.Errorf("question %s = %s after FailStaleRuns; want %s", e.ID, got.Status, want)
			}
		}
		n, err = s.FailStaleRuns(ctx, at(30), "again")
		must(t, err, "FailStaleRuns again")
		if n != 0 {
			t.Errorf("FailStaleRuns again marked %d runs, want 0", n)
		}
	}},

	{"EventsAppendAndReplay", func(t *testing.T, s store.Store) {
		c := newChat(t, s, "events@example.com")
		id := c.run.ID
		first := appendEvents(t, s,
			event(id, 1, `{"run_id":"`+id+`"}`),
			event(id, 2, `{"text": "«Hé» 🚀 <b>&</b>", "agent_id":"a"}`),
			event(id, 3, "[1, 2.50, 1E2]"),
		)
		second := appendEvents(t, s, event(id, 4, `"just a string"`), event(id, 5, `{"z":1,"a":2}`))
		all := append(first, second...)
		for _, e := range all {
			if e.CreatedAt != stored(at(int(e.Seq))) {
				t.Errorf("AppendEvents left CreatedAt %v on event %d, want %v", e.CreatedAt, e.Seq, stored(at(int(e.Seq))))
			}
		}
		got := listEvents(t, s, id, 0)
		if d := cmp.Diff(all, got); d != "" {
			t.Errorf("ListEvents after 0 (-want +got):\n%s", d)
		}
		for i, e := range got {
			if string(e.Data) != string(all[i].Data) {
				t.Errorf("event %d data = %s, want the stored bytes %s", e.Seq, e.Data, all[i].Data)
			}
			wantUTC(t, "event CreatedAt", e.CreatedAt)
		}
		for _, tc := range []struct {
			after int64
			want  []int64
		}{
			{-1, []int64{1, 2, 3, 4, 5}},
			{2, []int64{3, 4, 5}},
			{4, []int64{5}},
			{5, []int64{}},
			{99, []int64{}},
		} {
			if d := cmp.Diff(tc.want, seqs(listEvents(t, s, id, tc.after))); d != "" {
				t.Errorf("ListEvents after %d (-want +got):\n%s", tc.after, d)
			}
		}
	}},
	{"EventsNilDataAndZeroTime", func(t *testing.T, s store.Store) {
		c := newChat(t, s, "events@example.com")
		e := event(c.run.ID, 1, "")
		e.CreatedAt = time.Time{}
		before := time.Now().Add(-time.Second)
		es := appendEvents(t, s, e)
		aboutNow(t, "CreatedAt written back", es[0].CreatedAt, before)
		got := listEvents(t, s, c.run.ID, 0)
		if len(got) != 1 || got[0].Data != nil || !got[0].CreatedAt.Equal(es[0].CreatedAt) {
			t.Errorf("ListEvents = %+v, want one event without data, at %v", got, es[0].CreatedAt)
		}
	}},
	{"EventsPerRun", func(t *testing.T, s store.Store) {
		a := newChat(t, s, "a@example.com")
		b := createRun(t, s, newRun(a.user.ID, a.conv.ID, a.msg.ID, 4))
		// One batch may hold events of several runs; each run numbers its own.
		appendEvents(t, s, event(a.run.ID, 1, `{}`), event(b.ID, 1, `{}`), event(a.run.ID, 2, `{}`), event(b.ID, 2, `{}`), event(b.ID, 3, `{}`))
		if d := cmp.Diff([]int64{1, 2}, seqs(listEvents(t, s, a.run.ID, 0))); d != "" {
			t.Errorf("events of the first run (-want +got):\n%s", d)
		}
		for _, e := range listEvents(t, s, b.ID, 0) {
			if e.RunID != b.ID {
				t.Errorf("ListEvents of %s returned an event of %s", b.ID, e.RunID)
			}
		}
		if n := len(listEvents(t, s, "run_missing", 0)); n != 0 {
			t.Errorf("ListEvents of an unknown run returned %d events", n)
		}
	}},
	{"EventsBatchIsAtomic", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "events@example.com")
		id := c.run.ID
		appendEvents(t, s, event(id, 1, `{}`), event(id, 2, `{}`))
		for _, tc := range []struct {
			name   string
			events []run.Event
			kind   fault.Kind
		}{
			{"a seq stored already", []run.Event{event(id, 3, `{}`), event(id, 2, `{}`)}, fault.Conflict},
			{"a seq twice in the batch", []run.Event{event(id, 3, `{}`), event(id, 4, `{}`), event(id, 3, `{}`)}, fault.Conflict},
			{"a missing run", []run.Event{event(id, 3, `{}`), event("run_missing", 1, `{}`)}, fault.NotFound},
			{"seq 0", []run.Event{event(id, 3, `{}`), event(id, 0, `{}`)}, fault.Invalid},
			{"no run id", []run.Event{event(id, 3, `{}`), event("", 4, `{}`)}, fault.Invalid},
			{"data that is not JSON", []run.Event{event(id, 3, `{}`), event(id, 4, `{"a":`)}, fault.Invalid},
			{"no type", []run.Event{event(id, 3, `{}`), {RunID: id, Seq: 4}}, fault.Invalid},
		} {
			err := s.AppendEvents(ctx, tc.events)
			wantKind(t, err, tc.kind, "AppendEvents with "+tc.name)
			if tc.kind == fault.Conflict && !strings.Contains(err.Error(), id) {
				t.Errorf("conflict %q does not name the run", err)
			}
			if d := cmp.Diff([]int64{1, 2}, seqs(listEvents(t, s, id, 0))); d != "" {
				t.Errorf("after AppendEvents with %s, want no event of the batch stored (-want +got):\n%s", tc.name, d)
			}
		}
		must(t, s.AppendEvents(ctx, nil), "AppendEvents of no events")
	}},

	{"ModelRequestExactBytes", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "mr@example.com")
		if !json.Valid([]byte(exactBody)) {
			t.Fatalf("exactBody is not JSON")
		}
		done := at(8)
		r := &run.ModelRequest{RunID: c.run.ID, Seq: 1, AgentID: "agent_writer", Body: json.RawMessage(exactBody), SentAt: at(7),
			FinishedAt: &done, Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}, Purpose: run.PurposeSummary}
		nonZeroFields(t, "the model request", *r)
		must(t, s.AddModelRequest(ctx, r), "AddModelRequest")
		if r.SentAt != stored(at(7)) || *r.FinishedAt != stored(at(8)) {
			t.Errorf("AddModelRequest left SentAt %v, FinishedAt %v; want %v, %v", r.SentAt, r.FinishedAt, stored(at(7)), stored(at(8)))
		}
		got := listModelRequests(t, s, c.run.ID)
		if d := cmp.Diff([]run.ModelRequest{*r}, got); d != "" {
			t.Errorf("ListModelRequests (-want +got):\n%s", d)
		}
		if len(got) == 1 {
			if string(got[0].Body) != exactBody {
				t.Errorf("body came back changed:\n got %s\nwant %s", got[0].Body, exactBody)
			}
			wantUTC(t, "SentAt", got[0].SentAt, *got[0].FinishedAt)
		}
		// A request stored without FinishedAt (as by an older Relay) reads back without one.
		must(t, s.AddModelRequest(ctx, &run.ModelRequest{RunID: c.run.ID, Seq: 2, AgentID: "a", Body: json.RawMessage(`{}`)}), "AddModelRequest")
		if got := listModelRequests(t, s, c.run.ID); len(got) != 2 || got[1].FinishedAt != nil || got[1].Usage != (llm.Usage{}) || got[1].Purpose != "" {
			t.Errorf("a request without FinishedAt: %+v", got)
		}
	}},
	{"ModelRequestsInSeqOrder", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "mr@example.com")
		other := createRun(t, s, newRun(c.user.ID, c.conv.ID, c.msg.ID, 4))
		for _, seq := range []int{3, 1, 2} {
			body := fmt.Sprintf(`{"turn":%d}`, seq)
			must(t, s.AddModelRequest(ctx, &run.ModelRequest{RunID: c.run.ID, Seq: seq, AgentID: "a", Body: json.RawMessage(body), SentAt: at(10 - seq)}), "AddModelRequest")
		}
		must(t, s.AddModelRequest(ctx, &run.ModelRequest{RunID: other.ID, Seq: 1, AgentID: "a", Body: json.RawMessage(`{"other":true}`)}), "AddModelRequest")
		var bodies []string
		for _, r := range listModelRequests(t, s, c.run.ID) {
			bodies = append(bodies, string(r.Body))
		}
		if d := cmp.Diff([]string{`{"turn":1}`, `{"turn":2}`, `{"turn":3}`}, bodies); d != "" {
			t.Errorf("ListModelRequests, want seq order (-want +got):\n%s", d)
		}
		if n := len(listModelRequests(t, s, "run_missing")); n != 0 {
			t.Errorf("ListModelRequests of an unknown run returned %d", n)
		}
	}},
	{"ModelRequestRefused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "mr@example.com")
		before := time.Now().Add(-time.Second)
		first := &run.ModelRequest{RunID: c.run.ID, Seq: 1, AgentID: "a", Body: json.RawMessage(`{"first":true}`)}
		must(t, s.AddModelRequest(ctx, first), "AddModelRequest")
		aboutNow(t, "SentAt written back", first.SentAt, before)
		for _, tc := range []struct {
			name string
			r    run.ModelRequest
			kind fault.Kind
		}{
			{"a seq stored already", run.ModelRequest{RunID: c.run.ID, Seq: 1, Body: json.RawMessage(`{}`)}, fault.Conflict},
			{"a missing run", run.ModelRequest{RunID: "run_missing", Seq: 1, Body: json.RawMessage(`{}`)}, fault.NotFound},
			{"seq 0", run.ModelRequest{RunID: c.run.ID, Seq: 0, Body: json.RawMessage(`{}`)}, fault.Invalid},
			{"no run id", run.ModelRequest{Seq: 2, Body: json.RawMessage(`{}`)}, fault.Invalid},
			{"a body that is not JSON", run.ModelRequest{RunID: c.run.ID, Seq: 2, Body: json.RawMessage(`{"a":1`)}, fault.Invalid},
			{"no body", run.ModelRequest{RunID: c.run.ID, Seq: 2}, fault.Invalid},
		} {
			wantKind(t, s.AddModelRequest(ctx, &tc.r), tc.kind, "AddModelRequest with "+tc.name)
		}
		got := listModelRequests(t, s, c.run.ID)
		if len(got) != 1 || string(got[0].Body) != `{"first":true}` {
			t.Errorf("after refused requests, ListModelRequests = %+v; want the first one only", got)
		}
	}},

	{"ToolCallRoundTrip", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "tools@example.com")
		tc := &run.ToolCall{
			RunID: c.run.ID, AgentID: "agent_writer",
			ToolRecord: turn.ToolRecord{
				ID: "call_«1»", Name: "mcp__github__search", Arguments: `{"q":"<relay> & co 🚀"}`,
				Result: "error: rate «limited»\nretry later", IsError: true, Duration: 1234567891 * time.Nanosecond, Step: 3,
				Sources:  []tool.Source{{Kind: tool.SourceWeb, Anchor: "a", Title: "T «1»", URL: "https://example.com/?q=<x>&y", Snippet: "s"}},
				Contexts: []string{"first «passage» 🚀\n\nstill the first", "second <passage> & \"quotes\""},
			},
			CreatedAt: at(8),
		}
		nonZeroFields(t, "the tool call", *tc)
		nonZeroFields(t, "the tool call's record", tc.ToolRecord)
		must(t, s.AddToolCall(ctx, tc), "AddToolCall")
		if tc.Duration != 1234567*time.Microsecond || tc.CreatedAt != stored(at(8)) {
			t.Errorf("AddToolCall left Duration %v, CreatedAt %v; want them to the microsecond", tc.Duration, tc.CreatedAt)
		}
		got := listToolCalls(t, s, c.run.ID)
		if d := cmp.Diff([]run.ToolCall{*tc}, got); d != "" {
			t.Errorf("ListToolCalls (-want +got):\n%s", d)
		}
		for _, g := range got {
			wantUTC(t, "tool call CreatedAt", g.CreatedAt)
		}
		ok := toolCall(c.run.ID, "call_ok", 9)
		must(t, s.AddToolCall(ctx, ok), "AddToolCall")
		if got := listToolCalls(t, s, c.run.ID); len(got) != 2 || got[1].IsError {
			t.Errorf("ListToolCalls = %+v, want the successful call second with IsError false", got)
		}
	}},
	{"ToolCallsOldestFirst", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "tools@example.com")
		other := createRun(t, s, newRun(c.user.ID, c.conv.ID, c.msg.ID, 4))
		for _, x := range []struct {
			id           string
			minute, step int
		}{
			{"call_late", 30, 2}, {"call_early", 10, 1}, {"call_b", 20, 1}, {"call_a", 20, 1}, {"call_step0", 20, 0},
		} {
			tc := toolCall(c.run.ID, x.id, x.minute)
			tc.Step = x.step
			must(t, s.AddToolCall(ctx, tc), "AddToolCall "+x.id)
		}
		// Ids are the provider's: another run may use the same ones.
		must(t, s.AddToolCall(ctx, toolCall(other.ID, "call_early", 1)), "AddToolCall with an id of another run")
		var ids []string
		for _, tc := range listToolCalls(t, s, c.run.ID) {
			ids = append(ids, tc.ID)
		}
		if d := cmp.Diff([]string{"call_early", "call_step0", "call_a", "call_b", "call_late"}, ids); d != "" {
			t.Errorf("ListToolCalls, want oldest first, then by step and id (-want +got):\n%s", d)
		}
		if n := len(listToolCalls(t, s, "run_missing")); n != 0 {
			t.Errorf("ListToolCalls of an unknown run returned %d", n)
		}
	}},
	{"ToolCallRefused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "tools@example.com")
		before := time.Now().Add(-time.Second)
		first := toolCall(c.run.ID, "call_1", 0)
		first.CreatedAt = time.Time{}
		must(t, s.AddToolCall(ctx, first), "AddToolCall")
		aboutNow(t, "CreatedAt written back", first.CreatedAt, before)

		dup := toolCall(c.run.ID, "call_1", 2)
		dup.Result = "second"
		err := s.AddToolCall(ctx, dup)
		wantKind(t, err, fault.Conflict, "AddToolCall with an id the run has")
		if !strings.Contains(err.Error(), "call_1") {
			t.Errorf("conflict %q does not name the call", err)
		}
		err = s.AddToolCall(ctx, toolCall("run_missing", "call_2", 2))
		wantKind(t, err, fault.NotFound, "AddToolCall for a missing run")
		if !strings.Contains(err.Error(), "run_missing") {
			t.Errorf("error %q does not name the run", err)
		}
		wantKind(t, s.AddToolCall(ctx, toolCall(c.run.ID, "", 2)), fault.Invalid, "AddToolCall without an id")
		wantKind(t, s.AddToolCall(ctx, toolCall("", "call_3", 2)), fault.Invalid, "AddToolCall without a run")
		if got := listToolCalls(t, s, c.run.ID); len(got) != 1 || got[0].Result != first.Result {
			t.Errorf("after refused calls, ListToolCalls = %+v; want the first one only", got)
		}
	}},

	{"ConcurrentRecording", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "busy@example.com")
		const runs, events, calls = 8, 60, 12
		ids := make([]string, runs)
		for i := range ids {
			ids[i] = createRun(t, s, newRun(c.user.ID, c.conv.ID, c.msg.ID, i)).ID
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			errs  []error
			start = make(chan struct{})
		)
		fail := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		for w, id := range ids {
			wg.Go(func() {
				<-start
				seq, call := int64(0), 0
				for seq < events {
					// Batches of 1 to 4 events, with a tool call now and then.
					var batch []run.Event
					for range min(int(seq%4)+1, events-int(seq)) {
						seq++
						batch = append(batch, event(id, seq, fmt.Sprintf(`{"writer":%d,"seq":%d}`, w, seq)))
					}
					if err := s.AppendEvents(ctx, batch); err != nil {
						fail(fmt.Errorf("run %d, events up to %d: %w", w, seq, err))
					}
					if call < calls && seq%5 < 4 {
						call++
						if err := s.AddToolCall(ctx, toolCall(id, fmt.Sprintf("call_%02d", call), call)); err != nil {
							fail(fmt.Errorf("run %d, tool call %d: %w", w, call, err))
						}
					}
				}
				for call < calls {
					call++
					if err := s.AddToolCall(ctx, toolCall(id, fmt.Sprintf("call_%02d", call), call)); err != nil {
						fail(fmt.Errorf("run %d, tool call %d: %w", w, call, err))
					}
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs[:min(len(errs), 10)] {
			t.Error(err)
		}
		if len(errs) > 0 {
			t.Fatalf("%d writes failed", len(errs))
		}
		for w, id := range ids {
			got := listEvents(t, s, id, 0)
			if len(got) != events {
				t.Errorf("run %d has %d events, want %d", w, len(got), events)
				continue
			}
			for i, e := range got {
				if e.Seq != int64(i+1) || string(e.Data) != fmt.Sprintf(`{"writer":%d,"seq":%d}`, w, i+1) {
					t.Errorf("run %d, event %d = seq %d, data %s; want seq %d of writer %d", w, i, e.Seq, e.Data, i+1, w)
					break
				}
			}
			if n := len(listToolCalls(t, s, id)); n != calls {
				t.Errorf("run %d has %d tool calls, want %d", w, n, calls)
			}
		}
	}},
}
