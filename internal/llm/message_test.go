package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
)

func TestMessageParts(t *testing.T) {
	tests := []struct {
		name string
		msg  llm.Message
		want string
	}{
		{
			name: "no parts keeps the content string",
			msg:  llm.Message{Role: llm.RoleUser, Content: "hi <b> & you"},
			want: `{"role":"user","content":"hi <b> & you"}`,
		},
		{
			name: "assistant with tool calls and no parts keeps null content",
			msg: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{
				ID: "c1", Function: llm.FunctionCall{Name: "f", Arguments: "{}"},
			}}},
			want: `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		},
		{
			name: "text and image parts replace the content",
			msg: llm.Message{Role: llm.RoleUser, Content: "ignored", Name: "ann", Parts: []llm.Part{
				{Type: llm.PartText, Text: "look at <this>:\n"},
				{Type: llm.PartImage, MIMEType: "image/png", Data: "iVBORw0KGgo="},
			}},
			want: `{"role":"user","content":[{"type":"text","text":"look at <this>:\n"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}],"name":"ann"}`,
		},
		{
			name: "tool message with a text part",
			msg: llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Parts: []llm.Part{
				{Type: llm.PartText, Text: "[image: image/png]"},
			}},
			want: `{"role":"tool","content":[{"type":"text","text":"[image: image/png]"}],"tool_call_id":"c1"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.msg.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if !json.Valid(got) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestRequestWithParts(t *testing.T) {
	req := llm.Request{Model: "m", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "sys"},
		{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartImage, MIMEType: "image/jpeg", Data: "/9j/"}}},
	}}
	got, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"system","content":"sys"},` +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]}]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// A function's strict is written after its parameters when it is set, true
// or false, and not at all when it is not (the agent's own tools).
func TestFunctionToolStrict(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		name   string
		strict *bool
		want   string
	}{
		{"unset", nil, `{"type":"function","function":{"name":"f","description":"","parameters":{"type":"object","properties":{}}}}`},
		{"true", &yes, `{"type":"function","function":{"name":"f","description":"","parameters":{"type":"object","properties":{}},"strict":true}}`},
		{"false", &no, `{"type":"function","function":{"name":"f","description":"","parameters":{"type":"object","properties":{}},"strict":false}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := llm.FunctionTool{Function: llm.Function{Name: "f", Strict: tt.strict}}.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("tool (-want +got):\n%s", diff)
			}
		})
	}
}
