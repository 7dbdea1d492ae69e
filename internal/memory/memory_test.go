package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// bundle is what a test gets from setup: a service over a real SQLite store,
// and a user to remember things about.
type bundle struct {
	svc   *memory.Service
	store store.Store
	user  string
	now   time.Time
}

func setup(t *testing.T, cfg memory.Config) *bundle {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{store: st, now: time.Date(2025, 11, 25, 14, 30, 45, 123456789, time.FixedZone("CET", 3600))}
	b.user = newUser(t, st, "ann@example.com")
	b.svc = memory.NewService(st, cfg, func() time.Time { return b.now })
	return b
}

func newUser(t *testing.T, st store.Store, email string) string {
	t.Helper()
	u := &auth.User{ID: auth.NewUserID(), Email: email, DisplayName: "x", Role: auth.RoleUser}
	if err := st.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u.ID
}

func (b *bundle) put(t *testing.T, key, value string) memory.Entry {
	t.Helper()
	e, err := b.svc.Put(t.Context(), b.user, key, value)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return e
}

func (b *bundle) list(t *testing.T) []memory.Entry {
	t.Helper()
	es, err := b.svc.List(t.Context(), b.user)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return es
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"héllo wörld", 3}, // runes, not bytes
		{"🚀🚀🚀🚀", 1},
		{strings.Repeat("x", 400), 100},
	} {
		if got := memory.EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		"name":                   true,
		"user_preferences":       true,
		"_":                      true,
		strings.Repeat("a", 64):  true,
		strings.Repeat("a", 65):  false,
		"":                       false,
		"Name":                   false,
		"key1":                   false,
		"with-dash":              false,
		"with space":             false,
		"émoji":                  false,
		"preferences\n":          false,
		"user.preferences":       false,
		"ＡＢ":                     false,
		"name; DROP TABLE users": false,
	} {
		if got := memory.ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestPutAndList(t *testing.T) {
	b := setup(t, memory.Config{})
	ctx := t.Context()
	e := b.put(t, "name", "  Ann, who likes short answers.\n")
	want := memory.Entry{Key: "name", Value: "Ann, who likes short answers.", Tokens: 8, UpdatedAt: b.now.UTC().Truncate(time.Microsecond)}
	if d := cmp.Diff(want, e); d != "" {
		t.Errorf("Put (-want +got):\n%s", d)
	}
	b.now = b.now.Add(time.Minute)
	b.put(t, "city", "Utrecht")
	b.now = b.now.Add(time.Minute)
	replaced := b.put(t, "name", "Ann")
	got := b.list(t)
	if len(got) != 2 || got[0].Key != "city" || got[1] != replaced {
		t.Errorf("List = %+v, want city then the replaced name, oldest update first", got)
	}
	one, err := b.svc.Get(ctx, b.user, "city")
	if err != nil || one.Value != "Utrecht" {
		t.Errorf("Get(city) = %+v, %v", one, err)
	}
	_, err = b.svc.Get(ctx, b.user, "missing")
	if !fault.Is(err, fault.NotFound) {
		t.Errorf("Get of a missing key: %v, want not found", err)
	}
	if err := b.svc.Delete(ctx, b.user, "city"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := b.svc.Delete(ctx, b.user, "city"); !fault.Is(err, fault.NotFound) || err.Error() != `memory "city" not found` {
		t.Errorf("Delete of a deleted key: %v, want not found naming it", err)
	}
	if got := b.list(t); len(got) != 1 || got[0].Key != "name" {
		t.Errorf("List after Delete = %+v", got)
	}
}

func TestPutInvalid(t *testing.T) {
	for _, tc := range []struct {
		name       string
		validKeys  []string
		key, value string
		want       []fault.FieldError
	}{
		{"NoKey", nil, "", "v", []fault.FieldError{{Field: "key", Message: "required"}}},
		{"Capitals", nil, "Name", "v", []fault.FieldError{{Field: "key", Message: `"Name" is not a valid key: use 1 to 64 lower-case letters a-z or _`}}},
		{"Digits", nil, "key1", "v", []fault.FieldError{{Field: "key", Message: `"key1" is not a valid key: use 1 to 64 lower-case letters a-z or _`}}},
		{"TooLong", nil, strings.Repeat("k", 65), "v", []fault.FieldError{{Field: "key", Message: fmt.Sprintf("%q is not a valid key: use 1 to 64 lower-case letters a-z or _", strings.Repeat("k", 65))}}},
		{"NotAllowed", []string{"name", "preferences"}, "city", "v", []fault.FieldError{{Field: "key", Message: `"city" is not one of the allowed keys: name, preferences`}}},
		{"BlankValue", nil, "name", " \n\t ", []fault.FieldError{{Field: "value", Message: "required: the text to remember must not be empty"}}},
		{"Both", nil, "Bad Key", "", []fault.FieldError{
			{Field: "key", Message: `"Bad Key" is not a valid key: use 1 to 64 lower-case letters a-z or _`},
			{Field: "value", Message: "required: the text to remember must not be empty"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, memory.Config{ValidKeys: tc.validKeys})
			_, err := b.svc.Put(t.Context(), b.user, tc.key, tc.value)
			fe, ok := err.(*fault.Error)
			if !ok || fe.Kind != fault.Invalid {
				t.Fatalf("Put: %v, want fault.Invalid", err)
			}
			if d := cmp.Diff(tc.want, fe.Fields); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
			if es := b.list(t); len(es) != 0 {
				t.Errorf("an invalid Put stored %+v", es)
			}
		})
	}
	t.Run("AllowedKey", func(t *testing.T) {
		b := setup(t, memory.Config{ValidKeys: []string{"name"}})
		b.put(t, "name", "Ann")
	})
	t.Run("ValidKeysIsACopy", func(t *testing.T) {
		b := setup(t, memory.Config{ValidKeys: []string{"name", "city"}})
		keys := b.svc.ValidKeys()
		keys[0] = "changed"
		if got := b.svc.ValidKeys(); !cmp.Equal(got, []string{"name", "city"}) {
			t.Errorf("ValidKeys = %q", got)
		}
	})
}

func TestTokenLimit(t *testing.T) {
	b := setup(t, memory.Config{TokenLimit: 2000})
	ctx := t.Context()
	b.put(t, "a", strings.Repeat("x", 4*1000))
	b.put(t, "b", strings.Repeat("x", 4*950))

	_, err := b.svc.Put(ctx, b.user, "c", strings.Repeat("x", 4*120))
	want := "memory is full: 1,950 of 2,000 tokens used; this value needs 120. Delete or shorten an entry first."
	if !fault.Is(err, fault.Conflict) || err.Error() != want {
		t.Errorf("Put over the limit:\n got %v\nwant %s", err, want)
	}
	// Exactly at the limit fits.
	b.put(t, "c", strings.Repeat("x", 4*50))
	if got := memory.TotalTokens(b.list(t)); got != 2000 {
		t.Errorf("TotalTokens = %d, want 2000", got)
	}

	// A replaced entry counts at its new size only.
	b.put(t, "a", strings.Repeat("x", 4*1000))
	b.put(t, "a", strings.Repeat("x", 4*10))
	_, err = b.svc.Put(ctx, b.user, "a", strings.Repeat("x", 4*1001))
	want = "memory is full: 1,000 of 2,000 tokens used by other entries; this value needs 1,001. Shorten it or delete an entry first."
	if !fault.Is(err, fault.Conflict) || err.Error() != want {
		t.Errorf("replacing over the limit:\n got %v\nwant %s", err, want)
	}

	_, err = b.svc.Put(ctx, b.user, "huge", strings.Repeat("x", 4*2001))
	want = "memory is full: this value needs 2,001 tokens, more than the limit of 2,000 for all entries. Shorten it."
	if !fault.Is(err, fault.Conflict) || err.Error() != want {
		t.Errorf("a value over the whole limit:\n got %v\nwant %s", err, want)
	}
	if got := memory.TotalTokens(b.list(t)); got != 1010 {
		t.Errorf("refused writes changed the total to %d, want 1010", got)
	}
}

func TestTokenLimitConcurrent(t *testing.T) {
	b := setup(t, memory.Config{TokenLimit: 100})
	const writers = 8 // each needs 30 tokens: only 3 fit
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			_, errs[i] = b.svc.Put(context.Background(), b.user, strings.Repeat("k", i+1), strings.Repeat("x", 120))
		})
	}
	close(start)
	wg.Wait()
	stored := 0
	for i, err := range errs {
		switch {
		case err == nil:
			stored++
		case !fault.Is(err, fault.Conflict):
			t.Errorf("writer %d: %v, want success or memory full", i, err)
		}
	}
	if total := memory.TotalTokens(b.list(t)); stored != 3 || total != 90 {
		t.Errorf("%d writes stored, total %d tokens; want 3 and 90 under a limit of 100", stored, total)
	}
}

