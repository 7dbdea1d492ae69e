package provider_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// decoder reads a made-up stream: "text X" shows X, "done" ends the answer,
// "bad" cannot be read, "crash" is the provider's error, and "final" one
// that it says is not worth a retry.
type decoder struct {
	provider.Output
	turn *llm.Turn
	text strings.Builder
	// keep completes the turn when the stream breaks off, not at its end.
	keep bool
	// withheld is the answer's verdict once complete.
	withheld *llm.Error
}

func (d *decoder) Event(ev sse.Event) (bool, error) {
	switch s := string(ev.Data); {
	case strings.HasPrefix(s, "text "):
		d.text.WriteString(s[5:])
		d.Send(llm.Event{Kind: llm.EventText, Text: s[5:]})
	case s == "done":
		d.Partial()
		return true, nil
	case s == "bad":
		return false, errors.New("an event that is not JSON")
	case s == "crash":
		return false, &llm.Error{Kind: llm.ErrUnavailable, Message: "the model crashed"}
	case s == "final":
		return false, &retry.Override{Err: &llm.Error{Kind: llm.ErrUnavailable, Message: "the model crashed for good"}, Final: true}
	}
	return false, nil
}

func (d *decoder) End(err error) error {
	if d.keep && err != io.EOF {
		d.Partial()
		return nil
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *decoder) Partial()             { d.turn.Text = d.text.String() }
func (d *decoder) Withheld() *llm.Error { return d.withheld }

// jsonDecoder also reads an answer that came whole.
type jsonDecoder struct{ decoder }

func (d *jsonDecoder) JSON(r io.Reader) error {
	b, err := io.ReadAll(r)
	d.text.Write(b)
	d.Partial()
	return err
}

func events(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

// hangUp sends pieces, then drops the connection in the middle of the answer.
func hangUp(pieces ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		llmtest.Stream("text/event-stream", pieces...)(w, r)
		panic(http.ErrAbortHandler)
	}
}

func TestStream(t *testing.T) {
	stage := map[provider.Stage]string{provider.Opening: "opening", provider.Reading: "reading", provider.Shown: "shown"}
	tests := []struct {
		name     string
		handlers []http.HandlerFunc
		anyType  bool
		// keep and withheld are given to the decoder.
		keep     bool
		withheld *llm.Error
		// broken words failures when set, as Endpoint.Broken.
		broken bool
		// json makes the decoder a JSONDecoder.
		json bool

		wantTries int
		wantText  string
		wantErr   string // empty: no error, or any with wantKind
		wantKind  llm.ErrorKind
		// wantPrefix starts the error when it is not known whole.
		wantPrefix string
	}{
		{
			name:      "an answer",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Hello", "done"))},
			wantTries: 1, wantText: "Hello",
		},
		{
			name:      "a withheld answer is its error, not retried",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("done"))},
			withheld:  &llm.Error{Kind: llm.ErrUnavailable, Message: "nothing in it"},
			wantTries: 1, wantErr: "model provider: nothing in it", wantKind: llm.ErrUnavailable,
		},
		{
			name:      "an event that cannot be read before any output is retried",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("bad")), llmtest.Stream("text/event-stream", events("text ok", "done"))},
			wantTries: 2, wantText: "ok",
		},
		{
			name:      "an event that cannot be read after output is a cut stream",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Once", "bad"))},
			wantTries: 1, wantText: "Once", wantKind: llm.ErrStreamCut,
			wantErr: "model provider: the answer from Fake broke off: an event that is not JSON",
		},
		{
			name:      "its words are the provider's when it has some",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Once", "bad"))},
			broken:    true,
			wantTries: 1, wantText: "Once", wantKind: llm.ErrStreamCut,
			wantErr: "model provider: shown: an event that is not JSON",
		},
		{
			name:      "the provider's error after output is a cut stream",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Once", "crash"))},
			wantTries: 1, wantText: "Once", wantKind: llm.ErrStreamCut,
			wantErr: "model provider: the answer from Fake broke off: the model crashed",
		},
		{
			name:      "an override is returned as it is",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Once", "final"))},
			wantTries: 1, wantText: "Once", wantKind: llm.ErrUnavailable,
			wantErr: "model provider: the model crashed for good",
		},
		{
			name:      "a stream that ends early",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Once"))},
			broken:    true,
			wantTries: 1, wantText: "Once", wantKind: llm.ErrStreamCut,
			wantErr: "model provider: shown: unexpected EOF",
		},
		{
			name:      "a stream that ends early without output, in the provider's words",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", "")},
			broken:    true,
			wantTries: 3, wantKind: llm.ErrNetwork,
			wantErr: "model provider: reading: unexpected EOF",
		},
		{
			name:      "a decoder may keep an answer whose stream broke off",
			handlers:  []http.HandlerFunc{hangUp(events("text Once"))},
			keep:      true,
			wantTries: 1, wantText: "Once",
		},
		{
			name:      "but not one that ended early",
			handlers:  []http.HandlerFunc{llmtest.Stream("text/event-stream", events("text Once"))},
			keep:      true,
			wantTries: 1, wantText: "Once", wantKind: llm.ErrStreamCut,
			wantErr: "model provider: the answer from Fake broke off: unexpected EOF",
		},
		{
			name:      "no connection, in the provider's words",
			handlers:  []http.HandlerFunc{llmtest.Reset},
			broken:    true,
			wantTries: 3, wantKind: llm.ErrNetwork, wantPrefix: "model provider: opening: ",
		},
		{
			name:      "a JSON answer is a refusal",
			handlers:  []http.HandlerFunc{llmtest.Stream("application/json", `{"text":"whole"}`)},
			json:      true,
			wantTries: 1, wantKind: llm.ErrBadRequest,
			wantErr: `model provider: Fake rejected the request: HTTP 200 answer is not an event stream (Content-Type "application/json") (HTTP 200)`,
		},
		{
			name:      "a JSON answer is read whole with AnyType",
			handlers:  []http.HandlerFunc{llmtest.Stream("application/json", `{"text":"whole"}`)},
			anyType:   true,
			json:      true,
			wantTries: 1, wantText: `{"text":"whole"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewProvider(t, func(*http.Request) bool { return true }, tt.handlers...)
			ep := provider.New("Fake", "", nil, provider.Settings{})
			ep.Retry.Sleep = func(ctx context.Context, d time.Duration) error { return nil }
			ep.AnyType = tt.anyType
			if tt.broken {
				ep.Broken = func(err error, st provider.Stage) error {
					kind := llm.ErrNetwork
					if st == provider.Shown {
						kind = llm.ErrStreamCut
					}
					return &llm.Error{Kind: kind, Message: fmt.Sprintf("%s: %v", stage[st], err)}
				}
			}
			refuse := func(se *sse.StatusError) error { return &llm.Error{Kind: llm.ErrBadRequest, Message: se.Error()} }
			turn, err := ep.Stream(t.Context(), fake.URL, "m", []byte(`{}`), nil, refuse, func(turn *llm.Turn, out provider.Output) provider.Decoder {
				d := decoder{Output: out, turn: turn, keep: tt.keep, withheld: tt.withheld}
				if tt.json {
					return &jsonDecoder{d}
				}
				return &d
			})
			if tt.wantErr == "" && tt.wantKind == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
			} else {
				le, ok := errors.AsType[*llm.Error](err)
				if !ok || le.Kind != tt.wantKind || tt.wantErr != "" && err.Error() != tt.wantErr || !strings.HasPrefix(err.Error(), tt.wantPrefix) {
					t.Fatalf("error %v, want %q of kind %s", err, tt.wantErr, tt.wantKind)
				}
			}
			if fake.Tries() != tt.wantTries || turn.Retries != tt.wantTries-1 {
				t.Errorf("%d tries, %d retries; want %d tries", fake.Tries(), turn.Retries, tt.wantTries)
			}
			if turn.Text != tt.wantText || string(turn.Sent) != `{}` {
				t.Errorf("turn %+v, want the text %q", turn, tt.wantText)
			}
		})
	}
}

// RequestHeader fills the placeholders that name the conversation, once
// marked, from the context, each once and without control characters, and
// sends them empty when there is none; a header without them is the same
// header, and a placeholder's text filled in after the marking (a user's name)
// is not filled in turn.
func TestRequestHeader(t *testing.T) {
	mark := provider.MarkConversation
	h := http.Header{
		"X-Conversation": {mark("conv={{LIBRECHAT_BODY_CONVERSATIONID}}")},
		"X-Messages":     {mark("{{LIBRECHAT_BODY_PARENTMESSAGEID}}>{{LIBRECHAT_BODY_MESSAGEID}}")},
		"X-Other":        {mark("{{LIBRECHAT_BODY_OTHER}}"), "kept"},
		"X-User":         {strings.Replace(mark("{{LIBRECHAT_USER_NAME}}@{{LIBRECHAT_BODY_CONVERSATIONID}}"), "{{LIBRECHAT_USER_NAME}}", "Eve {{LIBRECHAT_BODY_CONVERSATIONID}}", 1)},
	}
	ctx := llm.WithConversation(context.Background(), llm.Conversation{
		ID: "conv_1\r\nX-Admin: 1", MessageID: "{{LIBRECHAT_BODY_CONVERSATIONID}}", ParentMessageID: "msg_0"})
	got := provider.RequestHeader(ctx, h)
	want := http.Header{
		"X-Conversation": {"conv=conv_1X-Admin: 1"},
		"X-Messages":     {"msg_0>{{LIBRECHAT_BODY_CONVERSATIONID}}"},
		"X-Other":        {"{{LIBRECHAT_BODY_OTHER}}", "kept"},
		"X-User":         {"Eve {{LIBRECHAT_BODY_CONVERSATIONID}}@conv_1X-Admin: 1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RequestHeader = %v, want %v", got, want)
	}
	if h.Get("X-Conversation") != mark("conv={{LIBRECHAT_BODY_CONVERSATIONID}}") {
		t.Errorf("RequestHeader changed the endpoint's header: %v", h)
	}
	if unmarked := (http.Header{"X-Conversation": {"{{LIBRECHAT_BODY_CONVERSATIONID}}"}}); provider.RequestHeader(ctx, unmarked).Get("X-Conversation") != "{{LIBRECHAT_BODY_CONVERSATIONID}}" {
		t.Errorf("RequestHeader filled a placeholder that was not marked")
	}
	none := provider.RequestHeader(context.Background(), h)
	if none.Get("X-Conversation") != "conv=" || none.Get("X-Messages") != ">" {
		t.Errorf("with no conversation: %v, want the placeholders empty", none)
	}
	plain := http.Header{"X-Team": {"research"}}
	if got := provider.RequestHeader(ctx, plain); reflect.ValueOf(got).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Errorf("a header without placeholders was copied")
	}
}
