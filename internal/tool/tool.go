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
	// Sources are what the result was drawn from (passages of files, web
	// pages), saved with the answer so that its citations can be shown.
	Sources []Source `json:"sources,omitempty"`
	// Contexts are the passages the result is made of, in order, without the
	// headers that present them to the model (file_search's passages, an MCP
	// result's text parts): the retrieved contexts of a Ragas export
	// (docs/api.md). Empty means the result is one passage, its Text.
	Contexts []string `json:"-"`
}

// SourceKind says where a source comes from.
type SourceKind string

// The kinds of source.
const (
	SourceFile SourceKind = "file" // a passage of an uploaded file
	SourceWeb  SourceKind = "web"  // a web search result or fetched page
)

// Source is one thing a tool result was drawn from.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Anchor is the citation marker the model was given for it, such as
	// "\ue202turn0file0" (with the private-use character itself).
	Anchor string `json:"anchor,omitempty"`
	// Title is a web page's title.
	Title string `json:"title,omitempty"`
	// URL is a web page's address.
	URL string `json:"url,omitempty"`
	// Snippet is a short excerpt of what was found.
	Snippet string `json:"snippet,omitempty"`
	// FileID and FileName name a file; Page is where the passage starts.
	FileID   string `json:"file_id,omitempty"`
	FileName string `json:"file_name,omitempty"`
	Page     int    `json:"page,omitempty"`
	// Relevance is the passage's score from 0 to 1, when the tool ranks.
	Relevance float64 `json:"relevance,omitempty"`
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