func TestPerUser(t *testing.T) {
	b := setup(t, memory.Config{TokenLimit: 10})
	ctx := t.Context()
	bob := newUser(t, b.store, "bob@example.com")
	b.put(t, "name", strings.Repeat("x", 40))
	if _, err := b.svc.Put(ctx, bob, "name", strings.Repeat("y", 40)); err != nil {
		t.Fatalf("bob's Put, under his own limit: %v", err)
	}
	if err := b.svc.Delete(ctx, bob, "name"); err != nil {
		t.Fatal(err)
	}
	if es := b.list(t); len(es) != 1 || es[0].Value != strings.Repeat("x", 40) {
		t.Errorf("bob's delete changed ann's memories: %+v", es)
	}
}

func TestDisabled(t *testing.T) {
	b := setup(t, memory.Config{})
	b.put(t, "name", "Ann")
	off := memory.NewService(b.store, memory.Config{Disabled: true}, nil)
	ctx := t.Context()
	es, err := off.List(ctx, b.user)
	if err != nil || es == nil || len(es) != 0 {
		t.Errorf("List while disabled = %#v, %v; want an empty list", es, err)
	}
	if _, err := off.Get(ctx, b.user, "name"); !fault.Is(err, fault.NotFound) {
		t.Errorf("Get while disabled: %v, want not found", err)
	}
	want := "memory is disabled in the config"
	if _, err := off.Put(ctx, b.user, "name", "Bob"); !fault.Is(err, fault.Conflict) || err.Error() != want {
		t.Errorf("Put while disabled: %v, want conflict %q", err, want)
	}
	if err := off.Delete(ctx, b.user, "name"); !fault.Is(err, fault.Conflict) || err.Error() != want {
		t.Errorf("Delete while disabled: %v, want conflict %q", err, want)
	}
	if es := b.list(t); len(es) != 1 || es[0].Value != "Ann" {
		t.Errorf("writes while disabled changed the store: %+v", es)
	}
	// A disabled service needs no store at all.
	if es, err := memory.NewService(nil, memory.Config{Disabled: true}, nil).List(ctx, "user_x"); err != nil || len(es) != 0 {
		t.Errorf("List of a disabled service without a store = %v, %v", es, err)
	}
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		cfg        memory.Config
		user, want bool
	}{
		{memory.Config{}, false, true},
		{memory.Config{}, true, true},
		{memory.Config{Personalize: true}, true, true},
		{memory.Config{Personalize: true}, false, false},
		{memory.Config{Disabled: true}, true, false},
		{memory.Config{Disabled: true, Personalize: true}, true, false},
	} {
		if got := memory.NewService(nil, tc.cfg, nil).Enabled(tc.user); got != tc.want {
			t.Errorf("%+v: Enabled(%v) = %v, want %v", tc.cfg, tc.user, got, tc.want)
		}
	}
}

