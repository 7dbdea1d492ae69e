package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// bundle is what a test gets from setup: the two memory tools over a real
// SQLite store, and the user they act for.
type bundle struct {
	set, del tool.Tool
	svc      *memory.Service
	store    store.Store
	user     string
}

func setup(t *testing.T, cfg memory.Config) *bundle {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u := &auth.User{ID: auth.NewUserID(), Email: "ann@example.com", DisplayName: "Ann", Role: auth.RoleUser}
	if err := st.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	svc := memory.NewService(st, cfg, nil)
	return &bundle{set: builtin.SetMemory(svc), del: builtin.DeleteMemory(svc), svc: svc, store: st, user: u.ID}
}

func (b *bundle) call(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := tl.Call(t.Context(), b.user, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): Go error %v; want a result", tl.Name(), args, err)
	}
	return res
}

func (b *bundle) entries(t *testing.T) []memory.Entry {
	t.Helper()
	es, err := b.svc.List(t.Context(), b.user)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestNames(t *testing.T) {
	b := setup(t, memory.Config{})
	if b.set.Name() != "set_memory" || b.del.Name() != "delete_memory" {
		t.Errorf("names = %q, %q; want set_memory, delete_memory", b.set.Name(), b.del.Name())
	}
}

func TestSetMemory(t *testing.T) {
	b := setup(t, memory.Config{})
	res := b.call(t, b.set, `{"key": "favourite_color", "value": " blue "}`)
	if d := cmp.Diff(tool.Result{Text: `Memory "favourite_color" saved.`}, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	es := b.entries(t)
	if len(es) != 1 || es[0].Key != "favourite_color" || es[0].Value != "blue" || es[0].Tokens != 1 {
		t.Errorf("stored %+v, want favourite_color = blue", es)
	}
	b.call(t, b.set, `{"value": "green", "key": "favourite_color"}`)
	if es := b.entries(t); len(es) != 1 || es[0].Value != "green" {
		t.Errorf("after replacing: %+v", es)
	}
}

func TestSetMemoryBadArguments(t *testing.T) {
	usage := `send {"key": "<lower-case key>", "value": "<text to remember>"}.`
	for _, tc := range []struct {
		name, args, want string
	}{
		{"MissingKey", `{"value": "blue"}`, `Invalid arguments for set_memory: missing "key"; ` + usage},
		{"MissingBoth", `{}`, `Invalid arguments for set_memory: missing "key" and "value"; ` + usage},
		{"Empty", ``, `Invalid arguments for set_memory: missing "key" and "value"; ` + usage},
		{"Null", `null`, `Invalid arguments for set_memory: missing "key" and "value"; ` + usage},
		{"Capitals", `{"key": "FavouriteColor", "value": "blue"}`,
			`Invalid memory: key: "FavouriteColor" is not a valid key: use 1 to 64 lower-case letters a-z or _.`},
		{"EmptyKey", `{"key": "", "value": "blue"}`, `Invalid memory: key: required.`},
		{"BlankValue", `{"key": "color", "value": "   "}`, `Invalid memory: value: required: the text to remember must not be empty.`},
		{"UnknownField", `{"key": "color", "value": "blue", "importance": "high"}`,
			`Invalid arguments for set_memory: unknown argument "importance"; send only {"key": "<lower-case key>", "value": "<text to remember>"}.`},
		{"NotJSON", `key=color`, `Invalid arguments for set_memory: the arguments are not valid JSON (error at byte 1); send one JSON object: {"key": "<lower-case key>", "value": "<text to remember>"}.`},
		{"Truncated", `{"key": "color", "value": "bl`, `Invalid arguments for set_memory: the arguments are not valid JSON (they end too early); send one JSON object: {"key": "<lower-case key>", "value": "<text to remember>"}.`},
		{"NotAnObject", `["color", "blue"]`, `Invalid arguments for set_memory: the arguments must be a JSON object, not a JSON array; ` + usage},
		{"KeyNotString", `{"key": 7, "value": "blue"}`, `Invalid arguments for set_memory: "key" must be a string, not a JSON number; ` + usage},
		{"TwoObjects", `{"key": "a", "value": "b"} {}`, `Invalid arguments for set_memory: the arguments could not be read (more than one JSON value); ` + usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, memory.Config{})
			res := b.call(t, b.set, tc.args)
			if !res.IsError || res.Text != tc.want {
				t.Errorf("set_memory(%s):\n got %+v\nwant IsError with %q", tc.args, res, tc.want)
			}
			if es := b.entries(t); len(es) != 0 {
				t.Errorf("bad arguments stored %+v", es)
			}
		})
	}
}

