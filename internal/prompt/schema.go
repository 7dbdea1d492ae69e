package prompt

import (
	"encoding/json"
	"errors"

	"github.com/relay-ai/relay/internal/llm"
)

// Schema is a tool's parameters written as JSON and checked once, so that
// every later build sends the bytes as they are without looking at them
// again. Make one with [NewSchema] when a tool is listed, not per request.
// The zero Schema is an object without properties.
type Schema struct {
	raw json.RawMessage
}

// NewSchema writes v as a Schema. A json.RawMessage (or a Schema) is kept as
// it is once found valid; any other value is written as encoding/json would
// write it, maps with sorted keys, but without HTML escaping.
func NewSchema(v any) (Schema, error) {
	switch v := v.(type) {
	case Schema:
		return v, nil
	case nil:
		return Schema{}, nil
	case json.RawMessage:
		if len(v) == 0 {
			return Schema{}, nil
		}
		if !json.Valid(v) {
			return Schema{}, errors.New("schema is not valid JSON")
		}
		return Schema{raw: v}, nil
	}
	b, err := llm.AppendJSONValue(make([]byte, 0, 256), v)
	if err != nil {
		return Schema{}, err
	}
	return Schema{raw: b}, nil
}

// trustedSchema wraps JSON that Relay wrote itself.
func trustedSchema(s string) Schema { return Schema{raw: json.RawMessage(s)} }

// JSON returns the schema's bytes; they must not be modified.
func (s Schema) JSON() json.RawMessage {
	if len(s.raw) == 0 {
		return json.RawMessage(llm.EmptyObjectSchema)
	}
	return s.raw
}

// MarshalJSON returns the schema's bytes.
func (s Schema) MarshalJSON() ([]byte, error) { return s.JSON(), nil }
