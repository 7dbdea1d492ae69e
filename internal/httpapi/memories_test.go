package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// setupMemory is setup for the memory routes: a running API whose memory
// service has the given config, and keys for ann and bob. A nil cfg leaves
// Options.Memory nil.
func setupMemory(t *testing.T, cfg *memory.Config) *bundle {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{auth: auth.NewService(st, nil)}
	var mem *memory.Service
	if cfg != nil {
		mem = memory.NewService(st, *cfg, nil)
	}
	b.srv = httptest.NewServer(newAPI(t, httpapi.Options{
		Auth: b.auth, Memory: mem, MaxBodyBytes: 64 << 10,
	}))
	t.Cleanup(b.srv.Close)
	for _, u := range []struct {
		email string
		key   *string
	}{{"ann@example.com", &b.annKey}, {"bob@example.com", &b.bobKey}} {
		user, err := b.auth.CreateUser(ctx, auth.NewUser{Email: u.email})
		if err != nil {
			t.Fatal(err)
		}
		if _, *u.key, err = b.auth.CreateKey(ctx, user.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if u.email == "ann@example.com" {
			b.annID = user.ID
		}
	}
	return b
}

// memoryPage is the body of GET /api/memories.
type memoryPage struct {
	Data       []memory.Entry `json:"data"`
	TokenCount int            `json:"token_count"`
	TokenLimit int            `json:"token_limit"`
}

func (b *bundle) memories(t *testing.T, key string) memoryPage {
	t.Helper()
	var p memoryPage
	if code := b.do(t, key, "GET", "/api/memories", nil, &p); code != http.StatusOK {
		t.Fatalf("GET /api/memories: status %d", code)
	}
	return p
}

func TestMemoryRoundTrip(t *testing.T) {
	b := setupMemory(t, &memory.Config{TokenLimit: 500})
	if p := b.memories(t, b.annKey); p.Data == nil || len(p.Data) != 0 || p.TokenCount != 0 || p.TokenLimit != 500 {
		t.Errorf("empty list = %+v, want no entries, 0 of 500 tokens", p)
	}

	before := time.Now().Add(-time.Second)
	var raw map[string]any
	if code := b.do(t, b.annKey, "PUT", "/api/memories/name", `{"value": "  Ann, an engineer  "}`, &raw); code != http.StatusOK {
		t.Fatalf("PUT: status %d: %v", code, raw)
	}
	if d := cmp.Diff([]string{"key", "token_count", "updated_at", "value"}, keys(raw)); d != "" {
		t.Errorf("fields of an entry (-want +got):\n%s", d)
	}
	var put memory.Entry
	b.do(t, b.annKey, "PUT", "/api/memories/city", map[string]string{"value": "Utrecht"}, &put)
	if put.Key != "city" || put.Value != "Utrecht" || put.Tokens != 2 || put.UpdatedAt.Before(before) {
		t.Errorf("PUT answered %+v", put)
	}

	var got memory.Entry
	if code := b.do(t, b.annKey, "GET", "/api/memories/city", nil, &got); code != http.StatusOK {
		t.Fatalf("GET one: status %d", code)
	}
	if d := cmp.Diff(put, got); d != "" {
		t.Errorf("GET one differs from the PUT answer (-put +get):\n%s", d)
	}

	p := b.memories(t, b.annKey)
	if len(p.Data) != 2 || p.Data[0].Key != "name" || p.Data[0].Value != "Ann, an engineer" || p.Data[1] != put {
		t.Errorf("list = %+v, want name (trimmed) then city, oldest first", p.Data)
	}
	if p.TokenCount != 6 {
		t.Errorf("token_count = %d, want 6 (4 + 2)", p.TokenCount)
	}

	// Replacing moves the entry to the end and changes its size.
	b.do(t, b.annKey, "PUT", "/api/memories/name", `{"value": "Ann"}`, nil)
	p = b.memories(t, b.annKey)
	if len(p.Data) != 2 || p.Data[1].Key != "name" || p.Data[1].Value != "Ann" || p.TokenCount != 3 {
		t.Errorf("after replacing name: %+v", p)
	}

	if code := b.do(t, b.annKey, "DELETE", "/api/memories/city", nil, nil); code != http.StatusNoContent {
		t.Errorf("DELETE: status %d, want 204", code)
	}
	for _, method := range []string{"GET", "DELETE"} {
		var e apiError
		if code := b.do(t, b.annKey, method, "/api/memories/city", nil, &e); code != http.StatusNotFound || e.Error.Message != `memory "city" not found` {
			t.Errorf("%s of a deleted memory: %d %+v, want 404 naming it", method, code, e.Error)
		}
	}
}

func TestMemoryBadInput(t *testing.T) {
	b := setupMemory(t, &memory.Config{ValidKeys: []string{"name", "preferences", "city"}})
	for _, tc := range []struct {
		name, path, body string
		want             int
		field, message   string
	}{
		{"key with capitals", "/api/memories/Name", `{"value": "Ann"}`, 400, "key", `"Name" is not a valid key: use 1 to 64 lower-case letters a-z or _`},
		{"key with digits", "/api/memories/city2", `{"value": "Ann"}`, 400, "key", `"city2" is not a valid key: use 1 to 64 lower-case letters a-z or _`},
		{"key too long", "/api/memories/" + strings.Repeat("k", 65), `{"value": "x"}`, 400, "key", ""},
		{"key not allowed", "/api/memories/hobby", `{"value": "chess"}`, 400, "key", `"hobby" is not one of the allowed keys: name, preferences, city`},
		{"blank value", "/api/memories/name", `{"value": "  "}`, 400, "value", "required: the text to remember must not be empty"},
		{"missing value", "/api/memories/name", `{}`, 400, "value", "required: the text to remember must not be empty"},
		{"value not a string", "/api/memories/name", `{"value": 42}`, 400, "value", "expected string, got number"},
		{"unknown field", "/api/memories/name", `{"value": "Ann", "key": "name"}`, 400, "key", "unknown field"},
		{"not JSON", "/api/memories/name", `value=Ann`, 400, "", ""},
		{"empty body", "/api/memories/name", ``, 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e apiError
			code := b.do(t, b.annKey, "PUT", tc.path, tc.body, &e)
			if code != tc.want || e.Error.Code != "invalid" {
				t.Fatalf("status %d, code %q; want %d invalid", code, e.Error.Code, tc.want)
			}
			if tc.field != "" {
				if len(e.Error.Fields) != 1 || e.Error.Fields[0].Field != tc.field {
					t.Fatalf("fields %+v, want one naming %q", e.Error.Fields, tc.field)
				}
				if tc.message != "" && e.Error.Fields[0].Message != tc.message {
					t.Errorf("message %q, want %q", e.Error.Fields[0].Message, tc.message)
				}
			}
		})
	}
	if p := b.memories(t, b.annKey); len(p.Data) != 0 {
		t.Errorf("refused writes stored %+v", p.Data)
	}
}

