package run

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/turn"
)

// Models resolves an agent's provider and model to a client and the family its
// tool results are formatted for, for the user whose run (or conversation) it
// serves: an endpoint may send each user's own key or reach each user's own
// base URL (docs/config.md, "Keys each user provides"). A user who has not
// set what the endpoint takes gets a *KeyRequiredError.
type Models func(ctx context.Context, userID, provider, model string) (llm.Model, mcp.Family, error)

// KeyRequiredError says that an endpoint takes each user's own API key or
// base URL, and that the user has not set it. It is an invalid request
// (fault.Invalid), and it never holds a value.
type KeyRequiredError struct {
	// Endpoint is the endpoint's name as configured.
	Endpoint string
	// Missing are the fields the user must set: "apiKey", "baseURL".
	Missing []string
}

func (e *KeyRequiredError) Error() string {
	var what []string
	for _, f := range e.Missing {
		switch f {
		case "apiKey":
			what = append(what, "API key")
		case "baseURL":
			what = append(what, "base URL")
		default:
			what = append(what, f)
		}
	}
	return fmt.Sprintf("endpoint %q needs your own %s: set it on the Connections page or with relay endpoints key %s",
		e.Endpoint, strings.Join(what, " and "), e.Endpoint)
}

// Unwrap classifies the error as fault.Invalid, with its own text as the
// message a client sees.
func (e *KeyRequiredError) Unwrap() error { return fault.New(fault.Invalid, "%s", e.Error()) }

// Service runs agents for users: it saves the message, runs the agents its
// agent reaches (graph.Execute), preparing each one's request, streams and
// stores every event, and saves the answer.
type Service struct {
	Store    Store
	Prep     *Preparer
	Models   Models
	MCP      *mcp.Manager
	Builtins map[string]tool.Tool
	Log      *slog.Logger
	// Telemetry measures and traces runs and their agents' turns
	// (docs/observability.md); nil measures nothing.
	Telemetry *telemetry.Telemetry
	// Parallel bounds a turn's concurrent tool calls (default 4); ToolTimeout
	// bounds each one (default none beyond the server's own).
	Parallel    int
	ToolTimeout time.Duration
	// StepLimit caps an agent's recursion_limit (endpoints.agents.maxRecursionLimit)
	// and DefaultSteps applies when it sets none (endpoints.agents.recursionLimit).
	StepLimit, DefaultSteps int
	// After is the work that follows a finished run (a conversation's title,
	// the memory agent): each function is called on a goroutine of its own
	// once the run's final state is stored, so that it never delays the
	// answer. Settle waits for it.
	After []func(ctx context.Context, f *Finished)
	// Admit, when set, is asked before a run starts, after its request is
	// checked: the per-user quotas (docs/config.md "limits"). Its error
	// refuses the run. Of the two functions it returns, end is called once
	// the run has ended, and refund instead when the run was not started
	// after all (the store refused it: its conversation is answering
	// another message, on this process or another), so that a refused
	// message spends nothing of the quotas.
	Admit func(ctx context.Context, u *auth.User) (end, refund func(), err error)
	// AbortEvery is how often, while this process runs runs, it looks for
	// aborts of them asked in other processes (RequestAbort); 0 means every
	// second.
	AbortEvery time.Duration
	// TakenForDead, when set, is called when the store refuses a write of
	// this process because its node was reaped: another process took it for
	// dead and failed its runs. The runs of that write are given up at once;
	// TakenForDead is to have the process give up the others (Abandon) and
	// register again (schedule.Liveness.Lost). It must not block.
	TakenForDead func()

	after sync.WaitGroup
	// fence is held (shared) while a run's start or a batch of records is
	// stored, and by Abandon alone while it gives up the runs, so that
	// nothing that began before Abandon is stored after it.
	fence   sync.RWMutex
	workers workers // the goroutines runs execute on
	mu      sync.Mutex
	live    map[string]*liveRun
	w       *writer
	// waiting wakes the questions of this process's runs when their answer
	// comes to this process (Answer), by question id.
	waiting map[string]chan struct{}
	// unstored are the final states of this process's runs that the store
	// refused for good (the database was away longer than the writer
	// waits), by conversation: stored still as running, each would keep its
	// conversation from answering another message (StartRun). The next
	// message to the conversation stores it first.
	unstored map[string]*Run
	// watching says a goroutine looks for aborts asked elsewhere
	// (watchAborts); it runs while runs are live.
	watching bool
}

