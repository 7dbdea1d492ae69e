package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/relay-ai/relay/internal/llm"
)

func TestAppendFields(t *testing.T) {
	obj, err := Marshal(struct {
		Model string `json:"model"`
		Text  string `json:"text"`
	}{"m", "<b> & </b>"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendFields(obj, map[string]any{"z": 1, "a": map[string]any{"k": "<v>"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"model":"m","text":"<b> & </b>","a":{"k":"<v>"},"z":1}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, _ := AppendFields([]byte(`{}`), map[string]any{"a": true}); string(got) != `{"a":true}` {
		t.Errorf("into an empty object: %s", got)
	}
	if _, err := AppendFields([]byte(`{}`), map[string]any{"bad": func() {}}); err == nil {
		t.Error("a field that cannot be written is accepted")
	}
}

func TestParams(t *testing.T) {
	ps := map[string]any{"max_tokens": 10.0, "maxOutputTokens": 20, "topP": 0.5, "top_p": nil}
	if v, ok := Param(ps, nil, "max_tokens", "maxOutputTokens"); !ok || v != 10.0 {
		t.Errorf("Param = %v, %v; want the first name's value", v, ok)
	}
	if v, ok := Param(ps, map[string]bool{"max_tokens": true}, "max_tokens", "maxOutputTokens"); !ok || v != 20 {
		t.Errorf("Param with max_tokens dropped = %v, %v; want the alias", v, ok)
	}
	if v, ok := Param(ps, nil, "top_p", "topP"); !ok || v != 0.5 {
		t.Errorf("Param = %v, %v; a null value is not set", v, ok)
	}
	for _, tt := range []struct {
		in   any
		want int
		ok   bool
	}{{1000, 1000, true}, {1000.0, 1000, true}, {12.5, 12, false}, {json.Number("77"), 77, true}, {"64", 64, true}, {"x", 0, false}, {true, 0, false}} {
		if got, ok := Int(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("Int(%#v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   any
		want []string
	}{{"END", []string{"END"}}, {"", nil}, {[]any{"a", 1, "", "b"}, []string{"a", "b"}}, {[]string{"x"}, []string{"x"}}, {3, nil}} {
		if diff := cmp.Diff(tt.want, Strings(tt.in)); diff != "" {
			t.Errorf("Strings(%#v) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestMessages(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "one"},
		{Role: llm.RoleUser, Content: "question"},
		{Role: llm.RoleSystem, Parts: []llm.Part{{Type: llm.PartText, Text: "two"}, {Type: llm.PartImage, Data: "x"}, {Type: llm.PartText, Text: "three"}}},
		{Role: llm.RoleSystem, Content: ""},
	}
	if got, want := System(msgs), "one\n\ntwo\n\nthree"; got != want {
		t.Errorf("System = %q, want %q", got, want)
	}
	if ToolFailed(&llm.Message{Role: llm.RoleTool, Content: "ok"}) || !ToolFailed(&llm.Message{Role: llm.RoleTool, IsError: true}) {
		t.Error("ToolFailed does not follow the name convention")
	}
	for _, tt := range []struct {
		args, want string
		ok         bool
	}{{"", "{}", true}, {` {"a":1} `, `{"a":1}`, true}, {`{"a":`, "{}", false}, {`[1]`, "{}", false}, {`null`, "{}", false}} {
		got, ok := Object(tt.args)
		if string(got) != tt.want || ok != tt.ok {
			t.Errorf("Object(%q) = %s, %v; want %s, %v", tt.args, got, ok, tt.want, tt.ok)
		}
	}
}
