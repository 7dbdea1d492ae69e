package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/store"
)

func entry(key, value string, minute int) memory.Entry {
	return memory.Entry{Key: key, Value: value, Tokens: len(value), UpdatedAt: at(minute)}
}

// storedEntry is e as a store returns it.
func storedEntry(e memory.Entry) memory.Entry {
	e.UpdatedAt = stored(e.UpdatedAt)
	return e
}

func putMemory(t *testing.T, s store.Store, userID string, e memory.Entry) {
	t.Helper()
	must(t, s.PutMemory(t.Context(), userID, e), "PutMemory "+e.Key)
}

func listMemories(t *testing.T, s store.Store, userID string) []memory.Entry {
	t.Helper()
	es, err := s.ListMemories(t.Context(), userID)
	must(t, err, "ListMemories")
	if es == nil {
		t.Fatalf("ListMemories returned nil, want a list")
	}
	return es
}

var memoryTests = []test{
	{"PutAndListOldestFirst", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "mem@example.com")
		if es := listMemories(t, s, u.ID); len(es) != 0 {
			t.Fatalf("ListMemories of a user without entries = %+v, want none", es)
		}
		// Written out of order; listed by update time.
		late := entry("work", "Works on «Relay» 🚀,\nwith \"quotes\" and 'apostrophes'.", 30)
		early := entry("name", "Ada", 10)
		middle := entry("preferences", "Short answers", 20)
		for _, e := range []memory.Entry{late, early, middle} {
			putMemory(t, s, u.ID, e)
		}
		got := listMemories(t, s, u.ID)
		want := []memory.Entry{storedEntry(early), storedEntry(middle), storedEntry(late)}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ListMemories, want oldest update first (-want +got):\n%s", d)
		}
		for _, e := range got {
			wantUTC(t, "ListMemories", e.UpdatedAt)
		}
	}},
	{"TiesOrderedByKey", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "mem@example.com")
		for _, k := range []string{"c", "a", "b"} {
			putMemory(t, s, u.ID, entry(k, "v", 5))
		}
		var keys []string
		for _, e := range listMemories(t, s, u.ID) {
			keys = append(keys, e.Key)
		}
		if d := cmp.Diff([]string{"a", "b", "c"}, keys); d != "" {
			t.Errorf("entries updated at the same time, want them by key (-want +got):\n%s", d)
		}
	}},
	{"UpsertReplaces", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "mem@example.com")
		first := entry("job", "Engineer", 1)
		other := entry("city", "Utrecht", 2)
		putMemory(t, s, u.ID, first)
		putMemory(t, s, u.ID, other)
		replaced := memory.Entry{Key: "job", Value: "Engineering manager at a bigger firm", Tokens: 9, UpdatedAt: at(3)}
		putMemory(t, s, u.ID, replaced)
		want := []memory.Entry{storedEntry(other), storedEntry(replaced)}
		if d := cmp.Diff(want, listMemories(t, s, u.ID)); d != "" {
			t.Errorf("after replacing a key, want one entry for it with the new value, time and tokens (-want +got):\n%s", d)
		}
	}},
	{"ZeroTimeIsNow", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "mem@example.com")
		before := time.Now().Add(-time.Second)
		putMemory(t, s, u.ID, memory.Entry{Key: "k", Value: "v", Tokens: 1})
		es := listMemories(t, s, u.ID)
		if len(es) != 1 {
			t.Fatalf("ListMemories = %+v, want one entry", es)
		}
		wantUTC(t, "UpdatedAt", es[0].UpdatedAt)
		if es[0].UpdatedAt.Before(before) || es[0].UpdatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("UpdatedAt = %v, want about now", es[0].UpdatedAt)
		}
	}},
	{"Delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "mem@example.com")
		keep := entry("keep", "stays", 1)
		putMemory(t, s, u.ID, keep)
		putMemory(t, s, u.ID, entry("drop", "goes", 2))
		must(t, s.DeleteMemory(ctx, u.ID, "drop"), "DeleteMemory")
		if d := cmp.Diff([]memory.Entry{storedEntry(keep)}, listMemories(t, s, u.ID)); d != "" {
			t.Errorf("after DeleteMemory (-want +got):\n%s", d)
		}
		err := s.DeleteMemory(ctx, u.ID, "drop")
		wantKind(t, err, fault.NotFound, "DeleteMemory of a deleted key")
		wantKind(t, s.DeleteMemory(ctx, u.ID, "never"), fault.NotFound, "DeleteMemory of a missing key")
		wantKind(t, s.DeleteMemory(ctx, "user_missing", "keep"), fault.NotFound, "DeleteMemory for a missing user")
	}},
	{"PerUser", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		a := entry("name", "Alice", 1)
		b := entry("name", "Bob", 2)
		putMemory(t, s, alice.ID, a)
		putMemory(t, s, bob.ID, b)
		putMemory(t, s, bob.ID, entry("pet", "cat", 3))
		if d := cmp.Diff([]memory.Entry{storedEntry(a)}, listMemories(t, s, alice.ID)); d != "" {
			t.Errorf("alice's memories (-want +got):\n%s", d)
		}
		wantKind(t, s.DeleteMemory(ctx, alice.ID, "pet"), fault.NotFound, "DeleteMemory of another user's key")
		must(t, s.DeleteMemory(ctx, alice.ID, "name"), "DeleteMemory")
		if got := listMemories(t, s, bob.ID); len(got) != 2 || got[0] != storedEntry(b) {
			t.Errorf("deleting alice's entry changed bob's: %+v", got)
		}
	}},
	{"MissingUser", func(t *testing.T, s store.Store) {
		err := s.PutMemory(t.Context(), "user_missing", entry("k", "v", 1))
		wantKind(t, err, fault.NotFound, "PutMemory for a missing user")
		if es := listMemories(t, s, "user_missing"); len(es) != 0 {
			t.Errorf("ListMemories of a missing user = %+v, want none", es)
		}
	}},
}
