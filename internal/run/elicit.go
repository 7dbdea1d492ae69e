package run

//lint:file-ignore SA1019 MCP roots and sampling are deprecated from protocol 2026-07-28 on, and Relay keeps them for the servers that use them (docs/mcp.md "Roots and sampling").

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
)

// answerPoll is how often a question waiting in this process looks in the
// store for an answer that reached another Relay process. An answer given to
// this process wakes it at once.
const answerPoll = followEvery

// asker returns what puts the questions of an agent's tool calls to the run's
// user: as run events, answered through Service.Answer.
func (s *Service) asker(lr *liveRun, r *Run, agentID string) func(ctx context.Context, callID string, q *mcp.Question) (*mcp.Answer, error) {
	return func(ctx context.Context, callID string, q *mcp.Question) (*mcp.Answer, error) {
		return s.ask(ctx, lr, r, agentID, callID, q)
	}
}

// ask stores the question, tells the run's followers, and waits for the answer:
// woken in this process by Answer, or finding it in the store when it reached
// another process. Unanswered within its timeout it is declined; when ctx ends
// (the call or the run was cancelled) it is cancelled.
func (s *Service) ask(ctx context.Context, lr *liveRun, r *Run, agentID, callID string, q *mcp.Question) (*mcp.Answer, error) {
	now := time.Now().UTC()
	e := &Elicitation{ID: ident.New("eli_"), RunID: r.ID, UserID: r.UserID, Server: q.Server, ToolCallID: callID,
		Mode: q.Mode, Message: q.Message, RequestedSchema: q.RequestedSchema, URL: q.URL, CreatedAt: now, ExpiresAt: now.Add(q.Timeout)}
	wake := make(chan struct{}, 1)
	s.mu.Lock()
	if s.waiting == nil {
		s.waiting = map[string]chan struct{}{}
	}
	s.waiting[e.ID] = wake
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, e.ID)
		s.mu.Unlock()
	}()
	if err := s.Store.CreateElicitation(ctx, e); err != nil {
		return nil, fmt.Errorf("storing the question of %q: %w", q.Server, err)
	}
	s.emit(lr, ElicitationRequested{ID: e.ID, AgentID: agentID, Server: e.Server,
		ToolCallID: callID, Mode: e.Mode, Message: e.Message, RequestedSchema: e.RequestedSchema, URL: e.URL, ExpiresAt: e.ExpiresAt})
	log := s.Log.With(slog.String("run_id", r.ID), slog.String("mcp_server", q.Server), slog.String("elicitation_id", e.ID))

	timeout := time.NewTimer(q.Timeout)
	defer timeout.Stop()
	poll := time.NewTicker(answerPoll)
	defer poll.Stop()
	for {
		var end ElicitationStatus
		select {
		case <-wake:
		case <-poll.C:
		case <-timeout.C:
			end = ElicitationExpired
		case <-ctx.Done():
			end = ElicitationCancelled
		}
		if end != "" {
			// Relay ends it, unless an answer came first.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			action, reason := mcp.ActionDecline, "timeout"
			if end == ElicitationCancelled {
				action, reason = mcp.ActionCancel, "cancelled"
			}
			err := s.Store.SettleElicitation(sctx, e.ID, end, action, nil, time.Now())
			cancel()
			if err == nil || fault.KindOf(err) != fault.Conflict {
				if err != nil {
					log.Warn("ending an unanswered question", slog.Any("err", err))
				}
				s.emit(lr, ElicitationSettled{ID: e.ID, Action: action, Reason: reason})
				if end == ElicitationCancelled {
					return nil, context.Cause(ctx)
				}
				return &mcp.Answer{Action: action}, nil
			}
		}
		got, err := s.Store.GetElicitation(context.WithoutCancel(ctx), e.ID)
		if err != nil {
			log.Warn("looking for the answer to a question", slog.Any("err", err))
			continue
		}
		if got.Status != ElicitationAnswered {
			continue
		}
		s.emit(lr, ElicitationSettled{ID: e.ID, Action: got.Action})
		a := &mcp.Answer{Action: got.Action}
		if len(got.Content) > 0 {
			if err := json.Unmarshal(got.Content, &a.Content); err != nil {
				return nil, fmt.Errorf("reading the answer: %w", err)
			}
		}
		return a, nil
	}
}

