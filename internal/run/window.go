package run

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/token"
	"github.com/relay-ai/relay/internal/window"
)

// Window is how the requests of agents are kept inside their model's context
// window (docs/config.md, "Context window").
type Window struct {
	// Counters count tokens; one is shared by every run, so that a
	// conversation's messages are tokenized once.
	Counters *token.Counters
	// ContextWindow returns the context window the config gives a provider's
	// model (a custom endpoint's tokenConfig), 0 when it gives none. Nil
	// means none is given.
	ContextWindow func(provider, model string) int
	// MaxToolResultChars is endpoints.agents.maxToolResultChars (0: derived
	// from the budget).
	MaxToolResultChars int
	// Summarize, when set, summarises the turns an agent's request drops to
	// fit (see Summarizer); SummaryTokens is kept free of the budget for it.
	Summarize     func(ctx context.Context, userID string, a *agent.Agent, dropped []llm.Message) (string, error)
	SummaryTokens int
}

// Summary is how the dropped turns are summarised: the summarization section
// of the config.
type Summary struct {
	// Provider and Model make the summary; empty means the agent's own.
	Provider, Model string
	// Params are the summary request's model parameters; max_tokens is set
	// to MaxTokens.
	Params    map[string]any
	Prompt    string
	MaxTokens int
	// Timeout bounds the summary request; 0 means one minute.
	Timeout time.Duration
}

// DefaultSummaryPrompt is the summariser's instruction when the config gives
// none.
const DefaultSummaryPrompt = "The messages below are the oldest part of a conversation between a user and an assistant that uses tools; " +
	"they no longer fit the model's context window. Summarise them for the assistant, who will continue the conversation " +
	"without seeing them: keep the user's goals and preferences, the facts, names, numbers and decisions, and what the tools found. " +
	"Write plain sentences, no preamble."

// Summarizer returns the Window.Summarize that asks models for the summary
// of the dropped messages, written one per line (Human:, AI:, Tool:) as
// docs/config.md "summarization" says.
func Summarizer(models Models, sm Summary) func(ctx context.Context, userID string, a *agent.Agent, dropped []llm.Message) (string, error) {
	return func(ctx context.Context, userID string, a *agent.Agent, dropped []llm.Message) (string, error) {
		provider, model := cmp.Or(sm.Provider, a.Provider), cmp.Or(sm.Model, a.Model)
		m, _, err := models(ctx, userID, provider, model)
		if err != nil {
			return "", fmt.Errorf("summary model %s/%s: %w", provider, model, err)
		}
		params := maps.Clone(sm.Params)
		if params == nil {
			params = map[string]any{}
		}
		params["max_tokens"] = sm.MaxTokens
		req := &llm.Request{Model: model, Params: params, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: cmp.Or(strings.TrimSpace(sm.Prompt), DefaultSummaryPrompt)},
			{Role: llm.RoleUser, Content: prompt.Buffer(dropped)},
		}}
		ctx, cancel := context.WithTimeout(ctx, cmp.Or(sm.Timeout, time.Minute))
		defer cancel()
		sent := time.Now()
		turn, err := m.Stream(ctx, req, func(llm.Event) {})
		noteRequest(ctx, a.ID, PurposeSummary, turn, sent, time.Now()) // in the run's trace
		if err != nil {
			return "", fmt.Errorf("summary model %s/%s: %w", provider, model, err)
		}
		return turn.Text, nil
	}
}

// Fitter returns the fitter of a's requests for user userID: its budget
// resolved from its model parameters (with the client's in their place: the
// reply's maximum an OpenAI-compatible request sets), the config and the
// table of known models. client may be nil.
func (w *Window) Fitter(userID string, a *agent.Agent, client *Client) *window.Fitter {
	configured := 0
	if w.ContextWindow != nil {
		configured = w.ContextWindow(a.Provider, a.Model)
	}
	o := window.Options{
		Counter:            w.Counters.For(a.Model),
		Budget:             window.Resolve(client.over(a.ModelParameters), a.Model, configured),
		MaxToolResultChars: w.MaxToolResultChars,
	}
	if w.Summarize != nil {
		o.SummaryTokens = w.SummaryTokens
		o.Summarize = func(ctx context.Context, dropped []llm.Message) (string, error) {
			return w.Summarize(ctx, userID, a, dropped)
		}
	}
	return window.New(o)
}

// History returns the messages of one of u's conversations on the branch that
// ends at parentID, or at its latest message when parentID is empty (the
// conversation's history as a run continuing it would load it), and the ids
// of the files attached on that branch (for Preparer.Attached), for a preview
// of the next message.
func (s *Service) History(ctx context.Context, u *auth.User, conversationID, parentID string) ([]llm.Message, []string, error) {
	a := &agent.Agent{}
	_, _, history, files, err := s.conversation(ctx, u, a, &ChatRequest{ConversationID: conversationID, ParentMessageID: parentID}, time.Now().UTC())
	return history, files, err
}
