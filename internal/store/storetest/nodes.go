package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
)

// onNode returns s with its new runs naming node; the suite skips the test for
// a store that cannot.
func onNode(t *testing.T, s store.Store, node string) store.Store {
	t.Helper()
	db, ok := s.(*store.DB)
	if !ok {
		t.Skipf("%T cannot name the node of its runs", s)
	}
	return db.OnNode(node)
}

func newNode(minute int) *schedule.Node {
	return &schedule.Node{ID: newID("node_"), Host: "host-a", PID: 4242, StartedAt: at(minute), HeartbeatAt: at(minute)}
}

func registerNode(t *testing.T, s store.Store, n *schedule.Node) *schedule.Node {
	t.Helper()
	must(t, s.RegisterNode(t.Context(), n), "RegisterNode")
	return n
}

// reap calls ReapNode with the reason every test uses.
func reap(t *testing.T, s store.Store, id string, seen time.Time) (schedule.Reaped, bool) {
	t.Helper()
	r, ok, err := s.ReapNode(t.Context(), id, seen, schedule.ReasonDead)
	must(t, err, "ReapNode "+id)
	return r, ok
}

var nodeTests = []test{
	{"ReapedNodeStoresNothingOfItsRuns", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		n := registerNode(t, s, newNode(1))
		onN := onNode(t, s, n.ID)
		c := newChat(t, onN, "reaped@example.com")
		must(t, onN.WriteBatch(ctx, &run.Batch{Events: []run.Event{event(c.run.ID, 1, `{}`)}}), "WriteBatch of a live node")
		if _, ok := reap(t, s, n.ID, at(1)); !ok {
			t.Fatal("ReapNode did not reap")
		}
		failed := getRun(t, s, c.run.ID)
		evs := listEvents(t, s, c.run.ID, 0)

		// What the process goes on with once it resumes is refused, whole.
		answer := newMessage(c.conv.ID, c.msg.ID, run.RoleAssistant, "Late", 9)
		answer.RunID = c.run.ID
		end := *c.run
		done := at(9)
		end.Status, end.FinishedAt, end.ResponseMessageID = run.StatusSucceeded, &done, answer.ID
		err := onN.WriteBatch(ctx, &run.Batch{Events: []run.Event{event(c.run.ID, 2, `{}`), event(c.run.ID, 3, `{}`)},
			ToolCalls: []*run.ToolCall{toolCall(c.run.ID, "call_1", 4)}, Messages: []*run.Message{answer}, Runs: []*run.Run{&end}})
		if behind := writesBehind(s); behind && err != nil || !behind && !errors.Is(err, run.ErrTakenForDead) {
			t.Errorf("WriteBatch of a reaped node = %v; want run.ErrTakenForDead (none when written behind: it is logged)", err)
		}
		start := &run.RunStart{Conversation: c.conv, Message: newMessage(c.conv.ID, c.msg.ID, run.RoleUser, "More", 10),
			Run: newRun(c.user.ID, c.conv.ID, "", 10)}
		start.Run.UserMessageID = start.Message.ID
		if err := onN.StartRun(ctx, start); !errors.Is(err, run.ErrTakenForDead) {
			t.Errorf("StartRun of a reaped node = %v; want run.ErrTakenForDead", err)
		}
		if d := cmp.Diff(failed, getRun(t, s, c.run.ID)); d != "" {
			t.Errorf("the failed run after refused writes (-want +got):\n%s", d)
		}
		if d := cmp.Diff(evs, listEvents(t, s, c.run.ID, 0)); d != "" {
			t.Errorf("the failed run's events after refused writes (-want +got):\n%s", d)
		}
		if got := listToolCalls(t, s, c.run.ID); len(got) != 0 {
			t.Errorf("tool calls stored after the reap: %+v", got)
		}
		if _, err := s.GetRun(ctx, start.Run.ID); !fault.Is(err, fault.NotFound) {
			t.Errorf("a run started after the reap: %v; want none", err)
		}

		// Registered again, the node stores its new work.
		registerNode(t, s, &schedule.Node{ID: n.ID, Host: n.Host, PID: n.PID})
		must(t, onN.StartRun(ctx, start), "StartRun after registering again")
	}},
	{"RegisterGetList", func(t *testing.T, s store.Store) {
		a := registerNode(t, s, newNode(1))
		b := registerNode(t, s, &schedule.Node{ID: newID("node_"), Host: "host-b", PID: 1})
		wantUTC(t, "node", a.StartedAt, a.HeartbeatAt, b.StartedAt, b.HeartbeatAt)
		if !b.HeartbeatAt.Equal(b.StartedAt) || b.StartedAt.IsZero() {
			t.Errorf("zero times: started %v, heartbeat %v; want both now", b.StartedAt, b.HeartbeatAt)
		}
		got, err := s.GetNode(t.Context(), a.ID)
		must(t, err, "GetNode")
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("GetNode (-want +got):\n%s", diff)
		}
		all, err := s.ListNodes(t.Context())
		must(t, err, "ListNodes")
		var ids []string
		for _, n := range all {
			if n.ID == a.ID || n.ID == b.ID {
				ids = append(ids, n.ID)
			}
		}
		if diff := cmp.Diff([]string{a.ID, b.ID}, ids); diff != "" {
			t.Errorf("ListNodes, oldest first (-want +got):\n%s", diff)
		}
		wantKind(t, s.RegisterNode(t.Context(), &schedule.Node{ID: a.ID}), fault.Conflict, "RegisterNode with a taken id")
		wantKind(t, s.RegisterNode(t.Context(), &schedule.Node{}), fault.Invalid, "RegisterNode without an id")
		_, err = s.GetNode(t.Context(), "node_missing")
		wantKind(t, err, fault.NotFound, "GetNode of a missing node")
	}},
	{"Heartbeat", func(t *testing.T, s store.Store) {
		n := registerNode(t, s, newNode(1))
		must(t, s.HeartbeatNode(t.Context(), n.ID, at(5)), "HeartbeatNode")
		got, err := s.GetNode(t.Context(), n.ID)
		must(t, err, "GetNode")
		if !got.HeartbeatAt.Equal(stored(at(5))) || !got.StartedAt.Equal(stored(at(1))) {
			t.Errorf("after a heartbeat at %v: %+v", at(5), got)
		}
		wantKind(t, s.HeartbeatNode(t.Context(), "node_missing", at(5)), fault.NotFound, "HeartbeatNode of a missing node")
	}},
	{"RunsNameTheirNode", func(t *testing.T, s store.Store) {
		c := newChat(t, onNode(t, s, "node_a"), "noded@example.com")
		got, err := s.(*store.DB).RunNode(t.Context(), c.run.ID)
		must(t, err, "RunNode")
		if got != "node_a" {
			t.Errorf("RunNode = %q, want node_a", got)
		}
		plain := newChat(t, s, "plain@example.com")
		if got, err := s.(*store.DB).RunNode(t.Context(), plain.run.ID); err != nil || got != "" {
			t.Errorf("RunNode of a run without a node = %q, %v; want \"\"", got, err)
		}
		_, err = s.(*store.DB).RunNode(t.Context(), "run_missing")
		wantKind(t, err, fault.NotFound, "RunNode of a missing run")
	}},
	{"AbortRequestsReachTheRunsNode", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a, b := onNode(t, s, "node_a").(*store.DB), onNode(t, s, "node_b").(*store.DB)
		c := newChat(t, a, "abort@example.com")
		for _, db := range []*store.DB{a, b} {
			ids, err := db.AbortRequests(ctx)
			if err != nil || len(ids) != 0 {
				t.Errorf("AbortRequests before any: %v, %v", ids, err)
			}
		}
		must(t, b.RequestAbort(ctx, c.run.ID), "RequestAbort from another node")
		if ids, err := a.AbortRequests(ctx); err != nil || len(ids) != 1 || ids[0] != c.run.ID {
			t.Errorf("AbortRequests of the run's node: %v, %v; want %s", ids, err, c.run.ID)
		}
		if ids, err := b.AbortRequests(ctx); err != nil || len(ids) != 0 {
			t.Errorf("AbortRequests of another node: %v, %v; want none", ids, err)
		}
		if ids, err := s.(*store.DB).AbortRequests(ctx); err != nil || len(ids) != 0 {
			t.Errorf("AbortRequests without a node: %v, %v; want none", ids, err)
		}
		// Once it has ended, it is no longer asked, nor can be.
		finishRun(t, s, c.run.ID)
		if ids, err := a.AbortRequests(ctx); err != nil || len(ids) != 0 {
			t.Errorf("AbortRequests after the run ended: %v, %v", ids, err)
		}
		wantKind(t, b.RequestAbort(ctx, c.run.ID), fault.Conflict, "RequestAbort of an ended run")
		wantKind(t, b.RequestAbort(ctx, "run_missing"), fault.NotFound, "RequestAbort of a missing run")
		// A run of a process without a node (a command line's) cannot be asked.
		plain := newChat(t, s, "plain-abort@example.com")
		wantKind(t, a.RequestAbort(ctx, plain.run.ID), fault.Conflict, "RequestAbort of a command line's run")
	}},
	{"ReapFailsOnlyTheDeadNodesUnfinishedWork", func(t *testing.T, s store.Store) {
		dead, alive := registerNode(t, s, newNode(1)), registerNode(t, s, newNode(1))
		u := createUser(t, s, "reap@example.com")
		onDead, onAlive := onNode(t, s, dead.ID), onNode(t, s, alive.ID)
		conv := createConversation(t, s, u.ID, 1)
		msg := addMessage(t, s, newMessage(conv.ID, "", run.RoleUser, "Hello", 2))
		mk := func(st store.Store, status run.Status) *run.Run {
			r := newRun(u.ID, conv.ID, msg.ID, 3)
			r.Status = status
			return createRun(t, st, r)
		}
		running, queued, done := mk(onDead, run.StatusRunning), mk(onDead, run.StatusQueued), mk(onDead, run.StatusSucceeded)
		other, unowned := mk(onAlive, run.StatusRunning), mk(s, run.StatusRunning)
		// The running run had streamed some text, stored both ways events are.
		delta := func(seq int64, text string) run.Event {
			e := event(running.ID, seq, `{"agent_id":"agent_helper","text":"`+text+`"}`)
			return e
		}
		must(t, s.WriteBatch(t.Context(), &run.Batch{Events: []run.Event{delta(1, "Half "), delta(2, "an ")}}), "WriteBatch")
		must(t, s.AppendEvents(t.Context(), []run.Event{delta(3, "answer")}), "AppendEvents")

		sc, aliveSc := createSchedule(t, s, newSchedule(u.ID, 1)), createSchedule(t, s, newSchedule(u.ID, 1))
		fire := func(sc *schedule.Schedule, by string, minute int, status schedule.FiringStatus) *schedule.Firing {
			f := newFiring(sc.ID, at(minute))
			f.ClaimedBy, f.Status = by, status
			must(t, s.CreateFiring(t.Context(), f), "CreateFiring")
			return f
		}
		deadFiring, deadDone := fire(sc, dead.ID, 20, schedule.FiringRunning), fire(sc, dead.ID, 21, schedule.FiringSkipped)
		aliveFiring := fire(aliveSc, alive.ID, 22, schedule.FiringRunning) // one schedule runs one firing at a time

		// Each node is ingesting a file.
		claim := func(st store.Store, name string) *file.Claim {
			createFile(t, s, u.ID, name)
			c, ok, err := st.ClaimFile(t.Context(), time.Now(), time.Hour)
			must(t, err, "ClaimFile")
			if !ok || c.File.Name != name {
				t.Fatalf("ClaimFile = %+v, %v; want %s", c, ok, name)
			}
			return c
		}
		deadFile, aliveFile := claim(onDead, "dead.pdf"), claim(onAlive, "alive.pdf")

		// A heartbeat after what the reaper saw keeps the node.
		must(t, s.HeartbeatNode(t.Context(), dead.ID, at(2)), "HeartbeatNode")
		if r, ok := reap(t, s, dead.ID, at(1)); ok || !cmp.Equal(r, schedule.Reaped{}) {
			t.Fatalf("reaping a node that heartbeated since = %+v, %v; want nothing", r, ok)
		}
		if got := getRun(t, s, running.ID); got.Status != run.StatusRunning {
			t.Fatalf("a refused reap changed run %s to %s", got.ID, got.Status)
		}

		r, ok := reap(t, s, dead.ID, at(2))
		if want := (schedule.Reaped{Runs: 2, Firings: 1, Files: 1, FiringIDs: []string{deadFiring.ID}}); !ok || !cmp.Equal(r, want) {
			t.Errorf("ReapNode = %+v, %v; want 2 runs, 1 firing (%s) and 1 file", r, ok, deadFiring.ID)
		}
		// The dead node's file is pending again, at once (its lease has an hour
		// to go), and its old claim is void; the live node's is untouched.
		if f, err := s.GetFile(t.Context(), deadFile.File.ID); err != nil || f.Status != file.Pending {
			t.Errorf("the dead node's file: %+v, %v; want pending", f, err)
		}
		wantKind(t, s.UpdateFileProgress(t.Context(), deadFile, 50, time.Now().Add(time.Hour)), fault.Conflict, "progress on a reaped claim")
		if f, err := s.GetFile(t.Context(), aliveFile.File.ID); err != nil || f.Status != file.Processing {
			t.Errorf("the live node's file: %+v, %v; want processing", f, err)
		}
		if c, ok, err := s.ClaimFile(t.Context(), time.Now(), time.Hour); err != nil || !ok || c.File.ID != deadFile.File.ID {
			t.Errorf("claiming after the reap = %+v, %v, %v; want the dead node's file", c, ok, err)
		}
		for _, tc := range []struct {
			r    *run.Run
			want run.Status
		}{{running, run.StatusFailed}, {queued, run.StatusFailed}, {done, run.StatusSucceeded},
			{other, run.StatusRunning}, {unowned, run.StatusRunning}} {
			got := getRun(t, s, tc.r.ID)
			if got.Status != tc.want {
				t.Errorf("run %s (was %s) is %s, want %s", got.ID, tc.r.Status, got.Status, tc.want)
			}
			if tc.want == run.StatusFailed && (got.Error != schedule.ReasonDead || got.FinishedAt == nil) {
				t.Errorf("failed run: error %q, finished %v; want %q and a finish time", got.Error, got.FinishedAt, schedule.ReasonDead)
			}
			if tc.want == run.StatusFailed {
				wantClosed(t, s, got, schedule.ReasonDead)
				// The conversation gets an answer that says why the run stopped,
				// after what the run had streamed.
				m, err := s.GetMessage(t.Context(), got.ResponseMessageID)
				if err != nil || m.Role != run.RoleAssistant || m.ParentID != msg.ID || m.RunID != got.ID || len(m.Parts) == 0 ||
					m.Parts[len(m.Parts)-1].Type != run.PartError || m.Parts[len(m.Parts)-1].Text != schedule.ReasonDead {
					t.Fatalf("the failed run's answer %q: %+v, %v; want an assistant message with the reason as an error part", got.ResponseMessageID, m, err)
				}
				wantText, wantParts := "", 1
				if tc.r == running {
					wantText, wantParts = "Half an answer", 2
				}
				if m.Text != wantText || len(m.Parts) != wantParts || wantParts == 2 &&
					(m.Parts[0] != run.Part{Type: run.PartText, AgentID: "agent_helper", Text: wantText}) {
					t.Errorf("run %s's answer: text %q, parts %+v; want %q before the error", got.ID, m.Text, m.Parts, wantText)
				}
			}
		}
		if got := getFiring(t, s, deadFiring.ID); got.Status != schedule.FiringFailed || got.Error != schedule.ReasonDead || got.FinishedAt == nil {
			t.Errorf("the dead node's running firing: %+v", got)
		}
		if got := getFiring(t, s, deadDone.ID); got.Status != schedule.FiringSkipped {
			t.Errorf("the dead node's skipped firing became %s", got.Status)
		}
		if got := getFiring(t, s, aliveFiring.ID); got.Status != schedule.FiringRunning {
			t.Errorf("the live node's firing became %s", got.Status)
		}
		if f, err := s.RunningFiring(t.Context(), sc.ID); err != nil || f != nil {
			t.Errorf("RunningFiring of the dead node's schedule = %v, %v; want none", f, err)
		}
		if f, err := s.RunningFiring(t.Context(), aliveSc.ID); err != nil || f == nil || f.ID != aliveFiring.ID {
			t.Errorf("RunningFiring of the live node's schedule = %v, %v; want its firing", f, err)
		}
		_, err := s.GetNode(t.Context(), dead.ID)
		wantKind(t, err, fault.NotFound, "GetNode of a reaped node")
		wantKind(t, s.HeartbeatNode(t.Context(), dead.ID, at(9)), fault.NotFound, "HeartbeatNode of a reaped node")
		if r, ok := reap(t, s, dead.ID, at(9)); ok || !cmp.Equal(r, schedule.Reaped{}) {
			t.Errorf("reaping again = %+v, %v; want nothing", r, ok)
		}
		if _, err := s.GetNode(t.Context(), alive.ID); err != nil {
			t.Errorf("the live node: %v", err)
		}
	}},
}

