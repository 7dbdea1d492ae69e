package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string][2]string{
		"https://hooks.example.com/services/T0/B0/XyZsecret":   {"https://hooks.example.com/[redacted]", "https://hooks.example.com/services/T0/B0/XyZsecret"},
		"https://user:pw@example.com/?token=abc#frag":          {"https://[redacted]@example.com?[redacted]", "https://[redacted]@example.com/?[redacted]"},
		"http://mcp.example.com/u/abc123def456ghi789/mcp?k=v":  {"http://mcp.example.com/[redacted]?[redacted]", "http://mcp.example.com/u/[redacted]/mcp?[redacted]"},
		"https://example.com":                                  {"https://example.com", "https://example.com"},
		"https://example.com/v1/sse":                           {"https://example.com/[redacted]", "https://example.com/v1/sse"},
		"https://x.example/" + strings.Repeat("A", 40) + "/ok": {"https://x.example/[redacted]", "https://x.example/[redacted]/ok"},
		"not a url": {"(invalid URL)", "(invalid URL)"},
	} {
		if got := URL(raw, false); got != want[0] {
			t.Errorf("URL(%q, false) = %q, want %q", raw, got, want[0])
		}
		if got := URL(raw, true); got != want[1] {
			t.Errorf("URL(%q, true) = %q, want %q", raw, got, want[1])
		}
	}
}

func TestHeader(t *testing.T) {
	for name, sensitive := range map[string]bool{
		"Authorization": true, "authorization": true, "X-Api-Key": true, "api-key": true, "Cookie": true,
		"X-Auth-Token": true, "OpenAI-Organization": false, "Content-Type": false, "X-Title": false,
	} {
		if got := SensitiveHeader(name); got != sensitive {
			t.Errorf("SensitiveHeader(%q) = %v", name, got)
		}
		want := "v4lue"
		if sensitive {
			want = Mask
		}
		if got := Header(name, "v4lue"); got != want {
			t.Errorf("Header(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestReplacer(t *testing.T) {
	var s Secrets
	s.Add("sk-abc/def+ghi", "abc") // "abc" is too short to mask
	s.Replace("https://h.example/?key=sk-abc/def+ghi", "https://h.example/?[redacted]")
	r := s.Replacer()
	for in, want := range map[string]string{
		"key sk-abc/def+ghi here":                      "key [redacted] here",
		"escaped sk-abc%2Fdef%2Bghi":                   "escaped [redacted]",
		"get https://h.example/?key=sk-abc/def+ghi: x": "get https://h.example/?[redacted]: x",
		"abc is fine":                                  "abc is fine",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var none *Replacer
	if none.String("x") != "x" || !none.Empty() {
		t.Error("a nil Replacer changes text")
	}
}

func TestHandler(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	var s Secrets
	s.Add(key)
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), s.Replacer()))
	log = log.With(slog.String("base", "Bearer "+key)).WithGroup("g")
	log.Info("calling with "+key,
		slog.String("k", key),
		slog.Any("err", errors.New("401 for "+key)),
		slog.Group("h", slog.String("Authorization", "Bearer "+key)),
		slog.Int("n", 3))
	out := buf.String()
	if strings.Contains(out, key) {
		t.Fatalf("the key is in the log:\n%s", out)
	}
	for _, want := range []string{"calling with [redacted]", `base="Bearer [redacted]"`, "g.k=[redacted]", `g.err="401 for [redacted]"`, `g.h.Authorization="Bearer [redacted]"`, "g.n=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func BenchmarkHandlerClean(b *testing.B) {
	var s Secrets
	for _, k := range []string{"sk-live-0123456789abcdef", "rk-TESTtestTESTtestTESTtestTESTtestTESTtest", "Bearer xyz-0123456789"} {
		s.Add(k)
	}
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), s.Replacer()))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		log.Info("run finished", slog.String("run_id", "r_0123456789"), slog.String("agent", "expert"), slog.Int("tokens", 1234))
	}
}