func TestSetMemoryLimits(t *testing.T) {
	t.Run("Full", func(t *testing.T) {
		b := setup(t, memory.Config{TokenLimit: 2000})
		b.call(t, b.set, `{"key": "notes", "value": "`+strings.Repeat("x", 4*1950)+`"}`)
		res := b.call(t, b.set, `{"key": "more", "value": "`+strings.Repeat("y", 4*120)+`"}`)
		want := tool.Result{Text: "Memory is full: 1,950 of 2,000 tokens used; this value needs 120. Delete or shorten an entry first.", IsError: true}
		if d := cmp.Diff(want, res); d != "" {
			t.Errorf("result (-want +got):\n%s", d)
		}
		if es := b.entries(t); len(es) != 1 {
			t.Errorf("a refused value was stored: %+v", es)
		}
	})
	t.Run("ValidKeys", func(t *testing.T) {
		b := setup(t, memory.Config{ValidKeys: []string{"preferences", "work"}})
		res := b.call(t, b.set, `{"key": "hobbies", "value": "chess"}`)
		want := `Invalid memory: key: "hobbies" is not one of the allowed keys: preferences, work.`
		if !res.IsError || res.Text != want {
			t.Errorf("got %+v, want IsError with %q", res, want)
		}
	})
	t.Run("Disabled", func(t *testing.T) {
		b := setup(t, memory.Config{Disabled: true})
		for _, tc := range []struct {
			tl   tool.Tool
			args string
		}{{b.set, `{"key": "k", "value": "v"}`}, {b.del, `{"key": "k"}`}} {
			res := b.call(t, tc.tl, tc.args)
			if !res.IsError || res.Text != "Memory is disabled in the config." {
				t.Errorf("%s while disabled = %+v", tc.tl.Name(), res)
			}
		}
	})
}

func TestDeleteMemory(t *testing.T) {
	b := setup(t, memory.Config{})
	b.call(t, b.set, `{"key": "city", "value": "Utrecht"}`)
	b.call(t, b.set, `{"key": "name", "value": "Ann"}`)
	res := b.call(t, b.del, `{"key": "city"}`)
	if d := cmp.Diff(tool.Result{Text: `Memory "city" deleted.`}, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	if es := b.entries(t); len(es) != 1 || es[0].Key != "name" {
		t.Errorf("after delete: %+v", es)
	}
	usage := `{"key": "<lower-case key>"}`
	for _, tc := range []struct{ args, want string }{
		{`{"key": "city"}`, `Memory "city" not found.`},
		{`{}`, `Invalid arguments for delete_memory: missing "key"; send ` + usage + `.`},
		{`{"key": "name", "value": "Ann"}`, `Invalid arguments for delete_memory: unknown argument "value"; send only ` + usage + `.`},
		{`{"key": true}`, `Invalid arguments for delete_memory: "key" must be a string, not a JSON boolean; send ` + usage + `.`},
		{`not json`, `Invalid arguments for delete_memory: the arguments are not valid JSON (error at byte 2); send one JSON object: ` + usage + `.`},
	} {
		res := b.call(t, b.del, tc.args)
		if !res.IsError || res.Text != tc.want {
			t.Errorf("delete_memory(%s):\n got %+v\nwant IsError with %q", tc.args, res, tc.want)
		}
	}
	if es := b.entries(t); len(es) != 1 {
		t.Errorf("refused deletes changed the store: %+v", es)
	}
}

func TestInfrastructureFailureIsAGoError(t *testing.T) {
	b := setup(t, memory.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := b.set.Call(ctx, b.user, json.RawMessage(`{"key": "k", "value": "v"}`))
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("set_memory with a cancelled context: %v, want a Go error wrapping context.Canceled", err)
	}
}

func TestSchemas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schema   map[string]any
		required []any
	}{
		{"set_memory", builtin.SetMemorySchema(), []any{"key", "value"}},
		{"delete_memory", builtin.DeleteMemorySchema(), []any{"key"}},
	} {
		raw, err := json.Marshal(tc.schema)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got struct {
			Type                 string                    `json:"type"`
			Properties           map[string]map[string]any `json:"properties"`
			Required             []any                     `json:"required"`
			AdditionalProperties *bool                     `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got.Type != "object" || got.AdditionalProperties == nil || *got.AdditionalProperties {
			t.Errorf("%s schema %s: want an object without additional properties", tc.name, raw)
		}
		if d := cmp.Diff(tc.required, got.Required); d != "" {
			t.Errorf("%s required (-want +got):\n%s", tc.name, d)
		}
		if len(got.Properties) != len(tc.required) {
			t.Errorf("%s has properties %v, want exactly the required ones", tc.name, got.Properties)
		}
		for name, p := range got.Properties {
			if p["type"] != "string" || p["description"] == "" {
				t.Errorf("%s.%s = %v, want a described string", tc.name, name, p)
			}
		}
	}
	// Each call returns a fresh map, so a caller may change its copy.
	s := builtin.SetMemorySchema()
	s["properties"].(map[string]any)["key"].(map[string]any)["type"] = "number"
	if builtin.SetMemorySchema()["properties"].(map[string]any)["key"].(map[string]any)["type"] != "string" {
		t.Error("changing a returned schema changed the next one")
	}
}
