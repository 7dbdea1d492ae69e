package mcp_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/relay-ai/relay/internal/mcp"
)

func sha8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func TestKey(t *testing.T) {
	long50 := strings.Repeat("t", 50)
	full70 := long50 + "__mcp__" + "server-name-1" // 50 + 7 + 13
	full64 := strings.Repeat("u", 44) + "__mcp__" + "server-name-1"
	full65 := strings.Repeat("v", 45) + "__mcp__" + "server-name-1"
	spaced := strings.Repeat("w", 50) + "__mcp__" + "NEO_NL_server"

	tests := []struct {
		name, tool, server, want string
	}{
		{"plain", "echo", "everything", "echo__mcp__everything"},
		{"underscores and dashes kept", "get-tiny_image", "my-server_2", "get-tiny_image__mcp__my-server_2"},
		{"spaces and ampersand", "search", "Landbouw & Natuur", "search__mcp__Landbouw___Natuur"},
		{"space", "search", "NEO NL", "search__mcp__NEO_NL"},
		{"dots and slashes", "files.read/all", "fs", "files_read_all__mcp__fs"},
		{"unicode, one underscore per character", "zoek_één", "Café 🙂", "zoek___n__mcp__Caf___"},
		{"exactly 64 stays", strings.Repeat("u", 44), "server-name-1", full64},
		{"65 is shortened", strings.Repeat("v", 45), "server-name-1", full65[:55] + "_" + sha8(full65)},
		{"70 is shortened", long50, "server-name-1", full70[:55] + "_" + sha8(full70)},
		{"hash of the normalised key", strings.Repeat("w", 50), "NEO NL server", spaced[:55] + "_" + sha8(spaced)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mcp.Key(tt.tool, tt.server)
			if got != tt.want {
				t.Errorf("Key(%q, %q) = %q, want %q", tt.tool, tt.server, got, tt.want)
			}
			if len(got) > mcp.MaxKeyLen {
				t.Errorf("Key(%q, %q) has %d characters", tt.tool, tt.server, len(got))
			}
			for _, r := range got {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
					t.Errorf("Key(%q, %q) = %q holds %q", tt.tool, tt.server, got, r)
				}
			}
		})
	}
	if got := mcp.Key(long50, "server-name-1"); len(got) != 64 {
		t.Errorf("shortened key has %d characters, want 64", len(got))
	}
}

