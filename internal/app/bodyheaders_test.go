package app

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
)

// TestEndpointHeadersNameTheConversation: {{LIBRECHAT_BODY_CONVERSATIONID}},
// {{LIBRECHAT_BODY_MESSAGEID}} and {{LIBRECHAT_BODY_PARENTMESSAGEID}} in an
// endpoint's headers are filled, in each request of a run and of the title
// that follows it, with the run's conversation, the user's message it answers
// and the message before that one (docs/config.md, "Headers that name the
// conversation").
func TestEndpointHeadersNameTheConversation(t *testing.T) {
	type sent struct{ Model, Conv, Msg, Parent, Both, User string }
	var (
		mu  sync.Mutex
		got []sent
	)
	up := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		h := sent{requestedModel(r), r.Header.Get("X-Conversation-Id"), r.Header.Get("X-Message-Id"),
			r.Header.Get("X-Parent-Message-Id"), r.Header.Get("X-Trace"), r.Header.Get("X-User")}
		mu.Lock()
		got = append(got, h)
		mu.Unlock()
		answerHello(w)
	})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: gateway
      baseURL: %s/v1
      apiKey: sk-gateway
      titleConvo: true
      titleModel: small
      headers:
        X-Conversation-Id: "{{LIBRECHAT_BODY_CONVERSATIONID}}"
        X-Message-Id: "{{LIBRECHAT_BODY_MESSAGEID}}"
        X-Parent-Message-Id: "{{LIBRECHAT_BODY_PARENTMESSAGEID}}"
        X-Trace: "{{LIBRECHAT_USER_ID}}/{{LIBRECHAT_BODY_CONVERSATIONID}}"
        X-User: "{{LIBRECHAT_USER_NAME}}"
agents:
  - id: helper
    provider: gateway
    model: big
`, filepath.Join(dir, "data"), up.URL))
	cfg, err := config.Load(cfgPath, testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	// A user's name holding a placeholder's text is sent as typed.
	const name = "Ann {{LIBRECHAT_BODY_CONVERSATIONID}}"
	u, err := a.Auth.CreateUser(ctx, auth.NewUser{Email: "ann@example.com", DisplayName: name})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := a.Runner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req run.ChatRequest) *run.Run {
		t.Helper()
		req.AgentID, req.Text = "helper", "Hi there"
		return runToEnd(t, rn.Runs, u, req)
	}
	first := ask(run.ChatRequest{})
	second := ask(run.ChatRequest{ConversationID: first.ConversationID, ParentMessageID: first.ResponseMessageID})
	rn.Close(ctx) // the title is asked for before it returns

	mu.Lock()
	defer mu.Unlock()
	trace := u.ID + "/" + first.ConversationID
	want := []sent{
		{"big", first.ConversationID, first.UserMessageID, "", trace, name},
		{"big", first.ConversationID, second.UserMessageID, first.ResponseMessageID, trace, name},
		{"small", first.ConversationID, first.UserMessageID, "", trace, name}, // the first run's title
	}
	// The title follows its run in its own time.
	slices.SortStableFunc(got, func(a, b sent) int { return cmp.Compare(a.Model, b.Model) })
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("the headers of the endpoint's requests (-want +got):\n%s", d)
	}
	if first.ResponseMessageID == "" || second.UserMessageID == first.UserMessageID {
		t.Fatalf("runs %+v and %+v do not name their messages", first, second)
	}
}
