package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
)

// pageAll pages through the runs q selects, limit at a time.
func pageAll(t *testing.T, s store.Store, q run.RunQuery) []run.RunItem {
	t.Helper()
	var all []run.RunItem
	for page := 0; ; page++ {
		p, err := s.RunPage(t.Context(), q)
		must(t, err, fmt.Sprintf("RunPage page %d", page))
		if q.Limit > 0 && len(p.Runs) > q.Limit {
			t.Fatalf("page %d has %d runs, limit %d", page, len(p.Runs), q.Limit)
		}
		all = append(all, p.Runs...)
		if p.NextCursor == "" {
			return all
		}
		if page > 100 {
			t.Fatal("RunPage never ended")
		}
		q.Cursor = p.NextCursor
	}
}

func runIDs(rs []run.RunItem) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

var runListTests = []test{
	{"NewestFirstPagedAndFiltered", func(t *testing.T, s store.Store) {
		ann, bob := newChat(t, s, "ann@example.com"), newChat(t, s, "bob@example.com")
		// ann's runs at minutes 10..14 (two in the same minute, ordered by id),
		// bob's one in between.
		var anns []*run.Run
		for i, minute := range []int{10, 11, 12, 12, 14} {
			m := addMessage(t, s, newMessage(ann.conv.ID, "", run.RoleUser, fmt.Sprintf("question %d", i), minute))
			r := newRun(ann.user.ID, ann.conv.ID, m.ID, minute)
			if i%2 == 1 {
				r.AgentID, r.Status = "agent_other", run.StatusSucceeded
			}
			anns = append(anns, createRun(t, s, r))
		}
		createRun(t, s, newRun(bob.user.ID, bob.conv.ID, bob.msg.ID, 13))
		want := []string{anns[4].ID, "", "", anns[1].ID, anns[0].ID, ann.run.ID}
		want[1], want[2] = anns[2].ID, anns[3].ID
		if anns[2].ID < anns[3].ID {
			want[1], want[2] = anns[3].ID, anns[2].ID
		}
		for _, limit := range []int{1, 2, 4, 0} {
			if got := runIDs(pageAll(t, s, run.RunQuery{UserID: ann.user.ID, Limit: limit})); !cmp.Equal(got, want) {
				t.Errorf("ann's runs, pages of %d:\n got %v\nwant %v", limit, got, want)
			}
		}
		if got := pageAll(t, s, run.RunQuery{}); len(got) != 8 {
			t.Errorf("everyone's runs: %d, want 8", len(got))
		}
		if got := runIDs(pageAll(t, s, run.RunQuery{UserID: ann.user.ID, AgentID: "agent_other"})); !cmp.Equal(got, []string{anns[3].ID, anns[1].ID}) {
			t.Errorf("ann's runs of agent_other: %v", got)
		}
		if got := runIDs(pageAll(t, s, run.RunQuery{UserID: ann.user.ID, Status: run.StatusSucceeded, Limit: 1})); !cmp.Equal(got, []string{anns[3].ID, anns[1].ID}) {
			t.Errorf("ann's succeeded runs: %v", got)
		}
		if got := pageAll(t, s, run.RunQuery{UserID: bob.user.ID}); len(got) != 2 || got[0].UserID != bob.user.ID {
			t.Errorf("bob's runs: %+v", got)
		}
		_, err := s.RunPage(t.Context(), run.RunQuery{Cursor: "nonsense"})
		wantKind(t, err, fault.Invalid, "RunPage with a bad cursor")
	}},
	{"ItemFields", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newChat(t, s, "ann@example.com")
		long := strings.Repeat("word ", 200)
		m := addMessage(t, s, newMessage(c.conv.ID, "", run.RoleUser, long, 20))
		r := createRun(t, s, newRun(c.user.ID, c.conv.ID, m.ID, 20))
		started, finished := at(21), at(22)
		r.Status, r.Error, r.StartedAt, r.FinishedAt = run.StatusFailed, "the model refused", &started, &finished
		r.Usage = llm.Usage{PromptTokens: 5, CompletionTokens: 6, TotalTokens: 11}
		must(t, s.UpdateRun(ctx, r), "UpdateRun")
		sc := createSchedule(t, s, newSchedule(c.user.ID, 1))
		f := newFiring(sc.ID, at(19))
		must(t, s.CreateFiring(ctx, f), "CreateFiring")
		f.RunID, f.ConversationID, f.Status = r.ID, c.conv.ID, schedule.FiringFailed
		must(t, s.UpdateFiring(ctx, f), "UpdateFiring")

		got := pageAll(t, s, run.RunQuery{UserID: c.user.ID})
		if len(got) != 2 {
			t.Fatalf("runs: %+v", got)
		}
		want := run.RunItem{ID: r.ID, UserID: c.user.ID, AgentID: r.AgentID, ConversationID: c.conv.ID, Status: run.StatusFailed,
			Error: "the model refused", Text: long[:400], ScheduleID: sc.ID, Usage: r.Usage,
			CreatedAt: stored(at(20)), StartedAt: ptr(stored(started)), FinishedAt: ptr(stored(finished))}
		if d := cmp.Diff(want, got[0]); d != "" {
			t.Errorf("the item (-want +got):\n%s", d)
		}
		if got[1].ID != c.run.ID || got[1].Text != "Hello" || got[1].ScheduleID != "" || got[1].StartedAt != nil {
			t.Errorf("the chat's run: %+v", got[1])
		}
	}},
}