func TestNormaliseServer(t *testing.T) {
	for in, want := range map[string]string{
		"everything":        "everything",
		"NEO NL":            "NEO_NL",
		"Landbouw & Natuur": "Landbouw___Natuur",
		"Café":              "Caf_",
		"a.b:c":             "a_b_c",
		"":                  "",
	} {
		if got := mcp.NormaliseServer(in); got != want {
			t.Errorf("NormaliseServer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitKey(t *testing.T) {
	tests := []struct {
		key          string
		tool, server string
		ok           bool
	}{
		{"echo__mcp__everything", "echo", "everything", true},
		{"get_tiny_image__mcp__my-server", "get_tiny_image", "my-server", true},
		{"search_mcp_NEO_NL", "search", "NEO_NL", true},                             // LibreChat's delimiter
		{"create_task_mcp_scheduled-tasks", "create_task", "scheduled-tasks", true}, // tool with "_"
		{"a_mcp_b_mcp_c", "a_mcp_b", "c", true},                                     // last occurrence
		{"a_mcp_b__mcp__c", "a_mcp_b", "c", true},                                   // "__mcp__" wins
		{"x__mcp__y_mcp_z", "x", "y_mcp_z", true},                                   // "__mcp__" wins even when "_mcp_" comes later
		{"tool___mcp__srv", "tool_", "srv", true},                                   // tool ending in "_"
		{"echo__mcp__Landbouw___Natuur", "echo", "Landbouw___Natuur", true},
		{"echo", "", "", false},
		{"__mcp__srv", "", "", false},
		{"echo__mcp__", "", "", false},
		{"_mcp_srv", "", "", false},
	}
	for _, tt := range tests {
		tool, server, ok := mcp.SplitKey(tt.key)
		if tool != tt.tool || server != tt.server || ok != tt.ok {
			t.Errorf("SplitKey(%q) = %q, %q, %v; want %q, %q, %v", tt.key, tool, server, ok, tt.tool, tt.server, tt.ok)
		}
	}
	// Every unshortened key made by Key splits back into its normalised parts.
	for _, p := range [][2]string{{"echo", "everything"}, {"a_mcp_b", "srv"}, {"t_", "_s"}, {"search", "NEO NL"}} {
		key := mcp.Key(p[0], p[1])
		tool, server, ok := mcp.SplitKey(key)
		if !ok || tool != mcp.NormaliseServer(p[0]) || server != mcp.NormaliseServer(p[1]) {
			t.Errorf("SplitKey(Key(%q, %q) = %q) = %q, %q, %v", p[0], p[1], key, tool, server, ok)
		}
	}
}

func TestIsAllKey(t *testing.T) {
	tests := []struct {
		key, server string
		ok          bool
	}{
		{"all__mcp__everything", "everything", true},
		{"all_mcp_NEO_NL", "NEO_NL", true},
		{"all__mcp__", "", false},
		{"alll__mcp__everything", "", false},
		{"echo__mcp__everything", "", false},
		{"all", "", false},
	}
	for _, tt := range tests {
		server, ok := mcp.IsAllKey(tt.key)
		if server != tt.server || ok != tt.ok {
			t.Errorf("IsAllKey(%q) = %q, %v; want %q, %v", tt.key, server, ok, tt.server, tt.ok)
		}
	}
}

func TestNamesLookup(t *testing.T) {
	var n mcp.Names
	longTool := strings.Repeat("long_tool_name_", 4) // 60 characters
	keys := map[string][2]string{
		n.Add("everything", "echo"):                {"everything", "echo"},
		n.Add("Landbouw & Natuur", "zoek.perceel"): {"Landbouw & Natuur", "zoek.perceel"},
		n.Add("NEO NL", longTool):                  {"NEO NL", longTool},
	}
	if len(keys) != 3 {
		t.Fatalf("keys not distinct: %v", keys)
	}
	full := mcp.NormaliseServer(longTool) + mcp.Delimiter + "NEO_NL"
	short := mcp.Key(longTool, "NEO NL")
	if len(short) != 64 || short != full[:55]+"_"+sha8(full) {
		t.Fatalf("long key %q (%d characters)", short, len(short))
	}

	tests := []struct {
		name, key, server, tool string
		ok                      bool
	}{
		{"key", "echo__mcp__everything", "everything", "echo", true},
		{"normalised key", "zoek_perceel__mcp__Landbouw___Natuur", "Landbouw & Natuur", "zoek.perceel", true},
		{"shortened key", short, "NEO NL", longTool, true},
		{"full key of a shortened one", full, "NEO NL", longTool, true},
		{"LibreChat delimiter", "echo_mcp_everything", "everything", "echo", true},
		{"LibreChat delimiter, shortened", longTool + "_mcp_NEO_NL", "NEO NL", longTool, true},
		{"raw names", "zoek.perceel_mcp_Landbouw & Natuur", "Landbouw & Natuur", "zoek.perceel", true},
		{"unknown tool", "nope__mcp__everything", "", "", false},
		{"unknown server", "echo__mcp__elsewhere", "", "", false},
		{"no delimiter", "echo", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, tool, ok := n.Lookup(tt.key)
			if server != tt.server || tool != tt.tool || ok != tt.ok {
				t.Errorf("Lookup(%q) = %q, %q, %v; want %q, %q, %v", tt.key, server, tool, ok, tt.server, tt.tool, tt.ok)
			}
		})
	}

	if again := n.Add("everything", "echo"); again != "echo__mcp__everything" {
		t.Errorf("adding again gave %q", again)
	}
}

func TestNamesCollision(t *testing.T) {
	longTool := strings.Repeat("x", 60)
	tests := []struct {
		name         string
		first, later [2]string // server, tool
	}{
		{"server names", [2]string{"NEO NL", "search"}, [2]string{"NEO_NL", "search"}},
		{"tool names", [2]string{"fs", "get.item"}, [2]string{"fs", "get_item"}},
		{"shortened keys", [2]string{"a b", longTool}, [2]string{"a.b", longTool}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n mcp.Names
			k1 := n.Add(tt.first[0], tt.first[1])
			k2 := n.Add(tt.later[0], tt.later[1])
			plain := mcp.Key(tt.first[1], tt.first[0])
			if k1 != plain {
				t.Errorf("first pair got %q, want the plain key %q", k1, plain)
			}
			want := plain[:min(len(plain), 55)] + "_" + sha8(tt.later[0]+"\x00"+tt.later[1])
			if k2 != want {
				t.Errorf("later pair got %q, want %q", k2, want)
			}
			if len(k2) > 64 {
				t.Errorf("later key has %d characters", len(k2))
			}
			for key, p := range map[string][2]string{k1: tt.first, k2: tt.later} {
				if s, tool, ok := n.Lookup(key); !ok || s != p[0] || tool != p[1] {
					t.Errorf("Lookup(%q) = %q, %q, %v; want %q, %q", key, s, tool, ok, p[0], p[1])
				}
			}

			// Same order, same keys.
			var m mcp.Names
			if m.Add(tt.first[0], tt.first[1]) != k1 || m.Add(tt.later[0], tt.later[1]) != k2 {
				t.Error("keys differ between two Names filled in the same order")
			}
		})
	}
}

func TestNamesRemoveServer(t *testing.T) {
	var n mcp.Names
	n.Add("a", "one")
	n.Add("b", "one")
	n.Add("a", strings.Repeat("y", 70))
	n.RemoveServer("a")
	if _, _, ok := n.Lookup("one__mcp__a"); ok {
		t.Error("tool of a removed server still found")
	}
	if _, _, ok := n.Lookup(mcp.Key(strings.Repeat("y", 70), "a")); ok {
		t.Error("shortened key of a removed server still found")
	}
	if s, tool, ok := n.Lookup("one__mcp__b"); !ok || s != "b" || tool != "one" {
		t.Errorf("other server's tool: %q, %q, %v", s, tool, ok)
	}
	if key := n.Add("a", "one"); key != "one__mcp__a" {
		t.Errorf("re-added key %q", key)
	}
}

func TestNamesConcurrent(t *testing.T) {
	var n mcp.Names
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				server := fmt.Sprintf("server %d", i%5)
				tool := fmt.Sprintf("tool-%d", i%17)
				key := n.Add(server, tool)
				if s, tl, ok := n.Lookup(key); !ok || s != server || tl != tool {
					t.Errorf("goroutine %d: Lookup(%q) = %q, %q, %v", g, key, s, tl, ok)
					return
				}
				n.Add("scratch", tool)
				if i%50 == 0 {
					n.RemoveServer("scratch")
				}
			}
		})
	}
	wg.Wait()
}
