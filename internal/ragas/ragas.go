// Package ragas writes succeeded runs as a Ragas evaluation dataset (JSONL):
// single-turn samples (question, retrieved contexts, answer) or multi-turn
// ones (the messages with their tool calls), read from the stored runs
// (docs/api.md "Ragas export").
package ragas

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// Store is what an export reads of the stored runs.
type Store interface {
	GetRun(ctx context.Context, id string) (*run.Run, error)
	ListRuns(ctx context.Context, f run.RunFilter) ([]*run.Run, error)
	GetMessage(ctx context.Context, id string) (*run.Message, error)
	ListModelRequests(ctx context.Context, runID string) ([]run.ModelRequest, error)
	ListToolCalls(ctx context.Context, runID string) ([]run.ToolCall, error)
}

// Exporter writes Ragas datasets from a store's runs.
type Exporter struct {
	Store Store
}

// Options select and shape a Ragas export (docs/api.md "Ragas export").
type Options struct {
	UserID  string // empty: every user's runs
	AgentID string
	Since   time.Time
	// MultiTurn writes multi-turn samples (messages with tool calls); otherwise
	// single-turn samples {user_input, retrieved_contexts, response}.
	MultiTurn bool
	// Retrieval reports whether a tool's output is retrieved context: file_search
	// and the MCP tools the config marks as retrieval.
	Retrieval func(toolName string) bool
	// RunIDs, when set, are the runs to export, in this order (each once),
	// in place of those that UserID, AgentID and Since select. Each must be
	// a succeeded run of UserID (when set): an unknown run, or another
	// user's, is fault.NotFound, one that did not succeed fault.Invalid,
	// before anything is written.
	RunIDs []string
}

// ragasMessage is one message of a multi-turn sample.
type ragasMessage struct {
	Type      string          `json:"type"`
	Content   string          `json:"content"`
	ToolCalls []ragasToolCall `json:"tool_calls,omitempty"`
}

// ragasToolCall is Ragas' ToolCall: a name and its arguments as a JSON object.
type ragasToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type singleTurn struct {
	UserInput         string   `json:"user_input,omitempty"`
	RetrievedContexts []string `json:"retrieved_contexts,omitempty"`
	Response          string   `json:"response,omitempty"`
}

type multiTurn struct {
	UserInput []ragasMessage `json:"user_input"`
}

