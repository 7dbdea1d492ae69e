package ragas_test

import (
	"encoding/json"
	"testing"

	"github.com/relay-ai/relay/internal/ragas"
)

func TestStripCitations(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"none", "Plain text, no markers.", "Plain text, no markers."},
		{"written anchor before a full stop", `Valves are inspected every 18 months \ue202turn0file0.`, "Valves are inspected every 18 months."},
		{"private-use anchor", "Doors are checked weekly \ue202turn0file1, says the manual.", "Doors are checked weekly, says the manual."},
		{"anchor between words", `The manual \ue202turn0file0 says so.`, "The manual says so."},
		{"anchor glued to the next word", `see \ue202turn0search1here`, "see here"},
		{"group of anchors at the end", "Several sources agree \ue200\ue202turn0file0\ue202turn0file1\ue201", "Several sources agree"},
		{"written group", `Several sources agree \ue200\ue202turn0search0\ue202turn0news1\ue201.`, "Several sources agree."},
		{"highlight keeps its text", "\ue203Cited text.\ue204\ue202turn0search0 More.", "Cited text. More."},
		{"bare anchors", "Per the report turn0file2 and turn1search0.", "Per the report and."},
		{"cite prefix", "It rains citeturn0search3.", "It rains."},
		{"brackets", "It is 5 【turn0file0】 and 6 【4:0†source】.", "It is 5 and 6."},
		{"line start and end", "\ue202turn0file0 First line \ue202turn0file1\nSecond.", "First line\nSecond."},
		{"anchors separated by blanks", `Yes \ue202turn0file0 \ue202turn0file1!`, "Yes!"},
		{"before an opening parenthesis", `Yes \ue202turn0file0(twice)`, "Yes (twice)"},
		{"words that look alike stay", "return0file0 and turn0page1 and turnover", "return0file0 and turn0page1 and turnover"},
		{"upper-case escape", `Done \UE202turn0file0.`, "Done."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ragas.StripCitations(tc.in); got != tc.want {
				t.Errorf("StripCitations(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestToolArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":2,"b":3}`, `{"a":2,"b":3}`},
		{` {"q":"x"} `, `{"q":"x"}`},
		{``, `{}`},
		{`  `, `{}`},
		{`null`, `{}`},
		{`[1,2]`, `{"arguments":[1,2]}`},
		{`"Paris"`, `{"arguments":"Paris"}`},
		{`42`, `{"arguments":42}`},
		{`{"q": "cut off`, `{"arguments":"{\"q\": \"cut off"}`},
		{`a <b> & c`, `{"arguments":"a <b> & c"}`},
	} {
		got := ragas.ToolArgs(json.RawMessage(tc.in))
		if string(got) != tc.want {
			t.Errorf("ToolArgs(%q) = %s, want %s", tc.in, got, tc.want)
		}
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil || obj == nil {
			t.Errorf("ToolArgs(%q) = %s is not a JSON object: %v", tc.in, got, err)
		}
	}
}