func TestMemoryLimit(t *testing.T) {
	b := setupMemory(t, &memory.Config{TokenLimit: 2000})
	if code := b.do(t, b.annKey, "PUT", "/api/memories/notes", map[string]string{"value": strings.Repeat("x", 4*1950)}, nil); code != http.StatusOK {
		t.Fatalf("PUT under the limit: status %d", code)
	}
	var e apiError
	code := b.do(t, b.annKey, "PUT", "/api/memories/more", map[string]string{"value": strings.Repeat("y", 4*120)}, &e)
	want := "memory is full: 1,950 of 2,000 tokens used; this value needs 120. Delete or shorten an entry first."
	if code != http.StatusConflict || e.Error.Code != "conflict" || e.Error.Message != want {
		t.Errorf("PUT over the limit: %d %+v, want 409 %q", code, e.Error, want)
	}
	if p := b.memories(t, b.annKey); len(p.Data) != 1 || p.TokenCount != 1950 || p.TokenLimit != 2000 {
		t.Errorf("after a refused PUT: %d entries, %d of %d tokens", len(p.Data), p.TokenCount, p.TokenLimit)
	}
	// Bob's memory has its own limit.
	if code := b.do(t, b.bobKey, "PUT", "/api/memories/more", map[string]string{"value": strings.Repeat("y", 4*120)}, nil); code != http.StatusOK {
		t.Errorf("bob's PUT: status %d, want 200", code)
	}
}

