package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
)

// sentHeaders is what the fake upstream of TestEndpointHeadersNameTheUser
// got: the headers of interest of each request, by the model it asked for.
type sentHeaders struct {
	Model, ID, Email, User, Team string
}

// TestEndpointHeadersNameTheUser: {{LIBRECHAT_USER_*}} in an endpoint's
// headers are filled for the user each request is for, in runs and in the
// titles that follow them, each user with their own values; with no user
// they are sent empty; an endpoint quoting them in a refusal has them masked
// in the run's error and in the log (docs/config.md, "Headers that name the
// user").
func TestEndpointHeadersNameTheUser(t *testing.T) {
	var (
		mu   sync.Mutex
		sent []sentHeaders
	)
	up := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		h := sentHeaders{Model: requestedModel(r), ID: r.Header.Get("X-User-Id"), Email: r.Header.Get("X-User-Email"),
			User: r.Header.Get("X-User"), Team: r.Header.Get("X-Team")}
		if _, ok := r.Header["X-User-Email"]; !ok {
			h.Email = "(none)"
		}
		mu.Lock()
		sent = append(sent, h)
		mu.Unlock()
		if strings.HasPrefix(h.Email, "refused") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable) // retried: each retry is logged
			fmt.Fprintf(w, `{"error":{"message":"user %s (%s) is over budget","type":"invalid_request_error"}}`, h.Email, h.User)
			return
		}
		answerHello(w)
	})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: litellm
      baseURL: %s/v1
      apiKey: sk-litellm-master-key
      titleConvo: true
      titleModel: small
      headers:
        X-User-Id: "{{LIBRECHAT_USER_ID}}"
        X-User-Email: "{{LIBRECHAT_USER_EMAIL}}"
        X-User: "{{LIBRECHAT_USER_NAME}} <{{LIBRECHAT_USER_USERNAME}}>"
        X-Team: research
agents:
  - id: helper
    provider: litellm
    model: big
