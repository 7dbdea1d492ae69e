package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/file/extract/extracttest"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// upload posts data as the multipart field "file" named name and returns the
// file's id.
func (s *server) upload(t *testing.T, name string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", s.base+"/api/files", &body)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload %s: %d %s", name, resp.StatusCode, b)
	}
	var f struct{ ID string }
	if err := json.Unmarshal(b, &f); err != nil || f.ID == "" {
		t.Fatalf("upload %s: %s", name, b)
	}
	return f.ID
}

// ready waits until the file is ingested and returns its record.
func (s *server) ready(t *testing.T, id string) map[string]any {
	t.Helper()
	var f map[string]any
	waitFor(t, 30*time.Second, "file "+id+" ready", func() bool {
		f = nil
		if code := s.call(t, testKey, "GET", "/api/files/"+id, "", &f); code != 200 {
			t.Fatalf("GET file %s: %d", id, code)
		}
		if f["status"] == "failed" {
			t.Fatalf("file %s failed: %v", id, f["error"])
		}
		return f["status"] == "ready"
	})
	return f
}

// TestFileSearchEndToEnd: a multi-page PDF and
// a DOCX made by the fixtures are uploaded and reach ready; an agent (aimock as
// the model) whose file_search covers the PDF, with the DOCX attached to the
// conversation, gets the passage that answers each question with the right
// file name and page; and `relay prompt --file` prints the RAG block with the
// retrieved chunk for an agent without file_search.
func TestFileSearchEndToEnd(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"relief valves","hasToolResult":false},"response":{"toolCalls":[{"name":"file_search","arguments":"{\"query\":\"pressure relief valves inspected\"}"}]}},
 {"match":{"userMessage":"relief valves","hasToolResult":true},"response":{"content":"Every 18 months \\ue202turn0file0."}},
 {"match":{"userMessage":"diesel generators","hasToolResult":false},"response":{"toolCalls":[{"name":"file_search","arguments":"{\"query\":\"diesel generators tested\"}"}]}},
 {"match":{"userMessage":"diesel generators","hasToolResult":true},"response":{"content":"Monthly, under full load \\ue202turn0file0."}}]}`)

	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
agents:
  - id: plain
    provider: mock
    model: gpt-4o
    instructions: Answer from the attached files.
`, filepath.Join(dir, "data"), mock))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	filler := strings.Repeat("This section describes general plant organisation and staffing. ", 12)
	pdf := extracttest.PDF(
		"Safety manual. Chapter 1. "+filler,
		"Chapter 2. Pressure relief valves on the primary circuit must be inspected every 18 months by a certified inspector. "+filler,
		"Chapter 3. Fire doors are checked weekly. "+filler,
	)
	docx := extracttest.DOCX(
		"Operations handbook. "+filler,
		"Emergency diesel generators are tested monthly under full load. "+filler,
	)
	pdfID := s.upload(t, "safety-manual.pdf", pdf)
	docxID := s.upload(t, "operations.docx", docx)
	if f := s.ready(t, pdfID); f["mime_type"] != "application/pdf" || f["chunk_count"].(float64) < 3 {
		t.Errorf("PDF record %v", f)
	}
	if f := s.ready(t, docxID); f["chunk_count"].(float64) < 2 {
		t.Errorf("DOCX record %v", f)
	}

	agent := fmt.Sprintf(`{"id":"reader","name":"Reader","provider":"mock","model":"gpt-4o","instructions":"Cite with the anchors.",
 "tools":["file_search"],"tool_resources":{"file_search":{"file_ids":[%q]}}}`, pdfID)
	if code := s.call(t, testKey, "POST", "/api/agents", agent, nil); code != 201 {
		t.Fatalf("creating the agent: %d", code)
	}

	// Another user can neither read the files nor give them to an agent of theirs.
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "bob@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	code, bobKey, _ := runCLI(t, nil, "", "keys", "create", "--config", cfgPath, "--user", "bob@example.com", "--name", "t")
	bobKey = strings.TrimSpace(bobKey)
	if code != 0 {
		t.Fatalf("keys create: %d", code)
	}
	if code := s.call(t, bobKey, "GET", "/api/files/"+pdfID, "", nil); code != 404 {
		t.Errorf("Bob reading Ann's file: %d, want 404", code)
	}
	var refused struct {
		Error struct {
			Fields []struct{ Field, Message string }
		}
	}
	steal := fmt.Sprintf(`{"name":"Thief","provider":"mock","model":"gpt-4o","tools":["file_search"],"tool_resources":{"file_search":{"file_ids":[%q]}}}`, pdfID)
	if code := s.call(t, bobKey, "POST", "/api/agents", steal, &refused); code != 400 || len(refused.Error.Fields) != 1 || refused.Error.Fields[0].Field != "tool_resources.file_search.file_ids[0]" {
		t.Errorf("Bob giving Ann's file to his agent: %d %+v, want 400 naming the file id", code, refused)
	}

	type toolCall struct {
		Name    string `json:"name"`
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
		Sources []struct {
			Kind, Anchor string
			FileID       string `json:"file_id"`
			FileName     string `json:"file_name"`
			Page         int
		} `json:"sources"`
	}
	ask := func(text string, files ...string) (string, toolCall, map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"agent_id": "reader", "text": text, "files": files})
		resp := s.post(t, "/api/chat", string(body), nil)
		defer resp.Body.Close()
		evs := readSSE(t, resp, nil)
		last := evs[len(evs)-1]
		msg, _ := last.Data["message"].(map[string]any)
		if last.Type != "run.finished" || last.Data["status"] != "succeeded" {
			t.Fatalf("last event %+v", last)
		}
		runID, _ := evs[0].Data["run_id"].(string)
		var detail struct {
			ToolCalls []toolCall `json:"tool_calls"`
		}
		if code := s.call(t, testKey, "GET", "/api/runs/"+runID, "", &detail); code != 200 || len(detail.ToolCalls) != 1 {
			t.Fatalf("GET run: %d, %+v", code, detail)
		}
		return msg["text"].(string), detail.ToolCalls[0], msg
	}

	// The agent's own PDF answers the first question, from page 2.
	text, tc, msg := ask("How often are the pressure relief valves inspected?", docxID)
	if text != `Every 18 months \ue202turn0file0.` {
		t.Errorf("answer %q", text)
	}
	first, _, _ := strings.Cut(tc.Result, "\n---\n")
	if tc.IsError || !strings.HasPrefix(first, "File: safety-manual.pdf\nPage: 2\n") || !strings.Contains(first, `Anchor: \ue202turn0file0`) ||
		!strings.Contains(strings.Join(strings.Fields(first), " "), "must be inspected every 18 months by a certified inspector") {
		t.Errorf("file_search's best passage:\n%s", first)
	}
	if len(tc.Sources) == 0 || tc.Sources[0].FileID != pdfID || tc.Sources[0].FileName != "safety-manual.pdf" || tc.Sources[0].Page != 2 || tc.Sources[0].Anchor != `\ue202turn0file0` {
		t.Errorf("sources %+v", tc.Sources)
	}
	if srcs, _ := msg["sources"].([]any); len(srcs) != len(tc.Sources) {
		t.Errorf("the answer carries %d sources, the tool call %d", len(srcs), len(tc.Sources))
	}

	// The attached DOCX answers the second, from its page 2.
	_, tc, msg = ask("How often are the diesel generators tested?", docxID)
	first, _, _ = strings.Cut(tc.Result, "\n---\n")
	if !strings.HasPrefix(first, "File: operations.docx\nPage: 2\n") || !strings.Contains(strings.Join(strings.Fields(first), " "), "Emergency diesel generators are tested monthly under full load.") {
		t.Errorf("file_search's best passage:\n%s", first)
	}

	// The preview of the next message of that conversation (the API's and
	// relay prompt's) sees the file attached earlier on it, as a run would.
	conv, _ := msg["conversation_id"].(string)
	var preview struct {
		Messages []struct{ Role, Content string }
	}
	previewBody, _ := json.Marshal(map[string]any{"text": "And the fire doors?", "conversation_id": conv})
	code = s.call(t, testKey, "POST", "/api/agents/plain/prompt", string(previewBody), &preview)
	if code != 200 || len(preview.Messages) == 0 ||
		!strings.Contains(preview.Messages[0].Content, "<filename>operations.docx</filename>") {
		t.Errorf("the preview of the conversation's next message: %d, system message without the attached file: %+v", code, preview.Messages)
	}
	code, out, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "plain", "--conversation", conv, "--message", "And the fire doors?")
	if code != 0 || !strings.Contains(out, `<filename>operations.docx</filename>`) {
		t.Errorf("relay prompt --conversation: exit %d, the system message lacks the attached file:\n%.600s\n%s", code, out, stderr)
	}

	// relay prompt --file: the RAG block of docs/prompt.md "RAG context block" with the retrieved chunk.
	code, out, stderr = runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "plain", "--file", docxID, "--message", "How often are the diesel generators tested?")
	if code != 0 {
		t.Fatalf("relay prompt: exit %d\n%s", code, stderr)
	}
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(out), &req); err != nil || len(req.Messages) == 0 {
		t.Fatalf("relay prompt printed %s (%v)", out, err)
	}
	sys := req.Messages[0].Content
	for _, want := range []string{
		"The user has attached a file to the conversation:\n<files>\n  <file>\n    <filename>operations.docx</filename>\n    <type>application/vnd.openxmlformats-officedocument.wordprocessingml.document</type>\n  </file>\n</files>\n\nA semantic search was executed",
		"<context>\n  <file>\n    <filename>operations.docx</filename>\n    <context>\n      <contextItem>\n        <![CDATA[",
		"Emergency diesel generators are tested monthly under full load.",
		"Avoid mentioning that you obtained the information from the context.\n\nAnswer from the attached files.",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("relay prompt's system message lacks %q:\n%s", want, sys)
		}
	}
	// Someone else's file id is refused.
	if code, _, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "plain", "--file", "file_nope", "--message", "x"); code != 2 || !strings.Contains(stderr, "--file") {
		t.Errorf("relay prompt --file with an unknown id: exit %d, %s", code, stderr)
	}
}
