// Package prompt owns what Relay sends to a model for one agent: the system
// message (tool contexts, file-search bias, RAG block, agent instructions with
// their placeholders, the artifacts prompt, MCP server instructions and
// memory, in the order and with the texts of docs/prompt.md), the tools array
// in OpenAI function format with built-in, MCP and handoff names, tool_choice
// and the agent's model parameters, put together as an [llm.Request] (whose
// encoder writes the exact bytes of the body).
//
// Everything here is a pure function of its input: no I/O, no clock, no state.
// Callers resolve tools, servers' instructions, files, retrieval results and
// memory first, then call [Build].
package prompt

import (
	"embed"
	"slices"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
)

// The texts of the prompt live in texts/, in UTF-8 (docs/prompt.md "Exact
// texts"). The web_search rules and the file-search bias are LibreChat's, as
// the reference examples in testdata/ show them; the artifacts prompt and the
// memory sentence are Relay's own.
//
//go:embed texts
var texts embed.FS

// trim removes the white space JavaScript's String.prototype.trim removes
// (LibreChat's, whose prompts Relay's must equal byte for byte): Unicode's
// space separators, tab, vertical tab, form feed, the line terminators and the
// byte order mark — but not U+0085, which Go's strings.TrimSpace also removes.
func trim(s string) string { return strings.TrimFunc(s, jsSpace) }

func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

func mustText(name string) string {
	b, err := texts.ReadFile("texts/" + name)
	if err != nil {
		panic("prompt: missing embedded text " + name) // a build defect, caught by every test
	}
	return strings.TrimSpace(string(b))
}

// Embedded texts, read once; they never change.
var (
	webSearchContext  = mustText("web_search.md")
	fileSearchBias    = mustText("file_search_bias.txt")
	artifactsPrompt   = mustText("artifacts.md")
	artifactsShadcnUI = mustText("artifacts_shadcnui.md")
	memoryPrompt      = mustText("memory.txt")
)

// ToolKind says where a tool comes from.
type ToolKind string

// The kinds of tools an agent can have.
const (
	ToolBuiltin ToolKind = "builtin" // file_search, web_search, set_memory, delete_memory
	ToolMCP     ToolKind = "mcp"     // a tool of an MCP server, named by its key
	ToolHandoff ToolKind = "handoff" // lc_transfer_to_<agent id>
)

// Names of the built-in tools.
const (
	FileSearch   = "file_search"
	WebSearch    = "web_search"
	SetMemory    = "set_memory"
	DeleteMemory = "delete_memory"
)