func TestMemoryPerUser(t *testing.T) {
	b := setupMemory(t, &memory.Config{})
	b.do(t, b.annKey, "PUT", "/api/memories/name", `{"value": "Ann"}`, nil)
	b.do(t, b.bobKey, "PUT", "/api/memories/name", `{"value": "Bob"}`, nil)
	b.do(t, b.bobKey, "PUT", "/api/memories/pet", `{"value": "a cat"}`, nil)

	if p := b.memories(t, b.annKey); len(p.Data) != 1 || p.Data[0].Value != "Ann" {
		t.Errorf("ann's list = %+v, want only her own", p.Data)
	}
	var e apiError
	if code := b.do(t, b.annKey, "GET", "/api/memories/pet", nil, &e); code != http.StatusNotFound {
		t.Errorf("ann reading bob's key: %d, want 404", code)
	}
	if code := b.do(t, b.annKey, "DELETE", "/api/memories/pet", nil, nil); code != http.StatusNotFound {
		t.Errorf("ann deleting bob's key: %d, want 404", code)
	}
	if code := b.do(t, b.annKey, "DELETE", "/api/memories/name", nil, nil); code != http.StatusNoContent {
		t.Fatalf("ann deleting her own: %d", code)
	}
	var bobs memory.Entry
	if code := b.do(t, b.bobKey, "GET", "/api/memories/name", nil, &bobs); code != http.StatusOK || bobs.Value != "Bob" {
		t.Errorf("bob's name after ann deleted hers: %d %+v", code, bobs)
	}
	if p := b.memories(t, b.bobKey); len(p.Data) != 2 {
		t.Errorf("bob's list = %+v, want 2 entries", p.Data)
	}
}

func TestMemoryDisabled(t *testing.T) {
	for name, cfg := range map[string]*memory.Config{
		"in the config": {Disabled: true, TokenLimit: 100},
		"no service":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			b := setupMemory(t, cfg)
			p := b.memories(t, b.annKey)
			if p.Data == nil || len(p.Data) != 0 || p.TokenCount != 0 {
				t.Errorf("list while disabled = %+v, want empty", p)
			}
			for _, req := range []struct{ method, body string }{{"PUT", `{"value": "Ann"}`}, {"DELETE", ""}} {
				var e apiError
				code := b.do(t, b.annKey, req.method, "/api/memories/name", req.body, &e)
				if code != http.StatusConflict || e.Error.Message != "memory is disabled in the config" {
					t.Errorf("%s while disabled: %d %+v, want 409 saying memory is disabled", req.method, code, e.Error)
				}
			}
			if code := b.do(t, b.annKey, "GET", "/api/memories/name", nil, nil); code != http.StatusNotFound {
				t.Errorf("GET one while disabled: %d, want 404", code)
			}
		})
	}
}

func TestMemoryNeedsAKey(t *testing.T) {
	b := setupMemory(t, &memory.Config{})
	for _, req := range []struct{ method, path string }{
		{"GET", "/api/memories"}, {"GET", "/api/memories/name"}, {"PUT", "/api/memories/name"}, {"DELETE", "/api/memories/name"},
	} {
		if code := b.do(t, "", req.method, req.path, `{"value": "x"}`, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: %d, want 401", req.method, req.path, code)
		}
	}
}

// keys returns the sorted keys of m.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