// writer returns the Service's writer, made on first use.
func (s *Service) writer() *writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		s.w = newWriter(s)
	}
	return s.w
}

// liveRun is a run in progress in this process: its subscribers, its events
// not yet written, and its abort.
type liveRun struct {
	id      string
	userID  string // whose run it is
	mu      sync.Mutex
	seq     int64
	subs    map[*sub]struct{}
	pending []Event // emitted, not yet known to be stored; oldest first
	queued  bool    // the writer knows that pending has events
	ended   bool    // every event is stored and the subscriptions are closed
	// abandoned says the run was given up: nothing more of it is stored
	// (Service.Abandon).
	abandoned bool
	stored    int64 // the seq of the last event the writer took out of pending
	cancel    context.CancelCauseFunc
	done      chan struct{}
	release   func() // Service.Admit's, or nothing
}

// unsubscribe returns the function that ends sb's subscription (once); the
// subscription also ends when the run does.
func (lr *liveRun) unsubscribe(sb *sub) func() {
	return func() {
		lr.mu.Lock()
		if _, ok := lr.subs[sb]; ok {
			delete(lr.subs, sb)
			sb.close()
		}
		lr.mu.Unlock()
	}
}

// next numbers a new event of the run. lr.mu must be held.
func (lr *liveRun) next(p Payload) Event {
	lr.seq++
	return newEvent(lr.id, lr.seq, p)
}

// deliver hands e to every subscriber; lr.mu must be held. A subscriber that
// cannot keep up (subBuffer events behind) is dropped and catches up from the
// store and pending.
func (lr *liveRun) deliver(e Event) {
	for sb := range lr.subs {
		if !sb.put(e) {
			delete(lr.subs, sb)
		}
	}
}

// end closes the subscriptions of a run whose events are all stored.
func (lr *liveRun) end() {
	lr.mu.Lock()
	lr.ended = true
	for sb := range lr.subs {
		sb.close()
		delete(lr.subs, sb)
	}
	lr.mu.Unlock()
}

// ChatRequest is a user's message to an agent.
type ChatRequest struct {
	AgentID         string `json:"agent_id"`
	Text            string `json:"text"`
	ConversationID  string `json:"conversation_id,omitempty"`
	ParentMessageID string `json:"parent_message_id,omitempty"`
	Timezone        string `json:"timezone,omitempty"`
	// Images are pictures sent with the message, for models that see images.
	Images []Image `json:"images,omitempty"`
	// Files are ids of the user's files to attach to the conversation with this
	// message; files attached earlier on the branch stay attached.
	Files []string `json:"files,omitempty"`
	// Title names a new conversation; empty means one made from Text, which a
	// title model may replace after the first run (Titler).
	Title string `json:"-"`
	// KeepTitle keeps a new conversation's title made from Text: no title
	// model is asked (a request of an OpenAI-compatible client, which has
	// no conversation list to show).
	KeepTitle bool `json:"-"`
	// Now is the time the message is sent as, for placeholders (a schedule's
	// fire time); zero means now.
	Now time.Time `json:"-"`
	// History, for a new conversation, is what came before Text (the messages an
	// OpenAI-compatible client sends); it is not stored as messages of its own.
	History []llm.Message `json:"-"`
	// Client is what an OpenAI-compatible client adds to its request; nil
	// for Relay's own API.
	Client *Client `json:"-"`
}

// NoParent, as a chat request's parent_message_id, makes the message a new
// first message of its conversation: a sibling of the first one, which starts
// a branch with no history (editing the first message, regenerating its
// answer). It is LibreChat's id of "no parent" (docs/api.md "POST /api/chat").
const NoParent = "00000000-0000-0000-0000-000000000000"

// subBuffer is how many events a subscriber may be behind before it is
// dropped, to catch up from the store.
const subBuffer = 256

// ErrAborted is the cause of a run a user aborted.
var ErrAborted = errors.New("aborted by the user")

