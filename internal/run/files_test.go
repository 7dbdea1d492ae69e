package run_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/tool"
)

// fileBundle is a run service whose preparer knows three files: the agent's
// own, one of Ann's to attach, and one of Bob's. Its search answers from a
// fixed table of passages and records the queries.
type fileBundle struct {
	*bundle
	model   *llmtest.Model
	queries []file.Query
}

var passages = map[string][]file.Hit{
	"file_manual": {{FileID: "file_manual", FileName: "manual.pdf", Page: 7, Text: "Valves are inspected every 12 months.", Score: 0.9}},
	"file_notes":  {{FileID: "file_notes", FileName: "notes.docx", Page: 2, Text: "The last inspection was in March.", Score: 0.8}, {FileID: "file_notes", FileName: "notes.docx", Page: 3, Text: "Next one: <![CDATA[ spring ]]>.", Score: 0.4}},
}

func setupFiles(t *testing.T, turns ...llmtest.Turn) *fileBundle {
	t.Helper()
	model := llmtest.New(turns...)
	fb := &fileBundle{bundle: setup(t, model), model: model}
	ctx := context.Background()
	agents := fb.svc.Prep.Agents.(*agent.Service)
	if _, err := agents.Create(ctx, fb.user, "reader", agent.Spec{Name: "Reader", Provider: "openAI", Model: "gpt-4o",
		Tools: []string{"file_search"}, ToolResources: &agent.ToolResources{FileSearch: &agent.FileSearchResources{FileIDs: []string{"file_manual"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := agents.Create(ctx, fb.user, "plain", agent.Spec{Name: "Plain", Provider: "openAI", Model: "gpt-4o", Instructions: "Answer briefly."}); err != nil {
		t.Fatal(err)
	}
	files := map[string]file.File{
		"file_manual": {ID: "file_manual", Owner: "someone", Name: "manual.pdf", MIMEType: "application/pdf"},
		"file_notes":  {ID: "file_notes", Owner: fb.user.ID, Name: "notes.docx", MIMEType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		"file_bob":    {ID: "file_bob", Owner: "bob", Name: "secret.txt", MIMEType: "text/plain"},
	}
	resolve := func(ids []string, ok func(file.File) bool) ([]prompt.File, error) {
		var out []prompt.File
		for _, id := range ids {
			if f, found := files[id]; found && ok(f) {
				out = append(out, prompt.File{ID: f.ID, Filename: f.Name, Type: f.MIMEType})
			}
		}
		return out, nil
	}
	p := fb.svc.Prep
	p.Files = func(_ context.Context, ids []string) ([]prompt.File, error) {
		return resolve(ids, func(file.File) bool { return true })
	}
	p.AttachedFiles = func(_ context.Context, u *auth.User, ids []string) ([]prompt.File, error) {
		out, _ := resolve(ids, func(f file.File) bool { return f.Owner == u.ID })
		if len(out) != len(ids) {
			return nil, fault.New(fault.NotFound, "attachments: a file id does not exist or is not yours")
		}
		return out, nil
	}
	p.Search = func(_ context.Context, q file.Query) ([]file.Hit, error) {
		fb.queries = append(fb.queries, q)
		var hits []file.Hit
		for _, id := range q.FileIDs {
			hs := passages[id]
			if q.PerFile > 0 && len(hs) > q.PerFile {
				hs = hs[:q.PerFile]
			}
			hits = append(hits, hs...)
		}
		return hits, nil
	}
	return fb
}

func TestFileSearchThroughARun(t *testing.T) {
	call := llm.ToolCall{ID: "call_fs", Type: "function", Function: llm.FunctionCall{Name: "file_search", Arguments: `{"query":"inspection interval"}`}}
	fb := setupFiles(t,
		llmtest.Turn{ToolCalls: []llm.ToolCall{call}},
		llmtest.Turn{Text: []string{`Every 12 months \ue202turn0file0.`}},
	)
	d := fb.chat(t, run.ChatRequest{AgentID: "reader", Text: "How often are valves inspected?", Files: []string{"file_notes", "file_notes"}})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	if diff := cmp.Diff([]file.Query{{FileIDs: []string{"file_manual", "file_notes"}, Text: "inspection interval", Limit: 10}}, fb.queries); diff != "" {
		t.Errorf("file_search searched (-want +got):\n%s", diff)
	}
	if len(d.Tools) != 1 || len(d.Tools[0].Sources) != 3 || d.Tools[0].Sources[0].FileName != "manual.pdf" || d.Tools[0].Sources[0].Page != 7 ||
		d.Tools[0].Sources[2].Anchor != `\ue202turn0file2` {
		t.Fatalf("tool calls %+v", d.Tools)
	}
	// The model was told which files it searches; the attached one is marked.
	sys := fb.model.Requests()[0].Messages[0].Content
	if !strings.Contains(sys, "- Note: Use the file_search tool to find relevant information within:\n\t- manual.pdf\n\t- notes.docx (just attached by user)") {
		t.Errorf("system prompt:\n%s", sys)
	}
	if strings.Contains(sys, "<context>") {
		t.Errorf("an agent with file_search got the RAG block too (injectContext auto):\n%s", sys)
	}
	th, err := fb.svc.Conversation(context.Background(), fb.user, d.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	user, answer := th.Messages[0], th.Messages[1]
	if diff := cmp.Diff([]run.Part{{Type: run.PartFile, FileID: "file_notes", Text: "notes.docx"}}, user.Parts); diff != "" {
		t.Errorf("user message parts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(d.Tools[0].Sources, answer.Sources); diff != "" {
		t.Errorf("answer sources (-want +got):\n%s", diff)
	}
	if answer.Sources[0].Kind != tool.SourceFile {
		t.Errorf("source kind %q", answer.Sources[0].Kind)
	}

	// A follow-up on the same branch still has the attachment.
	fb.model.Add(llmtest.Turn{Text: []string{"Yes."}})
	fb.chat(t, run.ChatRequest{AgentID: "reader", Text: "Sure?", ConversationID: d.ConversationID, ParentMessageID: answer.ID})
	reqs := fb.model.Requests()
	if sys := reqs[len(reqs)-1].Messages[0].Content; !strings.Contains(sys, "notes.docx (just attached by user)") {
		t.Errorf("follow-up lost the attachment:\n%s", sys)
	}
}

func TestRAGContextForAnAgentWithoutFileSearch(t *testing.T) {
	fb := setupFiles(t, llmtest.Turn{Text: []string{"In March."}})
	d := fb.chat(t, run.ChatRequest{AgentID: "plain", Text: "When was the last inspection?", Files: []string{"file_notes"}})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	if diff := cmp.Diff([]file.Query{{FileIDs: []string{"file_notes"}, Text: "When was the last inspection?", PerFile: 4, Limit: 4}}, fb.queries); diff != "" {
		t.Errorf("retrieval (-want +got):\n%s", diff)
	}
	sys := fb.model.Requests()[0].Messages[0].Content
	for _, want := range []string{
		"The user has attached a file to the conversation:\n<files>\n  <file>\n    <filename>notes.docx</filename>",
		"<![CDATA[The last inspection was in March.]]>",
		"<![CDATA[Next one: <![CDATA[ spring ]]]]><![CDATA[>.]]>",
		"Answer briefly.",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	// never: no retrieval at all.
	fb.svc.Prep.InjectContext = run.InjectNever
	fb.queries = nil
	fb.model.Add(llmtest.Turn{Text: []string{"?"}})
	fb.chat(t, run.ChatRequest{AgentID: "plain", Text: "Again?", Files: []string{"file_notes"}})
	reqs := fb.model.Requests()
	if sys := reqs[len(reqs)-1].Messages[0].Content; strings.Contains(sys, "<context>") || len(fb.queries) != 0 {
		t.Errorf("injectContext never still retrieved (%d queries):\n%s", len(fb.queries), sys)
	}
	// always: also for an agent with file_search.
	fb.svc.Prep.InjectContext = run.InjectAlways
	fb.model.Add(llmtest.Turn{Text: []string{"?"}})
	fb.chat(t, run.ChatRequest{AgentID: "reader", Text: "And now?", Files: []string{"file_notes"}})
	reqs = fb.model.Requests()
	if sys := reqs[len(reqs)-1].Messages[0].Content; !strings.Contains(sys, "The last inspection was in March.") {
		t.Errorf("injectContext always left out the context:\n%s", sys)
	}
}

func TestAttachingAnotherUsersFile(t *testing.T) {
	fb := setupFiles(t)
	_, err := fb.svc.Start(context.Background(), fb.user, run.ChatRequest{AgentID: "plain", Text: "Read it", Files: []string{"file_bob"}})
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("Start with another user's file: %v, want not found", err)
	}
	cs, err := fb.svc.Conversations(context.Background(), fb.user, run.ConversationQuery{Limit: 10})
	if err != nil || len(cs.Conversations) != 0 {
		t.Errorf("a refused attachment left conversations %v (%v)", cs, err)
	}
	if slices.ContainsFunc(fb.queries, func(q file.Query) bool { return slices.Contains(q.FileIDs, "file_bob") }) {
		t.Error("another user's file was searched")
	}
}

// The agents of one run share the RAG retrieval: a direct chain of two
// agents without file_search over the same attached file searches once.
func TestRAGRetrievalOncePerRun(t *testing.T) {
	fb := setupFiles(t, llmtest.Turn{Text: []string{"First."}}, llmtest.Turn{Text: []string{"Second."}})
	agents := fb.svc.Prep.Agents.(*agent.Service)
	if _, err := agents.Create(context.Background(), fb.user, "chain", agent.Spec{Name: "Chain", Provider: "openAI", Model: "gpt-4o",
		Edges: []agent.Edge{{From: agent.IDs{List: []string{"chain"}}, To: agent.IDs{List: []string{"plain"}}, EdgeType: agent.EdgeDirect}}}); err != nil {
		t.Fatal(err)
	}
	d := fb.chat(t, run.ChatRequest{AgentID: "chain", Text: "When was the last inspection?", Files: []string{"file_notes"}})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	reqs := fb.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want one per agent", len(reqs))
	}
	for i, r := range reqs {
		if !strings.Contains(r.Messages[0].Content, "The last inspection was in March.") {
			t.Errorf("agent %d's system prompt lacks the retrieved passage:\n%s", i+1, r.Messages[0].Content)
		}
	}
	if len(fb.queries) != 1 {
		t.Errorf("%d searches for one run's RAG context, want 1: %+v", len(fb.queries), fb.queries)
	}
}
