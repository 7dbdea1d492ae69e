package llm

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// stdJSON is what encoding/json writes for v without HTML escaping.
func stdJSON(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var stringSamples = []string{
	"", "plain", `"quoted" \ back\slash`, "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
	"<html> & </html>", "📄 → – ü", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82", "12345678", "1234567\"",
	"a long line of plain text that crosses several eight-byte words, then \x19 at the end",
	strings.Repeat("x", 64) + "\\" + strings.Repeat("é", 9),
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringSamples {
		if got, want := string(appendString(nil, s)), stdJSON(t, s); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := string(appendString(nil, s)), stdJSON(t, s)
		if utf8.ValidString(s) {
			if got != want {
				t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
			}
			return
		}
		// Invalid UTF-8 becomes U+FFFD, which Go releases write either as
		// the character or as \ufffd: the two must read back the same.
		var g, w string
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("appendString(%q) = %s, not a JSON string: %v", s, got, err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil || g != w {
			t.Fatalf("appendString(%q) = %s (%q), want %s (%q)", s, got, g, want, w)
		}
	})
}

func TestAppendValueMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, 0.7, 1e21, 1e-7, math.Copysign(0, -1), 123456789.0, float32(0.1), 42, int64(-7), uint64(1 << 63), json.Number("1.5e3"),
		"s", []any{1.0, "a", nil, map[string]any{}}, []string{"x", "<y>"},
		map[string]any{"type": "object", "properties": map[string]any{"b": 1.0, "a": []any{}}, "required": []any{"a"}},
		json.RawMessage(`{"z":1,"a":2}`),
		map[string]int{"b": 2, "a": 1}, // through encoding/json
	}
	for _, v := range values {
		got, err := appendValue(nil, v, 0)
		if err != nil {
			t.Errorf("appendValue(%#v): %v", v, err)
			continue
		}
		if want := stdJSON(t, v); string(got) != want {
			t.Errorf("appendValue(%#v) = %s, want %s", v, got, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), json.Number("01"), json.RawMessage(`{`), func() {}} {
		if _, err := appendValue(nil, v, 0); err == nil {
			t.Errorf("appendValue(%#v): want an error", v)
		}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := appendValue(nil, cyclic, 0); err == nil {
		t.Errorf("a map holding itself: want an error")
	}
}
