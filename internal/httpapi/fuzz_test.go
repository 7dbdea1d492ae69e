package httpapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
)

// FuzzRequestBodies checks the JSON request decoders with any body: the
// /v1 chat-completions reader and the chat and agent bodies of the API
// either read it or refuse it as a client's mistake (fault.Invalid, or
// TooLarge), never panic or fail otherwise.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"model":"calc","messages":[{"role":"user","content":"What is 2+3?"}]}`,
		`{"model":"calc","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"calc","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"get"}}}`,
		`{"model":"m","messages":[],"n":2,"temperature":9,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},"stop":["a"],"seed":1}`,
		`{"agent_id":"calc","text":"hello","conversation_id":"conv_1","files":["f"],"images":[{"mime_type":"image/png","data":"AAAA"}]}`,
		`{"id":"a","name":"A","provider":"openAI","model":"gpt-4o","tools":["x"],"edges":[{"from":"a","to":["b"],"edgeType":"direct"}]}`,
		`[]`, `null`, `{"model":1}`, `{"messages":"x"}`, `{} {}`, "\x00", `{"text":"\u0000"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		check := func(what string, err error) {
			if err == nil {
				return
			}
			var fe *fault.Error
			if !errors.As(err, &fe) || (fe.Kind != fault.Invalid && fe.Kind != fault.TooLarge) {
				t.Fatalf("%s: %v (%T), want a client error", what, err, err)
			}
		}
		req, err := readCompletion(httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
		check("readCompletion", err)
		if err == nil {
			_, err := req.chatRequest()
			check("chatRequest", err)
		}
		var chat run.ChatRequest
		check("decode chat", decode(httptest.NewRequest("POST", "/api/chat", strings.NewReader(body)), &chat))
		var spec agent.Spec
		check("decode agent", decode(httptest.NewRequest("POST", "/api/agents", strings.NewReader(body)), &spec))
	})
}