// Export writes one JSONL sample per succeeded run matching o, oldest
// first, and returns how many it wrote.
func (s *Exporter) Export(ctx context.Context, w io.Writer, o Options) (int, error) {
	var (
		runs []*run.Run
		err  error
	)
	if o.RunIDs != nil {
		runs, err = s.selected(ctx, o)
	} else {
		runs, err = s.Store.ListRuns(ctx, run.RunFilter{UserID: o.UserID, AgentID: o.AgentID, Status: run.StatusSucceeded, Since: o.Since})
	}
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for _, r := range runs {
		var sample any
		if o.MultiTurn {
			sample, err = s.multiTurn(ctx, r)
		} else {
			sample, err = s.singleTurn(ctx, r, o.Retrieval)
		}
		if err != nil {
			return n, fmt.Errorf("run %s: %w", r.ID, err)
		}
		if sample == nil {
			continue
		}
		if err := enc.Encode(sample); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// selected loads the runs o.RunIDs names, each once, checking each as
// Options.RunIDs says.
func (s *Exporter) selected(ctx context.Context, o Options) ([]*run.Run, error) {
	var (
		runs []*run.Run
		seen = map[string]bool{}
	)
	for _, id := range o.RunIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		r, err := s.Store.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if o.UserID != "" && r.UserID != o.UserID {
			return nil, fault.New(fault.NotFound, "run %q not found", id)
		}
		if r.Status != run.StatusSucceeded {
			return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid export", Fields: []fault.FieldError{{
				Field: "run_id", Message: fmt.Sprintf("run %q is %s: only succeeded runs are exported", id, r.Status)}}}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func (s *Exporter) answer(ctx context.Context, r *run.Run) (question, answer string, err error) {
	q, err := s.Store.GetMessage(ctx, r.UserMessageID)
	if err != nil {
		return "", "", err
	}
	if r.ResponseMessageID != "" {
		a, err := s.Store.GetMessage(ctx, r.ResponseMessageID)
		if err != nil {
			return "", "", err
		}
		answer = a.Text
	}
	return q.Text, StripCitations(answer), nil
}

func (s *Exporter) singleTurn(ctx context.Context, r *run.Run, retrieval func(string) bool) (any, error) {
	q, a, err := s.answer(ctx, r)
	if err != nil {
		return nil, err
	}
	sample := singleTurn{UserInput: q, Response: a}
	calls, err := s.Store.ListToolCalls(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		if c.IsError || retrieval == nil || !retrieval(c.Name) {
			continue
		}
		for _, text := range retrievedContexts(&c) {
			if strings.TrimSpace(text) != "" {
				sample.RetrievedContexts = append(sample.RetrievedContexts, text)
			}
		}
	}
	return sample, nil
}

// retrievedContexts are the passages of a retrieval tool's call, one per chunk:
// the contexts stored with the call; for a file_search call stored without them,
// the passages its sources mark out in the result; otherwise the whole result.
// A file_search call without passages (no files, no match) retrieved nothing.
func retrievedContexts(c *run.ToolCall) []string {
	if len(c.Contexts) > 0 {
		return c.Contexts
	}
	if c.Name == builtin.FileSearchName {
		return fileSearchPassages(c.Result, c.Sources)
	}
	return []string{c.Result}
}

// fileSearchPassages cuts a file_search result into its passages. Each passage
// is written as a header (file, page, relevance, anchor) that its source
// determines, then "Content: " and the text; passages are separated by a line
// "---". Finding each source's header in turn, from where the last one ended,
// keeps a passage whose text holds "---" or "Content:" whole. The result is
// nil when a header is missing: the text is not what the sources describe.
func fileSearchPassages(result string, sources []tool.Source) []string {
	var out []string
	at := 0
	for i, src := range sources {
		head := fmt.Sprintf("File: %s\nPage: %d\nRelevance: %.4f\nAnchor: %s\nContent: ", src.FileName, src.Page, src.Relevance, src.Anchor)
		j := strings.Index(result[at:], head)
		if j < 0 {
			return nil
		}
		start := at + j + len(head)
		end := len(result)
		if i+1 < len(sources) {
			next := sources[i+1]
			sep := fmt.Sprintf("\n---\nFile: %s\nPage: %d\n", next.FileName, next.Page)
			k := strings.Index(result[start:], sep)
			if k < 0 {
				return nil
			}
			end = start + k
		}
		out = append(out, strings.TrimSpace(result[start:end]))
		at = end
	}
	return out
}

// multiTurn rebuilds the conversation from the last request the run sent (it
// holds every earlier message, tool calls and results included) and what the
// model answered it: the answer's parts after its last tool call Relay ran
// (the text, and the calls of the client's functions that ended the run).
func (s *Exporter) multiTurn(ctx context.Context, r *run.Run) (any, error) {
	last := ragasMessage{Type: "ai"}
	if r.ResponseMessageID != "" {
		a, err := s.Store.GetMessage(ctx, r.ResponseMessageID)
		if err != nil {
			return nil, err
		}
		last = lastTurn(a)
	}
	reqs, err := s.Store.ListModelRequests(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	msgs, err := requestMessages(reqs[len(reqs)-1].Body)
	if err != nil {
		return nil, fmt.Errorf("reading the last model request: %w", err)
	}
	msgs = append(msgs, last)
	return multiTurn{UserInput: msgs}, nil
}

// lastTurn is the ai message of an answer's last model turn: its parts after
// the last tool call Relay ran, their texts joined as the answer's are and
// stripped of citation markers, with the client's function calls. An answer
// saved without parts is its text.
func lastTurn(a *run.Message) ragasMessage {
	if len(a.Parts) == 0 {
		return ragasMessage{Type: "ai", Content: StripCitations(a.Text)}
	}
	from := 0
	for i, p := range a.Parts {
		if p.Type == run.PartToolCall {
			from = i + 1
		}
	}
	m := ragasMessage{Type: "ai"}
	var texts []string
	for _, p := range a.Parts[from:] {
		switch {
		case p.Type == run.PartText && p.Text != "":
			texts = append(texts, p.Text)
		case p.Type == run.PartClientCall && p.Tool != nil:
			m.ToolCalls = append(m.ToolCalls, ragasToolCall{Name: p.Tool.Name, Args: ToolArgs(json.RawMessage(p.Tool.Arguments))})
		}
	}
	m.Content = StripCitations(strings.Join(texts, run.PartSep))
	return m
}

// requestMessages reads the conversation of a model request in the wire format
// of its provider: OpenAI's messages (tool_calls, tool messages), Anthropic's
// (tool_use and tool_result blocks) or Gemini's contents (functionCall and
// functionResponse parts). System messages are left out; ai messages' text is
// stripped of citation markers.
func requestMessages(body json.RawMessage) ([]ragasMessage, error) {
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
				FunctionResponse *struct {
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var msgs []ragasMessage
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			// Anthropic sends tool results as a user message of tool_result blocks.
			text, results := anthropicUser(m.Content)
			for _, r := range results {
				msgs = append(msgs, ragasMessage{Type: "tool", Content: r})
			}
			if len(results) == 0 || text != "" {
				msgs = append(msgs, ragasMessage{Type: "human", Content: text})
			}
		case "assistant":
			am := ragasMessage{Type: "ai", Content: StripCitations(contentText(m.Content))}
			for _, c := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, ragasToolCall{Name: c.Function.Name, Args: ToolArgs(json.RawMessage(c.Function.Arguments))})
			}
			am.ToolCalls = append(am.ToolCalls, anthropicToolUses(m.Content)...)
			msgs = append(msgs, am)
		case "tool":
			msgs = append(msgs, ragasMessage{Type: "tool", Content: contentText(m.Content)})
		}
	}
	for _, c := range req.Contents {
		var text strings.Builder
		var calls []ragasToolCall
		var results []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				calls = append(calls, ragasToolCall{Name: p.FunctionCall.Name, Args: ToolArgs(p.FunctionCall.Args)})
			case p.FunctionResponse != nil:
				results = append(results, geminiResponse(p.FunctionResponse.Response))
			default:
				text.WriteString(p.Text)
			}
		}
		switch {
		case c.Role == "model":
			msgs = append(msgs, ragasMessage{Type: "ai", Content: StripCitations(text.String()), ToolCalls: calls})
		case len(results) > 0:
			for _, r := range results {
				msgs = append(msgs, ragasMessage{Type: "tool", Content: r})
			}
		default:
			msgs = append(msgs, ragasMessage{Type: "human", Content: text.String()})
		}
	}
	return msgs, nil
}

