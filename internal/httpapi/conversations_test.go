package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/run"
)

type conversationPage struct {
	Data []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// The conversation list is paged as a schedule's history is: most recently
// updated first, next_cursor back as cursor for the older ones, none on the
// last page, so that every conversation is reached, past the largest page.
// q keeps the titles that contain it, paged the same way. A bad cursor or
// limit is a 400; another user's conversations are never listed.
func TestConversationsPaged(t *testing.T) {
	w := setupWorld(t, "ann", "bob")
	const n = 1100
	start := time.Date(2026, 3, 19, 0, 0, 0, 0, time.UTC)
	for i := range n {
		title := fmt.Sprintf("Chat %04d", i)
		if i%100 == 7 {
			title = fmt.Sprintf("Morning digest — %04d", i)
		}
		c := &run.Conversation{ID: fmt.Sprintf("conv_%04d", i), UserID: w.users["ann"].ID, AgentID: "helper", Title: title,
			CreatedAt: start, UpdatedAt: start.Add(time.Duration(i) * time.Minute)}
		if err := w.store.CreateConversation(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.CreateConversation(t.Context(), &run.Conversation{ID: "conv_bob", UserID: w.users["bob"].ID, AgentID: "helper",
		Title: "Morning digest — bob", CreatedAt: start, UpdatedAt: start}); err != nil {
		t.Fatal(err)
	}
	all := func(path string) ([]string, int) {
		t.Helper()
		var got []string
		for pages := 1; ; pages++ {
			var p conversationPage
			if code, body := w.do(t, "ann", "GET", path, nil, &p); code != 200 {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			for _, c := range p.Data {
				got = append(got, c.ID)
			}
			if p.NextCursor == nil {
				return got, pages
			}
			if pages > 20 || *p.NextCursor == "" {
				t.Fatalf("page %d: next_cursor %v", pages, p.NextCursor)
			}
			u, _ := url.Parse(path)
			v := u.Query()
			v.Set("cursor", *p.NextCursor)
			path = u.Path + "?" + v.Encode()
		}
	}
	got, pages := all("/api/conversations?limit=1000")
	if pages != 2 || len(got) != n || got[0] != fmt.Sprintf("conv_%04d", n-1) || got[n-1] != "conv_0000" {
		t.Fatalf("%d pages: %d conversations from %s to %s, want 2 pages of %d, most recent first", pages, len(got), got[0], got[len(got)-1], n)
	}
	for i := 1; i < n; i++ {
		if got[i] >= got[i-1] {
			t.Fatalf("conversation %d (%s) is not older than %s", i, got[i], got[i-1])
		}
	}

	// Fifty by default, each page starting after the last of the one before.
	var first, second conversationPage
	w.do(t, "ann", "GET", "/api/conversations", nil, &first)
	if len(first.Data) != 50 || first.NextCursor == nil {
		t.Fatalf("first page: %d conversations, next_cursor %v; want 50 and a cursor", len(first.Data), first.NextCursor)
	}
	w.do(t, "ann", "GET", "/api/conversations?cursor="+url.QueryEscape(*first.NextCursor), nil, &second)
	if len(second.Data) != 50 || second.Data[0].ID != fmt.Sprintf("conv_%04d", n-51) {
		t.Errorf("second page starts at %v, want conv_%04d", second.Data[:1], n-51)
	}

	// The title search covers every conversation, not the first page's.
	got, pages = all("/api/conversations?limit=4&q=" + url.QueryEscape("  morning DIGEST "))
	var want []string
	for i := n - 1; i >= 0; i-- {
		if i%100 == 7 {
			want = append(want, fmt.Sprintf("conv_%04d", i))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || pages != 3 {
		t.Errorf("q=morning digest in pages of 4: %d pages of %v, want 3 of %v", pages, got, want)
	}
	if got, _ := all("/api/conversations?q=%25"); len(got) != 0 {
		t.Errorf("q=%% lists %v, want none: no title holds a %%", got)
	}

	// Bob sees his own only, with ann's cursor too.
	var p conversationPage
	w.do(t, "bob", "GET", "/api/conversations?cursor="+url.QueryEscape(*first.NextCursor), nil, &p)
	if len(p.Data) != 1 || p.Data[0].ID != "conv_bob" || p.NextCursor != nil {
		t.Errorf("bob's list: %+v, want conv_bob alone", p)
	}
	for _, q := range []string{"cursor=not-a-cursor", "cursor=%20", "limit=0", "limit=1001", "limit=x"} {
		var e apiError
		code, body := w.do(t, "ann", "GET", "/api/conversations?"+q, nil, nil)
		_ = json.Unmarshal([]byte(body), &e)
		name, _, _ := strings.Cut(q, "=")
		if code != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, name) {
			t.Errorf("%s: %d %s, want 400 invalid naming %s", q, code, body, name)
		}
	}
}
