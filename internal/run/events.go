package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/llm"
)

// Kind names a kind of run event: the SSE event name and the type stored
// with the event (docs/api.md "POST /api/chat", its table of events).
type Kind string

// The kinds of run events (docs/api.md "POST /api/chat", its table of
// events). Each has one payload type below; Decode maps a stored event back
// to it. A new kind gets a constant here, a payload type, a case in Decode, a
// golden file in testdata/events and a row in that table.
const (
	EventRunStarted           Kind = "run.started"
	EventWarning              Kind = "run.warning"
	EventMessageDelta         Kind = "message.delta"
	EventMessageImage         Kind = "message.image"
	EventToolStarted          Kind = "tool.started"
	EventToolFinished         Kind = "tool.finished"
	EventUsage                Kind = "usage"
	EventElicitationRequested Kind = "elicitation.requested"
	EventElicitationAnswered  Kind = "elicitation.answered"
	EventError                Kind = "error"
	EventRunFinished          Kind = "run.finished"
)

// Kinds lists every kind of run event, in the order a run may emit them.
var Kinds = []Kind{EventRunStarted, EventWarning, EventMessageDelta, EventMessageImage, EventToolStarted, EventToolFinished,
	EventUsage, EventElicitationRequested, EventElicitationAnswered, EventError, EventRunFinished}

// Payload is what one event says: one struct per Kind, a closed set (only
// this package's types have the kind method). The fields of each are in the
// order their JSON has always been written in, so that an event encodes to
// the same bytes it was stored and streamed as before it had a type.
type Payload interface {
	kind() Kind
}

// KindOf is the kind of event that says p.
func KindOf(p Payload) Kind { return p.kind() }

// RunStarted is the first event of every run.
type RunStarted struct {
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id"`
	RunID          string `json:"run_id"`
	UserMessageID  string `json:"user_message_id"`
}

// Warning says something about the run's graph was dropped or skipped.
type Warning struct {
	Message string `json:"message"`
}

// MessageDelta is a piece of an agent's answer, as the model streamed it: the
// event a run emits most (its encoding is written by hand, jsontext.go).
type MessageDelta struct {
	AgentID string `json:"agent_id"`
	Text    string `json:"text"`
}

// MessageImage is an image a model produced; Data is base64.
type MessageImage struct {
	AgentID  string `json:"agent_id"`
	Data     string `json:"data"`
	MIMEType string `json:"mime_type"`
}

// ToolStarted is a tool call about to run. A handoff to another agent is a
// tool call too (its name says so).
type ToolStarted struct {
	AgentID   string `json:"agent_id"`
	Arguments string `json:"arguments"`
	ID        string `json:"id"`
	Name      string `json:"name"`
}

// ToolFinished is a tool call's result.
type ToolFinished struct {
	AgentID    string `json:"agent_id"`
	DurationMS int64  `json:"duration_ms"`
	ID         string `json:"id"`
	IsError    bool   `json:"is_error"`
	Result     string `json:"result"`
}

// TurnUsage is the tokens of one model turn of an agent.
type TurnUsage struct {
	AgentID string    `json:"agent_id"`
	Usage   llm.Usage `json:"usage"`
}

