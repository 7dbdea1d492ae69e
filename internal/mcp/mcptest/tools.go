package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// standardTools are the tools every test server has. The first five are named
// and shaped like the reference server's; their texts match it except where it
// puts a timestamp or its own logo.
func standardTools(stats *Stats) []Tool {
	return []Tool{
		{
			Tool: &sdk.Tool{
				Name:        "echo",
				Title:       "Echo Tool",
				Description: "Echoes back the input string",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]}`),
				Annotations: readOnly(),
			},
			Handler: echo,
		},
		{
			Tool: &sdk.Tool{
				Name:        "get-sum",
				Title:       "Get Sum Tool",
				Description: "Returns the sum of two numbers",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"]}`),
				Annotations: readOnly(),
			},
			Handler: getSum,
		},
		{
			Tool: &sdk.Tool{
				Name:        "get-tiny-image",
				Title:       "Get Tiny Image Tool",
				Description: "Returns a tiny PNG image between two texts",
				InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
				Annotations: readOnly(),
			},
			Handler: getTinyImage,
		},
		{
			Tool: &sdk.Tool{
				Name:        "trigger-long-running-operation",
				Title:       "Trigger Long Running Operation Tool",
				Description: "Runs for a while in steps, reporting progress after each step",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"duration":{"type":"number","default":10,"description":"Duration of the operation in seconds"},"steps":{"type":"number","default":5,"description":"Number of steps in the operation"}}}`),
				Annotations: readOnly(),
			},
			Handler: longRunning(stats),
		},
		{
			Tool: &sdk.Tool{
				Name:        "get-resource-reference",
				Title:       "Get Resource Reference Tool",
				Description: "Returns an embedded resource between two texts",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"resourceType":{"type":"string","enum":["Text","Blob"],"default":"Text"},"resourceId":{"type":"number","default":1,"description":"ID of the resource to return"}}}`),
				Annotations: readOnly(),
			},
			Handler: getResourceReference,
		},
		{
			Tool: &sdk.Tool{
				Name:        "whoami",
				Description: `Returns {"userId": the call's top-level params.userId, "header": the X-User HTTP header} as JSON text ("" when absent)`,
				InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
			},
			Handler: whoami,
		},
		{
			Tool: &sdk.Tool{
				Name:        "fail",
				Description: `Always fails: returns an error result with the text "it failed"`,
				InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
			},
			Handler: fail,
		},
		{
			Tool: &sdk.Tool{
				Name:        "sleep",
				Description: `Waits ms milliseconds, then returns "slept"; stops early when cancelled`,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"How long to wait, in milliseconds"}},"required":["ms"]}`),
			},
			Handler: sleep(stats),
		},
	}
}

func readOnly() *sdk.ToolAnnotations {
	f := false
	return &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
}

// text returns a result made of text parts.
func text(parts ...string) *sdk.CallToolResult {
	res := &sdk.CallToolResult{}
	for _, p := range parts {
		res.Content = append(res.Content, &sdk.TextContent{Text: p})
	}
	return res
}

// toolError is the result for a call the tool refuses, as the reference
// server reports a failed argument check: an error result, not a JSON-RPC error.
func toolError(format string, args ...any) *sdk.CallToolResult {
	res := text(fmt.Sprintf(format, args...))
	res.IsError = true
	return res
}

// args decodes a call's arguments into v; absent arguments leave v as it is.
func args(req *sdk.CallToolRequest, v any) error {
	raw := req.Params.Arguments
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("invalid arguments for %s: %v", req.Params.Name, err)
	}
	return nil
}

// number formats a number as JavaScript prints it, so that texts read like the
// reference server's (3, not 3.000000; 0.5, not 5e-01).
func number(f float64) string {
	if math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func echo(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Message *string `json:"message"`
	}
	if err := args(req, &in); err != nil {
		return toolError("%v", err), nil
	}
	if in.Message == nil {
		return toolError("invalid arguments for echo: message is required"), nil
	}
	return text("Echo: " + *in.Message), nil
}

func getSum(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		A *float64 `json:"a"`
		B *float64 `json:"b"`
	}
	if err := args(req, &in); err != nil {
		return toolError("%v", err), nil
	}
	if in.A == nil || in.B == nil {
		return toolError("invalid arguments for get-sum: a and b are required"), nil
	}
	return text(fmt.Sprintf("The sum of %s and %s is %s.", number(*in.A), number(*in.B), number(*in.A+*in.B))), nil
}

// TinyPNG returns the image the get-tiny-image tool sends: a 4×4 PNG.
func TinyPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for y := range 4 {
		for x := range 4 {
			c := color.NRGBA{R: 0x20, G: 0x60, B: 0xc0, A: 0xff}
			if (x+y)%2 == 1 {
				c = color.NRGBA{R: 0xf0, G: 0xf0, B: 0xf0, A: 0xff}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(fmt.Sprintf("mcptest: encoding the tiny PNG: %v", err)) // cannot fail on a bytes.Buffer
	}
	return buf.Bytes()
}

func getTinyImage(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{
		&sdk.TextContent{Text: "Here's the image you requested:"},
		&sdk.ImageContent{Data: TinyPNG(), MIMEType: "image/png"},
		&sdk.TextContent{Text: "The image above is a tiny test image."},
	}}, nil
}

func longRunning(stats *Stats) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		in := struct {
			Duration float64 `json:"duration"`
			Steps    float64 `json:"steps"`
		}{Duration: 10, Steps: 5}
		if err := args(req, &in); err != nil {
			return toolError("%v", err), nil
		}
		steps := int(in.Steps)
		step := time.Duration(0)
		if steps > 0 {
			step = time.Duration(in.Duration / float64(steps) * float64(time.Second))
		}
		token := req.Params.GetProgressToken()
		for i := 1; i <= steps; i++ {
			if err := wait(ctx, step); err != nil {
				stats.update(func(s *Snapshot) { s.Interrupted++ })
				return nil, err
			}
			if token != nil {
				err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      float64(i),
					Total:         in.Steps,
				})
				if err != nil {
					return nil, fmt.Errorf("sending progress: %w", err)
				}
			}
		}
		return text(fmt.Sprintf("Long running operation completed. Duration: %s seconds, Steps: %s.", number(in.Duration), number(in.Steps))), nil
	}
}

// wait waits d or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func getResourceReference(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	in := struct {
		ResourceType string  `json:"resourceType"`
		ResourceID   float64 `json:"resourceId"`
	}{ResourceType: "Text", ResourceID: 1}
	if err := args(req, &in); err != nil {
		return toolError("%v", err), nil
	}
	id := in.ResourceID
	if id < 1 || id != math.Trunc(id) || math.IsInf(id, 0) {
		return toolError("Invalid resourceId: %s. Must be a finite positive integer.", number(id)), nil
	}
	var res *sdk.ResourceContents
	switch in.ResourceType {
	case "Text":
		res = &sdk.ResourceContents{
			URI:      fmt.Sprintf("demo://resource/dynamic/text/%s", number(id)),
			MIMEType: "text/plain",
			Text:     fmt.Sprintf("Resource %s: This is a plaintext resource", number(id)),
		}
	case "Blob":
		res = &sdk.ResourceContents{
			URI:      fmt.Sprintf("demo://resource/dynamic/blob/%s", number(id)),
			MIMEType: "text/plain",
			Blob:     fmt.Appendf(nil, "Resource %s: This is a base64 blob", number(id)),
		}
	default:
		return toolError("Invalid resourceType: %s. Must be Text or Blob.", in.ResourceType), nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{
		&sdk.TextContent{Text: fmt.Sprintf("Returning resource reference for Resource %s:", number(id))},
		&sdk.EmbeddedResource{Resource: res},
		&sdk.TextContent{Text: "You can access this resource using the URI: " + res.URI},
	}}, nil
}

// Whoami is what the whoami tool returns, as JSON.
type Whoami struct {
	// UserID is the top-level "userId" of the call's params.
	UserID string `json:"userId"`
	// Header is the HTTP header X-User that came with the call.
	Header string `json:"header"`
}

func whoami(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	b, err := json.Marshal(Whoami{UserID: UserID(req), Header: XUser(req)})
	if err != nil {
		return nil, err
	}
	return text(string(b)), nil
}

func fail(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return toolError("it failed"), nil
}

func sleep(stats *Stats) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct {
			MS *float64 `json:"ms"`
		}
		if err := args(req, &in); err != nil {
			return toolError("%v", err), nil
		}
		if in.MS == nil || *in.MS < 0 {
			return toolError("invalid arguments for sleep: ms must be a number of milliseconds, at least 0"), nil
		}
		if err := wait(ctx, time.Duration(*in.MS*float64(time.Millisecond))); err != nil {
			stats.update(func(s *Snapshot) { s.Interrupted++ })
			return nil, err
		}
		return text("slept"), nil
	}
}