// Start saves the user's message and starts a run answering it. The run goes
// on in the background (its context is detached from ctx); Follow it from
// seq 0 to miss nothing: its events come from memory until they are stored.
func (s *Service) Start(ctx context.Context, u *auth.User, req ChatRequest) (*Run, error) {
	if strings.TrimSpace(req.Text) == "" && !req.Client.continues() {
		return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid chat request", Fields: []fault.FieldError{{Field: "text", Message: "required"}}}
	}
	a, err := s.Prep.Agents.Get(ctx, u, req.AgentID)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	if err := checkImages(req.Images); err != nil {
		return nil, err
	}
	if req.Timezone != "" { // refused before anything is stored, not by the run
		if _, err := time.LoadLocation(req.Timezone); err != nil || req.Timezone == "Local" { // "Local" is Go's, the server's
			return nil, fault.New(fault.Invalid, "timezone: unknown time zone %q", req.Timezone)
		}
	}
	if err := s.checkClient(ctx, u, a, req.Client); err != nil {
		return nil, err
	}
	// A user who has not set the key their agent's endpoint takes from each
	// user is told before anything is stored; other failures to build the
	// client fail the run, as they always have.
	if _, _, err := s.Models(ctx, u.ID, a.Provider, a.Model); errors.As(err, new(*KeyRequiredError)) {
		return nil, err
	}
	added, err := s.attach(ctx, u, req.Files)
	if err != nil {
		return nil, err
	}
	conv, isNew, history, earlier, err := s.conversation(ctx, u, a, &req, now)
	if err != nil {
		return nil, err
	}
	if !isNew {
		s.storeUnstored(ctx, conv.ID)
	}
	userMsg := &Message{ID: ident.Ordered("msg_"), ConversationID: conv.ID, ParentID: req.ParentMessageID, Role: RoleUser, Text: req.Text, CreatedAt: now}
	for _, f := range added {
		userMsg.Parts = append(userMsg.Parts, Part{Type: PartFile, FileID: f.ID, Text: f.Filename})
	}
	userMsg.Parts = append(userMsg.Parts, imageParts(req.Images)...)
	attached, err := s.Prep.Attached(ctx, earlier, added)
	if err != nil {
		return nil, err
	}
	release, refund := func() {}, func() {}
	if s.Admit != nil {
		if release, refund, err = s.Admit(ctx, u); err != nil {
			return nil, err
		}
	}
	// The run is stored as running from the start: it starts at once.
	r := &Run{ID: ident.Ordered("run_"), UserID: u.ID, AgentID: a.ID, ConversationID: conv.ID, UserMessageID: userMsg.ID,
		Status: StatusRunning, CreatedAt: now, StartedAt: &now}
	// Until the run is live, a process found taken for dead waits to give it
	// up with the others (Abandon).
	s.fence.RLock()
	if err := s.Store.StartRun(ctx, &RunStart{Conversation: conv, NewConversation: isNew, Message: userMsg, Run: r}); err != nil {
		s.fence.RUnlock()
		refund()
		if errors.Is(err, ErrTakenForDead) {
			s.takenForDead()
		}
		return nil, err
	}
	lr := &liveRun{id: r.ID, userID: u.ID, pending: make([]Event, 0, 16), subs: map[*sub]struct{}{}, done: make(chan struct{}), release: release}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	lr.cancel = cancel
	s.mu.Lock()
	if s.live == nil {
		s.live = map[string]*liveRun{}
	}
	s.live[r.ID] = lr
	if !s.watching {
		s.watching = true
		go s.watchAborts()
	}
	s.mu.Unlock()
	s.fence.RUnlock()
	fin := &Finished{User: u, Agent: a, Run: r, Conversation: conv, NewConversation: isNew, Question: userMsg, Request: req}
	s.workers.Go(func() { s.execute(rctx, u, a, r, userMsg, history, attached, req, lr, fin) })
	return r, nil
}

