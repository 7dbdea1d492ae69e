package prompt

import (
	"strings"

	"github.com/relay-ai/relay/internal/llm"
)

// HandoffPrefix starts the name of every handoff tool: lc_transfer_to_<agent id>.
const HandoffPrefix = "lc_transfer_to_"

// DefaultPromptKey names a handoff tool's parameter when the edge names none.
const DefaultPromptKey = "instructions"

// builtins are the built-in tools. web_search's schema is LibreChat's
// (docs/prompt.md "Exact texts"); the others are Relay's own.
var builtins = [...]struct{ name, description, parameters string }{
	{
		name:        FileSearch,
		description: "Search the files of this conversation and of this agent for passages relevant to a query. Returns the most relevant passages, each with the name of the file it comes from.",
		parameters:  `{"type":"object","properties":{"query":{"type":"string","description":"What to look for: a question or a few keywords. Search again with other words to cover other parts of the files."}},"required":["query"]}`,
	},
	{
		name:        WebSearch,
		description: "Search the web for current information. Returns relevant web pages with snippets.",
		parameters:  `{"type":"object","properties":{"query":{"type":"string","description":"The search query (3-6 keywords recommended)"}},"required":["query"]}`,
	},
	// The memory tools' texts are those of their implementation in
	// internal/tool/builtin; a test keeps the two the same.
	{
		name:        SetMemory,
		description: "Save a fact about the user to remember in future conversations, under a short key. Saving under a key that already holds a memory replaces it.",
		parameters:  `{"type":"object","properties":{"key":{"type":"string","description":"The memory's key: 1 to 64 lower-case letters a-z or underscores, e.g. \"preferences\"."},"value":{"type":"string","description":"The text to remember, short and self-contained."}},"required":["key","value"],"additionalProperties":false}`,
	},
	{
		name:        DeleteMemory,
		description: "Delete the memory stored under a key, when it is wrong or no longer true.",
		parameters:  `{"type":"object","properties":{"key":{"type":"string","description":"The memory's key: 1 to 64 lower-case letters a-z or underscores, e.g. \"preferences\"."}},"required":["key"],"additionalProperties":false}`,
	},
}

// BuiltinTool returns the built-in tool named name: file_search, web_search,
// set_memory or delete_memory.
func BuiltinTool(name string) (Tool, bool) {
	for _, t := range builtins {
		if t.name == name {
			return Tool{Name: t.name, Description: t.description, Parameters: trustedSchema(t.parameters), Kind: ToolBuiltin}, true
		}
	}
	return Tool{}, false
}

// HandoffTool returns the tool that hands the conversation over to the agent
// targetID along a handoff edge (docs/agents.md "Edges"): lc_transfer_to_<targetID>,
// described by description or, when it is empty, by a default sentence.
// When the edge has a prompt, the tool takes one string parameter named
// promptKey (default "instructions"), described by prompt, that carries what
// the target should do; without one it takes no arguments.
func HandoffTool(targetID, description, promptKey, prompt string) Tool {
	if strings.TrimSpace(description) == "" {
		description = "Hand the conversation over to the agent " + targetID + " when it is better placed to help. That agent continues the conversation from here and your turn ends."
	}
	t := Tool{Name: HandoffPrefix + targetID, Description: description, Kind: ToolHandoff}
	if prompt == "" {
		t.Parameters = Schema{}
		return t
	}
	if promptKey == "" {
		promptKey = DefaultPromptKey
	}
	b := make([]byte, 0, 96+2*len(promptKey)+len(prompt))
	b = append(b, `{"type":"object","properties":{`...)
	b = llm.AppendJSONString(b, promptKey)
	b = append(b, `:{"type":"string","description":`...)
	b = llm.AppendJSONString(b, prompt)
	b = append(b, `}},"required":[`...)
	b = llm.AppendJSONString(b, promptKey)
	t.Parameters = Schema{raw: append(b, "]}"...)}
	return t
}

// HandoffTarget returns the agent id a handoff tool name points to.
func HandoffTarget(name string) (agentID string, ok bool) {
	id, ok := strings.CutPrefix(name, HandoffPrefix)
	return id, ok && id != ""
}