// ElicitationRequested is a question an MCP server asks the run's user during
// a tool call (docs/api.md "Questions").
type ElicitationRequested struct {
	ID              string          `json:"id"`
	AgentID         string          `json:"agent_id"`
	Server          string          `json:"server"`
	ToolCallID      string          `json:"tool_call_id"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ExpiresAt       time.Time       `json:"expires_at"`
}

// ElicitationSettled ends a question: answered, or ended by Relay. Reason says why Relay ended a question
// nobody answered: "timeout" or "cancelled".
type ElicitationSettled struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
}

// RunError says why a run failed, naming the agent that failed; it comes
// right before the run.finished of a failed run.
type RunError struct {
	AgentID string `json:"agent_id"`
	Message string `json:"message"`
}

// RunFinished is the last event of every run: its final state and its saved
// answer (nil when there is none).
type RunFinished struct {
	Error   string    `json:"error"`
	Message *Message  `json:"message"`
	Status  Status    `json:"status"`
	Usage   llm.Usage `json:"usage"`
	// FinishReason is why the run's last model answer ended, as the
	// provider said it (llm.Turn.FinishReason: stop, length, tool_calls,
	// content_filter); absent when no model answered.
	FinishReason string `json:"finish_reason,omitempty"`
}

func (RunStarted) kind() Kind           { return EventRunStarted }
func (Warning) kind() Kind              { return EventWarning }
func (MessageDelta) kind() Kind         { return EventMessageDelta }
func (MessageImage) kind() Kind         { return EventMessageImage }
func (ToolStarted) kind() Kind          { return EventToolStarted }
func (ToolFinished) kind() Kind         { return EventToolFinished }
func (TurnUsage) kind() Kind            { return EventUsage }
func (ElicitationRequested) kind() Kind { return EventElicitationRequested }
func (ElicitationSettled) kind() Kind   { return EventElicitationAnswered }
func (RunError) kind() Kind             { return EventError }
func (RunFinished) kind() Kind          { return EventRunFinished }

// Event is one event of a run as it is stored and streamed: Seq orders a
// run's events from 1 and is the SSE id, Type its kind and the SSE event
// name, Data its payload's JSON (Encode) and the SSE data.
type Event struct {
	RunID     string          `json:"run_id"`
	Seq       int64           `json:"seq"`
	Type      Kind            `json:"type"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
	// made is the payload of a run.finished event made in this process, which
	// its readers here (the answer of POST /v1/chat/completions) need whole:
	// kept so that they do not decode what was just encoded. Nil for other
	// events and for events read back.
	made Payload
}

// eventOf is the event of run runID numbered seq, of kind k, saying data.
func eventOf(runID string, seq int64, k Kind, data json.RawMessage) Event {
	return Event{RunID: runID, Seq: seq, Type: k, Data: data, CreatedAt: time.Now().UTC()}
}

// newEvent is the event of run runID numbered seq that says p.
func newEvent(runID string, seq int64, p Payload) Event {
	e := eventOf(runID, seq, p.kind(), Encode(p))
	if f, ok := p.(RunFinished); ok {
		e.made = f
	}
	return e
}

// Equal reports whether e and o are the same event: the same run, seq, kind,
// data and time.
func (e Event) Equal(o Event) bool {
	return e.RunID == o.RunID && e.Seq == o.Seq && e.Type == o.Type && bytes.Equal(e.Data, o.Data) && e.CreatedAt.Equal(o.CreatedAt)
}

// Payload returns what the event says, as the type of its kind: its Data
// decoded (Decode). For a run.finished event made in this process it is the
// payload the event was made from, shared with its other readers (read it,
// never change it), which also holds what its JSON leaves out (the Contexts
// of its tool records).
func (e Event) Payload() (Payload, error) {
	if e.made != nil {
		return e.made, nil
	}
	return Decode(e.Type, e.Data)
}

// Encode is the JSON of an event's payload, as it is stored and streamed:
// texts as the model wrote them (no HTML escaping).
func Encode(p Payload) json.RawMessage {
	if d, ok := p.(MessageDelta); ok {
		return d.encode()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return []byte(`{}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Decode reads the data of an event of kind k, as any version of Relay
// stored it, into the payload type of its kind. An unknown kind is an error.
func Decode(k Kind, data []byte) (Payload, error) {
	var (
		p   Payload
		err error
	)
	switch k {
	case EventRunStarted:
		p, err = decodeAs[RunStarted](data)
	case EventWarning:
		p, err = decodeAs[Warning](data)
	case EventMessageDelta:
		p, err = decodeAs[MessageDelta](data)
	case EventMessageImage:
		p, err = decodeAs[MessageImage](data)
	case EventToolStarted:
		p, err = decodeAs[ToolStarted](data)
	case EventToolFinished:
		p, err = decodeAs[ToolFinished](data)
	case EventUsage:
		p, err = decodeAs[TurnUsage](data)
	case EventElicitationRequested:
		p, err = decodeAs[ElicitationRequested](data)
	case EventElicitationAnswered:
		p, err = decodeAs[ElicitationSettled](data)
	case EventError:
		p, err = decodeAs[RunError](data)
	case EventRunFinished:
		p, err = decodeAs[RunFinished](data)
	default:
		return nil, fmt.Errorf("unknown run event kind %q", k)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding a %s event: %w", k, err)
	}
	return p, nil
}

func decodeAs[T Payload](data []byte) (Payload, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}
