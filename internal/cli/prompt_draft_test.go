package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The prompt preview of unsaved edits (docs/api.md, "POST /api/agents/{id}/prompt"):
// a `spec` in the body is applied to the saved agent as PATCH would apply it,
// checked the same way, and never stored; only those who may change the agent
// may send one.
func TestPromptPreviewOfUnsavedEdits(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: local
      baseURL: http://127.0.0.1:1/v1
      apiKey: sk-local
agents:
  - {id: helper, name: Helper, provider: local, model: llama3.1, instructions: I help.}
`, filepath.Join(dir, "data")))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	if code := s.call(t, testKey, "POST", "/api/agents", `{"id":"draft","name":"Draft","provider":"local","model":"llama3.1","instructions":"Saved words.","shared":true}`, nil); code != 201 {
		t.Fatalf("creating the agent: %d", code)
	}

	var b body
	edits := `{"text":"hi","spec":{"instructions":"Unsaved words.","tools":["file_search"],
	  "edges":[{"from":"draft","to":"helper","edgeType":"handoff","description":"Ask the helper"}]}}`
	if code := s.call(t, testKey, "POST", "/api/agents/draft/prompt", edits, &b); code != 200 {
		t.Fatalf("preview of unsaved edits: %d", code)
	}
	if len(b.Messages) != 2 || !strings.Contains(b.Messages[0].Content, "Unsaved words.") {
		t.Errorf("the system message is not the edited instructions: %+v", b.Messages)
	}
	var names []string
	for _, tl := range b.Tools {
		names = append(names, tl.Function.Name)
	}
	if strings.Join(names, ",") != "file_search,lc_transfer_to_helper" {
		t.Errorf("tools %v, want file_search and the handoff of the unsaved edge", names)
	}

	// Nothing was stored.
	var saved struct {
		Instructions string `json:"instructions"`
		Version      int    `json:"version"`
	}
	if s.call(t, testKey, "GET", "/api/agents/draft", "", &saved); saved.Instructions != "Saved words." || saved.Version != 1 {
		t.Errorf("after a preview the agent is %+v, want it unchanged", saved)
	}
	if s.call(t, testKey, "POST", "/api/agents/draft/prompt", `{"text":"hi"}`, &b); !strings.Contains(b.Messages[0].Content, "Saved words.") {
		t.Errorf("the preview without edits: %+v", b.Messages)
	}

	// Edits are checked as a save checks them, with the fields named.
	var refused struct {
		Error struct {
			Code   string
			Fields []struct{ Field, Message string }
		}
	}
	if code := s.call(t, testKey, "POST", "/api/agents/draft/prompt", `{"text":"hi","spec":{"tools":["nope"]}}`, &refused); code != 400 ||
		len(refused.Error.Fields) != 1 || refused.Error.Fields[0].Field != "tools[0]" {
		t.Errorf("an unknown tool in the edits: %d %+v", code, refused)
	}
	if code := s.call(t, testKey, "POST", "/api/agents/draft/prompt", `{"text":"hi","spec":{"version":3}}`, &refused); code != 400 {
		t.Errorf("a read-only field in the edits: %d %+v", code, refused)
	}
	// The config's agents cannot be edited, so they cannot be drafted.
	if code := s.call(t, testKey, "POST", "/api/agents/helper/prompt", `{"text":"hi","spec":{"instructions":"x"}}`, &refused); code != 409 {
		t.Errorf("edits of a config agent: %d %+v", code, refused)
	}

	// Another user may preview the shared agent but not edits of it.
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "bob@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	code, bobKey, _ := runCLI(t, nil, "", "keys", "create", "--config", cfgPath, "--user", "bob@example.com", "--name", "t")
	if code != 0 {
		t.Fatalf("keys create: %d", code)
	}
	bobKey = strings.TrimSpace(bobKey)
	if code := s.call(t, bobKey, "POST", "/api/agents/draft/prompt", `{"text":"hi"}`, &b); code != 200 {
		t.Errorf("Bob previewing the shared agent: %d", code)
	}
	if code := s.call(t, bobKey, "POST", "/api/agents/draft/prompt", `{"text":"hi","spec":{"instructions":"Bob's words."}}`, &refused); code != 403 {
		t.Errorf("Bob, a viewer, previewing edits: %d %+v, want 403", code, refused)
	}

	// As an editor Bob may preview his edits, but not one of shared, which only owners change.
	var bob struct {
		ID string `json:"id"`
	}
	s.call(t, bobKey, "GET", "/api/me", "", &bob)
	if code := s.call(t, testKey, "PUT", "/api/agents/draft/shares", fmt.Sprintf(`{"shares":[{"principal_type":"user","principal_id":%q,"role":"editor"}]}`, bob.ID), nil); code != 200 {
		t.Fatalf("sharing with Bob as an editor: %d", code)
	}
	if code := s.call(t, bobKey, "POST", "/api/agents/draft/prompt", `{"text":"hi","spec":{"instructions":"Bob's words."}}`, &b); code != 200 || !strings.Contains(b.Messages[0].Content, "Bob's words.") {
		t.Errorf("Bob, an editor, previewing edits: %d %+v", code, b.Messages)
	}
	if code := s.call(t, bobKey, "POST", "/api/agents/draft/prompt", `{"text":"hi","spec":{"shared":false}}`, &refused); code != 403 {
		t.Errorf("Bob, an editor, previewing a change of shared: %d %+v, want 403", code, refused)
	}
}