// contentBlock is a part of a message's content: OpenAI's text parts and
// Anthropic's text, tool_use and tool_result blocks.
type contentBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
}

func blocks(raw json.RawMessage) []contentBlock {
	var bs []contentBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// contentText reads a message's content: a string, or the text of its parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, p := range blocks(raw) {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// anthropicUser splits a user message's content into its text and the
// contents of its tool_result blocks.
func anthropicUser(raw json.RawMessage) (text string, results []string) {
	for _, b := range blocks(raw) {
		if b.Type == "tool_result" {
			results = append(results, contentText(b.Content))
		}
	}
	return contentText(raw), results
}

// anthropicToolUses are the tool calls of an assistant message's tool_use blocks.
func anthropicToolUses(raw json.RawMessage) []ragasToolCall {
	var calls []ragasToolCall
	for _, b := range blocks(raw) {
		if b.Type == "tool_use" {
			calls = append(calls, ragasToolCall{Name: b.Name, Args: ToolArgs(b.Input)})
		}
	}
	return calls
}

// geminiResponse is the text of a Gemini functionResponse: its "output" (or
// for a failure "error") string, else the response's JSON.
func geminiResponse(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "error"} {
			var s string
			if json.Unmarshal(m[k], &s) == nil {
				return s
			}
		}
	}
	return string(raw)
}

// ToolArgs returns a tool call's arguments as the JSON object Ragas' ToolCall
// takes (docs/api.md "Ragas export"): an object as it is; nothing, blanks or
// null as {}; any other JSON value v as {"arguments": v}; text that is not JSON
// as {"arguments": "<the text>"}.
func ToolArgs(raw json.RawMessage) json.RawMessage {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(t)) {
		if t[0] == '{' {
			return json.RawMessage(t)
		}
		return json.RawMessage(`{"arguments":` + t + `}`)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"arguments": string(raw)})
	return json.RawMessage(strings.TrimSpace(b.String()))
}

// citationMark is a citation character of LibreChat's format, written out as
// an escape (`\ue202`, as Relay's anchors are) or the private-use character
// itself: U+E200/U+E201 open and close a group, U+E202 starts an anchor,
// U+E203/U+E204 open and close a highlighted span, U+E206 is also used.
const citationMark = `(?:\\[uU][eE]20[0-46]|[\x{E200}-\x{E204}\x{E206}])`

// citationRun matches a run of citation markers with the blanks before it:
// anchors turn{N}{type}{index} (after a mark, a "cite" prefix or a word
// boundary), lone marks, and anchors in 【…】 brackets, including OpenAI's
// 【4:0†source】 form.
var citationRun = regexp.MustCompile(`[ \t]*(?:` +
	`(?:` + citationMark + `+(?:cite)?|\b(?:cite)?)turn\d+(?:search|image|news|video|ref|file)\d+` +
	`|` + citationMark +
	`|【[^】\n]*(?:turn\d+(?:search|image|news|video|ref|file)\d+|†)[^】\n]*】` +
	`)+`)

// StripCitations removes citation markers from a model's text (docs/api.md
// "Ragas export"): LibreChat's anchors (`\ue202turn0file0`, `turn0search1`,
// written out or as private-use characters), its group and highlight marks
// (the highlighted text stays), and bracketed anchors. Where a marker stood
// before punctuation or the end of a line, the blank before it goes too, so
// "inspected yearly \ue202turn0file0." becomes "inspected yearly.".
func StripCitations(s string) string {
	locs := citationRun.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, l := range locs {
		start, end := l[0], l[1]
		b.WriteString(s[last:start])
		blank := start < end && (s[start] == ' ' || s[start] == '\t')
		next, _ := utf8.DecodeRuneInString(s[end:])
		lineStart := b.Len() == 0 || strings.HasSuffix(b.String(), "\n")
		switch {
		case end == len(s) || next == '\n' || next == '\r':
		case unicode.IsPunct(next) && !strings.ContainsRune("([{«“‘\"'¿¡", next):
		case next == ' ' || next == '\t':
			if lineStart {
				// A marker opening a line takes the blank after it too.
				for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
					end++
				}
			}
		case blank && !lineStart:
			b.WriteByte(' ')
		}
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}
