package run_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
)

// A run that one process runs can be followed live from another process on the
// same database: the second service has no live state of the run, so it
// streams what the first stores until run.finished.
func TestFollowARunOfAnotherProcess(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"one ", "two ", "three ", "four ", "five"}, Delay: 150 * time.Millisecond})
	b := setup(t, model)
	other := &run.Service{Store: b.svc.Store, Prep: b.svc.Prep, Models: b.svc.Models, MCP: b.svc.MCP, Log: discard()}

	ctx := context.Background()
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "count"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, b.stored(r.ID, 2)) // the run is under way, some events are stored
	evs, ch, stop, err := other.Subscribe(ctx, b.user, r.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if ch == nil {
		t.Fatal("a running run of another process gave no channel to follow")
	}
	timeout := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case e, ok := <-ch:
			if !ok {
				done = true
				break
			}
			evs = append(evs, e)
		case <-timeout:
			t.Fatalf("still following after 20 s; got %d events", len(evs))
		}
	}
	var types []string
	var text strings.Builder
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: events were lost or repeated", i, e.Seq)
		}
		types = append(types, string(e.Type))
		if e.Type == run.EventMessageDelta {
			text.WriteString(string(e.Data))
		}
	}
	if types[0] != string(run.EventRunStarted) || types[len(types)-1] != string(run.EventRunFinished) {
		t.Errorf("events %v", types)
	}
	for _, w := range []string{"one ", "five"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("deltas %s lack %q", text.String(), w)
		}
	}
	// Once finished, the other process gives everything at once and no channel.
	all, ch, stop2, err := other.Subscribe(ctx, b.user, r.ID, 0)
	stop2()
	if err != nil || ch != nil || len(all) != len(evs) {
		t.Errorf("after the run: %d events, channel %v, %v; want %d and none", len(all), ch, err, len(evs))
	}
}

// A dead run's answer is rebuilt from its events: one text part per stretch of
// one agent's deltas that none of its tool calls broke, other events ignored,
// texts joined as a saved answer's.
func TestStreamedRebuildsTheText(t *testing.T) {
	ev := func(typ run.Kind, data string) run.Event { return run.Event{Type: typ, Data: []byte(data)} }
	text, parts := run.Streamed([]run.Event{
		ev(run.EventRunStarted, `{"run_id":"run_1"}`),
		ev(run.EventMessageDelta, `{"agent_id":"router","text":"Asking "}`),
		ev(run.EventMessageDelta, `{"agent_id":"router","text":"the expert."}`),
		ev(run.EventToolStarted, `{"agent_id":"router","id":"c1","name":"transfer","arguments":"{}"}`),
		ev(run.EventMessageDelta, `{"agent_id":"expert","text":"It is \"42\"\n"}`),
		ev(run.EventMessageDelta, `{"agent_id":"expert","text":""}`),
		ev(run.EventMessageDelta, `not json`),
		ev(run.EventToolStarted, `{"agent_id":"other","id":"c2","name":"search","arguments":"{}"}`),
		ev(run.EventMessageDelta, `{"agent_id":"expert","text":"— sure."}`),
		ev(run.EventToolStarted, `{"agent_id":"expert","id":"c3","name":"search","arguments":"{}"}`),
		ev(run.EventToolFinished, `{"agent_id":"expert","id":"c3","result":"42"}`),
		ev(run.EventMessageDelta, `{"agent_id":"expert","text":"Checked."}`),
	})
	if want := "Asking the expert.\n\nIt is \"42\"\n— sure.\n\nChecked."; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	want := []run.Part{
		{Type: run.PartText, AgentID: "router", Text: "Asking the expert."},
		{Type: run.PartText, AgentID: "expert", Text: "It is \"42\"\n— sure."},
		{Type: run.PartText, AgentID: "expert", Text: "Checked."},
	}
	if len(parts) != len(want) {
		t.Fatalf("parts %+v, want %+v", parts, want)
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Errorf("part %d: %+v, want %+v", i, parts[i], want[i])
		}
	}
	if text, parts := run.Streamed(nil); text != "" || parts != nil {
		t.Errorf("no events gave %q, %+v", text, parts)
	}
}

