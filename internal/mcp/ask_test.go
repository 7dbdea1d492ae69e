package mcp_test

//lint:file-ignore SA1019 MCP roots and sampling are deprecated from protocol 2026-07-28 on, and Relay keeps them for the servers that use them (docs/mcp.md "Roots and sampling").

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// askServer serves mcptest's client tools, speaking only versions when set.
func askServer(t *testing.T, name string, stats *mcptest.Stats, versions ...string) mcp.ServerConfig {
	url := mcptest.Start(t, mcp.TransportStreamableHTTP, mcptest.Options{ExtraTools: mcptest.ClientTools(), Stats: stats, ProtocolVersions: versions})
	return server(name, mcp.TransportStreamableHTTP, url)
}

// accept answers every question with content, filled with the schema's
// defaults, and sends the question it got on asked.
func accept(content map[string]any, asked chan<- *mcp.Question) mcp.Asker {
	return func(ctx context.Context, q *mcp.Question) (*mcp.Answer, error) {
		if asked != nil {
			asked <- q
		}
		filled, err := mcp.FillAnswer(q.RequestedSchema, content)
		if err != nil {
			return nil, err
		}
		return &mcp.Answer{Action: mcp.ActionAccept, Content: filled}, nil
	}
}

// TestQuestionReachesTheCaller: a server's question during a call reaches the
// asker of the call's context, with its schema, and the answer, with the
// schema's defaults, reaches the server; whether the server asks within the
// call (protocol 2026-07-28) or as a request of its own (2025-11-25).
func TestQuestionReachesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
	}{
		{"multi-round-trip", nil},
		{"server request", []string{"2025-11-25"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, mcp.Options{}, askServer(t, "asks", nil, tc.versions...))
			asked := make(chan *mcp.Question, 1)
			ctx := mcp.WithAsker(t.Context(), "run_1", accept(map[string]any{"name": "Ann"}, asked))
			res, err := m.Call(ctx, nil, "ask__mcp__asks", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := text(res); got != "action=accept color=green name=Ann" {
				t.Errorf("the server got %q", got)
			}
			q := <-asked
			if q.Server != "asks" || q.Mode != "form" || q.Message != "Who are you?" || q.Timeout != 5*time.Minute {
				t.Errorf("question %+v", q)
			}
			fields, err := mcp.Fields(q.RequestedSchema)
			byName := map[string]mcp.Field{}
			for _, f := range fields {
				byName[f.Name] = f
			}
			if err != nil || len(fields) != 2 || !byName["name"].Required || byName["color"].Default != "green" {
				t.Errorf("fields %+v, %v", fields, err)
			}
		})
	}
}

// TestQuestionWithoutAskerIsDeclined: a call made without an asker declines
// the server's questions.
func TestQuestionWithoutAskerIsDeclined(t *testing.T) {
	m := newManager(t, mcp.Options{}, askServer(t, "asks", nil, "2025-11-25"))
	res, err := call(t, m, nil, "ask__mcp__asks", `{}`)
	if err != nil || text(res) != "action=decline" {
		t.Fatalf("%q, %v", text(res), err)
	}
}

// TestQuestionWithSeveralCallsInFlight: with calls of two owners in flight on
// one connection, a question cannot be told whose it is and is declined; with
// calls of one owner, it goes to the oldest.
func TestQuestionWithSeveralCallsInFlight(t *testing.T) {
	stats := &mcptest.Stats{}
	m := newManager(t, mcp.Options{}, askServer(t, "asks", stats, "2025-11-25"))
	for _, tc := range []struct {
		name, sleeper string
		want          string
	}{
		{"two owners", "run_b", "action=decline"},
		{"one owner", "run_a", "action=accept color=red name=Oldest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, interrupted := stats.Calls("sleep"), stats.Interrupted()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				sctx := mcp.WithAsker(ctx, tc.sleeper, accept(map[string]any{"name": "Oldest", "color": "red"}, nil))
				_, _ = m.Call(sctx, nil, "sleep__mcp__asks", json.RawMessage(`{"ms":60000}`))
			}()
			wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer wcancel()
			if _, err := stats.Await(wctx, func(s mcptest.Snapshot) bool { return s.Calls["sleep"] > before }); err != nil {
				t.Fatal(err)
			}
			actx := mcp.WithAsker(t.Context(), "run_a", accept(map[string]any{"name": "Newest"}, nil))
			res, err := m.Call(actx, nil, "ask__mcp__asks", json.RawMessage(`{}`))
			cancel()
			<-done
			if _, err := stats.Await(wctx, func(s mcptest.Snapshot) bool { return s.Interrupted > interrupted }); err != nil {
				t.Error(err)
			}
			if err != nil || text(res) != tc.want {
				t.Fatalf("%q, %v; want %q", text(res), err, tc.want)
			}
		})
	}
}

