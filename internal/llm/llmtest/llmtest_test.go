package llmtest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

func request(text string) *llm.Request {
	return &llm.Request{
		Model:    "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: text}},
		Params:   map[string]any{"stop": []any{"x"}, "nested": map[string]any{"a": 1}},
	}
}

func TestScriptReplaysTurnsInOrder(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Function: llm.FunctionCall{Name: "f", Arguments: `{"a":1}`}}
	m := llmtest.New(
		llmtest.Turn{ToolCalls: []llm.ToolCall{call}, Usage: llm.Usage{TotalTokens: 3}},
		llmtest.Turn{Text: []string{"Hel", "lo"}, Retries: 1},
	)
	var events []llm.Event
	emit := func(ev llm.Event) { events = append(events, ev) }

	turn, err := m.Stream(t.Context(), request("one"), emit)
	if err != nil {
		t.Fatal(err)
	}
	call.Type = "function"
	want := &llm.Turn{
		ToolCalls: []llm.ToolCall{call}, FinishReason: llm.FinishToolCalls, Usage: llm.Usage{TotalTokens: 3},
		Sent: []byte(`{"model":"m","messages":[{"role":"user","content":"one"}],"nested":{"a":1},"stop":["x"]}`),
	}
	if diff := cmp.Diff(want, turn); diff != "" {
		t.Errorf("first turn (-want +got):\n%s", diff)
	}

	turn, err = m.Stream(t.Context(), request("two"), emit)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Hello" || turn.FinishReason != llm.FinishStop || turn.Retries != 1 {
		t.Errorf("second turn %+v", turn)
	}
	var kinds []llm.EventKind
	for _, ev := range events {
		kinds = append(kinds, ev.Kind)
	}
	wantKinds := []llm.EventKind{llm.EventToolCallDelta, llm.EventUsage, llm.EventRetry, llm.EventText, llm.EventText}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	if _, err := m.Stream(t.Context(), request("three"), emit); err == nil || !strings.Contains(err.Error(), "no scripted turn") {
		t.Errorf("a request past the script: %v", err)
	}
}

func TestRequestsAreCopies(t *testing.T) {
	m := llmtest.New(llmtest.Turn{Text: []string{"ok"}})
	req := request("hi")
	req.Messages[0].Parts = []llm.Part{{Type: llm.PartText, Text: "hi"}}
	if _, err := m.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	req.Messages[0].Content = "changed"
	req.Messages[0].Parts[0].Text = "changed"
	req.Params["stop"].([]any)[0] = "changed"
	req.Params["nested"].(map[string]any)["a"] = 2

	got := m.Requests()
	got[0].Messages[0].Content = "changed by the reader"
	want := request("hi")
	want.Messages[0].Parts = []llm.Part{{Type: llm.PartText, Text: "hi"}}
	if diff := cmp.Diff([]*llm.Request{want}, m.Requests()); diff != "" {
		t.Errorf("recorded requests (-want +got):\n%s", diff)
	}
}

func TestFunc(t *testing.T) {
	m := llmtest.Func(func(req *llm.Request) llmtest.Turn {
		return llmtest.Turn{Text: []string{"echo: " + req.Messages[len(req.Messages)-1].Content}}
	})
	var wg sync.WaitGroup
	for _, text := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			turn, err := m.Stream(t.Context(), request(text), nil)
			if err != nil || turn.Text != "echo: "+text {
				t.Errorf("turn %+v, error %v", turn, err)
			}
		})
	}
	wg.Wait()
	if n := len(m.Requests()); n != 4 {
		t.Errorf("%d requests recorded, want 4", n)
	}
}

func TestErrorAfterPieces(t *testing.T) {
	cut := &llm.Error{Kind: llm.ErrStreamCut, Message: "the answer was cut off"}
	m := llmtest.New(llmtest.Turn{
		Text:      []string{"part"},
		ToolCalls: []llm.ToolCall{{ID: "c", Function: llm.FunctionCall{Name: "f"}}},
		Err:       cut,
	})
	turn, err := m.Stream(t.Context(), request("x"), nil)
	if !errors.Is(err, cut) || turn == nil || turn.Text != "part" || turn.ToolCalls != nil {
		t.Errorf("turn %+v, error %v; want the partial text and the error", turn, err)
	}
}

func TestDelayAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New(llmtest.Turn{Text: []string{"a", "b", "c"}, Delay: time.Second})
		ctx, cancel := context.WithCancelCause(t.Context())
		abort := errors.New("abort")
		time.AfterFunc(2500*time.Millisecond, func() { cancel(abort) })
		start := time.Now()
		turn, err := m.Stream(ctx, request("x"), nil)
		if !errors.Is(err, abort) || turn.Text != "ab" || time.Since(start) != 2500*time.Millisecond {
			t.Errorf("turn %+v, error %v after %v", turn, err, time.Since(start))
		}
	})
}

func TestClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := llmtest.Client(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Got", string(b)+" "+r.URL.Path)
			sse := llmtest.NewSSE(w)
			sse.Text("hi")
			time.Sleep(time.Minute)
			sse.Done()
		}))
		resp, err := c.Post("http://fake.test/v1/chat/completions", "application/json", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null,\"index\":0}]," +
			"\"id\":\"chatcmpl-test\",\"model\":\"test\",\"object\":\"chat.completion.chunk\"}\n\ndata: [DONE]\n\n"
		if resp.StatusCode != 200 || resp.Header.Get("X-Got") != "body /v1/chat/completions" || string(b) != want {
			t.Errorf("answer %d %v %q", resp.StatusCode, resp.Header, b)
		}

		// A handler that hangs up before answering is a failed request.
		c = llmtest.Client(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }))
		if _, err := c.Get("http://fake.test/"); err == nil {
			t.Error("no error from a handler that hung up")
		}
	})
}