// conversation returns the conversation of req, a new one (not yet stored, and
// isNew set) when it names none, with agent a and UpdatedAt now; and the
// messages on the branch that ends at req.ParentMessageID, with the ids of
// their files. A request naming a conversation but no parent continues from
// the conversation's latest message, the leaf of the branch written last, and
// req.ParentMessageID is set to it (docs/api.md "Conversations").
func (s *Service) conversation(ctx context.Context, u *auth.User, a *agent.Agent, req *ChatRequest, now time.Time) (c *Conversation, isNew bool, branch []llm.Message, files []string, err error) {
	// NoParent asks for a new first message: a branch from the start.
	newRoot := req.ParentMessageID == NoParent
	if newRoot {
		req.ParentMessageID = ""
	}
	if req.ConversationID == "" {
		if req.ParentMessageID != "" {
			return nil, false, nil, nil, fault.New(fault.Invalid, "parent_message_id needs a conversation_id")
		}
		title := FirstWords(req.Text)
		if req.Title != "" {
			title = strings.Join(strings.Fields(req.Title), " ")
		}
		c := &Conversation{ID: ident.Ordered("conv_"), UserID: u.ID, AgentID: a.ID, Title: title, CreatedAt: now, UpdatedAt: now}
		return c, true, req.History, nil, nil
	}
	c, err = s.Store.GetConversation(ctx, req.ConversationID)
	if err != nil {
		return nil, false, nil, nil, err
	}
	if c.UserID != u.ID {
		return nil, false, nil, nil, fault.New(fault.NotFound, "conversation %q not found", req.ConversationID)
	}
	msgs, err := s.Store.ListMessages(ctx, c.ID)
	if err != nil {
		return nil, false, nil, nil, err
	}
	byID := map[string]*Message{}
	for _, m := range msgs {
		byID[m.ID] = m
	}
	if req.ParentMessageID != "" && byID[req.ParentMessageID] == nil {
		return nil, false, nil, nil, fault.New(fault.Invalid, "parent_message_id %q is not a message of this conversation", req.ParentMessageID)
	}
	if req.ParentMessageID == "" && len(msgs) > 0 && !newRoot {
		// Listed oldest first: the last is the newest message, which nothing
		// answers yet, so a leaf.
		req.ParentMessageID = msgs[len(msgs)-1].ID
	}
	var path []*Message // the branch, newest first
	for id := req.ParentMessageID; id != ""; id = byID[id].ParentID {
		m := byID[id]
		path = append(path, m)
		files = append(fileIDs(m.Parts), files...)
		if byID[m.ParentID] == nil {
			break
		}
	}
	for _, m := range slices.Backward(path) {
		branch = append(branch, Replay(m)...)
	}
	// The conversation is now the agent's: the one its next message goes to
	// unless the client names another (docs/api.md "Runs and conversations").
	c.AgentID, c.UpdatedAt = a.ID, now
	return c, false, branch, files, nil
}

// execute runs the agent and records everything; the final status is written
// even when the run was aborted.
func (s *Service) execute(ctx context.Context, u *auth.User, a *agent.Agent, r *Run, userMsg *Message, history []llm.Message, attached []prompt.File, req ChatRequest, lr *liveRun, fin *Finished) {
	ctx, measured := s.Telemetry.StartRun(ctx, a.ID, r.ID, r.ConversationID)
	// What an endpoint's headers may quote, for the run's model requests and
	// those of the work that follows it (titles, memory).
	ctx = llm.WithConversation(ctx, llm.Conversation{ID: r.ConversationID, MessageID: userMsg.ID, ParentMessageID: userMsg.ParentID})
	log := s.Log.With(slog.String("run_id", r.ID), slog.String("agent", a.ID))
	s.emit(lr, RunStarted{RunID: r.ID, ConversationID: r.ConversationID, UserMessageID: userMsg.ID, AgentID: a.ID})

	answer := &Message{ID: ident.Ordered("msg_"), ConversationID: r.ConversationID, ParentID: userMsg.ID, Role: RoleAssistant, AgentID: a.ID, RunID: r.ID}
	rn := &runner{s: s, u: u, r: r, lr: lr, log: log, req: req, attached: attached}
	res, err := rn.flow(ctx, a, history)

	// The final state is written whatever happened, without the run's own
	// context: the model requests, the answer, the run and the last events, in
	// one transaction with whatever else of the run is waiting to be stored.
	rn.mu.Lock()
	requests, finish := rn.requests, rn.finish
	rn.mu.Unlock()
	r.Usage = res.Usage
	answer.Text, answer.Parts = res.Text, answerParts(res.Parts)
	answer.Sources = Sources(answer.Parts)
	finished := time.Now().UTC().Truncate(time.Microsecond) // as stored
	r.FinishedAt = &finished
	switch {
	case err == nil:
		r.Status = StatusSucceeded
	case errors.Is(context.Cause(ctx), ErrAborted):
		r.Status, r.Error = StatusCancelled, ErrAborted.Error()
	case errors.Is(context.Cause(ctx), ErrShutdown):
		r.Status, r.Error = StatusFailed, ErrShutdown.Error()
		answer.Parts = append(answer.Parts, Part{Type: PartError, AgentID: failedAgent(err, a.ID), Text: r.Error})
	default:
		r.Status, r.Error = StatusFailed, readable(err)
		answer.Parts = append(answer.Parts, Part{Type: PartError, AgentID: failedAgent(err, a.ID), Text: r.Error})
	}
	measured.End(string(r.Status))
	if r.Status != StatusSucceeded {
		answer.RunStatus = r.Status // as the answer is read from now on
	}
	answer.CreatedAt = finished
	r.ResponseMessageID = answer.ID
	end := &ending{lr: lr, run: r, answer: answer, requests: requests}
	lr.mu.Lock()
	if r.Status == StatusFailed {
		end.events = append(end.events, lr.next(RunError{Message: r.Error, AgentID: failedAgent(err, a.ID)}))
	}
	end.events = append(end.events, lr.next(RunFinished{Status: r.Status, Error: r.Error, Usage: r.Usage, Message: answer, FinishReason: finish}))
	lr.mu.Unlock()
	// The work that follows is counted before anyone can see the run end
	// (its run.finished event, its subscriptions, Wait), so that a Settle
	// called after that waits for it; it starts once the run is stored.
	s.after.Add(len(s.After))
	// So is the run's end for the quotas, so that a client that saw
	// run.finished may start its next run at once.
	lr.release()
	s.writer().finish(end)
	abandoned := lr.isAbandoned()
	if abandoned {
		// Another process failed the run: nothing of this end was stored,
		// and nothing follows it.
		s.after.Add(-len(s.After))
	} else {
		fin.Answer = answer
		for _, fn := range s.After {
			go func() {
				defer s.after.Done()
				fn(context.WithoutCancel(ctx), fin)
			}()
		}
	}
	lr.end()
	s.mu.Lock()
	delete(s.live, r.ID)
	s.mu.Unlock()
	close(lr.done)
	if abandoned {
		log.Warn("run given up: this process was taken for dead, and another one failed the run")
		return
	}
	log.Info("run finished", slog.String("status", string(r.Status)), slog.Int("model_requests", len(requests)))
}

