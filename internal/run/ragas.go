package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// RagasOptions select and shape a Ragas export (spec/ragas.md).
type RagasOptions struct {
	UserID  string // empty: every user's runs
	AgentID string
	Since   time.Time
	// MultiTurn writes multi-turn samples (messages with tool calls); otherwise
	// single-turn samples {user_input, retrieved_contexts, response}.
	MultiTurn bool
	// Retrieval reports whether a tool's output is retrieved context: file_search
	// and the MCP tools the config marks as retrieval.
	Retrieval func(toolName string) bool
}

// ragasMessage is one message of a multi-turn sample.
type ragasMessage struct {
	Type      string          `json:"type"`
	Content   string          `json:"content"`
	ToolCalls []ragasToolCall `json:"tool_calls,omitempty"`
}

type ragasToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type singleTurn struct {
	UserInput         string   `json:"user_input,omitempty"`
	RetrievedContexts []string `json:"retrieved_contexts,omitempty"`
	Response          string   `json:"response,omitempty"`
}

type multiTurn struct {
	UserInput []ragasMessage `json:"user_input"`
}

// ExportRagas writes one JSONL sample per succeeded run matching o, oldest
// first, and returns how many it wrote.
func (s *Service) ExportRagas(ctx context.Context, w io.Writer, o RagasOptions) (int, error) {
	runs, err := s.Store.ListRuns(ctx, RunFilter{UserID: o.UserID, AgentID: o.AgentID, Status: StatusSucceeded, Since: o.Since})
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for _, r := range runs {
		var sample any
		if o.MultiTurn {
			sample, err = s.multiTurn(ctx, r)
		} else {
			sample, err = s.singleTurn(ctx, r, o.Retrieval)
		}
		if err != nil {
			return n, fmt.Errorf("run %s: %w", r.ID, err)
		}
		if sample == nil {
			continue
		}
		if err := enc.Encode(sample); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Service) answer(ctx context.Context, r *Run) (question, answer string, err error) {
	q, err := s.Store.GetMessage(ctx, r.UserMessageID)
	if err != nil {
		return "", "", err
	}
	if r.ResponseMessageID != "" {
		a, err := s.Store.GetMessage(ctx, r.ResponseMessageID)
		if err != nil {
			return "", "", err
		}
		answer = a.Text
	}
	return q.Text, answer, nil
}

func (s *Service) singleTurn(ctx context.Context, r *Run, retrieval func(string) bool) (any, error) {
	q, a, err := s.answer(ctx, r)
	if err != nil {
		return nil, err
	}
	sample := singleTurn{UserInput: q, Response: a}
	calls, err := s.Store.ListToolCalls(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		if !c.IsError && retrieval != nil && retrieval(c.Name) && strings.TrimSpace(c.Result) != "" {
			sample.RetrievedContexts = append(sample.RetrievedContexts, c.Result)
		}
	}
	return sample, nil
}

// multiTurn rebuilds the conversation from the last request the run sent (it
// holds every earlier message, tool calls and results included) and the answer.
func (s *Service) multiTurn(ctx context.Context, r *Run) (any, error) {
	_, a, err := s.answer(ctx, r)
	if err != nil {
		return nil, err
	}
	reqs, err := s.Store.ListModelRequests(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	var body struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
		return nil, fmt.Errorf("reading the last model request: %w", err)
	}
	var msgs []ragasMessage
	for _, m := range body.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "user":
			msgs = append(msgs, ragasMessage{Type: "human", Content: text})
		case "assistant":
			am := ragasMessage{Type: "ai", Content: text}
			for _, c := range m.ToolCalls {
				args := json.RawMessage(c.Function.Arguments)
				if !json.Valid(args) || !strings.HasPrefix(strings.TrimSpace(c.Function.Arguments), "{") {
					args = json.RawMessage(`{}`)
				}
				am.ToolCalls = append(am.ToolCalls, ragasToolCall{Name: c.Function.Name, Args: args})
			}
			msgs = append(msgs, am)
		case "tool":
			msgs = append(msgs, ragasMessage{Type: "tool", Content: text})
		}
	}
	msgs = append(msgs, ragasMessage{Type: "ai", Content: a})
	return multiTurn{UserInput: msgs}, nil
}

// contentText reads a message's content: a string, or the text of its parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
