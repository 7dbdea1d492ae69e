package wire

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm"
)

func TestUnmapped(t *testing.T) {
	aliases := []Alias{{Field: "top_p", Names: []string{"top_p", "topP"}}, {Field: "temperature", Names: []string{"temperature"}}}
	got := Unmapped(map[string]any{"topP": 1, "temperature": 0, "seed": 3, "logprobs": true}, aliases)
	if !slices.Equal(got, []string{"logprobs", "seed"}) {
		t.Errorf("Unmapped = %v", got)
	}
}

func TestParts(t *testing.T) {
	text := func(s string) string { return "text:" + s }
	image := func(mimeType, data string) string { return "image:" + mimeType + ":" + data }
	for _, tt := range []struct {
		m    llm.Message
		want []string
	}{
		{llm.Message{Content: "hi"}, []string{"text:hi"}},
		{llm.Message{}, nil},
		{llm.Message{Content: "x", Parts: []llm.Part{
			{Type: llm.PartText, Text: "a"}, {Type: llm.PartText}, {Type: llm.PartImage, MIMEType: "image/png", Data: "AA=="},
		}}, []string{"text:a", "image:image/png:AA=="}},
	} {
		if got := Parts(&tt.m, text, image); !slices.Equal(got, tt.want) {
			t.Errorf("Parts(%+v) = %v, want %v", tt.m, got, tt.want)
		}
	}
}

func TestArguments(t *testing.T) {
	var log bytes.Buffer
	l := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	call := func(args string) llm.ToolCall {
		return llm.ToolCall{Function: llm.FunctionCall{Name: "f", Arguments: args}}
	}
	if got := string(Arguments(call(`{"a":1}`), l)); got != `{"a":1}` || log.Len() != 0 {
		t.Errorf("Arguments = %s, log %q", got, log.String())
	}
	if got := string(Arguments(call(`{"a":`), l)); got != "{}" || !strings.Contains(log.String(), "tool=f") {
		t.Errorf("Arguments of broken JSON = %s, log %q", got, log.String())
	}
}