// Finished is a run whose final state is stored, as the work that follows it
// sees it. It is shared by every function of Service.After: read it, never
// change it.
type Finished struct {
	User  *auth.User
	Agent *agent.Agent
	Run   *Run
	// Conversation is the run's conversation as it was when the run started;
	// NewConversation says the run created it.
	Conversation    *Conversation
	NewConversation bool
	// Question is the user's message and Answer the saved answer.
	Question, Answer *Message
	// Request is the message as the user sent it.
	Request ChatRequest
}

// userID is the id of the run's user, or the conversation's when the run
// names no user.
func (f *Finished) userID() string {
	switch {
	case f.User != nil:
		return f.User.ID
	case f.Conversation != nil:
		return f.Conversation.UserID
	}
	return ""
}

// Settle waits for the work that follows the runs finished so far
// (Service.After), or until ctx ends.
func (s *Service) Settle(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.after.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// readable is the error as a user reads it: classified messages as they are,
// anything else without internals.
func readable(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Error()
	}
	if errors.Is(err, turn.ErrStepLimit) {
		return err.Error()
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe.Error()
	}
	return "the run failed: " + err.Error()
}

// emit hands an event to the run's subscribers and queues it to be stored.
func (s *Service) emit(lr *liveRun, p Payload) {
	s.emitData(lr, p.kind(), Encode(p))
}

// emitText is emit for a piece of an agent's answer, the event streamed
// most, made without putting d in an interface (an allocation a token).
func (s *Service) emitText(lr *liveRun, d MessageDelta) {
	s.emitData(lr, EventMessageDelta, d.encode())
}

// emitData is emit for an event of kind k saying data.
func (s *Service) emitData(lr *liveRun, k Kind, data json.RawMessage) {
	lr.mu.Lock()
	lr.seq++
	e := eventOf(lr.id, lr.seq, k, data)
	lr.pending = append(lr.pending, e)
	queue := !lr.queued
	lr.queued = true
	lr.deliver(e)
	lr.mu.Unlock()
	if queue {
		s.writer().queue(lr)
	}
}

// keepUnstored notes the final state of a run that the store refused for
// good, to be stored before the next message to its conversation.
func (s *Service) keepUnstored(r *Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unstored == nil {
		s.unstored = map[string]*Run{}
	}
	s.unstored[r.ConversationID] = r
}

