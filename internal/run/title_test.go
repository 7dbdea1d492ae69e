package run_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
)

// titled is a run service whose new conversations are titled by titles, a
// model asked as "mini" on "titler".
func titled(t *testing.T, answers llm.Model, titles llm.Model) *bundle {
	t.Helper()
	b := setup(t, answers)
	tr := &run.Titler{
		Store: b.svc.Store, Log: discard(),
		Models: func(_ context.Context, _, provider, model string) (llm.Model, mcp.Family, error) {
			if provider != "titler" || model != "mini" {
				return nil, "", errors.New("not the title model")
			}
			return titles, mcp.FamilyOpenAI, nil
		},
		For: func(a *agent.Agent) (run.TitleModel, bool) {
			return run.TitleModel{Provider: "titler", Model: "mini"}, a.ID == "calc"
		},
	}
	b.svc.After = append(b.svc.After, tr.After)
	return b
}

// conversation returns the stored conversation of id once the work after
// the runs so far is done.
func (b *bundle) settledConversation(t *testing.T, id string) *run.Thread {
	t.Helper()
	if err := b.svc.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	th, err := b.svc.Conversation(t.Context(), b.user, id)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func TestTitleFromTheTitleModel(t *testing.T) {
	titles := llmtest.New(llmtest.Turn{Text: []string{`Title: "Adding `, `small numbers".`}})
	b := titled(t, llmtest.New(llmtest.Turn{Text: []string{"The sum is 5."}}, llmtest.Turn{Text: []string{"7."}}), titles)
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is\n2+3?"})
	if got := b.settledConversation(t, d.ConversationID).Title; got != "Adding small numbers" {
		t.Errorf("title %q, want the title model's, cleaned", got)
	}
	reqs := titles.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the title model got %d requests, want 1", len(reqs))
	}
	want := strings.Replace(run.DefaultTitlePrompt, "{convo}", "User: What is\n2+3?\nAssistant: The sum is 5.", 1)
	if got := reqs[0]; got.Model != "mini" || len(got.Messages) != 1 || got.Messages[0].Role != llm.RoleUser || got.Messages[0].Content != want || len(got.Tools) != 0 {
		t.Errorf("title request %+v; want one user message %q to mini, no tools", got, want)
	}

	// Later turns keep the title and ask nothing more.
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "And 3+4?", ConversationID: d.ConversationID, ParentMessageID: d.ResponseMessageID})
	if got := b.settledConversation(t, d.ConversationID).Title; got != "Adding small numbers" || len(titles.Requests()) != 1 {
		t.Errorf("after a second turn: title %q, %d title requests; want the title kept, none more", got, len(titles.Requests()))
	}
}

func TestTitleModelFailureKeepsTheFallback(t *testing.T) {
	tests := []struct {
		name string
		turn llmtest.Turn
	}{
		{"provider error", llmtest.Turn{Err: &llm.Error{Kind: llm.ErrBadRequest, Status: 400, Message: "bad model"}}},
		{"empty answer", llmtest.Turn{Text: []string{" \n\"\" "}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := titled(t, llmtest.New(llmtest.Turn{Text: []string{"Fine."}}), llmtest.New(tt.turn))
			d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "How are you doing on this fine Tuesday morning, my friend?"})
			if got := b.settledConversation(t, d.ConversationID).Title; got != "How are you doing on this fine Tuesday…" {
				t.Errorf("title %q, want the first words of the message", got)
			}
		})
	}
}

func TestNoTitleModelAsked(t *testing.T) {
	tests := []struct {
		name   string
		req    run.ChatRequest
		answer llmtest.Turn
		want   string
	}{
		{"named by the request", run.ChatRequest{AgentID: "calc", Text: "Digest", Title: "Morning digest"}, llmtest.Turn{Text: []string{"ok"}}, "Morning digest"},
		{"kept", run.ChatRequest{AgentID: "calc", Text: "Digest", KeepTitle: true}, llmtest.Turn{Text: []string{"ok"}}, "Digest"},
		{"failed run", run.ChatRequest{AgentID: "calc", Text: "Digest"}, llmtest.Turn{Err: &llm.Error{Kind: llm.ErrAuth, Status: 401, Message: "bad key"}}, "Digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			titles := llmtest.New()
			b := titled(t, llmtest.New(tt.answer), titles)
			r, err := b.svc.Start(t.Context(), b.user, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.settledConversation(t, r.ConversationID).Title; got != tt.want || len(titles.Requests()) != 0 {
				t.Errorf("title %q after %d title requests; want %q and none", got, len(titles.Requests()), tt.want)
			}
		})
	}
}

