package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// chunk is one data event of a chat-completions stream, or (with message
// instead of delta) a whole non-streamed answer.
type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   *llm.Usage      `json:"usage"`
	Error   json.RawMessage `json:"error"`

	// room holds what decodeChunk's common case points to: the first
	// choice, its delta and its first tool call, so that a chunk decoded
	// into again for every data event of a stream allocates none of them.
	// encoding/json does not see it (unexported).
	room struct {
		choice   [1]choice
		delta    delta
		toolCall [1]toolCallDelta
		index    int
	}
}

// choice is one choice of a chunk: a piece of it (Delta) or, in a whole
// answer, all of it (Message).
type choice struct {
	Index        int     `json:"index"`
	Delta        *delta  `json:"delta"`
	Message      *delta  `json:"message"`
	FinishReason *string `json:"finish_reason"`
	// ContentFilterResults is Azure's verdict per category, read when the
	// answer ends with content_filter.
	ContentFilterResults json.RawMessage `json:"content_filter_results"`
}

type delta struct {
	Content   content         `json:"content"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
	// Refusal is the model's reason for not answering, which OpenAI sends
	// in place of the content.
	Refusal string `json:"refusal"`
}

// content is a message's text: a string, null, or an array of content parts
// whose text parts are joined.
type content string

func (c *content) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var s strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				s.WriteString(p.Text)
			}
		}
		*c = content(s.String())
		return nil
	}
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s != nil {
		*c = content(*s)
	}
	return nil
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// assembler builds a Turn from the pieces of one answer and passes each
// piece on as an event: the provider.Decoder of a chat-completions answer,
// streamed or whole.
type assembler struct {
	provider.Output
	turn *llm.Turn
	// c and model classify an error the provider sends inside its answer.
	c     *Client
	model string
	// chunk is what each data event is decoded into.
	chunk chunk

	text   strings.Builder
	calls  []llm.ToolCall
	args   []*strings.Builder
	index  map[int]int // the provider's tool call index → position in calls
	finish string
	usage  *llm.Usage
	// refusal is the model's refusal to answer, when it gave one.
	refusal strings.Builder
	// filtered are the categories for which the answer was filtered.
	filtered []string
}

// errBadChunk says that a data event was not the JSON of a chunk.
var errBadChunk = errors.New("malformed data in the answer stream")

// Event takes in one event of a server-sent event stream: a chunk, or
// [DONE], which completes the answer. Only the data of the events counts:
// their names and ids are ignored. A chunk that is not JSON is a failure to
// read the answer, and one holding an error is that error.
func (a *assembler) Event(ev sse.Event) (bool, error) {
	if len(bytes.Trim(ev.Data, "\n")) == 0 {
		return false, nil
	}
	d := bytes.TrimSpace(ev.Data)
	if string(d) == "[DONE]" {
		a.complete()
		return true, nil
	}
	// One chunk for every data event: add keeps nothing of it.
	c := &a.chunk
	if err := decodeChunk(d, c); err != nil {
		return false, fmt.Errorf("%w: %v", errBadChunk, err)
	}
	if e := a.add(c); e != nil {
		return false, a.failed(e)
	}
	return false, nil
}

// End completes the answer of a stream that ended without [DONE], cleanly
// or not, once it had its finish reason: only the end of the stream was lost.
func (a *assembler) End(err error) error {
	if a.finish != "" {
		a.complete()
		return nil
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maxAnswer bounds a non-streamed answer.
const maxAnswer = 64 << 20

// JSON reads a non-streamed answer, as one piece.
func (a *assembler) JSON(r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, maxAnswer))
	if err != nil {
		return err
	}
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%w: %v", errBadChunk, err)
	}
	if e := a.add(&c); e != nil {
		return a.failed(e)
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("%w: an answer without choices", errBadChunk)
	}
	a.complete()
	return nil
}

// failed is the error for an error the provider sent inside its answer. It
// is retried unless part of the answer was passed on, or the error says
// that sending again cannot help; it is not a cut stream, since the
// provider said what went wrong.
func (a *assembler) failed(ae *apiErrorChunk) error {
	b, status := ae.body()
	ref := a.c.classify(status, nil, b, a.model)
	if status == 0 && ref.err.Kind == llm.ErrBadRequest {
		ref.err.Kind = llm.ErrUnavailable
		ref.err.Message = strings.Replace(ref.err.Message, "the provider rejected the request", "the provider failed while answering", 1)
	}
	return &retry.Override{Err: ref.err, Final: a.Shown() || ref.final}
}

// add takes in one chunk. A chunk holding an error returns it.
func (a *assembler) add(c *chunk) *apiErrorChunk {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return &apiErrorChunk{raw: c.Error}
	}
	if c.Usage != nil {
		u := *c.Usage
		a.usage = &u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // Relay asks for one choice
		}
		d := ch.Delta
		if d == nil {
			d = ch.Message
		}
		if d != nil {
			if d.Content != "" {
				a.text.WriteString(string(d.Content))
				a.Send(llm.Event{Kind: llm.EventText, Text: string(d.Content)})
			}
			for i := range d.ToolCalls {
				a.addToolCall(&d.ToolCalls[i])
			}
			a.refusal.WriteString(d.Refusal)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
			if a.finish == llm.FinishFiltered {
				a.filtered = filteredCategories(ch.ContentFilterResults)
			}
		}
	}
	return nil
}

// addToolCall takes in a piece of a tool call. Pieces are matched to calls by
// their index, and within an index by their id: Ollama and LiteLLM's
// ollama_chat send every call of a parallel batch with index 0, each whole and
// with its own id, so a piece whose id differs from its index's call starts a
// new call, and the index then means that call. A piece without an id
// continues the latest call of its index. A provider that sends no index
// starts a new call with each new id and continues the last call otherwise.
func (a *assembler) addToolCall(d *toolCallDelta) {
	pos := -1
	switch {
	case d.Index != nil:
		if p, ok := a.index[*d.Index]; ok && (d.ID == "" || a.calls[p].ID == "" || d.ID == a.calls[p].ID) {
			pos = p
		}
	case len(a.calls) > 0 && (d.ID == "" || d.ID == a.calls[len(a.calls)-1].ID):
		pos = len(a.calls) - 1
	}
	if pos < 0 {
		pos = len(a.calls)
		a.calls = append(a.calls, llm.ToolCall{Type: "function"})
		a.args = append(a.args, new(strings.Builder))
		if d.Index != nil {
			if a.index == nil {
				a.index = map[int]int{}
			}
			a.index[*d.Index] = pos
		}
	}
	call := &a.calls[pos]
	ev := llm.ToolCallDelta{Index: pos, ArgumentsDelta: d.Function.Arguments}
	if d.ID != "" && call.ID == "" {
		call.ID, ev.ID = d.ID, d.ID
	}
	// Some providers repeat the name in every piece.
	if n := d.Function.Name; n != "" && n != call.Function.Name {
		call.Function.Name += n
		ev.Name = n
	}
	a.args[pos].WriteString(d.Function.Arguments)
	if ev.ID != "" || ev.Name != "" || ev.ArgumentsDelta != "" {
		a.Send(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: ev})
	}
}

// complete fills the turn with the whole answer and passes on the events
// that only a whole answer has.
func (a *assembler) complete() {
	a.fill(true)
	if a.usage != nil {
		a.Send(llm.Event{Kind: llm.EventUsage, Usage: *a.usage})
	}
}

// Partial fills the turn with the text that arrived, and no tool calls,
// since the arguments of its calls may be cut.
func (a *assembler) Partial() {
	a.fill(false)
}

// fill fills the turn with the answer. A complete turn has its tool calls,
// each with arguments ("{}" when the model gave none); a partial one has its
// text only.
func (a *assembler) fill(complete bool) {
	t := a.turn
	t.Text = a.text.String()
	t.ToolCalls, t.FinishReason, t.Usage = nil, "", llm.Usage{}
	if !complete {
		return
	}
	for i := range a.calls {
		c := a.calls[i]
		c.Function.Arguments = a.args[i].String()
		if strings.TrimSpace(c.Function.Arguments) == "" {
			c.Function.Arguments = "{}"
		}
		t.ToolCalls = append(t.ToolCalls, c)
	}
	t.FinishReason = a.finish
	if len(t.ToolCalls) > 0 && (t.FinishReason == "" || t.FinishReason == llm.FinishStop) {
		t.FinishReason = llm.FinishToolCalls
	}
	if t.FinishReason == "" {
		t.FinishReason = llm.FinishStop
	}
	if a.usage != nil {
		t.Usage = *a.usage
	}
}

// filteredCategories are the categories that Azure's content_filter_results
// say were filtered ({"violence":{"filtered":true,"severity":"medium"}, …}),
// sorted. Entries of other shapes are passed over.
func filteredCategories(raw json.RawMessage) []string {
	var results map[string]json.RawMessage
	if json.Unmarshal(raw, &results) != nil {
		return nil
	}
	var out []string
	for name, r := range results {
		var v struct {
			Filtered bool `json:"filtered"`
		}
		if json.Unmarshal(r, &v) == nil && v.Filtered {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Withheld is the error for a complete answer with nothing in it because the
// provider filtered it or the model refused: no text and no tool calls. An
// answer that has something stands, filtered or not.
func (a *assembler) Withheld() *llm.Error {
	t := a.turn
	if t.Text != "" || len(t.ToolCalls) > 0 {
		return nil
	}
	if r := strings.TrimSpace(a.refusal.String()); r != "" {
		return &llm.Error{Kind: llm.ErrFiltered, Message: "the model refused to answer: " + r}
	}
	if t.FinishReason != llm.FinishFiltered {
		return nil
	}
	why := llm.FinishFiltered
	if len(a.filtered) > 0 {
		why += ": " + strings.Join(a.filtered, ", ")
	}
	return &llm.Error{Kind: llm.ErrFiltered, Message: "the provider filtered the answer (" + why + ")"}
}

// apiErrorChunk is an error a provider sent inside a stream or a 200 answer.
type apiErrorChunk struct {
	raw json.RawMessage
}

func (e *apiErrorChunk) Error() string { return "the provider sent an error" }

// body returns the error as an error answer's body, and the HTTP status the
// provider gave in its code, or 0.
func (e *apiErrorChunk) body() ([]byte, int) {
	b, _ := json.Marshal(map[string]json.RawMessage{"error": e.raw})
	var code struct {
		Code json.RawMessage `json:"code"`
	}
	_ = json.Unmarshal(e.raw, &code)
	if n, err := strconv.Atoi(scalar(code.Code)); err == nil && n >= 400 && n <= 599 {
		return b, n
	}
	return b, 0
}
