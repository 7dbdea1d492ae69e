// Package runtest builds run services for tests of multi-agent flows: agents
// from specs, all answered by one scripted model that knows which agent asks.
package runtest

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// Team is a run service over a real SQLite store whose agents are made from
// specs, each with the instructions "I am <id>.".
type Team struct {
	Runs   *run.Service
	Auth   *auth.Service
	Agents *agent.Service
	// User owns the agents.
	User *auth.User
	// Model answers every agent.
	Model *llmtest.Model
}

// NewTeam builds a Team whose model asks answer for each turn, saying which
// agent asks (read from its system message).
func NewTeam(t testing.TB, specs map[string]agent.Spec, answer func(who string, req *llm.Request) llmtest.Turn) *Team {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return NewTeamOn(t, st, specs, answer)
}

// NewTeamOn is NewTeam over the store st, of any engine.
func NewTeamOn(t testing.TB, st store.Store, specs map[string]agent.Spec, answer func(who string, req *llm.Request) llmtest.Turn) *Team {
	t.Helper()
	ctx := context.Background()
	as := auth.NewService(st, nil)
	u, err := as.CreateUser(ctx, auth.NewUser{Email: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	agents := agent.NewService(st, agent.Rules{})
	for id, spec := range specs {
		spec.Provider, spec.Model, spec.Instructions = "openAI", "m", Instructions(id)
		if _, err := agents.Create(ctx, u, id, spec); err != nil {
			t.Fatal(err)
		}
	}
	model := llmtest.Func(func(req *llm.Request) llmtest.Turn {
		return answer(Asker(req), req)
	})
	m := mcp.NewManager(nil, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	svc := &run.Service{Store: st, MCP: m, Log: slog.New(slog.DiscardHandler), Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	t.Cleanup(func() { svc.Drain(context.Background()) })
	return &Team{Runs: svc, Auth: as, Agents: agents, User: u, Model: model}
}

// Instructions are the instructions of the agent id in a Team.
func Instructions(id string) string { return "I am " + id + "." }

// Asker is the agent of a Team that sent req: the paragraph of the system
// message that is its instructions (the prompt may put other paragraphs, such
// as the RAG context, around them) names it.
func Asker(req *llm.Request) string {
	paras := strings.Split(req.Messages[0].Content, "\n\n")
	for i := len(paras) - 1; i >= 0; i-- {
		if id, ok := strings.CutPrefix(paras[i], "I am "); ok && strings.HasSuffix(id, ".") {
			return strings.TrimSuffix(id, ".")
		}
	}
	return ""
}

// RequestsOf are the requests the agent id sent to the Team's model, in order.
func (tm *Team) RequestsOf(id string) []*llm.Request {
	var out []*llm.Request
	for _, r := range tm.Model.Requests() {
		if Asker(r) == id {
			out = append(out, r)
		}
	}
	return out
}
