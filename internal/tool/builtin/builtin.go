// Package builtin holds the tools that Relay provides itself rather than an MCP
// server: the memory tools set_memory and delete_memory, file_search and
// web_search (with its search providers and its guarded page fetching). Each
// one checks the model's arguments strictly and answers a problem the model can
// fix with a result marked IsError that says what to change.
package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/tool"
)

// decodeArgs reads a tool's JSON arguments into v (a pointer to a struct whose
// fields are pointers, so that missing ones stay nil), refusing unknown fields
// and trailing data. Its error says, for the model, what is wrong and what the
// tool takes; usage is a short description of the expected object.
func decodeArgs(args json.RawMessage, v any, usage string) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		return nil
	}
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("the arguments are not valid JSON (error at byte %d); send one JSON object: %s", syntax.Offset, usage)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the arguments are not valid JSON (they end too early); send one JSON object: %s", usage)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("%q must be a %s, not a JSON %s; send %s", typ.Field, jsonKind(typ.Type.Kind().String()), jsonValueKind(typ.Value), usage)
	case errors.As(err, &typ):
		return fmt.Errorf("the arguments must be a JSON object, not a JSON %s; send %s", jsonValueKind(typ.Value), usage)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return fmt.Errorf("unknown argument %s; send only %s", field, usage)
	}
	return fmt.Errorf("the arguments could not be read (%s); send %s", strings.TrimPrefix(err.Error(), "json: "), usage)
}

// jsonValueKind names the kind of JSON value that encoding/json reports in an
// UnmarshalTypeError ("bool", "number", …) the way JSON itself does.
func jsonValueKind(v string) string {
	if v == "bool" {
		return "boolean"
	}
	return v
}

// jsonKind names the JSON kind that a Go kind decodes from.
func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	}
	return "number"
}

// failure turns an error from a service into the result the model reads when it
// is one the model can act on (invalid input, a conflict such as a full memory,
// something not found), and returns any other error as the infrastructure
// failure it is.
func failure(err error) (tool.Result, error) {
	switch fault.KindOf(err) {
	case fault.Invalid, fault.Conflict, fault.NotFound:
		return tool.Result{Text: sentence(err.Error()), IsError: true}, nil
	}
	return tool.Result{}, err
}

// sentence starts s with a capital letter and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}
