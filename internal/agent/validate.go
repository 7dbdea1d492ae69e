package agent

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

var (
	idPattern        = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	promptKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// ValidID reports whether id is a well-formed agent id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Rules are the limits that depend on the configuration.
type Rules struct {
	// Providers are the provider names an agent may use (matched case-insensitively).
	// Empty means any non-empty name.
	Providers []string
	// MaxRecursionLimit caps recursion_limit; 0 means no cap.
	MaxRecursionLimit int
	// Files, when set, returns which of the file ids a user may not give an
	// agent's file_search (files that do not exist or are not theirs), so that
	// an agent cannot be made to read someone else's files. Ids an agent
	// already has stay allowed when another user edits it.
	Files func(ctx context.Context, u *auth.User, ids []string) ([]string, error)
	// Tools, when set, returns which of the tool names no built-in tool or
	// configured MCP server provides, and the names that are known, so that
	// an agent cannot name a tool that does not exist. Names an agent already
	// has stay allowed.
	Tools func(ctx context.Context, names []string) (unknown, known []string, err error)
}

// Validate checks a Spec and returns a fault.Invalid error naming every bad field.
// It also fills defaults that every reader relies on (an edge without edgeType is a
// handoff).
func (r Rules) Validate(s *Spec) error {
	var fs fault.Fields
	r.check(&fs, s)
	return fs.Err("invalid agent")
}

// check adds a field error to fs for every problem with s.
func (r Rules) check(fs *fault.Fields, s *Spec) {
	s.Name = strings.TrimSpace(s.Name)
	if len(s.Name) > 256 {
		fs.Add("name", "at most 256 characters")
	}
	if strings.TrimSpace(s.Provider) == "" {
		fs.Add("provider", "required")
	} else if len(r.Providers) > 0 && !slices.ContainsFunc(r.Providers, func(p string) bool { return strings.EqualFold(p, s.Provider) }) {
		fs.Add("provider", "unknown provider %q (known: %s)", s.Provider, strings.Join(r.Providers, ", "))
	}
	if strings.TrimSpace(s.Model) == "" {
		fs.Add("model", "required")
	}
	if v, ok := s.ModelParameters["maxContextTokens"]; ok && !positiveInt(v) {
		fs.Add("model_parameters.maxContextTokens", "must be a whole number of tokens of at least 1")
	}
	// The parameters every provider reads as numbers: one of another type
	// would fail every run at the provider. Others pass as they are.
	for _, k := range slices.Sorted(maps.Keys(s.ModelParameters)) {
		v := s.ModelParameters[k]
		switch {
		case v == nil:
		case numberParams[k] && !isNumber(v):
			fs.Add("model_parameters."+k, "must be a number")
		case tokenParams[k] && !positiveInt(v):
			fs.Add("model_parameters."+k, "must be a whole number of tokens of at least 1")
		}
	}
	for i, t := range s.Tools {
		switch {
		case strings.TrimSpace(t) == "":
			fs.Add(fmt.Sprintf("tools[%d]", i), "must not be empty")
		case slices.Index(s.Tools, t) < i:
			fs.Add(fmt.Sprintf("tools[%d]", i), "duplicate tool %q", t)
		}
	}
	switch s.Artifacts {
	case ArtifactsNone, ArtifactsDefault, ArtifactsShadcnUI, ArtifactsCustom:
	default:
		fs.Add("artifacts", "must be one of default, shadcnui, custom, or empty")
	}
	switch s.ChainType {
	case "", ChainConvo, ChainOutputPassthrough:
	default:
		fs.Add("chain_type", "must be convo or output_passthrough")
	}
	if s.RecursionLimit < 0 {
		fs.Add("recursion_limit", "must not be negative")
	} else if r.MaxRecursionLimit > 0 && s.RecursionLimit > r.MaxRecursionLimit {
		fs.Add("recursion_limit", "at most %d (endpoints.agents.maxRecursionLimit)", r.MaxRecursionLimit)
	}
	if s.ToolResources != nil && s.ToolResources.FileSearch != nil {
		for i, f := range s.ToolResources.FileSearch.FileIDs {
			if strings.TrimSpace(f) == "" {
				fs.Add(fmt.Sprintf("tool_resources.file_search.file_ids[%d]", i), "must not be empty")
			}
		}
	}
	for i, id := range s.AgentIDs {
		if !ValidID(id) {
			fs.Add(fmt.Sprintf("agent_ids[%d]", i), "%q is not an agent id", id)
		}
	}
	for i, st := range s.ConversationStarters {
		if strings.TrimSpace(st) == "" {
			fs.Add(fmt.Sprintf("conversation_starters[%d]", i), "must not be empty")
		}
	}
	for i := range s.Edges {
		validateEdge(fs, fmt.Sprintf("edges[%d]", i), &s.Edges[i])
	}
}

func validateEdge(fs *fault.Fields, at string, e *Edge) {
	for _, side := range []struct {
		name string
		ids  IDs
	}{{"from", e.From}, {"to", e.To}} {
		if len(side.ids.List) == 0 {
			fs.Add(at+"."+side.name, "required: an agent id or a list of agent ids")
		}
		for j, id := range side.ids.List {
			if !ValidID(id) {
				fs.Add(fmt.Sprintf("%s.%s[%d]", at, side.name, j), "%q is not an agent id", id)
			}
		}
	}
	switch e.EdgeType {
	case "":
		e.EdgeType = EdgeHandoff
	case EdgeHandoff, EdgeDirect:
	default:
		fs.Add(at+".edgeType", "must be handoff or direct")
	}
	if e.PromptKey != "" {
		if !promptKeyPattern.MatchString(e.PromptKey) {
			fs.Add(at+".promptKey", "must be a parameter name (letters, digits, _; not starting with a digit)")
		} else if e.EdgeType != EdgeHandoff {
			fs.Add(at+".promptKey", "only handoff edges take a promptKey")
		}
	}
}

// positiveInt reports whether a model parameter is a whole number above 0.
// numberParams and tokenParams are model parameters with a type every
// provider agrees on, in the spellings of OpenAI's, Anthropic's and Google's
// APIs and of LibreChat's agents.
var (
	numberParams = map[string]bool{"temperature": true, "top_p": true, "topP": true, "top_k": true, "topK": true,
		"frequency_penalty": true, "presence_penalty": true}
	tokenParams = map[string]bool{"max_tokens": true, "maxTokens": true, "max_completion_tokens": true,
		"max_output_tokens": true, "maxOutputTokens": true}
)

// isNumber reports whether v is a number as JSON or YAML decode one.
func isNumber(v any) bool {
	switch v.(type) {
	case int, int64, uint64, float64:
		return true
	}
	return false
}

func positiveInt(v any) bool {
	switch v := v.(type) {
	case int:
		return v > 0
	case int64:
		return v > 0
	case uint64:
		return v > 0
	case float64:
		return v >= 1 && v == float64(int64(v))
	}
	return false
}