// ReapRace checks that a dead node is reaped exactly once when several
// processes find it dead at once. The stores must share one database. It
// registers rounds dead nodes, each with a running run, and has reapers
// goroutines per store reap each one at once: exactly one must win.
func ReapRace(t *testing.T, stores []store.Store, reapers, rounds int) {
	t.Helper()
	ctx := t.Context()
	s := stores[0]
	u := createUser(t, s, "reap-race@example.com")
	for round := range rounds {
		n := registerNode(t, s, newNode(round%60))
		c := createConversation(t, s, u.ID, 1)
		m := addMessage(t, s, newMessage(c.ID, "", run.RoleUser, "Hello", 2))
		r := newRun(u.ID, c.ID, m.ID, 3)
		r.Status = run.StatusRunning
		createRun(t, onNode(t, s, n.ID), r)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			total = len(stores) * reapers
			won   = make([]bool, total)
			got   = make([]schedule.Reaped, total)
			errs  = make([]error, total)
		)
		for i := range total {
			wg.Go(func() {
				<-start
				got[i], won[i], errs[i] = stores[i/reapers].ReapNode(ctx, n.ID, n.HeartbeatAt, schedule.ReasonDead)
			})
		}
		close(start)
		wg.Wait()
		var winners []string
		for i := range total {
			who := fmt.Sprintf("store %d, reaper %d", i/reapers, i%reapers)
			switch {
			case errs[i] != nil:
				t.Errorf("round %d, %s: ReapNode: %v", round, who, errs[i])
			case won[i]:
				winners = append(winners, who)
				if !cmp.Equal(got[i], schedule.Reaped{Runs: 1}) {
					t.Errorf("round %d, %s reaped %+v, want the one run", round, who, got[i])
				}
			}
		}
		if len(winners) != 1 {
			t.Errorf("round %d: %d reapers won (%v), want exactly one", round, len(winners), winners)
		}
		if got := getRun(t, s, r.ID); got.Status != run.StatusFailed {
			t.Errorf("round %d: the dead node's run is %s", round, got.Status)
		}
	}
}

