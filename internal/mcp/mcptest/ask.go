package mcptest

//lint:file-ignore SA1019 MCP roots and sampling are deprecated from protocol 2026-07-28 on, and Relay keeps them for the servers that use them (docs/mcp.md "Roots and sampling").

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// AskSchema is the requested schema of the ask tool's question: a required
// name, and a color with a default.
const AskSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},` +
	`"color":{"type":"string","enum":["red","green","blue"],"default":"green"}},"required":["name"]}`

// ClientTools are tools that send the client requests during a call: ask
// (elicitation/create with [AskSchema]; its result says the action and the
// content, "action=accept color=green name=Ann"), sample (sampling/createMessage
// with the call's "prompt" and "maxTokens"; its result is the model's text and
// the maxTokens the request carried) and roots (roots/list; its result lists
// the roots as "uri name" lines, or "no roots"). They are written as
// multi-round-trip tools (protocol 2026-07-28), which the sdk server turns into
// plain requests to a client of an earlier version.
func ClientTools() []Tool {
	obj := json.RawMessage(`{"type":"object"}`)
	return []Tool{
		{Tool: &sdk.Tool{Name: "ask", Description: "Asks the user who they are.", InputSchema: obj}, Handler: ask},
		{Tool: &sdk.Tool{Name: "sample", Description: "Asks the client's model to complete a prompt.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"},"maxTokens":{"type":"integer"}}}`)}, Handler: sample},
		{Tool: &sdk.Tool{Name: "roots", Description: "Lists the client's roots.", InputSchema: obj}, Handler: roots},
	}
}

func ask(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	resp, ok := req.Params.InputResponses["who"]
	if !ok {
		var schema map[string]any
		_ = json.Unmarshal([]byte(AskSchema), &schema)
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{
			"who": &sdk.ElicitParams{Message: "Who are you?", RequestedSchema: schema},
		}}, nil
	}
	r, ok := resp.(*sdk.ElicitResult)
	if !ok {
		return toolError("ask: unexpected answer %T", resp), nil
	}
	parts := []string{"action=" + r.Action}
	keys := make([]string, 0, len(r.Content))
	for k := range r.Content {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, r.Content[k]))
	}
	return text(strings.Join(parts, " ")), nil
}

func sample(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	resp, ok := req.Params.InputResponses["complete"]
	if !ok {
		var in struct {
			Prompt    string `json:"prompt"`
			MaxTokens int64  `json:"maxTokens"`
		}
		if err := args(req, &in); err != nil {
			return toolError("%v", err), nil
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{
			"complete": &sdk.CreateMessageParams{MaxTokens: in.MaxTokens,
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: in.Prompt}}}},
		}}, nil
	}
	var out []string
	switch r := resp.(type) {
	case *sdk.CreateMessageWithToolsResult:
		for _, c := range r.Content {
			if t, ok := c.(*sdk.TextContent); ok {
				out = append(out, t.Text)
			}
		}
		out = append(out, "model="+r.Model)
	case *sdk.CreateMessageResult:
		if t, ok := r.Content.(*sdk.TextContent); ok {
			out = append(out, t.Text)
		}
		out = append(out, "model="+r.Model)
	default:
		return toolError("sample: unexpected answer %T", resp), nil
	}
	return text(strings.Join(out, " ")), nil
}

func roots(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	resp, ok := req.Params.InputResponses["roots"]
	if !ok {
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"roots": &sdk.ListRootsParams{}}}, nil
	}
	r, ok := resp.(*sdk.ListRootsResult)
	if !ok {
		return toolError("roots: unexpected answer %T", resp), nil
	}
	if len(r.Roots) == 0 {
		return text("no roots"), nil
	}
	var lines []string
	for _, root := range r.Roots {
		lines = append(lines, root.URI+" "+root.Name)
	}
	return text(strings.Join(lines, "\n")), nil
}