// Tool is one of the agent's resolved tools as the model sees it.
type Tool struct {
	// Name is what the model calls: the built-in's name, the MCP tool key
	// (see mcp.Key) or lc_transfer_to_<agent id>.
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments: a [Schema] (sent as is,
	// the cheapest), a json.RawMessage (checked, then sent as is) or any value
	// encoding/json can marshal (written on every build, maps with sorted
	// keys). Nil means an object without properties.
	Parameters any
	Kind       ToolKind
	// Server is the MCP server's name as configured, for MCP tools.
	Server string
}

// Server is one MCP server with its resolved instructions.
type Server struct {
	Name string
	// Instructions is the text for the prompt: the configured
	// serverInstructions, or the server's own with serverInstructions: true.
	// Empty means none.
	Instructions string
}

// File is a file the agent can search.
type File struct {
	ID       string
	Filename string
	// Type is the file's media type, e.g. application/pdf.
	Type string
}

// RAG is what retrieval over the conversation's embedded files returned.
type RAG struct {
	// Files are the conversation's embedded files, each with its chunks.
	Files []RAGFile
}

// RAGFile is one embedded file and the chunks retrieval returned for it, best
// first. At most four are used.
type RAGFile struct {
	File
	Chunks []string
}

// MemoryEntry is one thing Relay remembers about the user.
type MemoryEntry struct {
	// Key is the name the entry is saved under; the prompt shows only the
	// value and the date (docs/prompt.md "Memory segment").
	Key       string
	Value     string
	UpdatedAt time.Time
}

// Agent is what the request takes from an agent's definition.
type Agent struct {
	Model string
	// Instructions may hold placeholders (docs/prompt.md "Placeholders in
	// agent instructions").
	Instructions string
	// Artifacts is "default", "shadcnui", "custom" or empty.
	Artifacts       string
	ModelParameters map[string]any
}

// The artifacts modes that add a prompt ("custom" adds nothing).
const (
	ArtifactsDefault  = "default"
	ArtifactsShadcnUI = "shadcnui"
)

// Input is everything a request for one agent is built from.
type Input struct {
	// AgentID names the agent in errors.
	AgentID string
	Agent   Agent
	// Tools are the agent's resolved tools, in the agent's order.
	Tools []Tool
	// Servers are the MCP servers of those tools with their instructions.
	Servers []Server
	// AgentFiles are the agent's own file_search files, in their stored order.
	AgentFiles []File
	// Attached are the files attached to this conversation.
	Attached []File
	// RAG is nil when no retrieval ran.
	RAG *RAG
	// Memory is the user's memory; it is shown only when MemoryOn.
	Memory   []MemoryEntry
	MemoryOn bool
	// UserName is the user's display name, for {{current_user}}.
	UserName string
	// Now is the time of the request; Location is the user's time zone, nil
	// meaning Now's own location.
	Now      time.Time
	Location *time.Location
	// AnswerLanguage is webSearch.answerLanguage from the config.
	AnswerLanguage string
	// Messages are the conversation after the system message.
	Messages []llm.Message
}

// maxChunks is how many chunks of one file the RAG block holds.
const maxChunks = 4

// SystemMessage returns the system message for in: the non-empty segments of
// docs/prompt.md "The system message", each trimmed, joined by a blank line.
func SystemMessage(in Input) string {
	loc := in.Location
	if loc == nil {
		loc = in.Now.Location()
	}
	// The additional instructions are the artifacts prompt and, for shadcnui,
	// its addendum; joined by a blank line they read as one segment.
	var seg [8]string
	seg[0] = toolContexts(&in)
	if len(in.Attached) > 0 && hasTool(in.Tools, FileSearch) {
		seg[1] = fileSearchBias
	}
	seg[2] = ragBlock(in.RAG)
	seg[3] = ReplacePlaceholders(in.Agent.Instructions, in.Now, loc, in.UserName)
	switch in.Agent.Artifacts {
	case ArtifactsDefault:
		seg[4] = artifactsPrompt
	case ArtifactsShadcnUI:
		seg[4], seg[5] = artifactsPrompt, artifactsShadcnUI
	}
	seg[6] = mcpInstructions(in.Tools, in.Servers)
	if in.MemoryOn {
		seg[7] = memoryBlock(in.Memory, loc)
	}
	n := 0
	for i, s := range seg {
		s = trim(s)
		seg[i] = s
		if s != "" {
			n += len(s) + 2
		}
	}
	if n == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n - 2)
	for _, s := range seg {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
	}
	return b.String()
}

// hasTool reports whether tools hold the built-in named name.
func hasTool(tools []Tool, name string) bool {
	for i := range tools {
		if tools[i].Kind == ToolBuiltin && tools[i].Name == name {
			return true
		}
	}
	return false
}

