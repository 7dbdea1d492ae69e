package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/fault"
)

func TestValidate(t *testing.T) {
	rules := Rules{Providers: []string{"openAI", "ollama"}, MaxRecursionLimit: 50}
	ok := func() Spec { return Spec{Provider: "openai", Model: "m"} }
	tests := []struct {
		name   string
		change func(*Spec)
		fields []string
	}{
		{"minimal, provider case-insensitive", func(*Spec) {}, nil},
		{"everything missing", func(s *Spec) { *s = Spec{} }, []string{"provider", "model"}},
		{"unknown provider", func(s *Spec) { s.Provider = "acme" }, []string{"provider"}},
		{"empty and duplicate tools", func(s *Spec) { s.Tools = []string{"a", "", "a"} }, []string{"tools[1]", "tools[2]"}},
		{"artifacts", func(s *Spec) { s.Artifacts = "x" }, []string{"artifacts"}},
		{"chain type", func(s *Spec) { s.ChainType = "loop" }, []string{"chain_type"}},
		{"recursion limit", func(s *Spec) { s.RecursionLimit = 51 }, []string{"recursion_limit"}},
		{"negative recursion limit", func(s *Spec) { s.RecursionLimit = -1 }, []string{"recursion_limit"}},
		{"agent ids", func(s *Spec) { s.AgentIDs = []string{"ok", "not ok"} }, []string{"agent_ids[1]"}},
		{"file ids", func(s *Spec) {
			s.ToolResources = &ToolResources{FileSearch: &FileSearchResources{FileIDs: []string{""}}}
		}, []string{"tool_resources.file_search.file_ids[0]"}},
		{"empty starter", func(s *Spec) { s.ConversationStarters = []string{" "} }, []string{"conversation_starters[0]"}},
		{"model parameters of the wrong type", func(s *Spec) {
			s.ModelParameters = map[string]any{"temperature": "hot", "max_tokens": -1, "maxOutputTokens": 1.5, "top_p": 0.9, "reasoning_effort": "low", "seed": nil}
		}, []string{"model_parameters.maxOutputTokens", "model_parameters.max_tokens", "model_parameters.temperature"}},
		{"edge sides", func(s *Spec) { s.Edges = []Edge{{EdgeType: EdgeDirect}} }, []string{"edges[0].from", "edges[0].to"}},
		{"edge type", func(s *Spec) { s.Edges = []Edge{{From: One("a"), To: One("b"), EdgeType: "x"}} }, []string{"edges[0].edgeType"}},
		{"prompt key name", func(s *Spec) { s.Edges = []Edge{{From: One("a"), To: One("b"), PromptKey: "1x"}} }, []string{"edges[0].promptKey"}},
		{"prompt key on a direct edge", func(s *Spec) {
			s.Edges = []Edge{{From: One("a"), To: One("b"), EdgeType: EdgeDirect, PromptKey: "context"}}
		}, []string{"edges[0].promptKey"}},
		{"edge ids", func(s *Spec) { s.Edges = []Edge{{From: IDs{List: []string{"a", "b c"}}, To: One("d")}} }, []string{"edges[0].from[1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ok()
			tc.change(&s)
			err := rules.Validate(&s)
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			fe, isFault := err.(*fault.Error)
			if !isFault || fe.Kind != fault.Invalid {
				t.Fatalf("error %v, want invalid", err)
			}
			var got []string
			for _, f := range fe.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("fields %v, want %v (%v)", got, tc.fields, err)
			}
		})
	}
}

func TestEdgeDefaultsToHandoff(t *testing.T) {
	s := Spec{Provider: "p", Model: "m", Edges: []Edge{{From: One("a"), To: One("b")}}}
	if err := (Rules{}).Validate(&s); err != nil {
		t.Fatal(err)
	}
	if s.Edges[0].EdgeType != EdgeHandoff {
		t.Errorf("edgeType = %q, want handoff", s.Edges[0].EdgeType)
	}
}

func TestIDsKeepTheirForm(t *testing.T) {
	for _, in := range []string{`{"from":"a","to":["b","c"]}`, `{"from":["a"],"to":"b"}`, `{"from":[],"to":"b"}`} {
		var e struct {
			From IDs `json:"from"`
			To   IDs `json:"to"`
		}
		if err := json.Unmarshal([]byte(in), &e); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(e)
		if string(out) != in {
			t.Errorf("%s came back as %s", in, out)
		}
	}
	var ids IDs
	if err := json.Unmarshal([]byte(`3`), &ids); err == nil {
		t.Errorf("a number was accepted as ids")
	}
}

func TestNewID(t *testing.T) {
	id := NewID()
	if !strings.HasPrefix(id, "agent_") || len(id) != 27 || !ValidID(id) {
		t.Errorf("NewID() = %q", id)
	}
}
