package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/prompt"
)

// TestScheduledHandoffWithMCPEndToEnd: a schedule
// whose agent hands off to another agent that calls an MCP tool, with aimock
// as the model and server-everything as the tool, fired through the API. The
// run's conversation holds both agents' outputs and the tool call with its
// result, and {{current_date}} in the prompt and the instructions is the date
// in the schedule's time zone. Two zones, UTC+14 and UTC−12, are used: at any
// moment at least one of them is on another date than UTC.
func TestScheduledHandoffWithMCPEndToEnd(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"route me","hasToolResult":false},"response":{"content":"ROUTER-NOTE: this is for the specialist.","toolCalls":[{"name":"lc_transfer_to_specialist","arguments":"{\"context\":\"please check the sum of 2 and 3\"}"}]}},
 {"match":{"userMessage":"please check the sum","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"please check the sum","hasToolResult":true},"response":{"content":"SPECIALIST-ANSWER: the sum is 5."}}]}`)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
agents:
  - {id: router, provider: mock, model: m, instructions: "I route. Router date {{current_date}}.",
     edges: [{from: router, to: specialist, edgeType: handoff, prompt: "What should the specialist check?", promptKey: context}]}
  - {id: specialist, provider: mock, model: m, instructions: "I check. Specialist date {{current_date}}.", tools: [get-sum__mcp__everything]}
`, filepath.Join(dir, "data"), mock, everything))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var tools struct{ Data []struct{ Key string } }
	if code := s.call(t, testKey, "GET", "/api/mcp/servers/everything/tools", "", &tools); code != 200 || len(tools.Data) == 0 {
		t.Fatalf("server-everything's tools: %d %+v", code, tools)
	}

	differs := 0
	for _, zone := range []string{"Pacific/Kiritimati", "Etc/GMT+12"} {
		t.Run(zone, func(t *testing.T) {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(map[string]string{"agent_id": "router", "name": "Sum check", "cron": "0 7 * * *",
				"timezone": zone, "prompt": "route me: the check of {{current_date}}, please"})
			var sc struct{ ID string }
			if code := s.call(t, testKey, "POST", "/api/schedules", string(body), &sc); code != 201 {
				t.Fatalf("create: %d", code)
			}
			var f struct{ ID string }
			if code := s.call(t, testKey, "POST", "/api/schedules/"+sc.ID+"/run", "", &f); code != 202 {
				t.Fatalf("run now: %d", code)
			}
			type firing struct {
				ID, Status, Prompt, Error string
				RunID                     string    `json:"run_id"`
				ConversationID            string    `json:"conversation_id"`
				FireAt                    time.Time `json:"fire_at"`
			}
			var got firing
			waitFor(t, 30*time.Second, "the firing ended", func() bool {
				var runs struct{ Data []firing }
				s.call(t, testKey, "GET", "/api/schedules/"+sc.ID+"/runs", "", &runs)
				if len(runs.Data) == 1 && runs.Data[0].Status != "queued" && runs.Data[0].Status != "running" {
					got = runs.Data[0]
					return true
				}
				return false
			})
			if got.Status != "succeeded" {
				t.Fatalf("firing %+v", got)
			}
			date := prompt.ReplacePlaceholders("{{current_date}}", got.FireAt, loc, "")
			if date != prompt.ReplacePlaceholders("{{current_date}}", got.FireAt, time.UTC, "") {
				differs++
			}
			if want := "route me: the check of " + date + ", please"; got.Prompt != want {
				t.Errorf("prompt as sent %q, want %q", got.Prompt, want)
			}

			// The conversation: the rendered prompt, then one answer with both
			// agents' outputs and the specialist's tool call with its result.
			var th struct {
				Title    string
				Messages []struct {
					Role, Text string
					AgentID    string `json:"agent_id"`
					Parts      []struct {
						Type, Text string
						AgentID    string `json:"agent_id"`
						Tool       *struct {
							Name, Arguments, Result string
							IsError                 bool `json:"is_error"`
						}
					}
				}
			}
			if code := s.call(t, testKey, "GET", "/api/conversations/"+got.ConversationID, "", &th); code != 200 {
				t.Fatalf("conversation: %d", code)
			}
			if want := "Sum check — " + got.FireAt.In(loc).Format("2006-01-02 15:04 MST"); th.Title != want {
				t.Errorf("title %q, want %q", th.Title, want)
			}
			if len(th.Messages) != 2 || th.Messages[0].Role != "user" || th.Messages[0].Text != got.Prompt {
				t.Fatalf("messages %+v", th.Messages)
			}
			byAgent := map[string]string{}
			var call string
			for _, p := range th.Messages[1].Parts {
				switch {
				case p.Type == "text":
					byAgent[p.AgentID] += p.Text
				case p.Type == "tool_call" && p.Tool != nil && p.Tool.Name == "get-sum__mcp__everything":
					call = p.AgentID + " " + p.Tool.Arguments + " → " + p.Tool.Result
					if p.Tool.IsError {
						t.Errorf("tool call failed: %+v", p.Tool)
					}
				}
			}
			if !strings.Contains(byAgent["router"], "ROUTER-NOTE") || !strings.Contains(byAgent["specialist"], "SPECIALIST-ANSWER: the sum is 5.") {
				t.Errorf("outputs by agent %q; want the router's note and the specialist's answer", byAgent)
			}
			if !strings.HasPrefix(call, `specialist {"a":2,"b":3} → `) || !strings.Contains(call, "5") {
				t.Errorf("tool call %q; want the specialist's get-sum of 2 and 3 with its result", call)
			}

			// What the models were sent: each agent's system message with the
			// date of the schedule's zone, and the rendered prompt.
			var run struct {
				Requests []struct {
					AgentID string          `json:"agent_id"`
					Body    json.RawMessage `json:"body"`
				}
			}
			if code := s.call(t, testKey, "GET", "/api/runs/"+got.RunID, "", &run); code != 200 {
				t.Fatalf("run: %d", code)
			}
			systems := map[string]string{}
			sentPrompt := false
			for _, r := range run.Requests {
				var b struct {
					Messages []struct {
						Role    string `json:"role"`
						Content any    `json:"content"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(r.Body, &b); err != nil {
					t.Fatal(err)
				}
				for _, m := range b.Messages {
					switch {
					case m.Role == "system":
						systems[r.AgentID] = fmt.Sprint(m.Content)
					case m.Role == "user" && fmt.Sprint(m.Content) == got.Prompt:
						sentPrompt = true
					}
				}
			}
			if systems["router"] != "I route. Router date "+date+"." || systems["specialist"] != "I check. Specialist date "+date+"." {
				t.Errorf("system messages %q; want the date %s", systems, date)
			}
			if !sentPrompt {
				t.Errorf("no request sent the rendered prompt %q", got.Prompt)
			}
		})
	}
	if differs == 0 {
		t.Error("neither zone's date differed from UTC's: the test proved nothing about time zones")
	}
}
