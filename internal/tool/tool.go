// Package tool owns the shape every tool shares, built-in or from an MCP server:
// a name, a call with JSON arguments on behalf of a user, and a result. A result
// marked IsError is a failure the model should read and react to (bad arguments,
// a limit reached); a Go error from Call is an infrastructure failure that ends
// the call for reasons the model cannot fix.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Result is what a tool call gives back to the model.
type Result struct {
	// Text is what the model reads.
	Text string `json:"text"`
	// IsError marks a call that failed in a way the model should see, so that
	// it can correct its arguments or choose another way.
	IsError bool `json:"is_error,omitempty"`
}

// Text returns a successful result.
func Text(s string) Result { return Result{Text: s} }

// Errorf returns a failed result whose text is formatted as by fmt.Sprintf.
func Errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is something the agent loop can call for the model.
type Tool interface {
	// Name is the name the model calls the tool by.
	Name() string
	// Call runs the tool with the model's arguments (a JSON object) for the user
	// the run belongs to.
	Call(ctx context.Context, userID string, args json.RawMessage) (Result, error)
}
