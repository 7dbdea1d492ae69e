package run

import (
	"encoding/json"

	"github.com/relay-ai/relay/internal/llm"
)

// encode is d's JSON, as encoding/json writes it without HTML escaping: the
// event streamed most, encoded by hand.
func (d MessageDelta) encode() json.RawMessage {
	return d.appendJSON(make([]byte, 0, len(d.AgentID)+len(d.Text)+32))
}

// appendJSON appends d as encoding/json writes it without HTML escaping, at a
// fraction of the cost: message.delta is the event a run emits most, one per
// piece of streamed text.
func (d MessageDelta) appendJSON(b []byte) []byte {
	b = append(b, `{"agent_id":`...)
	b = appendJSONString(b, d.AgentID)
	b = append(b, `,"text":`...)
	b = appendJSONString(b, d.Text)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string exactly as encoding/json does
// with SetEscapeHTML(false).
func appendJSONString(b []byte, s string) []byte { return llm.AppendJSONString(b, s) }