// A run whose process died is followed to its end: failed for the dead
// process, its followers get the error and run.finished and stop; one marked
// finished without a final event stops its followers too, and its replay
// still ends with run.finished, made from the stored run. A client resuming
// after an event the store never got gets the end numbered after it.
func TestFollowARunWhoseProcessDied(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail func(t *testing.T, st run.Store, r *run.Run)
	}{
		{"failed with its events closed", func(t *testing.T, st run.Store, r *run.Run) {
			if n, err := st.FailStaleRuns(t.Context(), time.Now().Add(time.Hour), "the process running it stopped"); err != nil || n != 1 {
				t.Fatalf("FailStaleRuns = %d, %v", n, err)
			}
		}},
		{"failed without a final event", func(t *testing.T, st run.Store, r *run.Run) {
			now := time.Now()
			r.Status, r.Error, r.FinishedAt = run.StatusFailed, "the process running it stopped", &now
			if err := st.UpdateRun(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, llmtest.New())
			st := b.svc.Store
			ctx := t.Context()
			now := time.Now()
			conv := &run.Conversation{ID: "conv_dead", UserID: b.user.ID, AgentID: "calc", CreatedAt: now, UpdatedAt: now}
			msg := &run.Message{ID: "msg_dead", ConversationID: conv.ID, Role: run.RoleUser, Text: "hi"}
			r := &run.Run{ID: "run_dead", UserID: b.user.ID, AgentID: "calc", ConversationID: conv.ID, UserMessageID: msg.ID,
				Status: run.StatusRunning, StartedAt: &now}
			if err := st.StartRun(ctx, &run.RunStart{Conversation: conv, NewConversation: true, Message: msg, Run: r}); err != nil {
				t.Fatal(err)
			}
			if err := st.AppendEvents(ctx, []run.Event{
				{RunID: r.ID, Seq: 1, Type: run.EventRunStarted, Data: []byte(`{"run_id":"run_dead"}`)},
				{RunID: r.ID, Seq: 2, Type: run.EventMessageDelta, Data: []byte(`{"agent_id":"calc","text":"Half"}`)},
			}); err != nil {
				t.Fatal(err)
			}
			evs, ch, stop, err := b.svc.Subscribe(ctx, b.user, r.ID, 0)
			if err != nil || ch == nil {
				t.Fatalf("Subscribe to the running run: channel %v, %v", ch, err)
			}
			defer stop()
			tt.fail(t, st, r)
			timeout := time.After(20 * time.Second)
			for open := true; open; {
				select {
				case e, ok := <-ch:
					if ok {
						evs = append(evs, e)
					}
					open = ok
				case <-timeout:
					t.Fatalf("the follower of a failed run did not stop; got %d events", len(evs))
				}
			}
			// A replay from the start, and one from the last event seen, end with run.finished.
			all, ch, stop2, err := b.svc.Subscribe(ctx, b.user, r.ID, 0)
			stop2()
			if err != nil || ch != nil || len(all) == 0 || all[len(all)-1].Type != run.EventRunFinished ||
				!strings.Contains(string(all[len(all)-1].Data), `"status":"failed"`) {
				t.Fatalf("replay of the failed run: %v, channel %v, %v; want it to end with run.finished, failed", all, ch, err)
			}
			for i, e := range all {
				if e.Seq != int64(i+1) {
					t.Errorf("replayed event %d has seq %d", i, e.Seq)
				}
			}
			last := all[len(all)-1].Seq
			rest, _, stop3, err := b.svc.Subscribe(ctx, b.user, r.ID, last)
			stop3()
			if err != nil || len(rest) != 0 {
				t.Errorf("replay after run.finished (%d): %v, %v; want nothing more", last, rest, err)
			}
			rest, _, stop4, err := b.svc.Subscribe(ctx, b.user, r.ID, 2)
			stop4()
			if err != nil || len(rest) == 0 || rest[len(rest)-1].Type != run.EventRunFinished {
				t.Errorf("replay after the last delta: %v, %v; want it to end with run.finished", rest, err)
			}
			// A client that had events the store never got (streamed by the
			// process before it was taken for dead) gets the end after them.
			rest, _, stop5, err := b.svc.Subscribe(ctx, b.user, r.ID, 91)
			stop5()
			if err != nil || len(rest) != 2 || rest[0].Type != run.EventError || rest[0].Seq != 92 ||
				rest[1].Type != run.EventRunFinished || rest[1].Seq != 93 || !strings.Contains(string(rest[1].Data), `"status":"failed"`) {
				t.Errorf("replay after an event past the stored ones (91): %v, %v; want the error and run.finished, failed, as 92 and 93", rest, err)
			}
		})
	}
}

// Follow yields a run's events after a seq, stored ones then live ones, each
// once and in order, and ends after run.finished: in the process running the
// run and in another one; a run the user may not see is an error, first.
func TestFollow(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"one ", "two ", "three ", "four"}, Delay: 100 * time.Millisecond})
	b := setup(t, model)
	other := &run.Service{Store: b.svc.Store, Prep: b.svc.Prep, Models: b.svc.Models, MCP: b.svc.MCP, Log: discard()}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "count"})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's run, live in this process (it streams for 400 ms), is
	// not found in either.
	bob, err := auth.NewService(b.svc.Store.(*store.DB), nil).CreateUser(ctx, auth.NewUser{Email: "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for name, svc := range map[string]*run.Service{"this process": b.svc, "another process": other} {
		for _, err := range svc.Follow(ctx, bob, r.ID, 0) {
			if !fault.Is(err, fault.NotFound) {
				t.Errorf("%s: another user following the run: %v; want not found", name, err)
			}
			break
		}
	}
	for name, svc := range map[string]*run.Service{"this process": b.svc, "another process": other} {
		var seqs []int64
		var last run.Event
		for e, err := range svc.Follow(ctx, b.user, r.ID, 2) {
			if err != nil {
				t.Fatalf("%s: %v after %v", name, err, seqs)
			}
			seqs, last = append(seqs, e.Seq), e
		}
		for i, s := range seqs {
			if s != int64(i+3) {
				t.Fatalf("%s: seqs %v; want 3, 4, … each once", name, seqs)
			}
		}
		p, err := last.Payload()
		if f, ok := p.(run.RunFinished); err != nil || !ok || f.Status != run.StatusSucceeded || f.Message == nil || f.Message.Text != "one two three four" {
			t.Errorf("%s: last event %s %s; want run.finished with the answer", name, last.Type, last.Data)
		}
	}
	for _, err := range b.svc.Follow(ctx, b.user, "run_nope", 0) {
		if !fault.Is(err, fault.NotFound) {
			t.Errorf("following an unknown run: %v; want not found", err)
		}
	}
}

