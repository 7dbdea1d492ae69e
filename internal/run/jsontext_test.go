package run

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// encodingJSON is how encoding/json writes v with SetEscapeHTML(false).
func encodingJSON(t testing.TB, v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

var jsonTexts = []string{
	"", "plain text", `quotes " and \ backslashes`, "new\nline\r\ttab", "\b\f\x00\x01\x1f\x7f",
	"<b>html</b> & stays", "naïve café — ✓ 😀", "line\u2028separator\u2029paragraph",
	"bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "<1700000000000000000>",
}

func TestDeltaJSONIsEncodingJSON(t *testing.T) {
	for _, s := range jsonTexts {
		d := MessageDelta{AgentID: "agent_" + s, Text: s}
		if got, want := string(d.appendJSON(nil)), encodingJSON(t, d); got != want {
			t.Errorf("delta %q:\n got %s\nwant %s", s, got, want)
		}
		if got, want := string(Encode(d)), encodingJSON(t, d); got != want {
			t.Errorf("Encode(delta %q):\n got %s\nwant %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := string(appendJSONString(nil, s)), encodingJSON(t, s)
		if utf8.ValidString(s) {
			if got != want {
				t.Errorf("%q:\n got %s\nwant %s", s, got, want)
			}
			return
		}
		// Invalid UTF-8 becomes U+FFFD, which Go releases write either as
		// the character or as \ufffd: the two must read back the same.
		var g, w string
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, got, err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil || g != w {
			t.Errorf("%q:\n got %s (%q)\nwant %s (%q)", s, got, g, want, w)
		}
	})
}

func BenchmarkDeltaJSON(b *testing.B) {
	d := MessageDelta{AgentID: "support", Text: " token"}
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Encode(d)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = encodingJSON(b, d)
		}
	})
}
