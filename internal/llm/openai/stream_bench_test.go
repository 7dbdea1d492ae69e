package openai_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/openai"
)

// BenchmarkStream is one whole turn: the request, an answer of 500 text
// chunks as OpenAI writes them, then the finish, usage and [DONE] chunks, read
// through the client's whole path (opening the stream, reading its events,
// decoding the chunks, passing the events on, completing the turn). The
// answer travels in memory, so the time is the client's, not a network's.
func BenchmarkStream(b *testing.B) {
	const chunks = 500
	var answer strings.Builder
	for i := range chunks {
		fmt.Fprintf(&answer, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"+
			"\"model\":\"gpt-4o\",\"system_fingerprint\":\"fp_1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token%d\"},"+
			"\"logprobs\":null,\"finish_reason\":null}]}\n\n", i)
	}
	answer.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	answer.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":500,\"total_tokens\":509}}\n\n")
	answer.WriteString("data: [DONE]\n\n")
	body := []byte(answer.String())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// In pieces of a few chunks, as they come from a provider.
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 1024)
			w.Write(rest[:n])
			rest = rest[n:]
		}
	})
	c := openai.New(openai.Options{BaseURL: "http://provider.test/v1", APIKey: "sk-bench", HTTPClient: llmtest.Client(h)})
	req := hello()
	emit := func(llm.Event) {}
	b.ReportAllocs()
	for b.Loop() {
		turn, err := c.Stream(b.Context(), req, emit)
		if err != nil || turn.Usage.CompletionTokens != chunks {
			b.Fatalf("turn %+v, error %v", turn, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
}