// FollowBursts yields the same events as Follow, each once and in order,
// those there at once together: a finished run's stored events in one burst.
func TestFollowBursts(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"one ", "two ", "three"}, Delay: 50 * time.Millisecond})
	b := setup(t, model)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "count"})
	if err != nil {
		t.Fatal(err)
	}
	seqs := func(after int64) (all []int64, bursts int, last run.Event) {
		t.Helper()
		for evs, err := range b.svc.FollowBursts(ctx, b.user, r.ID, after) {
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				t.Fatal("an empty burst")
			}
			bursts++
			for _, e := range evs {
				all, last = append(all, e.Seq), e
			}
		}
		return all, bursts, last
	}
	// Waiting for the end alone, while the run streams and once it is over.
	end := func() {
		t.Helper()
		var got []run.Event
		for evs, err := range b.svc.FollowEnd(ctx, b.user, r.ID) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, evs...)
		}
		if len(got) != 1 || got[0].Type != run.EventRunFinished {
			t.Errorf("FollowEnd yielded %v; want run.finished alone", got)
		}
	}
	end()
	end()
	live, _, last := seqs(0)
	if last.Type != run.EventRunFinished {
		t.Errorf("following live ended with %s", last.Type)
	}
	for i, s := range live {
		if s != int64(i+1) {
			t.Fatalf("seqs %v; want 1, 2, … each once", live)
		}
	}
	stored, bursts, last := seqs(2)
	if bursts != 1 || last.Type != run.EventRunFinished || len(stored) != len(live)-2 || stored[0] != 3 {
		t.Errorf("the finished run after 2: %d bursts of seqs %v ending with %s; want one of 3 to %d", bursts, stored, last.Type, len(live))
	}
}

// gatedModel streams first pieces of text, then waits for gate before the
// rest; emitted is closed once the first are all handed on.
type gatedModel struct {
	first, rest   int
	emitted, gate chan struct{}
}

func (m *gatedModel) Stream(ctx context.Context, _ *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	var text strings.Builder
	piece := func(i int) {
		s := fmt.Sprintf("%d ", i)
		text.WriteString(s)
		emit(llm.Event{Kind: llm.EventText, Text: s})
	}
	for i := range m.first {
		piece(i)
	}
	close(m.emitted)
	select {
	case <-m.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for i := range m.rest {
		piece(m.first + i)
	}
	return &llm.Turn{Text: text.String(), FinishReason: "stop"}, nil
}

// A follower that stops reading while the run streams far more events than a
// subscriber may be behind is dropped and catches up: it still gets every
// event once and in order, the stored ones and those still to come.
func TestFollowBehind(t *testing.T) {
	m := &gatedModel{first: 3 * 256, rest: 20, emitted: make(chan struct{}), gate: make(chan struct{})}
	b := setup(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "count"})
	if err != nil {
		t.Fatal(err)
	}
	var (
		seqs []int64
		text strings.Builder
		last run.Event
	)
	paused := false
	for evs, err := range b.svc.FollowBursts(ctx, b.user, r.ID, 0) {
		if err != nil {
			t.Fatalf("%v after %d events", err, len(seqs))
		}
		for _, e := range evs {
			seqs, last = append(seqs, e.Seq), e
			if p, err := e.Payload(); err == nil {
				if d, ok := p.(run.MessageDelta); ok {
					text.WriteString(d.Text)
				}
			}
		}
		if !paused { // behind by every piece of the first part, with the run still going
			paused = true
			<-m.emitted
			close(m.gate)
		}
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seq %d at %d of %d events; want 1, 2, … each once", s, i, len(seqs))
		}
	}
	var want strings.Builder
	for i := range m.first + m.rest {
		fmt.Fprintf(&want, "%d ", i)
	}
	if text.String() != want.String() {
		t.Errorf("followed text %q…; want %q…", text.String()[:min(40, text.Len())], want.String()[:40])
	}
	p, err := last.Payload()
	if f, ok := p.(run.RunFinished); err != nil || !ok || f.Status != run.StatusSucceeded {
		t.Errorf("last event %s %s; want run.finished, succeeded", last.Type, last.Data)
	}
}