// A title the user sets while the title model is at work is kept.
func TestTitleKeepsTheUsersRename(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	titles := llmtest.Func(func(*llm.Request) llmtest.Turn {
		close(asked)
		<-release
		return llmtest.Turn{Text: []string{"Model title"}}
	})
	b := titled(t, llmtest.New(llmtest.Turn{Text: []string{"The sum is 5."}}), titles)
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is 2+3?"})
	<-asked
	// The answer is stored while the title is still being made.
	if th := b.conversation(t, d.ConversationID); th.Title != "What is 2+3?" || len(th.Messages) != 2 || th.Messages[1].Text != "The sum is 5." {
		t.Errorf("before the title: %q with %d messages", th.Title, len(th.Messages))
	}
	if _, err := b.svc.RenameConversation(t.Context(), b.user, d.ConversationID, "  My\tsums "); err != nil {
		t.Fatal(err)
	}
	close(release)
	if got := b.settledConversation(t, d.ConversationID).Title; got != "My sums" {
		t.Errorf("title %q, want the user's", got)
	}
}

func (b *bundle) conversation(t *testing.T, id string) *run.Thread {
	t.Helper()
	th, err := b.svc.Conversation(t.Context(), b.user, id)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func TestRenameConversation(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"ok"}}))
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "Hello"})
	other, err := auth.NewService(b.svc.Store.(auth.Store), nil).CreateUser(context.Background(), auth.NewUser{Email: "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		user  *auth.User
		id    string
		title string
		kind  fault.Kind
	}{
		{"empty", b.user, d.ConversationID, " \n\t", fault.Invalid},
		{"too long", b.user, d.ConversationID, strings.Repeat("é", run.MaxTitleRunes+1), fault.Invalid},
		{"unknown", b.user, "conv_missing", "x", fault.NotFound},
		{"another user's", other, d.ConversationID, "Mine now", fault.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.svc.RenameConversation(t.Context(), tt.user, tt.id, tt.title)
			if !fault.Is(err, tt.kind) {
				t.Errorf("err = %v, want %s", err, tt.kind)
			}
		})
	}
	if got := b.conversation(t, d.ConversationID).Title; got != "Hello" {
		t.Errorf("title %q after refused renames, want Hello", got)
	}
	c, err := b.svc.RenameConversation(t.Context(), b.user, d.ConversationID, strings.Repeat("é", run.MaxTitleRunes))
	if err != nil || c.Title != strings.Repeat("é", run.MaxTitleRunes) {
		t.Errorf("rename to %d characters: %v, %v", run.MaxTitleRunes, c, err)
	}
}

// renames is a run.Store that records renames; nothing else of it is used.
type renames struct {
	run.Store
	got []string
}

func (r *renames) RenameConversation(_ context.Context, id, title string, from *string) error {
	r.got = append(r.got, id+": "+title)
	return nil
}

// A title model that does not answer is given up after the title timeout,
// leaving the title as it is, and the reason is logged.
func TestTitleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		st := &renames{}
		hangs := llmtest.New(llmtest.Turn{Text: []string{"Too late"}, Delay: time.Hour})
		tr := &run.Titler{
			Store: st, Log: slog.New(slog.NewTextHandler(&logs, nil)), Timeout: 5 * time.Second,
			Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
				return hangs, mcp.FamilyOpenAI, nil
			},
			For: func(*agent.Agent) (run.TitleModel, bool) { return run.TitleModel{Provider: "p", Model: "m"}, true },
		}
		fin := &run.Finished{
			Agent: &agent.Agent{ID: "calc"}, Run: &run.Run{ID: "run_1", Status: run.StatusSucceeded},
			Conversation: &run.Conversation{ID: "conv_1", Title: "What is 2+3?"}, NewConversation: true,
			Question: &run.Message{Text: "What is 2+3?"}, Answer: &run.Message{Text: "5."},
		}
		start := time.Now()
		tr.After(t.Context(), fin)
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("gave up after %s, want the 5s timeout", waited)
		}
		if len(st.got) != 0 {
			t.Errorf("renamed %q", st.got)
		}
		if !strings.Contains(logs.String(), "no answer within the title timeout") || !strings.Contains(logs.String(), "conversation_id=conv_1") {
			t.Errorf("log:\n%s", logs.String())
		}
	})
}
