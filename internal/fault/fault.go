// Package fault classifies errors once, so that every layer can say what kind of
// failure happened (not found, invalid input, conflict, …) and the HTTP layer can
// map that kind to a status in a single place. An Error carries a message that is
// safe to show to a client; anything else is treated as an internal failure whose
// details stay in the logs.
package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Kind is the class of a failure. Its string form is the `code` of a JSON error.
type Kind string

// The kinds of failure Relay distinguishes.
const (
	Internal     Kind = "internal"
	Invalid      Kind = "invalid"
	NotFound     Kind = "not_found"
	Conflict     Kind = "conflict"
	Unauthorized Kind = "unauthorized"
	Forbidden    Kind = "forbidden"
	TooLarge     Kind = "too_large"
	Unavailable  Kind = "unavailable"
	// RateLimited is a client sending requests faster than its API key or
	// address may; QuotaExceeded is a user over a per-user quota. Both are
	// answered 429 with Retry-After (docs/api.md "Limits").
	RateLimited   Kind = "rate_limited"
	QuotaExceeded Kind = "quota_exceeded"
)

// FieldError names one invalid field of an input and says what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a classified failure with a client-safe message.
type Error struct {
	Kind    Kind
	Message string
	Fields  []FieldError
	Err     error // the cause, for logs and errors.Is; never shown to a client
	// RetryAfter, when positive, is how long the client should wait before
	// trying again (the Retry-After header of a 429 or 503).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	msg := e.Message
	if len(e.Fields) > 0 {
		parts := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			parts[i] = f.Field + ": " + f.Message
		}
		if msg != "" {
			msg += ": "
		}
		msg += strings.Join(parts, "; ")
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error of the given kind with a formatted message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of the given kind whose cause is err.
func Wrap(kind Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
}

// Limited returns a RateLimited or QuotaExceeded error saying which limit
// was reached and when to try again.
func Limited(kind Kind, retryAfter time.Duration, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), RetryAfter: retryAfter}
}

// RetryAfter returns the RetryAfter of the first *Error in err's chain that has one.
func RetryAfter(err error) time.Duration {
	for err != nil {
		if e, ok := err.(*Error); ok && e.RetryAfter > 0 {
			return e.RetryAfter
		}
		err = errors.Unwrap(err)
	}
	return 0
}

// KindOf returns the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err is classified as kind.
func Is(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }

// Fields collects field errors during validation; Err turns them into one Invalid error.
type Fields []FieldError

// Add records a problem with a field.
func (fs *Fields) Add(field, format string, args ...any) {
	*fs = append(*fs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns nil when no field was added, else an Invalid error listing the fields in the order they were added.
func (fs Fields) Err(message string) error {
	if len(fs) == 0 {
		return nil
	}
	return &Error{Kind: Invalid, Message: message, Fields: append([]FieldError(nil), fs...)}
}

// FromJSON classifies an error from decoding a JSON request body (with unknown
// fields disallowed) as Invalid, naming the offending field where there is one.
// Errors that are already classified pass through unchanged.
func FromJSON(err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &syntax):
		return Wrap(Invalid, err, "malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		field := jsonField(typ.Field)
		if field == "" {
			return New(Invalid, "request body must be a JSON %s", jsonKind(typ.Type.Kind().String()))
		}
		return &Error{Kind: Invalid, Message: "invalid request body", Fields: []FieldError{{Field: field, Message: "expected " + jsonKind(typ.Type.Kind().String()) + ", got " + typ.Value}}}
	case errors.Is(err, io.EOF):
		return New(Invalid, "request body is empty; expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return New(Invalid, "malformed JSON: unexpected end of body")
	case strings.HasPrefix(msg, "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return &Error{Kind: Invalid, Message: "invalid request body", Fields: []FieldError{{Field: field, Message: "unknown field"}}}
	}
	// Errors returned by a type's own UnmarshalJSON carry their message but not the field.
	return Wrap(Invalid, nil, "invalid request body: %s", strings.TrimPrefix(msg, "json: "))
}

// jsonField drops the names of embedded Go structs from a decoding error's field
// path ("Spec.tools" → "tools"): Relay's JSON names all start in lower case.
func jsonField(path string) string {
	parts := strings.Split(path, ".")
	for len(parts) > 1 && parts[0] != "" && parts[0][0] >= 'A' && parts[0][0] <= 'Z' {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return goKind
}
