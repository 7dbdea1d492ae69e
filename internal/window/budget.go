// Package window keeps a request inside its model's context window
// (docs/config.md, "Context window"): it resolves the budget of an agent's
// requests, cuts long tool results, and drops the oldest turns of the
// conversation until the request fits, never splitting a tool call from its
// results and always keeping the system prompt and the newest turn.
package window

import (
	"math"
	"strconv"
	"strings"
)

// Budget is how many tokens an agent's request may hold, and where that
// number comes from.
type Budget struct {
	// Tokens is the most the request (messages and tools) may count.
	Tokens int `json:"budget"`
	// Context is the model's context window, when Tokens was derived from it.
	Context int `json:"context_window,omitempty"`
	// Reply is what was kept free of the context window for the reply.
	Reply int `json:"reply_reserve,omitempty"`
	// Source says where Tokens (or Context) comes from: "maxContextTokens",
	// "tokenConfig", "known model" or "default".
	Source string `json:"budget_source"`
}

// The sources of a budget.
const (
	SourceAgent       = "maxContextTokens"
	SourceTokenConfig = "tokenConfig"
	SourceKnown       = "known model"
	SourceDefault     = "default"
)

// DefaultContext is the context window of a model that neither the config
// nor the table of known models names (LibreChat's fallback as well).
const DefaultContext = 18000

// DefaultReply is the reply's reserve when the agent's model parameters set
// no maximum for it; it is at most a quarter of the context window.
const DefaultReply = 4096

// MaxContextTokensKey is the model parameter that sets an agent's budget
// (LibreChat's name). It configures Relay and is never sent to the provider.
const MaxContextTokensKey = "maxContextTokens"

// ReplyKeys are the model parameters that bound the reply, in the order they
// are looked at.
var ReplyKeys = []string{"max_tokens", "max_completion_tokens", "maxOutputTokens", "maxTokens", "max_output_tokens"}

// Resolve returns the budget of an agent's requests: the agent's
// maxContextTokens model parameter as it is; else the model's context window
// (configured is the endpoint's tokenConfig context for the model, 0 when it
// has none; then the table of known models; then DefaultContext) minus the
// reply's maximum (max_tokens, max_completion_tokens or maxOutputTokens of
// the model parameters, else DefaultReply capped at a quarter of the
// window). A budget of 0 or less means the reply's maximum leaves no room.
func Resolve(params map[string]any, model string, configured int) Budget {
	if n, ok := intParam(params, MaxContextTokensKey); ok && n > 0 {
		return Budget{Tokens: n, Source: SourceAgent}
	}
	b := Budget{Context: configured, Source: SourceTokenConfig}
	if configured <= 0 {
		b.Context, b.Source = DefaultContext, SourceDefault
		if n, ok := KnownContext(model); ok {
			b.Context, b.Source = n, SourceKnown
		}
	}
	b.Reply = min(DefaultReply, b.Context/4)
	for _, k := range ReplyKeys {
		if n, ok := intParam(params, k); ok && n > 0 {
			b.Reply = n
			break
		}
	}
	b.Tokens = b.Context - b.Reply
	return b
}

// intParam reads a whole number from a model parameter written as a number
// or a numeric string.
func intParam(params map[string]any, key string) (int, bool) {
	v, ok := params[key]
	if !ok {
		return 0, false
	}
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case int32:
		return int(v), true
	case uint64:
		if v > math.MaxInt32 {
			return math.MaxInt32, true
		}
		return int(v), true
	case float64:
		if v != math.Trunc(v) || v > math.MaxInt32 || v < math.MinInt32 {
			return 0, false
		}
		return int(v), true
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	}
	return 0, false
}

// known are context windows of well-known models, by name prefix; the
// longest prefix that matches wins.
var known = []struct {
	prefix string
	tokens int
}{
	{"gpt-5", 400000},
	{"gpt-4.1", 1047576},
	{"gpt-4.5", 128000},
	{"gpt-4o", 128000},
	{"chatgpt-4o", 128000},
	{"gpt-4-turbo", 128000},
	{"gpt-4-1106", 128000},
	{"gpt-4-0125", 128000},
	{"gpt-4-vision", 128000},
	{"gpt-4-32k", 32768},
	{"gpt-4", 8192},
	{"gpt-3.5-turbo", 16385},
	{"gpt-35-turbo", 16385},
	{"gpt-oss", 131072},
	{"o1-mini", 128000},
	{"o1-preview", 128000},
	{"o1", 200000},
	{"o3", 200000},
	{"o4-mini", 200000},
	{"claude-2", 100000},
	{"claude-instant", 100000},
	{"claude-", 200000},
	{"gemini-1.5-pro", 2097152},
	{"gemini-1.0", 32760},
	{"gemini-pro", 32760},
	{"gemini-", 1048576},
	{"mistral-large", 131072},
	{"mistral-small", 32768},
	{"deepseek", 128000},
	{"llama3.1", 131072},
	{"llama-3.1", 131072},
	{"llama3.2", 131072},
	{"llama-3.2", 131072},
	{"llama3.3", 131072},
	{"llama-3.3", 131072},
	{"qwen2.5", 32768},
}

// KnownContext returns the context window of a well-known model (a provider
// prefix such as "openai/" or "anthropic/" is ignored), and false for a model
// Relay does not know.
func KnownContext(model string) (int, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best, n := -1, 0
	for _, k := range known {
		if strings.HasPrefix(m, k.prefix) && len(k.prefix) > best {
			best, n = len(k.prefix), k.tokens
		}
	}
	return n, best >= 0
}