// storeUnstored stores the final state of the conversation's run that the
// store refused before, if there is one; it is kept for the next try when
// the store refuses it again.
func (s *Service) storeUnstored(ctx context.Context, convID string) {
	s.mu.Lock()
	r := s.unstored[convID]
	s.mu.Unlock()
	if r == nil {
		return
	}
	if err := s.Store.UpdateRun(ctx, r); err != nil {
		s.Log.Warn("storing the end of an earlier run of the conversation", slog.String("run_id", r.ID), slog.Any("err", err))
		return
	}
	s.mu.Lock()
	if s.unstored[convID] == r {
		delete(s.unstored, convID)
	}
	s.mu.Unlock()
}

// subscribe returns the run's events after seq `after` that are stored (and,
// for a run of this process, those not stored yet), and a feed of those still
// to come: nil when the run has already ended, else over when it ends or when
// the subscriber falls behind (it then subscribes again from its last seq). A
// run that another Relay process is running is followed through the
// database. With final, the feed of a run of this process carries only
// run.finished (the other events may still come, and are for the caller to
// pass over). Callers must call stop when done.
func (s *Service) subscribe(ctx context.Context, runID string, after int64, final bool) ([]Event, feed, func(), error) {
	s.mu.Lock()
	lr := s.live[runID]
	s.mu.Unlock()
	if lr == nil { // finished, or running in another process
		r, err := s.Store.GetRun(ctx, runID)
		if err != nil {
			return nil, nil, nil, err
		}
		evs, err := s.Store.ListEvents(ctx, runID, after)
		if err == nil && finished(r.Status) {
			evs, err = s.closed(ctx, r, after, evs)
		}
		if err != nil || finished(r.Status) || (len(evs) > 0 && evs[len(evs)-1].Type == EventRunFinished) {
			return evs, nil, func() {}, err
		}
		from := after
		if len(evs) > 0 {
			from = evs[len(evs)-1].Seq
		}
		ch, stop := s.follow(ctx, runID, from)
		return evs, chanFeed(ch), stop, nil
	}
	sb := &sub{final: final, wake: make(chan struct{}, 1)}
	lr.mu.Lock()
	var (
		evs []Event
		err error
	)
	// What is stored after `after` is still pending too, unless the writer
	// stored more than the subscriber has: only then is the store read.
	if after < lr.stored {
		evs, err = s.Store.ListEvents(ctx, runID, after)
	}
	ended := lr.ended
	if err == nil && !ended {
		last := after
		if len(evs) > 0 {
			last = evs[len(evs)-1].Seq
		}
		for _, e := range lr.pending {
			if e.Seq > last {
				evs = append(evs, e)
			}
		}
		lr.subs[sb] = struct{}{}
	}
	lr.mu.Unlock()
	if err != nil {
		return nil, nil, nil, err
	}
	if ended { // every event of the run is stored
		evs, err := s.Store.ListEvents(ctx, runID, after)
		return evs, nil, func() {}, err
	}
	return evs, sb, lr.unsubscribe(sb), nil
}

// closed returns evs, the stored events after `after` of the finished run r,
// ending with run.finished: a run's replay always ends with it. A run that
// ended without storing one (failed for a dead process before Relay closed
// such runs' events, see FailedEnd) gets one made from its stored state,
// numbered right after its last stored event and not stored; a client that
// has had that number has seen it. A client that has had a number past every
// stored event saw events the store never got, streamed by a process taken
// for dead before it stored them (docs/architecture.md, liveness): it gets
// the run's stored end, its error and run.finished, numbered after what it
// has, so that it learns how the run ended.
func (s *Service) closed(ctx context.Context, r *Run, after int64, evs []Event) ([]Event, error) {
	if len(evs) > 0 && evs[len(evs)-1].Type == EventRunFinished {
		return evs, nil
	}
	last := after
	if len(evs) > 0 {
		last = evs[len(evs)-1].Seq
	} else if after > 0 { // what the client has seen last, if it is stored
		seen, err := s.Store.ListEvents(ctx, r.ID, after-1)
		if err != nil {
			return nil, err
		}
		if len(seen) == 0 {
			return s.endAfter(ctx, r, after)
		}
		if seen[0].Type == EventRunFinished {
			return evs, nil // it had run.finished, stored or made here
		}
	}
	var answer *Message
	if r.ResponseMessageID != "" {
		answer, _ = s.Store.GetMessage(ctx, r.ResponseMessageID) // the event says what can be said
	}
	end := FailedEnd(r, answer, last-1)
	return append(evs, end[len(end)-1]), nil
}

