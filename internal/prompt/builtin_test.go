package prompt_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/prompt"
	memtools "github.com/relay-ai/relay/internal/tool/builtin"
)

// TestMemoryToolsMatchTheirImplementation: what the model is told about
// set_memory and delete_memory is what the tools accept.
func TestMemoryToolsMatchTheirImplementation(t *testing.T) {
	for _, tc := range []struct {
		name, description string
		schema            map[string]any
	}{
		{prompt.SetMemory, memtools.SetMemoryDescription, memtools.SetMemorySchema()},
		{prompt.DeleteMemory, memtools.DeleteMemoryDescription, memtools.DeleteMemorySchema()},
	} {
		tool, ok := prompt.BuiltinTool(tc.name)
		if !ok {
			t.Fatalf("no built-in %s", tc.name)
		}
		if tool.Description != tc.description {
			t.Errorf("%s: description %q, the tool's is %q", tc.name, tool.Description, tc.description)
		}
		raw, err := json.Marshal(tool.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		var got any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(tc.schema)
		var w any
		_ = json.Unmarshal(want, &w)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s schema (-tool +prompt):\n%s", tc.name, diff)
		}
	}
}
