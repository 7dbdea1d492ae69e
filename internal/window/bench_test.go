package window_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/token"
	"github.com/relay-ai/relay/internal/window"
)

// BenchmarkConversation is the cost of counting and pruning, per turn, over a
// 100-turn conversation in which every turn calls a tool: each turn builds the
// request (a system prompt that changes with the time, the history, the new
// message), fits it as Prepare does, adds the tool call and its result, and
// fits it again as the agent's loop does before its second model call. The
// cache of message counts starts empty for each conversation. ns/turn is the
// figure that matters (the target: under 1 ms on 2 cores).
func BenchmarkConversation(b *testing.B) {
	for _, bc := range []struct {
		name   string
		budget int
	}{{"fits", 1 << 20}, {"prunes", 8000}} {
		b.Run(bc.name, func(b *testing.B) {
			const turns = 100
			tools := []llm.FunctionTool{{Type: "function", Function: llm.Function{Name: "web_search", Description: "Search the web for current information.",
				Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string","description":"The search query (3-6 keywords recommended)"}},"required":["query"]}`)}}}
			instructions := strings.Repeat("You answer questions about the plant's operations, citing the manual. ", 20)
			question := strings.Repeat("How does the cooling loop behave when the load changes quickly? ", 3)
			result := strings.Repeat("Result: the loop's pumps ramp within 30 seconds and hold the outlet at 290 °C. ", 12)
			reply := strings.Repeat("The cooling loop follows the load within half a minute. ", 6)
			warm := token.NewCounters(0)
			warm.For("gpt-4o").Text(reply) // the vocabulary is loaded once per process
			start, cpu := time.Now(), cpuTime()
			for b.Loop() {
				cs := token.NewCounters(0)
				var history []llm.Message
				for turn := range turns {
					f := window.New(window.Options{Counter: cs.For("gpt-4o"), Budget: window.Budget{Tokens: bc.budget, Source: window.SourceAgent}})
					msgs := make([]llm.Message, 0, len(history)+5)
					msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: fmt.Sprintf("Current date and time: 2026-11-25 14:%02d.\n\n%s", turn%60, instructions)})
					msgs = append(msgs, history...)
					user := llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("%d. %s", turn, question)}
					msgs = append(msgs, user)
					req := &llm.Request{Model: "gpt-4o", Messages: msgs, Tools: tools}
					if err := f.Fit(context.Background(), req); err != nil {
						b.Fatal(err)
					}
					id := fmt.Sprintf("call_%d", turn)
					call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Type: "function", Function: llm.FunctionCall{Name: "web_search", Arguments: fmt.Sprintf(`{"query":"cooling loop load %d"}`, turn)}}}}
					res := llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: fmt.Sprintf("%d. %s", turn, result)}
					req.Messages = append(req.Messages, call, res)
					if err := f.Fit(context.Background(), req); err != nil {
						b.Fatal(err)
					}
					history = append(history, user, call, res, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("%d. %s", turn, reply)})
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*turns), "ns/turn")
			// On a shared machine the wall clock counts the waits for a core;
			// the process's CPU time does not.
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N*turns), "cpu-ns/turn")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