// endAfter returns the end of the finished run r, numbered after `after`:
// its stored run.finished and the error event right before it, or, when it
// stored none, both made from its stored state.
func (s *Service) endAfter(ctx context.Context, r *Run, after int64) ([]Event, error) {
	all, err := s.Store.ListEvents(ctx, r.ID, 0)
	if err != nil {
		return nil, err
	}
	var end []Event
	if n := len(all); n > 0 && all[n-1].Type == EventRunFinished {
		from := n - 1
		if n > 1 && all[n-2].Type == EventError {
			from = n - 2
		}
		end = slices.Clone(all[from:])
	} else if n == 0 && after == 1 || n > 0 && after == all[n-1].Seq+1 {
		return nil, nil // it had the run.finished made right after the stored events
	} else {
		var answer *Message
		if r.ResponseMessageID != "" {
			answer, _ = s.Store.GetMessage(ctx, r.ResponseMessageID)
		}
		end = FailedEnd(r, answer, after)
	}
	for i := range end {
		end[i].Seq = after + int64(i) + 1
	}
	return end, nil
}

// Find returns a run that u may see: u's own, or anyone's for an admin;
// any other is fault.NotFound.
func (s *Service) Find(ctx context.Context, u *auth.User, runID string) (*Run, error) {
	r, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if r.UserID != u.ID && !u.IsAdmin() {
		return nil, fault.New(fault.NotFound, "run %q not found", runID)
	}
	return r, nil
}

// visible reports whether u may see run runID, as Find does; for a run this
// process runs, without reading the store.
func (s *Service) visible(ctx context.Context, u *auth.User, runID string) error {
	s.mu.Lock()
	lr := s.live[runID]
	s.mu.Unlock()
	if lr != nil && (lr.userID == u.ID || u.IsAdmin()) {
		return nil
	}
	_, err := s.Find(ctx, u, runID)
	return err
}

