package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// conversations list pages as the API does: --limit conversations, most
// recently active first, and while older ones remain, stderr names the
// --cursor that lists them; --title keeps those whose title contains it.
func TestConversationsListPaged(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  log_level: warn
`, data))
	relay := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, "", append(args, "--config", cfg)...)
	}
	code, out, stderr := relay("users", "add", "--email", "ann@example.com")
	if code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(data, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	ann, err := db.GetUserByEmail(t.Context(), "ann@example.com")
	if err != nil {
		t.Fatalf("%v (users add said %s)", err, out)
	}
	start := time.Date(2026, 3, 19, 7, 0, 0, 0, time.UTC)
	for i, title := range []string{"Digest 0", "Lunch", "Digest 2", "Digest 3", "Dinner"} {
		c := &run.Conversation{ID: fmt.Sprintf("conv_%d", i), UserID: ann.ID, AgentID: "helper", Title: title,
			CreatedAt: start, UpdatedAt: start.Add(time.Duration(i) * time.Minute)}
		if err := db.CreateConversation(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	hint := regexp.MustCompile(`(?m)^older conversations: --cursor (\S+)$`)
	pages := func(base ...string) [][]string {
		t.Helper()
		var got [][]string
		args := base
		for page := 0; ; page++ {
			code, out, stderr := relay(args...)
			if code != 0 {
				t.Fatalf("%v, page %d: exit %d %s", args, page, code, stderr)
			}
			var cs []run.Conversation
			if err := json.Unmarshal([]byte(out), &cs); err != nil {
				t.Fatalf("page %d is no JSON array of conversations: %v\n%s", page, err, out)
			}
			ids := []string{}
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			got = append(got, ids)
			m := hint.FindStringSubmatch(stderr)
			if m == nil {
				return got
			}
			if page > 3 {
				t.Fatal("conversations list never reached the last page")
			}
			args = append(base[:len(base):len(base)], "--cursor", m[1])
		}
	}
	list := []string{"conversations", "list", "--json", "--user", "ann@example.com", "--limit", "2"}
	if got, want := pages(list...), [][]string{{"conv_4", "conv_3"}, {"conv_2", "conv_1"}, {"conv_0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pages of 2:\n got %v\nwant %v", got, want)
	}
	if got, want := pages(append(list, "--title", "digest")...), [][]string{{"conv_3", "conv_2"}, {"conv_0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pages of 2 titled digest:\n got %v\nwant %v", got, want)
	}
	if code, _, stderr := relay("conversations", "list", "--user", "ann@example.com", "--cursor", "bad"); code != 1 || !strings.Contains(stderr, "invalid cursor") {
		t.Errorf("a bad cursor: exit %d %q, want 1 saying the cursor is invalid", code, stderr)
	}
	code, out, _ = relay("conversations", "list", "--user", "ann@example.com", "--limit", "1")
	if code != 0 || !strings.Contains(out, "conv_4") || strings.Contains(out, "conv_3") {
		t.Errorf("the table of one: exit %d\n%s", code, out)
	}
}
