package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
)

// runBatchTests cover the two writes a run makes in one transaction each:
// StartRun, and WriteBatch with everything the runs of a process produced.
var runBatchTests = []test{
	{"StartRunNewConversation", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "start@example.com")
		c := newConversation(u.ID, 1)
		m := newMessage(c.ID, "", run.RoleUser, "Hello", 2)
		started := at(2)
		r := newRun(u.ID, c.ID, m.ID, 2)
		r.Status, r.StartedAt = run.StatusRunning, &started
		must(t, s.StartRun(t.Context(), &run.RunStart{Conversation: c, NewConversation: true, Message: m, Run: r}), "StartRun")
		got, err := s.GetConversation(t.Context(), c.ID)
		must(t, err, "GetConversation")
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("the conversation (-want +got):\n%s", d)
		}
		msgs, err := s.ListMessages(t.Context(), c.ID)
		must(t, err, "ListMessages")
		if len(msgs) != 1 || msgs[0].ID != m.ID || msgs[0].CreatedAt != stored(at(2)) {
			t.Errorf("messages %+v", msgs)
		}
		if gr := getRun(t, s, r.ID); gr.Status != run.StatusRunning || gr.StartedAt == nil || !gr.StartedAt.Equal(stored(started)) {
			t.Errorf("the run %+v", gr)
		}
	}},
	{"StartRunExistingConversation", func(t *testing.T, s store.Store) {
		ch := newChat(t, s, "start@example.com")
		finishRun(t, s, ch.run.ID)
		// A title set since the run read the conversation (a rename, a title
		// made in the background) is kept.
		title := ch.conv.Title
		must(t, s.RenameConversation(t.Context(), ch.conv.ID, "Renamed", nil), "RenameConversation")
		ch.conv.Title, ch.conv.AgentID, ch.conv.UpdatedAt = title, "agent_other", at(30)
		m := newMessage(ch.conv.ID, ch.msg.ID, run.RoleUser, "Again", 30)
		r := newRun(ch.user.ID, ch.conv.ID, m.ID, 30)
		must(t, s.StartRun(t.Context(), &run.RunStart{Conversation: ch.conv, Message: m, Run: r}), "StartRun")
		got, err := s.GetConversation(t.Context(), ch.conv.ID)
		must(t, err, "GetConversation")
		if got.Title != "Renamed" || got.AgentID != "agent_other" || got.UpdatedAt != stored(at(30)) {
			t.Errorf("the conversation %+v; want the stored title kept, agent and UpdatedAt saved", got)
		}
		getRun(t, s, r.ID)
	}},
	{"StartRunWhileAnswering", func(t *testing.T, s store.Store) {
		// A conversation answers one message at a time: a message sent while
		// a run of it is queued or running is refused, and nothing of it is
		// stored.
		ch := newChat(t, s, "answering@example.com")
		for _, status := range []run.Status{run.StatusQueued, run.StatusRunning} {
			r := getRun(t, s, ch.run.ID)
			r.Status = status
			must(t, s.UpdateRun(t.Context(), r), "UpdateRun")
			m := newMessage(ch.conv.ID, ch.msg.ID, run.RoleUser, "Meanwhile", 4)
			nr := newRun(ch.user.ID, ch.conv.ID, m.ID, 4)
			err := s.StartRun(t.Context(), &run.RunStart{Conversation: ch.conv, Message: m, Run: nr})
			wantKind(t, err, fault.Conflict, "StartRun while a run is "+string(status))
			if err != nil && !strings.Contains(err.Error(), ch.run.ID) {
				t.Errorf("the refusal %q does not name the run going", err)
			}
			_, err = s.GetRun(t.Context(), nr.ID)
			wantKind(t, err, fault.NotFound, "GetRun of the refused run")
			msgs, err := s.ListMessages(t.Context(), ch.conv.ID)
			must(t, err, "ListMessages")
			if len(msgs) != 1 {
				t.Errorf("%d messages after the refused run, want the first alone", len(msgs))
			}
		}
		finishRun(t, s, ch.run.ID)
		m := newMessage(ch.conv.ID, ch.msg.ID, run.RoleUser, "Now", 31)
		must(t, s.StartRun(t.Context(), &run.RunStart{Conversation: ch.conv, Message: m, Run: newRun(ch.user.ID, ch.conv.ID, m.ID, 31)}), "StartRun once the run ended")
	}},
	{"StartRunsAtOnce", func(t *testing.T, s store.Store) {
		// Of messages sent to one conversation at once, one starts a run and
		// the others are refused, whatever the timing.
		ch := newChat(t, s, "atonce@example.com")
		finishRun(t, s, ch.run.ID)
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				m := newMessage(ch.conv.ID, ch.msg.ID, run.RoleUser, fmt.Sprint("At once ", i), 40)
				conv := *ch.conv
				errs[i] = s.StartRun(t.Context(), &run.RunStart{Conversation: &conv, Message: m, Run: newRun(ch.user.ID, ch.conv.ID, m.ID, 40)})
			})
		}
		wg.Wait()
		started := 0
		for _, err := range errs {
			switch {
			case err == nil:
				started++
			case !fault.Is(err, fault.Conflict):
				t.Errorf("StartRun at once: %v, want nil or a conflict", err)
			}
		}
		if started != 1 {
			t.Errorf("%d of %d runs started at once, want 1", started, n)
		}
	}},
	{"StartRunAllOrNothing", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "start@example.com")
		c := newConversation(u.ID, 1)
		m := newMessage(c.ID, "msg_missing", run.RoleUser, "Hello", 2)
		r := newRun(u.ID, c.ID, m.ID, 2)
		err := s.StartRun(t.Context(), &run.RunStart{Conversation: c, NewConversation: true, Message: m, Run: r})
		wantRefused(t, s, err, fault.NotFound, "StartRun with a missing parent message")
		_, err = s.GetConversation(t.Context(), c.ID)
		wantKind(t, err, fault.NotFound, "GetConversation after a failed StartRun")
		_, err = s.GetRun(t.Context(), r.ID)
		wantKind(t, err, fault.NotFound, "GetRun after a failed StartRun")
	}},
	{"WriteBatchDeltaStretches", func(t *testing.T, s store.Store) {
		// The deltas a run streams are stored in stretches (one agent's, one
		// after another); every event comes back byte for byte, with its time,
		// from any seq on.
		ch := newChat(t, s, "deltas@example.com")
		id := ch.run.ID
		base := at(10)
		var want []run.Event
		add := func(typ run.Kind, data string, micros int64) {
			e := run.Event{RunID: id, Seq: int64(len(want) + 1), Type: typ, Data: json.RawMessage(data),
				CreatedAt: base.Add(time.Duration(micros) * time.Microsecond)}
			if data == "" {
				e.Data = nil
			}
			want = append(want, e)
		}
		add(run.EventRunStarted, `{"run_id":"`+id+`"}`, 0)
		add(run.EventMessageDelta, `{"agent_id":"calc","text":"The "}`, 10)
		add(run.EventMessageDelta, `{"agent_id":"calc","text":"sum \"is\" \u00e9 é 😀\n"}`, 2500)
		add(run.EventMessageDelta, `{"agent_id":"calc","text":""}`, 2499) // a time before the last
		add(run.EventMessageDelta, `{"agent_id":"other","text":"handed "}`, 9000)
		add(run.EventMessageDelta, `{"agent_id":"other","text":"over"}`, 9001)
		add(run.EventMessageDelta, `{"agent_id": "other","text":"spaced"}`, 9002) // not as run.Encode writes it
		add(run.EventMessageDelta, `{"agent_id":"other","text":"extra","more":1}`, 9003)
		add(run.EventMessageDelta, `{"text":"no agent"}`, 9004)
		add(run.EventMessageDelta, `{"agent_id":"other","text":"again"}`, 9005)
		add(run.EventMessageDelta, "", 9006)
		add(run.EventMessageDelta, `{"agent_id":"other","text":"after nothing"}`, 9007)
		add(run.EventToolStarted, `{"agent_id":"calc","text":"not a delta"}`, 9008)
		add(run.EventMessageDelta, `{"agent_id":"calc","text":"last"}`, 10000)
		// Two batches, the second's first delta continuing the first's last.
		first, second := slices.Clone(want[:6]), slices.Clone(want[6:])
		must(t, s.WriteBatch(t.Context(), &run.Batch{Events: first}), "WriteBatch")
		must(t, s.WriteBatch(t.Context(), &run.Batch{Events: second}), "WriteBatch")
		// A gap in the seqs ends a stretch too.
		gap := run.Event{RunID: id, Seq: int64(len(want) + 2), Type: run.EventMessageDelta,
			Data: json.RawMessage(`{"agent_id":"calc","text":"after a gap"}`), CreatedAt: base}
		must(t, s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{
			{RunID: id, Seq: int64(len(want) + 1), Type: run.EventMessageDelta, Data: json.RawMessage(`{"agent_id":"calc","text":"x"}`), CreatedAt: base},
			gap,
		}}), "WriteBatch")
		want = append(want, run.Event{RunID: id, Seq: int64(len(want) + 1), Type: run.EventMessageDelta, Data: json.RawMessage(`{"agent_id":"calc","text":"x"}`), CreatedAt: base}, gap)
		for after := int64(0); after <= int64(len(want)+1); after++ {
			got := listEvents(t, s, id, after)
			var exp []run.Event
			for _, e := range want {
				if e.Seq > after {
					e.CreatedAt = stored(e.CreatedAt)
					exp = append(exp, e)
				}
			}
			if exp == nil {
				exp = []run.Event{}
			}
			if d := cmp.Diff(exp, got); d != "" {
				t.Fatalf("ListEvents after %d (-want +got):\n%s", after, d)
			}
		}
		// A seq twice in a stretch is refused, as anywhere.
		dup := run.Event{RunID: id, Seq: 100, Type: run.EventMessageDelta, Data: json.RawMessage(`{"agent_id":"calc","text":"d"}`), CreatedAt: base}
		wantRefused(t, s, s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{dup, dup}}), fault.Conflict, "WriteBatch with a seq twice")
	}},
	{"WriteBatch", func(t *testing.T, s store.Store) {
		a, b := newChat(t, s, "a@example.com"), newChat(t, s, "b@example.com")
		answer := newMessage(a.conv.ID, a.msg.ID, run.RoleAssistant, "Done", 9)
		answer.RunID = a.run.ID
		finished := at(9)
		a.run.Status, a.run.FinishedAt, a.run.ResponseMessageID = run.StatusSucceeded, &finished, answer.ID
		a.run.Usage.TotalTokens = 42
		batch := &run.Batch{
			Events:    []run.Event{event(a.run.ID, 1, `{"text":"x"}`), event(b.run.ID, 1, `{}`), event(a.run.ID, 2, "")},
			ToolCalls: []*run.ToolCall{toolCall(b.run.ID, "call_1", 4)},
			Requests:  []*run.ModelRequest{{RunID: a.run.ID, Seq: 1, AgentID: "agent_helper", Body: json.RawMessage(exactBody), SentAt: at(5)}},
			Messages:  []*run.Message{answer},
			Runs:      []*run.Run{a.run},
		}
		must(t, s.WriteBatch(t.Context(), batch), "WriteBatch")
		if got := seqs(listEvents(t, s, a.run.ID, 0)); !cmp.Equal(got, []int64{1, 2}) {
			t.Errorf("events of a: %v", got)
		}
		if got := listEvents(t, s, b.run.ID, 0); len(got) != 1 || got[0].CreatedAt != stored(batch.Events[1].CreatedAt) {
			t.Errorf("events of b: %+v", got)
		}
		if got := listToolCalls(t, s, b.run.ID); len(got) != 1 || got[0].ID != "call_1" || got[0].Duration != 1500*time.Millisecond {
			t.Errorf("tool calls of b: %+v", got)
		}
		if got := listModelRequests(t, s, a.run.ID); len(got) != 1 || string(got[0].Body) != exactBody {
			t.Errorf("model requests of a: %+v", got)
		}
		if got := getRun(t, s, a.run.ID); got.Status != run.StatusSucceeded || got.ResponseMessageID != answer.ID || got.Usage.TotalTokens != 42 {
			t.Errorf("run a: %+v", got)
		}
		must(t, s.WriteBatch(t.Context(), &run.Batch{}), "WriteBatch of nothing")
	}},
	{"WriteBatchEventsWithAppendedOnes", func(t *testing.T, s store.Store) {
		a := newChat(t, s, "a@example.com")
		id := a.run.ID
		// Data byte for byte, whatever its spacing, escapes and key order.
		odd := `{"z": 1,  "a":"\u00e9 «ü» <b>&</b>", "n":[1.50, 1E2]}`
		must(t, s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{
			event(id, 1, `{}`), event(id, 2, odd), {RunID: id, Seq: 3, Type: "odd \"type\" «é»", CreatedAt: at(3)}}}), "WriteBatch")
		appendEvents(t, s, event(id, 4, `{"one":"at a time"}`))
		must(t, s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{event(id, 6, `{}`), event(id, 5, `[]`)}}), "WriteBatch out of order")
		all := listEvents(t, s, id, 0)
		if got := seqs(all); !cmp.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
			t.Fatalf("ListEvents: seqs %v", got)
		}
		if string(all[1].Data) != odd || all[2].Data != nil || all[2].Type != "odd \"type\" «é»" || string(all[4].Data) != `[]` {
			t.Errorf("ListEvents: %+v", all)
		}
		for _, e := range all {
			if e.RunID != id || e.CreatedAt != stored(at(int(e.Seq%60))) {
				t.Errorf("event %d: run %q, time %v", e.Seq, e.RunID, e.CreatedAt)
			}
			wantUTC(t, "ListEvents", e.CreatedAt)
		}
		// From the middle of a batch.
		if got := seqs(listEvents(t, s, id, 1)); !cmp.Equal(got, []int64{2, 3, 4, 5, 6}) {
			t.Errorf("ListEvents after 1: %v", got)
		}
		if got := seqs(listEvents(t, s, id, 5)); !cmp.Equal(got, []int64{6}) {
			t.Errorf("ListEvents after 5: %v", got)
		}
		if got := listEvents(t, s, id, 6); len(got) != 0 {
			t.Errorf("ListEvents after 6: %v", seqs(got))
		}
		err := s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{event(id, 7, ""), event(id, 7, "")}})
		wantRefused(t, s, err, fault.Conflict, "WriteBatch with a seq twice")
		err = s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{event(id, 5, "")}})
		wantRefused(t, s, err, fault.Conflict, "WriteBatch starting where a batch of the run started")
		if got := seqs(listEvents(t, s, id, 0)); !cmp.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
			t.Errorf("after refused batches: seqs %v", got)
		}
		// A deleted conversation takes the batches with it.
		finishRun(t, s, id)
		must(t, s.DeleteConversation(t.Context(), a.conv.ID), "DeleteConversation")
		if got := listEvents(t, s, id, 0); len(got) != 0 {
			t.Errorf("after DeleteConversation: %v", seqs(got))
		}
	}},
	{"WriteBatchEndsARunOnce", func(t *testing.T, s store.Store) {
		a := newChat(t, s, "once@example.com")
		failed := getRun(t, s, a.run.ID)
		done := at(8)
		failed.Status, failed.Error, failed.FinishedAt = run.StatusFailed, "the process running it stopped", &done
		must(t, s.UpdateRun(t.Context(), failed), "UpdateRun to failed")
		end := *failed
		later := at(9)
		end.Status, end.Error, end.FinishedAt = run.StatusSucceeded, "", &later
		err := s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{event(a.run.ID, 1, "")}, Runs: []*run.Run{&end}})
		if !wantRefused(t, s, err, fault.Conflict, "WriteBatch ending a run that has ended") && !errors.Is(err, run.ErrEnded) {
			t.Errorf("WriteBatch ending a run that has ended = %v; want run.ErrEnded", err)
		}
		if d := cmp.Diff(failed, getRun(t, s, a.run.ID)); d != "" {
			t.Errorf("the run after a refused end (-want +got):\n%s", d)
		}
		// Written behind, a refused batch is stored in parts: the run's
		// event is a part of its own, and is kept.
		if got, want := seqs(listEvents(t, s, a.run.ID, 0)), partsKept(s, 1); !cmp.Equal(got, want) {
			t.Errorf("events stored with a refused end: %v, want %v", got, want)
		}
	}},
	{"WriteBatchAllOrNothing", func(t *testing.T, s store.Store) {
		a := newChat(t, s, "a@example.com")
		for _, tc := range []struct {
			name  string
			batch *run.Batch
			kind  fault.Kind
		}{
			{"an event of a missing run", &run.Batch{Events: []run.Event{event(a.run.ID, 1, ""), event("run_missing", 1, "")}}, fault.NotFound},
			{"an event that is not JSON", &run.Batch{Events: []run.Event{event(a.run.ID, 1, ""), event(a.run.ID, 2, "{")}}, fault.Invalid},
			{"a tool call of a missing run", &run.Batch{Events: []run.Event{event(a.run.ID, 1, "")},
				ToolCalls: []*run.ToolCall{toolCall("run_missing", "call_1", 4)}}, fault.NotFound},
			{"an update of a missing run", &run.Batch{Events: []run.Event{event(a.run.ID, 1, "")},
				Runs: []*run.Run{newRun(a.user.ID, a.conv.ID, a.msg.ID, 3)}}, fault.NotFound},
		} {
			wantRefused(t, s, s.WriteBatch(t.Context(), tc.batch), tc.kind, "WriteBatch with "+tc.name)
			// Written behind, run a's event 1 is a part of its own (kept
			// once: a later batch's is refused as taken).
			if got, want := seqs(listEvents(t, s, a.run.ID, 0)), partsKept(s, 1); !cmp.Equal(got, want) {
				t.Errorf("after WriteBatch with %s, events %v stored, want %v", tc.name, got, want)
			}
		}
	}},
}