// Runs read a user's memory through a cache: a change through the same
// Service is seen at once, one by another process (here: straight in the
// store) within memory.CacheTTL; List itself always reads the store.
func TestListCached(t *testing.T) {
	b := setup(t, memory.Config{})
	ctx := t.Context()
	keys := func(es []memory.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Key+"="+e.Value)
		}
		return out
	}
	cached := func() []string {
		t.Helper()
		es, err := b.svc.ListCached(ctx, b.user)
		if err != nil {
			t.Fatal(err)
		}
		return keys(es)
	}
	if _, err := b.svc.Put(ctx, b.user, "name", "Ann"); err != nil {
		t.Fatal(err)
	}
	if got := cached(); !cmp.Equal(got, []string{"name=Ann"}) {
		t.Fatalf("ListCached: %v", got)
	}
	// Written by another process: seen once CacheTTL has passed.
	if err := b.store.PutMemory(ctx, b.user, memory.Entry{Key: "city", Value: "Oslo", Tokens: 1, UpdatedAt: b.now}); err != nil {
		t.Fatal(err)
	}
	b.now = b.now.Add(memory.CacheTTL - time.Millisecond)
	if got := cached(); !cmp.Equal(got, []string{"name=Ann"}) {
		t.Errorf("within the TTL: %v, want what was cached", got)
	}
	if es, err := b.svc.List(ctx, b.user); err != nil || len(es) != 2 {
		t.Errorf("List: %v %v, want both entries", keys(es), err)
	}
	b.now = b.now.Add(time.Millisecond)
	if got := cached(); len(got) != 2 {
		t.Errorf("after the TTL: %v, want both entries", got)
	}
	// Changed through the Service: seen at once.
	if err := b.svc.Delete(ctx, b.user, "name"); err != nil {
		t.Fatal(err)
	}
	if got := cached(); !cmp.Equal(got, []string{"city=Oslo"}) {
		t.Errorf("after Delete: %v", got)
	}
	if _, err := b.svc.Put(ctx, b.user, "city", "Bergen"); err != nil {
		t.Fatal(err)
	}
	if got := cached(); !cmp.Equal(got, []string{"city=Bergen"}) {
		t.Errorf("after Put: %v", got)
	}
}