// TestQuestionEndsWithTheCall: cancelling the call cancels the question the
// user is being asked.
func TestQuestionEndsWithTheCall(t *testing.T) {
	m := newManager(t, mcp.Options{}, askServer(t, "asks", nil, "2025-11-25"))
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan error, 1)
	ctx = mcp.WithAsker(ctx, "run_1", func(ctx context.Context, q *mcp.Question) (*mcp.Answer, error) {
		cancel()
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	if _, err := m.Call(ctx, nil, "ask__mcp__asks", json.RawMessage(`{}`)); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the question ended with %v", err)
	}
}

// TestSampling: off (the default), a server's sampling request is refused,
// saying so; on, the call's sampler answers it, its maxTokens bounded by the
// config.
func TestSampling(t *testing.T) {
	off := askServer(t, "off", nil, "2025-11-25")
	on := askServer(t, "on", nil)
	on.Sampling = mcp.Sampling{Enabled: true, MaxTokens: 64}
	m := newManager(t, mcp.Options{}, off, on)
	var got *sdk.CreateMessageParams
	ctx := mcp.WithSampler(t.Context(), func(_ context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
		got = p
		return &sdk.CreateMessageResult{Role: "assistant", Model: "fake", Content: &sdk.TextContent{Text: "four"}}, nil
	})
	if _, err := m.Call(ctx, nil, "sample__mcp__off", json.RawMessage(`{"prompt":"2+2?","maxTokens":500}`)); err == nil || !strings.Contains(err.Error(), `sampling is off for MCP server "off"`) {
		t.Errorf("sampling off: %v", err)
	}
	res, err := m.Call(ctx, nil, "sample__mcp__on", json.RawMessage(`{"prompt":"2+2?","maxTokens":500}`))
	if err != nil || text(res) != "four model=fake" {
		t.Fatalf("sampling on: %q, %v", text(res), err)
	}
	if got.MaxTokens != 64 || got.Messages[0].Content.(*sdk.TextContent).Text != "2+2?" {
		t.Errorf("the sampler got %+v", got)
	}
}

// TestRoots: roots/list is answered with the configured roots, none by default.
func TestRoots(t *testing.T) {
	none := askServer(t, "none", nil, "2025-11-25")
	some := askServer(t, "some", nil, "2025-11-25")
	some.Roots = []mcp.Root{{URI: "file:///srv/data", Name: "data"}}
	m := newManager(t, mcp.Options{}, none, some)
	for key, want := range map[string]string{"roots__mcp__none": "no roots", "roots__mcp__some": "file:///srv/data data"} {
		res, err := call(t, m, nil, key, `{}`)
		if err != nil || text(res) != want {
			t.Errorf("%s: %q, %v; want %q", key, text(res), err, want)
		}
	}
}

// TestEverythingElicitation: the reference server's elicitation tool, over
// stdio, gets the answer with the defaults of its schema filled in.
func TestEverythingElicitation(t *testing.T) {
	s, _ := stdioEverything(t, "everything")
	m := newManager(t, mcp.Options{}, s)
	asked := make(chan *mcp.Question, 1)
	ctx := mcp.WithAsker(t.Context(), "run_1", accept(map[string]any{"name": "Ann Smith", "check": true, "email": "ann@example.com"}, asked))
	res, err := m.Call(ctx, nil, "trigger-elicitation-request__mcp__everything", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	out := text(res)
	for _, want := range []string{"Ann Smith", "ann@example.com", "It was a dark and stormy night.", "Monica"} {
		if !strings.Contains(out, want) {
			t.Errorf("the result lacks %q:\n%s", want, out)
		}
	}
	if q := <-asked; q.Server != "everything" || q.Mode != "form" {
		t.Errorf("question %+v", q)
	}
}

// TestFillAnswer: an answer is checked against its schema field by field, and
// the defaults fill what it lacks.
func TestFillAnswer(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","minLength":2},"age":{"type":"integer","minimum":0,"default":30},
		"email":{"type":"string","format":"email"},"ok":{"type":"boolean","default":true},
		"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":1},"size":{"type":"string","oneOf":[{"const":"s"},{"const":"m"}]}},
		"required":["name","email"]}`)
	got, err := mcp.FillAnswer(schema, map[string]any{"name": "Ann", "email": "ann@example.com", "tags": []any{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if string(b) != `{"age":30,"email":"ann@example.com","name":"Ann","ok":true,"tags":["a"]}` {
		t.Errorf("filled %s", b)
	}
	_, err = mcp.FillAnswer(schema, map[string]any{"name": "A", "age": 1.5, "tags": []any{"a", "b"}, "size": "xl", "extra": 1})
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Kind != fault.Invalid {
		t.Fatalf("%v", err)
	}
	var fields []string
	for _, f := range fe.Fields {
		fields = append(fields, f.Field)
	}
	if strings.Join(fields, ",") != "name,age,email,tags,size,extra" {
		t.Errorf("fields %v (%v)", fields, err)
	}
}