// ReapWhileWriting checks that a node's writes and its reap by another
// process, racing, leave each run one way or the other and never half: the
// run ended by its own process (succeeded, the reap finding nothing to fail)
// or failed by the reap, its process's later writes refused whole with
// run.ErrTakenForDead. Either way its events are numbered without a gap and
// end with the one run.finished. The reap starts after round%4 of the run's
// four batches, racing the next one. stores[0] is the node's process,
// stores[1] the reaper's; they must share one database.
func ReapWhileWriting(t *testing.T, stores []store.Store, rounds int) {
	t.Helper()
	ctx := t.Context()
	u := createUser(t, stores[0], "reap-write@example.com")
	outcomes := map[run.Status]int{}
	for round := range rounds {
		n := registerNode(t, stores[0], newNode(round%60))
		onN := onNode(t, stores[0], n.ID)
		c := createConversation(t, onN, u.ID, 1)
		m := addMessage(t, onN, newMessage(c.ID, "", run.RoleUser, "Hello", 2))
		r := newRun(u.ID, c.ID, m.ID, 3)
		r.Status = run.StatusRunning
		createRun(t, onN, r)

		var (
			wg       sync.WaitGroup
			reap     = make(chan struct{})
			writeErr error
			reaped   schedule.Reaped
			won      bool
			reapErr  error
		)
		wg.Go(func() {
			for batch := range 3 {
				if batch == round%4 {
					close(reap)
				}
				seq := int64(1 + 2*batch)
				if writeErr = onN.WriteBatch(ctx, &run.Batch{Events: []run.Event{event(r.ID, seq, `{"text":"a"}`), event(r.ID, seq+1, `{"text":"b"}`)}}); writeErr != nil {
					if batch < round%4 {
						close(reap)
					}
					return
				}
			}
			if round%4 == 3 {
				close(reap)
			}
			answer := newMessage(c.ID, m.ID, run.RoleAssistant, "ab", 9)
			answer.RunID = r.ID
			end := *r
			done := at(9)
			end.Status, end.FinishedAt, end.ResponseMessageID = run.StatusSucceeded, &done, answer.ID
			last := event(r.ID, 7, `{}`)
			last.Type = run.EventRunFinished
			writeErr = onN.WriteBatch(ctx, &run.Batch{Events: []run.Event{last}, Messages: []*run.Message{answer}, Runs: []*run.Run{&end}})
		})
		wg.Go(func() {
			<-reap
			reaped, won, reapErr = stores[1].ReapNode(ctx, n.ID, n.HeartbeatAt, schedule.ReasonDead)
		})
		wg.Wait()

		if reapErr != nil || !won {
			t.Fatalf("round %d: ReapNode = %v, %v; want the dead node reaped", round, won, reapErr)
		}
		if writeErr != nil && !errors.Is(writeErr, run.ErrTakenForDead) {
			t.Fatalf("round %d: a write = %v; want nil or run.ErrTakenForDead", round, writeErr)
		}
		got := getRun(t, stores[1], r.ID)
		outcomes[got.Status]++
		switch {
		case got.Status == run.StatusSucceeded && writeErr == nil && reaped.Runs == 0:
		case got.Status == run.StatusFailed && got.Error == schedule.ReasonDead && errors.Is(writeErr, run.ErrTakenForDead) && reaped.Runs == 1:
		default:
			t.Errorf("round %d: run %s (%q), the writes' error %v, reaped %+v: want succeeded with no error and nothing reaped, or failed for the reap with the writes refused",
				round, got.Status, got.Error, writeErr, reaped)
		}
		evs := listEvents(t, stores[1], r.ID, 0)
		finished := 0
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Errorf("round %d: event %d has seq %d", round, i, e.Seq)
			}
			if e.Type == run.EventRunFinished {
				finished++
			}
		}
		if finished != 1 || len(evs) == 0 || evs[len(evs)-1].Type != run.EventRunFinished {
			t.Errorf("round %d: %d events, %d run.finished; want one, last", round, len(evs), finished)
		}
	}
	t.Logf("%d rounds: %v", rounds, outcomes)
}