// AnswerRequest is a user's answer to a question (docs/api.md "Questions").
type AnswerRequest struct {
	// Action is accept, decline or cancel.
	Action string `json:"action"`
	// Content holds the fields of an accepted form question; those left out
	// take the schema's defaults.
	Content map[string]any `json:"content,omitempty"`
}

// Answer records u's answer to question id of run runID, checked against the
// question's schema, and wakes the call waiting for it if it waits in this
// process (another process finds it in the store). Only the run's user may
// answer; a question already answered, expired or cancelled is fault.Conflict.
func (s *Service) Answer(ctx context.Context, u *auth.User, runID, id string, a AnswerRequest) (*Elicitation, error) {
	e, err := s.Store.GetElicitation(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.RunID != runID || e.UserID != u.ID {
		return nil, fault.New(fault.NotFound, "question %q of run %q not found", id, runID)
	}
	switch a.Action {
	case mcp.ActionAccept, mcp.ActionDecline, mcp.ActionCancel:
	default:
		return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid answer",
			Fields: []fault.FieldError{{Field: "action", Message: "must be accept, decline or cancel"}}}
	}
	if e.Status != ElicitationPending {
		return nil, fault.New(fault.Conflict, "question %q is already %s", id, e.Status)
	}
	now := time.Now().UTC()
	if now.After(e.ExpiresAt) {
		return nil, fault.New(fault.Conflict, "question %q has expired", id)
	}
	var content json.RawMessage
	if a.Action == mcp.ActionAccept && e.Mode == "form" {
		filled, err := mcp.FillAnswer(e.RequestedSchema, a.Content)
		if err != nil {
			var fe *fault.Error
			if errors.As(err, &fe) {
				for i := range fe.Fields {
					fe.Fields[i].Field = "content." + fe.Fields[i].Field
				}
			}
			return nil, err
		}
		if content, err = json.Marshal(filled); err != nil {
			return nil, fmt.Errorf("encoding the answer: %w", err)
		}
	}
	if err := s.Store.SettleElicitation(ctx, id, ElicitationAnswered, a.Action, content, now); err != nil {
		return nil, err
	}
	s.mu.Lock()
	wake := s.waiting[id]
	s.mu.Unlock()
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	e.Status, e.Action, e.Content, e.AnsweredAt = ElicitationAnswered, a.Action, content, &now
	return e, nil
}

// sampler answers an MCP server's sampling requests with the model of the
// agent whose tool call is in flight: text messages only, within the
// request's maxTokens (already bounded by the server's config). The requests
// are of the run's conversation (conv), whatever context the MCP session
// hands over.
func sampler(model llm.Model, modelName string, conv llm.Conversation) mcp.Sampler {
	return func(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
		ctx = llm.WithConversation(ctx, conv)
		req := &llm.Request{Model: modelName, Params: map[string]any{"max_tokens": p.MaxTokens}}
		if p.SystemPrompt != "" {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: p.SystemPrompt})
		}
		for _, m := range p.Messages {
			t, ok := m.Content.(*sdk.TextContent)
			if !ok {
				return nil, fmt.Errorf("only text messages can be sampled, not %T", m.Content)
			}
			role := llm.RoleUser
			if m.Role == "assistant" {
				role = llm.RoleAssistant
			}
			req.Messages = append(req.Messages, llm.Message{Role: role, Content: t.Text})
		}
		turn, err := model.Stream(ctx, req, nil)
		if err != nil {
			return nil, err
		}
		stop := "endTurn"
		if turn.FinishReason == "length" || turn.FinishReason == "max_tokens" {
			stop = "maxTokens"
		}
		return &sdk.CreateMessageResult{Role: "assistant", Model: modelName, StopReason: stop, Content: &sdk.TextContent{Text: turn.Text}}, nil
	}
}