// toolContexts renders the contexts of the agent's built-in tools, in the
// order the agent lists them, one after the other on new lines.
func toolContexts(in *Input) string {
	var parts [2]string
	n := 0
	seenFS, seenWS := false, false
	for i := range in.Tools {
		t := &in.Tools[i]
		if t.Kind != ToolBuiltin {
			continue
		}
		switch {
		case t.Name == FileSearch && !seenFS:
			seenFS = true
			if c := fileSearchContext(in.AgentFiles, in.Attached); c != "" {
				parts[n] = c
				n++
			}
		case t.Name == WebSearch && !seenWS:
			seenWS = true
			parts[n] = webSearchRules(in.AnswerLanguage)
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return parts[0] + "\n" + parts[1]
}

// NoFilesNote is the file_search context when there is no file to search, in
// LibreChat's words, so that the model asks for documents instead of calling
// the tool in vain.
const NoFilesNote = "- Note: Semantic search is available through the file_search tool but no files are currently loaded. Request the user to upload documents to search through."

// fileSearchContext lists the files file_search searches: the agent's own,
// then those attached to the conversation, marked as just attached. With no
// file at all it is NoFilesNote.
func fileSearchContext(agentFiles, attached []File) string {
	const (
		head   = "- Note: Use the file_search tool to find relevant information within:"
		suffix = " (just attached by user)"
	)
	n := len(head)
	for _, f := range agentFiles {
		n += len(f.Filename) + 3
	}
	for _, f := range attached {
		n += len(f.Filename) + 3 + len(suffix)
	}
	if n == len(head) {
		return NoFilesNote
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(head)
	for i, f := range agentFiles {
		if seenFile(agentFiles[:i], f.ID) {
			continue
		}
		b.WriteString("\n\t- ")
		b.WriteString(f.Filename)
	}
	for i, f := range attached {
		if seenFile(agentFiles, f.ID) || seenFile(attached[:i], f.ID) {
			continue
		}
		b.WriteString("\n\t- ")
		b.WriteString(f.Filename)
		b.WriteString(suffix)
	}
	return b.String()
}

// seenFile reports whether files hold one with the given id. Files without
// an id are never the same file.
func seenFile(files []File, id string) bool {
	if id == "" {
		return false
	}
	for i := range files {
		if files[i].ID == id {
			return true
		}
	}
	return false
}

// webSearchRules is the web_search context, its last line naming the answer
// language when the config sets one.
func webSearchRules(lang string) string {
	lang = strings.TrimSpace(lang)
	if lang == "" {
		return webSearchContext
	}
	base := strings.TrimSuffix(webSearchContext, ".")
	return base + " (" + strings.ToUpper(lang) + " IN YOUR CASE)."
}

// ragBlock renders the RAG context block of docs/prompt.md "RAG context block".
func ragBlock(r *RAG) string {
	if r == nil || len(r.Files) == 0 {
		return ""
	}
	const (
		fileOpen    = "\n  <file>\n    <filename>"
		typeOpen    = "</filename>\n    <type>"
		fileClose   = "</type>\n  </file>"
		search      = "\n</files>\n\nA semantic search was executed with the user's message as the query, retrieving the following context inside <context></context> XML tags.\n\n<context>"
		ctxOpen     = "</filename>\n    <context>"
		itemOpen    = "\n      <contextItem>\n        <![CDATA["
		itemClose   = "]]>\n      </contextItem>"
		ctxClose    = "\n    </context>\n  </file>"
		noResults   = "\n  The semantic search did not return any results."
		footer      = "\n</context>\n\nUse the context as your learned knowledge to better answer the user.\n\nIn your response, remember to follow these guidelines:\n- If you don't know the answer, simply say that you don't know.\n- If you are unsure how to answer, ask for clarification.\n- Avoid mentioning that you obtained the information from the context."
		cdataEnd    = "]]>"
		cdataSplit  = "]]]]><![CDATA[>"
		headerMulti = " files to the conversation:\n<files>"
	)
	n := 64 + len(search) + len(noResults) + len(footer)
	for i := range r.Files {
		f := &r.Files[i]
		n += 2*len(f.Filename) + len(f.Type) + len(fileOpen) + len(typeOpen) + len(fileClose) + len(ctxOpen) + len(ctxClose)
		for j, c := range f.Chunks {
			if j == maxChunks {
				break
			}
			n += len(c) + len(itemOpen) + len(itemClose) + 16
		}
	}
	var b strings.Builder
	b.Grow(n)
	if len(r.Files) == 1 {
		b.WriteString("The user has attached a file to the conversation:\n<files>")
	} else {
		b.WriteString("The user has attached ")
		writeInt(&b, len(r.Files))
		b.WriteString(headerMulti)
	}
	for i := range r.Files {
		f := &r.Files[i]
		b.WriteString(fileOpen)
		b.WriteString(f.Filename)
		b.WriteString(typeOpen)
		b.WriteString(f.Type)
		b.WriteString(fileClose)
	}
	b.WriteString(search)
	found := false
	for i := range r.Files {
		f := &r.Files[i]
		used := 0
		for _, c := range f.Chunks {
			if used == maxChunks {
				break
			}
			c = trim(c)
			if c == "" {
				continue
			}
			if used == 0 {
				b.WriteString(fileOpen)
				b.WriteString(f.Filename)
				b.WriteString(ctxOpen)
			}
			used++
			b.WriteString(itemOpen)
			for {
				k := strings.Index(c, cdataEnd)
				if k < 0 {
					break
				}
				b.WriteString(c[:k])
				b.WriteString(cdataSplit)
				c = c[k+len(cdataEnd):]
			}
			b.WriteString(c)
			b.WriteString(itemClose)
		}
		if used > 0 {
			b.WriteString(ctxClose)
			found = true
		}
	}
	if !found {
		b.WriteString(noResults)
	}
	b.WriteString(footer)
	return b.String()
}

// mcpInstructions renders the MCP server instructions wrapper for the servers
// of the agent's MCP tools that have instructions, in the order their tools
// first appear.
func mcpInstructions(tools []Tool, servers []Server) string {
	const (
		head = "# MCP Server Instructions\n\nThe following MCP servers are available with their specific instructions:"
		pre  = "\n\n## "
		post = " MCP Server Instructions\n\n"
		foot = "\n\nPlease follow these instructions when using tools from the respective MCP servers."
	)
	var b strings.Builder
	for i := range tools {
		t := &tools[i]
		if t.Kind != ToolMCP || firstServerUse(tools[:i], t.Server) {
			continue
		}
		text := serverInstructions(servers, t.Server)
		if text == "" {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(head) + len(foot) + len(pre) + len(t.Server) + len(post) + len(text) + 64)
			b.WriteString(head)
		}
		b.WriteString(pre)
		b.WriteString(t.Server)
		b.WriteString(post)
		b.WriteString(text)
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString(foot)
	return b.String()
}

// firstServerUse reports whether an earlier MCP tool came from server.
func firstServerUse(earlier []Tool, server string) bool {
	for i := range earlier {
		if earlier[i].Kind == ToolMCP && earlier[i].Server == server {
			return true
		}
	}
	return false
}

// serverInstructions returns the trimmed instructions of the named server.
func serverInstructions(servers []Server, name string) string {
	for i := range servers {
		if servers[i].Name == name {
			return trim(servers[i].Instructions)
		}
	}
	return ""
}

// memoryBlock renders the memory segment: our instructions, then the entries,
// oldest update first, dated in the user's time zone.
func memoryBlock(entries []MemoryEntry, loc *time.Location) string {
	if len(entries) == 0 {
		return ""
	}
	older := func(a, b MemoryEntry) int { return a.UpdatedAt.Compare(b.UpdatedAt) }
	if !slices.IsSortedFunc(entries, older) {
		entries = slices.Clone(entries)
		slices.SortStableFunc(entries, older)
	}
	const head = "\n\n# Existing memory about the user:\n"
	n := len(memoryPrompt) + len(head)
	for i := range entries {
		n += len(entries[i].Value) + 24
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(memoryPrompt)
	b.WriteString(head)
	var date [16]byte
	for i := range entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeInt(&b, i+1)
		b.WriteString(". [")
		b.Write(appendDay(date[:0], entries[i].UpdatedAt.In(loc)))
		b.WriteString("]. ")
		b.WriteString(trim(entries[i].Value))
	}
	return b.String()
}

// writeInt writes a non-negative int in decimal.
func writeInt(b *strings.Builder, n int) {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	b.Write(d[i:])
}
