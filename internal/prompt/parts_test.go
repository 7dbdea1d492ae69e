package prompt_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/prompt"
)

func TestMessageParts(t *testing.T) {
	tests := []struct {
		name string
		msg  prompt.Message
		want string
	}{
		{
			name: "no parts keeps the content string",
			msg:  prompt.Message{Role: prompt.RoleUser, Content: "hi <b> & you"},
			want: `{"role":"user","content":"hi <b> & you"}`,
		},
		{
			name: "assistant with tool calls and no parts keeps null content",
			msg: prompt.Message{Role: prompt.RoleAssistant, ToolCalls: []prompt.ToolCall{{
				ID: "c1", Function: prompt.FunctionCall{Name: "f", Arguments: "{}"},
			}}},
			want: `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		},
		{
			name: "text and image parts replace the content",
			msg: prompt.Message{Role: prompt.RoleUser, Content: "ignored", Name: "ann", Parts: []prompt.Part{
				{Type: prompt.PartText, Text: "look at <this>:\n"},
				{Type: prompt.PartImage, MIMEType: "image/png", Data: "iVBORw0KGgo="},
			}},
			want: `{"role":"user","content":[{"type":"text","text":"look at <this>:\n"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}],"name":"ann"}`,
		},
		{
			name: "tool message with a text part",
			msg: prompt.Message{Role: prompt.RoleTool, ToolCallID: "c1", Parts: []prompt.Part{
				{Type: prompt.PartText, Text: "[image: image/png]"},
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
	req := prompt.Request{Model: "m", Messages: []prompt.Message{
		{Role: prompt.RoleSystem, Content: "sys"},
		{Role: prompt.RoleUser, Parts: []prompt.Part{{Type: prompt.PartImage, MIMEType: "image/jpeg", Data: "/9j/"}}},
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