// Abort stops a run of u's: the model stream and pending tool calls are
// cancelled and the partial answer is kept.
func (s *Service) Abort(ctx context.Context, u *auth.User, runID string) (*Run, error) {
	r, err := s.Find(ctx, u, runID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	lr := s.live[runID]
	s.mu.Unlock()
	if lr == nil {
		if finished(r.Status) {
			return r, nil // already over
		}
		// Over in this process, its end refused by the store before?
		s.storeUnstored(ctx, r.ConversationID)
		if r, err = s.Store.GetRun(ctx, runID); err != nil || finished(r.Status) {
			return r, err
		}
		// Another process runs it: it is asked to, and this waits for the
		// end it stores.
		if err := s.Store.RequestAbort(ctx, runID); err != nil {
			if r, gerr := s.Store.GetRun(ctx, runID); gerr == nil && finished(r.Status) {
				return r, nil // it ended meanwhile
			}
			return nil, err
		}
		for _, err := range s.FollowEnd(ctx, u, runID) {
			if err != nil {
				return nil, err
			}
		}
		return s.Store.GetRun(ctx, runID)
	}
	lr.cancel(ErrAborted)
	select {
	case <-lr.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.GetRun(ctx, runID)
}

// watchAborts aborts, while this process runs runs, those another process
// was asked to abort (Abort, Store.RequestAbort), looking every AbortEvery.
func (s *Service) watchAborts() {
	every := cmp.Or(s.AbortEvery, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		s.mu.Lock()
		if len(s.live) == 0 {
			s.watching = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), every+5*time.Second)
		ids, err := s.Store.AbortRequests(ctx)
		cancel()
		if err != nil {
			s.Log.Warn("looking for runs to abort", slog.Any("err", err))
			continue
		}
		for _, id := range ids {
			s.mu.Lock()
			lr := s.live[id]
			s.mu.Unlock()
			if lr != nil {
				lr.cancel(ErrAborted)
			}
		}
	}
}

// Detail is a run with what it sent and did: what a trace of it shows.
type Detail struct {
	*Run
	Events   []Event        `json:"events"`
	Requests []ModelRequest `json:"requests"`
	Tools    []ToolTrace    `json:"tool_calls"`
	// Agents are the agents that took part (the run's own first, then the
	// others in the order they first sent a request or called a tool), with
	// their names when the user may still see them.
	Agents []AgentRef `json:"agents"`
}

// ToolTrace is a tool call as a run's trace shows it: when it started and
// finished (its record is stored as it finishes) and how long it took.
type ToolTrace struct {
	ToolCall
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
}

// AgentRef names an agent of a run.
type AgentRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Get returns one of u's runs with its events, model requests and tool calls.
func (s *Service) Get(ctx context.Context, u *auth.User, runID string) (*Detail, error) {
	r, err := s.Find(ctx, u, runID)
	if err != nil {
		return nil, err
	}
	d := &Detail{Run: r}
	if d.Events, err = s.Store.ListEvents(ctx, runID, 0); err != nil {
		return nil, err
	}
	if d.Requests, err = s.Store.ListModelRequests(ctx, runID); err != nil {
		return nil, err
	}
	calls, err := s.Store.ListToolCalls(ctx, runID)
	if err != nil {
		return nil, err
	}
	d.Tools = make([]ToolTrace, len(calls))
	for i, c := range calls {
		d.Tools[i] = ToolTrace{ToolCall: c, StartedAt: c.CreatedAt.Add(-c.Duration), FinishedAt: c.CreatedAt, DurationMS: c.Duration.Milliseconds()}
	}
	d.Agents = s.agentsOf(ctx, u, d)
	return d, nil
}

// agentsOf lists the agents of a run: its own, then those its requests and
// tool calls name, in order of appearance, with the names u may see.
func (s *Service) agentsOf(ctx context.Context, u *auth.User, d *Detail) []AgentRef {
	ids := []string{d.AgentID}
	add := func(id string) {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, r := range d.Requests {
		add(r.AgentID)
	}
	for _, t := range d.Tools {
		add(t.AgentID)
	}
	out := make([]AgentRef, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if s.Prep != nil && s.Prep.Agents != nil {
			if a, err := s.Prep.Agents.Get(ctx, u, id); err == nil {
				out[i].Name = a.Name
			}
		}
	}
	return out
}

// List returns one page of runs, newest first: u's own, or for an admin
// those of q.UserID (everyone's when it is empty). Each run's Text is the
// first words of its user message, as a conversation's first title is made.
func (s *Service) List(ctx context.Context, u *auth.User, q RunQuery) (*RunPage, error) {
	if !u.IsAdmin() {
		q.UserID = u.ID
	}
	switch q.Status {
	case "", StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled:
	default:
		return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid run list", Fields: []fault.FieldError{{
			Field: "status", Message: fmt.Sprintf("unknown status %q (queued, running, succeeded, failed or cancelled)", q.Status)}}}
	}
	page, err := s.Store.RunPage(ctx, q)
	if err != nil {
		return nil, err
	}
	for i := range page.Runs {
		page.Runs[i].Text = FirstWords(page.Runs[i].Text)
	}
	return page, nil
}

// Wait blocks until a run of this process ends (for tests and the CLI).
func (s *Service) Wait(ctx context.Context, runID string) error {
	s.mu.Lock()
	lr := s.live[runID]
	s.mu.Unlock()
	if lr == nil {
		return nil
	}
	select {
	case <-lr.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for run %s: %w", runID, ctx.Err())
	}
}

// Conversations lists one page of u's conversations, most recently updated
// first; q.UserID is set to u's.
func (s *Service) Conversations(ctx context.Context, u *auth.User, q ConversationQuery) (*ConversationPage, error) {
	q.UserID = u.ID
	return s.Store.ConversationPage(ctx, q)
}

// Thread is a conversation with its messages (every branch; ParentID links them).
type Thread struct {
	*Conversation
	Messages []*Message `json:"messages"`
}

// Conversation returns one of u's conversations with its messages.
func (s *Service) Conversation(ctx context.Context, u *auth.User, id string) (*Thread, error) {
	c, err := s.Store.GetConversation(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.UserID != u.ID && !u.IsAdmin() {
		return nil, fault.New(fault.NotFound, "conversation %q not found", id)
	}
	msgs, err := s.Store.ListMessages(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Thread{Conversation: c, Messages: msgs}, nil
}

// DeleteConversation deletes one of u's conversations with everything in it.
func (s *Service) DeleteConversation(ctx context.Context, u *auth.User, id string) error {
	if _, err := s.Conversation(ctx, u, id); err != nil {
		return err
	}
	return s.Store.DeleteConversation(ctx, id)
}