`, filepath.Join(dir, "data"), up.URL))
	cfg, err := config.Load(cfgPath, testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range Warnings(cfg) {
		if strings.Contains(w, "LIBRECHAT_USER") {
			t.Errorf("warning about a placeholder Relay fills: %s", w)
		}
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	a, err := Open(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	newUser := func(email, name string) *auth.User {
		t.Helper()
		u, err := a.Auth.CreateUser(ctx, auth.NewUser{Email: email, DisplayName: name})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	ann := newUser("ann@example.com", "Ann Example")
	bob := newUser("bob.builder@example.org", "Bob\r\nX-Admin: 1")
	refused := newUser("refused-carol@example.net", "Carol Refused")

	rn, err := a.Runner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runFor := func(u *auth.User) *run.Run {
		t.Helper()
		return runToEnd(t, rn.Runs, u, run.ChatRequest{AgentID: "helper", Text: "Hi there"})
	}
	for _, u := range []*auth.User{ann, bob} {
		if r := runFor(u); r.Status != run.StatusSucceeded {
			t.Errorf("%s: run %s: %s", u.Email, r.Status, r.Error)
		}
	}
	failed := runFor(refused)
	rn.Close(ctx) // the titles are asked for before it returns

	// With no user (listing the endpoint's models, say), the placeholders
	// are sent empty.
	m, _, err := models(cfg, a.keys, a.users, a.Log)(ctx, "", "litellm", "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stream(ctx, &llm.Request{Model: "none", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Hi"}}}, nil); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	annH := sentHeaders{ID: ann.ID, Email: "ann@example.com", User: "Ann Example <ann>", Team: "research"}
	bobH := sentHeaders{ID: bob.ID, Email: "bob.builder@example.org", User: "BobX-Admin: 1 <bob.builder>", Team: "research"}
	carolH := sentHeaders{ID: refused.ID, Email: "refused-carol@example.net", User: "Carol Refused <refused-carol>", Team: "research"}
	with := func(h sentHeaders, model string) sentHeaders { h.Model = model; return h }
	want := []sentHeaders{
		{Model: "none", User: "<>", Team: "research"}, // Go trims the space before "<>"
		with(annH, "big"), with(annH, "small"), with(bobH, "big"), with(bobH, "small"),
		with(carolH, "big"), with(carolH, "big"), with(carolH, "big"), // tried three times
	}
	// The titles follow their runs in their own time.
	got := slices.SortedFunc(slices.Values(sent), func(a, b sentHeaders) int {
		return cmp.Or(strings.Compare(a.Email, b.Email), strings.Compare(a.Model, b.Model))
	})
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("headers sent (-want +got):\n%s", diff)
	}

	if failed.Status != run.StatusFailed || !strings.Contains(failed.Error, "is over budget") {
		t.Errorf("refused run: %s: %s", failed.Status, failed.Error)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, v := range []string{"refused-carol@example.net", "Carol Refused"} {
		if strings.Contains(failed.Error, v) {
			t.Errorf("the run's error shows %q: %s", v, failed.Error)
		}
		if strings.Contains(logs.String(), v) {
			t.Errorf("the log shows %q:\n%s", v, logs.String())
		}
	}
}

// lockedWriter serialises the writes of concurrent log records.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// An Azure group's additionalHeaders name the user as other endpoints'
// headers do; a user who cannot be looked up gets no client.
func TestAzureHeadersNameTheUser(t *testing.T) {
	var got []string
	var mu sync.Mutex
	up := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Who"))
		mu.Unlock()
		s := llmtest.NewSSE(w)
		s.Text("Hi")
		s.Finish("stop")
		s.Done()
	})
	dir := t.TempDir()
	cfg, err := config.Load(writeConfig(t, dir, fmt.Sprintf(`endpoints:
  azureOpenAI:
    groups:
      - group: west
        apiKey: sk-azure-key-1234
        baseURL: %s
        additionalHeaders:
          X-Who: "{{LIBRECHAT_USER_USERNAME}}/{{LIBRECHAT_USER_ID}}"
        models:
          gpt-4o: {deploymentName: gpt-4o-prod}
`, up.URL)), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	users := newHeaderUsers(func(_ context.Context, id string) (*auth.User, error) {
		if id == "u-gone" {
			return nil, fmt.Errorf("user %q not found", id)
		}
		return &auth.User{ID: id, Email: "dana@example.com"}, nil
	})
	ms := models(cfg, nil, users, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for _, id := range []string{"u-1", "u-2", ""} {
		m, _, err := ms(ctx, id, "azureOpenAI", "gpt-4o")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Stream(ctx, &llm.Request{Model: "gpt-4o", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Hi"}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if diff := gocmp.Diff([]string{"dana/u-1", "dana/u-2", "/"}, got); diff != "" {
		t.Errorf("X-Who sent (-want +got):\n%s", diff)
	}
	if _, _, err := ms(ctx, "u-gone", "azureOpenAI", "gpt-4o"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a user who cannot be looked up: %v", err)
	}
}

// runToEnd starts req for u on s and returns the run once it has ended.
func runToEnd(t *testing.T, s *run.Service, u *auth.User, req run.ChatRequest) *run.Run {
	t.Helper()
	ctx := t.Context()
	r, err := s.Start(ctx, u, req)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Wait(wctx, r.ID); err != nil {
		t.Fatal(err)
	}
	d, err := s.Get(ctx, u, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d.Run
}

// requestedModel is the model a chat-completions request asks for.
func requestedModel(r *http.Request) string {
	var body struct {
		Model string `json:"model"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	return body.Model
}

// answerHello streams the answer "Hello".
func answerHello(w http.ResponseWriter) {
	s := llmtest.NewSSE(w)
	s.Text("Hello")
	s.Finish("stop")
	s.Done()
}
