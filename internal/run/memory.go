package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/turn"
)

// Defaults of a MemoryAgent's zero fields.
const (
	DefaultMemoryWindow  = 5
	DefaultMemoryTimeout = 30 * time.Second
	DefaultMemorySteps   = 4
)

// DefaultMemoryInstructions are the memory agent's instructions when the
// config gives none (docs/config.md, memory.agent).
const DefaultMemoryInstructions = `You keep the long-term memory that Relay holds about one user. You never talk to the user: you read the latest messages of their conversation and their memory as it stands, and you change the memory only with the set_memory and delete_memory tools.

Save what will still help in later conversations: lasting facts about the user (name, work, place, languages), how they like to be answered, their ongoing projects and goals, and anything they ask you to remember. Write each memory as one short, self-contained sentence about the user, under a short lower-case key; to change a memory, save it again under its key.

Delete a memory the user asks to forget, or one the conversation shows to be wrong or outdated.

Never save passing details of the current question, what the assistant answered, passwords, keys or other secrets, or what the memory already says.

When nothing needs to change, call no tool and answer "No changes."`

// MemoryAgent updates what Relay remembers about a user after each of their
// runs: it reads the conversation's latest messages and the user's memory and
// sets or deletes entries with the tools agents use (set_memory and
// delete_memory), so the same keys and token limit hold. Give its After to
// Service.After. It runs only for a run that succeeded, and only when memory
// is on for the user; it is bounded by Timeout and MaxSteps, and its failures
// are logged, never the run's (docs/config.md, memory.agent).
type MemoryAgent struct {
	Memory *memory.Service
	// Tools are set_memory and delete_memory, under those names.
	Tools  map[string]tool.Tool
	Store  Store
	Models Models
	// Agents returns the stored agent named by AgentID.
	Agents func(ctx context.Context, id string) (*agent.Agent, error)
	Log    *slog.Logger

	// AgentID names a stored agent whose provider, model, instructions and
	// model parameters the memory agent takes; otherwise Provider and Model.
	AgentID         string
	Provider, Model string
	// Instructions replace DefaultMemoryInstructions (and the stored agent's).
	Instructions    string
	ModelParameters map[string]any

	// Window is how many of the conversation's latest messages are read (0: 5).
	Window int
	// Timeout bounds the whole update (0: 30s); MaxSteps its model calls (0: 4).
	Timeout  time.Duration
	MaxSteps int
}

// After updates the memory of the user of a finished run; it has the
// signature of Service.After's functions.
func (m *MemoryAgent) After(ctx context.Context, f *Finished) {
	// A failed or cancelled run has no whole answer to learn from; the next
	// run that succeeds reads the same messages again.
	if f.Run.Status != StatusSucceeded || !m.Memory.Enabled(true) || f.User == nil {
		return
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cmp.Or(m.Timeout, DefaultMemoryTimeout), errMemoryTimeout)
	defer cancel()
	log := m.Log.With(slog.String("run_id", f.Run.ID), slog.String("user_id", f.User.ID))
	start := time.Now()
	out, err := m.update(ctx, f)
	if err != nil {
		if c := context.Cause(ctx); errors.Is(c, errMemoryTimeout) && !errors.Is(err, errMemoryTimeout) {
			err = fmt.Errorf("%w: %w", c, err)
		}
		log.Warn("memory agent failed; the run's answer stands", slog.String("err", err.Error()),
			slog.Duration("duration", time.Since(start)))
		return
	}
	set, deleted := 0, 0
	for _, t := range out.Tools {
		if t.IsError {
			continue
		}
		switch t.Name {
		case prompt.SetMemory:
			set++
		case prompt.DeleteMemory:
			deleted++
		}
	}
	log.Info("memory agent finished", slog.Int("set", set), slog.Int("deleted", deleted), slog.Int("steps", out.Steps),
		slog.Duration("duration", time.Since(start)))
}

var errMemoryTimeout = errors.New("the memory agent ran out of time")

