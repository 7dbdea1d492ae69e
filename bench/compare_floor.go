package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
)

// The floor of `bench compare`: the same model calls and MCP call as a run,
// made by a plain Go HTTP client with no agent engine — each request's JSON
// encoded, each streamed answer read and its chunks decoded, the tool called
// with one JSON-RPC request on an MCP session opened at start. No prompt is
// assembled, no tool schema checked, nothing stored. What a run costs there
// is what any engine must at least spend on this machine to talk to the same
// model and MCP server; the engines' rows are read against it.

// compareFloor is `bench compare-floor`: the floor as a side (see
// bench/compare_child.go).
func compareFloor() error {
	modelURL := flag.String("model", "", "the fake model's base `URL` (…/v1)")
	mcpURL := flag.String("mcp", "", "the MCP server's streamable HTTP `URL`")
	flag.Parse()
	f := &floor{
		model: strings.TrimSuffix(*modelURL, "/") + "/chat/completions",
		mcp:   *mcpURL,
		hc:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}},
	}
	ctx := context.Background()
	if err := f.initialize(ctx); err != nil {
		return fmt.Errorf("opening the MCP session: %w", err)
	}
	return serveBatches(childReady{Runtime: runtime.Version(), Engine: "net/http and encoding/json"}, f.run)
}

// floor makes runs by hand.
type floor struct {
	model, mcp string
	hc         *http.Client
	session    string
	ids        atomic.Int64
}

// The tools as the model is offered them, and the messages it is sent, in the
// shapes of OpenAI's chat completions API.
type (
	floorTool struct {
		Type     string       `json:"type"`
		Function floorToolDef `json:"function"`
	}
	floorToolDef struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	floorMessage struct {
		Role       string          `json:"role"`
		Content    *string         `json:"content"`
		ToolCalls  []floorToolCall `json:"tool_calls,omitempty"`
		ToolCallID string          `json:"tool_call_id,omitempty"`
	}
	floorToolCall struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	floorRequest struct {
		Model    string         `json:"model"`
		Messages []floorMessage `json:"messages"`
		Tools    []floorTool    `json:"tools"`
		Stream   bool           `json:"stream"`
	}
)

var (
	floorSum = floorTool{Type: "function", Function: floorToolDef{Name: "get-sum__mcp__bench", Description: "Returns the sum of two numbers",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"]}`)}}
	floorTransfer = floorTool{Type: "function", Function: floorToolDef{Name: "lc_transfer_to_specialist", Description: "Hand the conversation over to the agent specialist.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
)

// str returns a pointer to s, for a message's content.
func str(s string) *string { return &s }

// run makes one run of graph: for "one", the tool call and the answer of the
// calculator; for "handoff", the front desk's handoff first.
func (f *floor) run(ctx context.Context, graph string) (string, error) {
	question := floorMessage{Role: "user", Content: str(compareQuestion)}
	if graph == "handoff" {
		msg, err := f.complete(ctx, floorRequest{Messages: []floorMessage{{Role: "system", Content: str(frontDeskInstructions)}, question}, Tools: []floorTool{floorTransfer}})
		if err != nil {
			return "", err
		}
		if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != floorTransfer.Function.Name {
			return "", fmt.Errorf("the front desk did not hand off: %+v", msg)
		}
	}
	system := calcInstructions
	if graph == "handoff" {
		system = specialistInstructions
	}
	msgs := []floorMessage{{Role: "system", Content: str(system)}, question}
	msg, err := f.complete(ctx, floorRequest{Messages: msgs, Tools: []floorTool{floorSum}})
	if err != nil {
		return "", err
	}
	if len(msg.ToolCalls) != 1 {
		return "", fmt.Errorf("the model called %d tools, want 1", len(msg.ToolCalls))
	}
	call := msg.ToolCalls[0]
	result, err := f.callTool(ctx, "get-sum", json.RawMessage(call.Function.Arguments))
	if err != nil {
		return "", err
	}
	call.Type = "function"
	msgs = append(msgs, floorMessage{Role: "assistant", ToolCalls: []floorToolCall{call}},
		floorMessage{Role: "tool", Content: str(result), ToolCallID: call.ID})
	if msg, err = f.complete(ctx, floorRequest{Messages: msgs, Tools: []floorTool{floorSum}}); err != nil {
		return "", err
	}
	if msg.Content == nil {
		return "", errNoAnswer
	}
	return *msg.Content, nil
}

// complete sends req to the model, streaming, and returns the message its
// chunks make.
func (f *floor) complete(ctx context.Context, req floorRequest) (*floorMessage, error) {
	req.Model, req.Stream = "bench-model", true
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, "POST", f.model, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer sk-bench")
	resp, err := f.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("the model answered %s: %s", resp.Status, b)
	}
	msg := &floorMessage{Role: "assistant"}
	var content strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			continue // read on to the end, so that the connection is used again
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string          `json:"content"`
					ToolCalls []floorToolCall `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return nil, fmt.Errorf("a chunk of the model's answer: %w", err)
		}
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
			for _, tc := range c.Delta.ToolCalls {
				for len(msg.ToolCalls) <= tc.Index {
					msg.ToolCalls = append(msg.ToolCalls, floorToolCall{Index: len(msg.ToolCalls)})
				}
				t := &msg.ToolCalls[tc.Index]
				if tc.ID != "" {
					t.ID = tc.ID
				}
				if tc.Function.Name != "" {
					t.Function.Name = tc.Function.Name
				}
				t.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if content.Len() > 0 {
		msg.Content = str(content.String())
	}
	return msg, nil
}

// initialize opens the MCP session: initialize, then the initialized
// notification.
func (f *floor) initialize(ctx context.Context) error {
	_, err := f.rpc(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "relay-bench-floor", "version": "1.0.0"},
	}, true)
	if err != nil {
		return err
	}
	if f.session == "" {
		return errors.New("the server gave no session id")
	}
	_, err = f.rpc(ctx, "notifications/initialized", nil, false)
	return err
}

// callTool calls the MCP tool name with args and returns its text.
func (f *floor) callTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	res, err := f.rpc(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, true)
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	var out []string
	for _, c := range r.Content {
		if c.Type == "text" {
			out = append(out, c.Text)
		}
	}
	if r.IsError {
		return "", fmt.Errorf("%s failed: %s", name, strings.Join(out, "\n"))
	}
	return strings.Join(out, "\n"), nil
}

// rpc posts one JSON-RPC message to the MCP server and, for a request,
// returns its result, read from a JSON or an event-stream answer.
func (f *floor) rpc(ctx context.Context, method string, params any, request bool) (json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	var id int64
	if request {
		id = f.ids.Add(1)
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, "POST", f.mcp, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	if f.session != "" {
		hr.Header.Set("Mcp-Session-Id", f.session)
		hr.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := f.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %s: %s", method, resp.Status, b)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		f.session = s
	}
	if !request {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, nil
	}
	var answer struct {
		ID     int64           `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	decode := func(b []byte) (bool, error) {
		if err := json.Unmarshal(b, &answer); err != nil {
			return false, err
		}
		return answer.ID == id, nil
	}
	found := false
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Read to the stream's end, which comes after the answer, so that
		// the connection is used again.
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && !found {
				if found, err = decode(data); err != nil {
					return nil, err
				}
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if found, err = decode(b); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no answer", method)
	}
	if answer.Error != nil {
		return nil, fmt.Errorf("%s: %s", method, answer.Error.Message)
	}
	return answer.Result, nil
}
