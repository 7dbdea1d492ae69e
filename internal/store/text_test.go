package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
)

func TestStorableText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain «ü» 🚀", "plain «ü» 🚀"},
		{"a\x00b", "a\uFFFDb"},
		{"\x00", "\uFFFD"},
		{"a\xffb", "a\uFFFDb"},
		{"a\xfe\xffb", "a\uFFFD\uFFFDb"},       // each invalid byte, as encoding/json
		{"\xe2\x82", "\uFFFD\uFFFD"},           // a sequence cut short
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // an encoded surrogate
		{`{"a":"\u0000"}`, `{"a":"\u0000"}`},   // an escape is text, not a NUL
		{"\uFFFD stays", "\uFFFD stays"},
	} {
		if got := storableText(tc.in); got != tc.want {
			t.Errorf("storableText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStorableTextAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{"a\xffb", "\xe2\x82x", "\xed\xa0\x80", "x\xf0\x9f\x98"} {
		var back string
		raw, _ := json.Marshal(s)
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if got := storableText(s); got != back {
			t.Errorf("storableText(%q) = %q; encoding/json makes %q", s, got, back)
		}
	}
}

func TestStorableJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"x"}`, `{"a":"x"}`},
		{`{"a":"x\u0000y"}`, `{"a":"x\ufffdy"}`},
		{`{"a\u0000":["\u0000","\\u0000"]}`, `{"a\ufffd":["\ufffd","\\u0000"]}`}, // an escaped backslash is no escape
		{`{"a":"\\\u0000"}`, `{"a":"\\\ufffd"}`},
		{`["\ud83d\ude80"]`, `["\ud83d\ude80"]`}, // a pair is kept
		{`["\ud83d"]`, `["\ufffd"]`},             // a high surrogate alone
		{`["\ud83dx"]`, `["\ufffdx"]`},
		{`["\ude80\ud83d"]`, `["\ufffd\ufffd"]`}, // a low one alone, then a high one alone
		{`["\u00e9\u003c"]`, `["\u00e9\u003c"]`},
		{"[\"\xff\"]", "[\"\uFFFD\"]"},
	} {
		got := storableJSON(tc.in)
		if got != tc.want {
			t.Errorf("storableJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("storableJSON(%s) = %s is not JSON", tc.in, got)
		}
	}
}

func TestStorableArgs(t *testing.T) {
	raw := []byte("a\x00")
	args := []any{"ok", 1, nil, raw}
	if got := storable(args); &got[0] != &args[0] {
		t.Error("arguments with nothing to replace were copied")
	}
	type role string
	args = []any{"a\x00", jsonValue(`"\u0000"`), raw, `"\u0000"`, role("r\x00"), role("ok")}
	got := storable(args)
	want := []any{"a\uFFFD", `"\ufffd"`, raw, `"\u0000"`, "r\uFFFD", role("ok")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("storable (-want +got):\n%s", d)
	}
	if args[0] != "a\x00" {
		t.Error("storable changed its caller's arguments")
	}
}

// BenchmarkStorable measures what the rule costs a query's arguments in the
// usual case, text with nothing to replace: a batch of events a few KB long.
func BenchmarkStorable(b *testing.B) {
	batch := strings.Repeat(`{"seq":12,"type":"message.delta","at":1732500000000000,"data":{"agent_id":"calc","text":"Het «weer» is 21°C "}},`, 40)
	args := []any{"run_abcdefghijklmnop", 12, 52, batch}
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		storable(args)
	}
}

// A full database is said plainly, as unavailable: a 503 the client and the
// operator can read, not an internal error; a value the database refuses is
// invalid; anything else is left as it is.
func TestRefusedSaysWhatIsFull(t *testing.T) {
	full, bad, other := errors.New("disk full"), errors.New("value too big"), errors.New("connection reset")
	db := &DB{d: Dialect{
		IsFull:         func(err error) bool { return err == full },
		IsRefusedValue: func(err error) bool { return err == bad },
	}}
	if err := db.refused(full); !fault.Is(err, fault.Unavailable) || !strings.Contains(err.Error(), "disk is full") || !errors.Is(err, full) {
		t.Errorf("refused(full) = %v; want unavailable, saying the disk is full, wrapping the cause", err)
	}
	if err := db.refused(bad); !fault.Is(err, fault.Invalid) {
		t.Errorf("refused(bad) = %v; want invalid", err)
	}
	if err := db.refused(other); err != other {
		t.Errorf("refused(other) = %v; want it as it is", err)
	}
}
