package prompt_test

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
)

// FuzzBuild checks that Build never panics and that whenever it succeeds the
// body is valid JSON whose system message and tool names are what went in.
func FuzzBuild(f *testing.F) {
	f.Add("You are {{current_user}}. Today is {{CURRENT_DATE}}.", "John Doe", "chunk ]]> text", "report.pdf", "Landbouw & Natuur",
		"Cite.\n", "search", "Dutch", "shadcnui", "temperature", `{"type":"object","properties":{"q":{"type":"string"}}}`, `0.7`, int64(1764081045), 60)
	f.Add("", "", "", "", "", "", "", "", "", "", "", "", int64(0), 0)
	f.Add("{{{iso_datetime}}}{{", "\x00\xff", "]]]]>", "<file>", "a\u2028b", "\"", "weird.name", "日本語", "custom", "model", `[1,2,{"a":null}]`, `{"x":[true,false]}`, int64(-62135596800), -720)
	f.Add("{{current_datetime}}", "名前", "\ufeff", "\t", "s", "  ", "t", "", "default", "stop", `{"type":`, `1e400`, int64(253402300799), 840)
	f.Fuzz(func(t *testing.T, instructions, userName, chunk, filename, server, serverInstructions, toolName, lang, artifacts, paramKey, schema, param string, unix int64, offsetMinutes int) {
		var params any
		if err := json.Unmarshal([]byte(param), &params); err != nil {
			params = param
		}
		var schemaValue any = json.RawMessage(schema)
		if len(schema)%2 == 0 {
			// Also exercise the map writer with decoded schemas.
			var v any
			if json.Unmarshal([]byte(schema), &v) == nil {
				schemaValue = v
			}
		}
		file := prompt.File{ID: filename, Filename: filename, Type: "text/plain"}
		in := prompt.Input{
			Agent: prompt.Agent{
				Model:           toolName,
				Instructions:    instructions,
				Artifacts:       artifacts,
				ModelParameters: map[string]any{paramKey: params},
			},
			Tools: []prompt.Tool{
				{Name: prompt.FileSearch, Kind: prompt.ToolBuiltin},
				{Name: prompt.WebSearch, Kind: prompt.ToolBuiltin},
				{Name: toolName, Description: serverInstructions, Parameters: schemaValue, Kind: prompt.ToolMCP, Server: server},
				prompt.HandoffTool(toolName, chunk, paramKey, instructions),
			},
			Servers:        []prompt.Server{{Name: server, Instructions: serverInstructions}},
			AgentFiles:     []prompt.File{file},
			Attached:       []prompt.File{file, {Filename: chunk}},
			RAG:            &prompt.RAG{Files: []prompt.RAGFile{{File: file, Chunks: []string{chunk, instructions}}}},
			Memory:         []prompt.MemoryEntry{{Value: chunk, UpdatedAt: time.Unix(unix, 0)}, {Value: userName}},
			MemoryOn:       true,
			UserName:       userName,
			Now:            time.Unix(unix, 0),
			Location:       time.FixedZone("fuzz", (offsetMinutes%(24*60))*60),
			AnswerLanguage: lang,
			Messages:       []llm.Message{{Role: llm.RoleUser, Content: chunk, Name: userName}},
		}
		req, err := prompt.Build(in)
		if err != nil {
			return
		}
		body, err := req.MarshalJSON()
		if err != nil {
			t.Fatalf("Build succeeded but MarshalJSON failed: %v", err)
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON body: %q", body)
		}
		if _, err := json.Marshal(req); err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		var got struct {
			Messages []llm.Message `json:"messages"`
			Tools    []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("decoding the body: %v", err)
		}
		system := prompt.SystemMessage(in)
		if utf8.ValidString(system) && got.Messages[0].Content != system {
			t.Fatalf("system message does not survive the body:\n%q\n%q", got.Messages[0].Content, system)
		}
		if len(got.Tools) == 0 || got.Tools[0].Function.Name != prompt.FileSearch {
			t.Fatalf("tools = %+v", got.Tools)
		}
	})
}