// update runs the memory agent's turn for f and returns its outcome.
func (m *MemoryAgent) update(ctx context.Context, f *Finished) (*turn.Outcome, error) {
	provider, model, instructions, params := m.Provider, m.Model, DefaultMemoryInstructions, m.ModelParameters
	if m.AgentID != "" {
		a, err := m.Agents(ctx, m.AgentID)
		if err != nil {
			return nil, fmt.Errorf("loading memory.agent.id %q: %w", m.AgentID, err)
		}
		provider, model, params = a.Provider, a.Model, a.ModelParameters
		if strings.TrimSpace(a.Instructions) != "" {
			instructions = a.Instructions
		}
	}
	if strings.TrimSpace(m.Instructions) != "" {
		instructions = m.Instructions
	}
	client, _, err := m.Models(ctx, f.userID(), provider, model)
	if err != nil {
		return nil, err
	}
	window, err := m.window(ctx, f)
	if err != nil {
		return nil, err
	}
	entries, err := m.Memory.List(ctx, f.User.ID)
	if err != nil {
		return nil, fmt.Errorf("reading the user's memory: %w", err)
	}
	var tools []prompt.Tool
	for _, name := range []string{prompt.SetMemory, prompt.DeleteMemory} {
		if t, ok := prompt.BuiltinTool(name); ok {
			tools = append(tools, t)
		}
	}
	req, err := prompt.Build(prompt.Input{
		AgentID: "memory", Agent: prompt.Agent{Model: model, Instructions: instructions, ModelParameters: params},
		Tools: tools, UserName: f.User.DisplayName, Now: time.Now().UTC(),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: MemoryBrief(entries, m.Memory.TokenLimit(), m.Memory.ValidKeys(), window)}},
	})
	if err != nil {
		return nil, err
	}
	return turn.Run(ctx, req, turn.Options{
		Model: client, Tools: memoryTools{m.Tools, f.User.ID},
		MaxSteps: cmp.Or(m.MaxSteps, DefaultMemorySteps), Parallel: 1,
	})
}

// window returns the last Window messages with text of the branch that ends
// at the run's answer, oldest first.
func (m *MemoryAgent) window(ctx context.Context, f *Finished) ([]*Message, error) {
	msgs, err := m.Store.ListMessages(ctx, f.Run.ConversationID)
	if err != nil {
		return nil, fmt.Errorf("reading the conversation: %w", err)
	}
	byID := make(map[string]*Message, len(msgs))
	for _, msg := range msgs {
		byID[msg.ID] = msg
	}
	leaf := f.Run.ResponseMessageID
	if byID[leaf] == nil && f.Question != nil {
		leaf = f.Question.ID
	}
	n := cmp.Or(m.Window, DefaultMemoryWindow)
	var out []*Message
	seen := map[string]bool{}
	for id := leaf; id != "" && byID[id] != nil && !seen[id] && len(out) < n; id = byID[id].ParentID {
		seen[id] = true
		if strings.TrimSpace(byID[id].Text) != "" {
			out = append(out, byID[id])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// MemoryBrief is the message the memory agent reads: the user's memory with
// its keys, the token budget and allowed keys when the config sets them,
// then the conversation's latest messages.
func MemoryBrief(entries []memory.Entry, tokenLimit int, validKeys []string, window []*Message) string {
	var b strings.Builder
	b.WriteString("# Memory about the user\n")
	if tokenLimit > 0 {
		used := memory.TotalTokens(entries)
		fmt.Fprintf(&b, "Tokens used: %d of %d (%d left). A memory that does not fit is refused: shorten or delete others first.\n",
			used, tokenLimit, max(tokenLimit-used, 0))
	}
	if len(validKeys) > 0 {
		fmt.Fprintf(&b, "Allowed keys: %s.\n", strings.Join(validKeys, ", "))
	}
	if len(entries) == 0 {
		b.WriteString("No memories yet.\n")
	}
	for _, e := range entries {
		b.WriteString("- ")
		b.WriteString(e.Key)
		b.WriteString(": ")
		b.WriteString(e.Value)
		b.WriteByte('\n')
	}
	b.WriteString("\n# Latest messages of the conversation, oldest first\n")
	for i, msg := range window {
		if i > 0 {
			b.WriteByte('\n')
		}
		who := "User"
		if msg.Role == RoleAssistant {
			who = "Assistant"
		}
		b.WriteString(who)
		b.WriteString(": ")
		b.WriteString(strings.TrimSpace(msg.Text))
		b.WriteByte('\n')
	}
	return b.String()
}

// memoryTools runs the memory agent's tool calls: set_memory and
// delete_memory for one user, nothing else.
type memoryTools struct {
	tools  map[string]tool.Tool
	userID string
}

func (t memoryTools) Run(ctx context.Context, call llm.ToolCall) turn.ToolOutput {
	name := call.Function.Name
	tl, ok := t.tools[name]
	if !ok || (name != prompt.SetMemory && name != prompt.DeleteMemory) {
		return turn.ToolOutput{Text: "Unknown tool " + strconv.Quote(name) + ": only set_memory and delete_memory are available.", IsError: true}
	}
	res, err := tl.Call(ctx, t.userID, []byte(call.Function.Arguments))
	if err != nil {
		return turn.ToolOutput{Text: mcp.FailureText(name, err), IsError: true}
	}
	return turn.ToolOutput{Text: res.Text, IsError: res.IsError}
}
