package web_test

// Browser tests of the chat page and the memories page (docs/ui.md "Chat",
// "Memories"), against a real relay serve with aimock as the model provider
// and server-everything as an MCP server.
//
// Helpers for other tests:
//   - mockEndpointConfig: a config with the custom endpoint `mock` (aimock) and
//     the MCP server `everything`.
//   - createAgent: an agent made through the API.
//   - newChatter: a user signed in in a new browser, with an API key of theirs.
//   - startCutProxy: a TCP proxy to a relay whose connections a test cuts.
//   - openChat, pickAgent, sendChat, waitAnswered, answerText: driving the chat.
//
// Stable selectors of the chat page: [data-testid=agent-picker] (the agent
// button; options are [role=option][data-agent-id][data-agent-name]), #composer-text (the
// message box), #composer-files (its file input), [data-testid=attachment]
// [data-status] (file chips), [data-testid=message][data-role=user|assistant]
// (messages; a live answer's data-message-id starts with "live:"),
// [data-testid=tool-card][data-tool=NAME] (tool calls, a <details>),
// [data-testid=tool-result], [data-testid=section-agent] (the agent labels of
// a multi-agent answer), [data-testid=handoff], sup.cite a (citations),
// [data-testid=source] (listed sources), [data-testid=stop], [data-testid=send],
// [data-testid=conversation] (the list of chats).

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// mockEndpointConfig returns a relay config (for startRelay) whose custom
// endpoint `mock` is the aimock at aimockURL and, when everythingPath is not
// empty, whose MCP server `everything` is server-everything run over stdio
// (its tools are keyed like get-sum__mcp__everything).
func mockEndpointConfig(aimockURL, everythingPath string) string {
	cfg := fmt.Sprintf(`server:
  data_dir: %%DATA%%
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
`, aimockURL)
	if everythingPath != "" {
		cfg += fmt.Sprintf(`mcpServers:
  everything:
    command: node
    args: [%q, stdio]
`, everythingPath)
	}
	return cfg
}

// createAgent creates an agent through the API with key and returns its id.
// spec holds the agent's fields (name, provider, model, tools, edges, …);
// provider and model default to mock and gpt-4o, and shared to true, so that
// every user of the server may chat with it.
func createAgent(t *testing.T, r *relay, key string, spec map[string]any) string {
	t.Helper()
	body := map[string]any{"provider": "mock", "model": "gpt-4o", "shared": true}
	for k, v := range spec {
		body[k] = v
	}
	var out struct {
		ID string `json:"id"`
	}
	if code := r.call(t, key, "POST", "/api/agents", body, &out); code != http.StatusCreated {
		t.Fatalf("creating the agent %v: HTTP %d", spec["name"], code)
	}
	return out.ID
}

// chatter is a person signed in to Relay in a browser of their own.
type chatter struct {
	ctx   context.Context
	key   string // an API key of theirs, for setting things up through the API
	email string
}

// newChatter makes a user (a plain user, not an admin) with a password and
// an API key, starts a browser for them and signs them in.
func newChatter(t *testing.T, r *relay, browser []chromedp.ExecAllocatorOption, email string) *chatter {
	t.Helper()
	return newChatterAt(t, r, r.Base, browser, email)
}

// newChatterAt is newChatter with the browser going to base (a proxy of r).
func newChatterAt(t *testing.T, r *relay, base string, browser []chromedp.ExecAllocatorOption, email string) *chatter {
	t.Helper()
	const password = "correct horse battery staple"
	id := r.addUser(t, email, strings.Split(email, "@")[0], password, "user")
	var k struct {
		Secret string `json:"secret"`
	}
	if code := r.call(t, adminKey, "POST", "/api/keys", map[string]any{"name": "browser test", "user_id": id}, &k); code != http.StatusCreated || k.Secret == "" {
		t.Fatalf("creating a key for %s: HTTP %d", email, code)
	}
	ctx := newPerson(t, browser)
	signIn(t, ctx, base, email, password)
	return &chatter{ctx: ctx, key: k.Secret, email: email}
}

// openChat opens a new chat and waits for the message box.
func openChat(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	run(t, ctx, "opening the chat",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery),
	)
}

// pickAgent chooses the agent named name in the agent picker.
func pickAgent(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	run(t, ctx, "opening the agent picker",
		chromedp.WaitVisible(`[data-testid=agent-picker]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=agent-picker]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#agent-list [role=option]`, chromedp.ByQuery),
	)
	var ok bool
	run(t, ctx, "picking the agent "+name, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const o = [...document.querySelectorAll('#agent-list [role=option]')].find(o => o.dataset.agentName === %q);
		if (o) o.click();
		return !!o;
	})()`, name), &ok))
	if !ok {
		t.Fatalf("the agent picker has no agent named %q", name)
	}
	waitText(t, ctx, `[data-testid=agent-picker]`, name)
}

// sendChat types text in the message box and presses Enter.
func sendChat(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	run(t, ctx, "sending "+text,
		chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery),
		chromedp.SendKeys(`#composer-text`, text, chromedp.ByQuery),
		chromedp.Focus(`#composer-text`, chromedp.ByQuery),
		pressEnter(),
	)
}

// retype replaces the text of the input or textarea of sel by typing text.
func retype(sel, text string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).select()`, sel), nil),
		chromedp.SendKeys(sel, text, chromedp.ByQuery),
	}
}

// pressEnter presses Enter in the focused element as a person does: a key
// down and up. (chromedp.SendKeys adds a character event, which types a new
// line even when the page handles the key.)
func pressEnter() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		down := input.DispatchKeyEvent(input.KeyDown).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).WithNativeVirtualKeyCode(13)
		if err := down.Do(ctx); err != nil {
			return err
		}
		return input.DispatchKeyEvent(input.KeyUp).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).WithNativeVirtualKeyCode(13).Do(ctx)
	})
}

// waitAnswered waits until the last answer is complete: it is stored (its id
// is no longer a live one) and it contains text.
func waitAnswered(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const a = [...document.querySelectorAll('[data-testid=message][data-role=assistant]')].pop();
		return !!a && !a.dataset.messageId.startsWith('live:') && a.innerText.includes(%q);
	})()`, text)
	// Polled by time, not by animation frame: a tab in the background has none.
	run(t, ctx, fmt.Sprintf("waiting for the answer %q", text), chromedp.Poll(js, nil,
		chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// answerText is the text of the last answer on the page.
func answerText(t *testing.T, ctx context.Context) string {
	t.Helper()
	var s string
	run(t, ctx, "reading the answer", chromedp.Evaluate(`(() => {
		const a = [...document.querySelectorAll('[data-testid=message][data-role=assistant]')].pop();
		return a ? a.innerText : '';
	})()`, &s))
	return s
}

// slowText is the answer aimock streams slowly, eight characters every 200 ms
// (about eight seconds): long enough to reload the page while it is written.
const slowText = "The sum of 2 and 3 is 5. To check it, I asked the get-sum tool of the everything server, " +
	"which added the two numbers for me. Adding two and three gives five, whichever order they come in, " +
	"because addition is commutative. If you want, I can add other numbers too, or explain how the tool works. " +
	"That is all for this sum."

// TestChatStreamsToolCallAndResumesAfterReload: a person picks an agent with
// server-everything's get-sum and asks "2+3"; the tool call shows as a card
// with its result, the answer streams, the page is reloaded while it is being
// written, and the answer goes on streaming and completes after the reload.
func TestChatStreamsToolCallAndResumesAfterReload(t *testing.T) {
	browser := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, fmt.Sprintf(`{"fixtures":[
 {"match":{"userMessage":"2+3","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"2+3","hasToolResult":true},"response":{"content":%q},"latency":200,"chunkSize":8}]}`, slowText))
	r := startRelay(t, mockEndpointConfig(mock, everything), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{
		"name": "Calculator", "description": "Adds numbers with the get-sum tool.",
		"instructions": "Use the tools.", "tools": []string{"get-sum__mcp__everything"},
		"conversation_starters": []string{"What is 2+3?", "Add 40 and 2"},
	})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Calculator")
	waitText(t, ctx, `[data-testid=chat-empty]`, "Adds numbers with the get-sum tool.")
	// An agent is picked: the page does not ask to pick one.
	if isTrue(t, ctx, `document.querySelector('[data-testid=chat-empty]').innerText.includes('Pick an agent and')`) {
		t.Errorf("the empty chat of Calculator asks to pick an agent")
	}
	run(t, ctx, "marking the page", chromedp.Evaluate(`window.__page = document.querySelector('.chat-page'); true`, nil))
	sendChat(t, ctx, "2+3")

	// The tool call: a card naming the tool and its server, with the result.
	card := `[data-testid=tool-card][data-tool="get-sum__mcp__everything"]`
	run(t, ctx, "waiting for the tool card",
		chromedp.WaitVisible(card+`.done`, chromedp.ByQuery),
		chromedp.Click(card+` summary`, chromedp.ByQuery),
	)
	waitText(t, ctx, card, "get-sum")
	waitText(t, ctx, card, "everything")
	waitText(t, ctx, card+` [data-testid=tool-result]`, "The sum of 2 and 3 is 5.")

	// Part of the answer is there, not all of it.
	waitText(t, ctx, `[data-testid=message][data-role=assistant]`, "I asked the get-sum tool")
	if s := answerText(t, ctx); strings.Contains(s, "That is all for this sum.") {
		t.Fatalf("the answer was complete before the reload; it should take seconds:\n%s", s)
	}
	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	if !strings.Contains(url, "/c/conv_") {
		t.Errorf("the address is %s while the answer streams, want /c/<conversation>", url)
	}
	var same bool
	run(t, ctx, "checking the page was not made again", chromedp.Evaluate(`window.__page === document.querySelector('.chat-page')`, &same))
	if !same {
		t.Error("going to the conversation's address made the page again: the stream was interrupted")
	}

	// Reloading mid-stream: the answer goes on where it was.
	run(t, ctx, "reloading the page", chromedp.Reload(), chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery))
	run(t, ctx, "seeing the answer still being written after the reload",
		chromedp.Poll(`!!document.querySelector('[data-testid=message][data-role=assistant][data-message-id^="live:"]')`, nil,
			chromedp.WithPollingTimeout(20*time.Second)))
	waitAnswered(t, ctx, "That is all for this sum.")
	s := answerText(t, ctx)
	if !strings.Contains(s, strings.ReplaceAll(slowText, "  ", " ")) {
		t.Errorf("the answer after the reload:\n%s\nwant it to hold:\n%s", s, slowText)
	}
	var n int
	run(t, ctx, "counting the messages", chromedp.Evaluate(`document.querySelectorAll('[data-testid=message]').length`, &n))
	if n != 2 {
		t.Errorf("%d messages on the page, want the question and its answer", n)
	}
	run(t, ctx, "opening the tool card",
		chromedp.WaitVisible(card, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('[data-testid=tool-card]').open = true`, nil),
	)
	waitText(t, ctx, card+` [data-testid=tool-result]`, "The sum of 2 and 3 is 5.")
	waitText(t, ctx, `[data-testid=conversation]`, "2+3")
	screenshot(t, ctx, "chat")
}

// TestChatLabelsHandoffAgent: agent A hands off to agent B, whose answer is
// labelled with B's name, after a "Handed off to" line.
func TestChatLabelsHandoffAgent(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"systemMessage":"ROLE-FRONT-DESK"},"response":{"toolCalls":[{"name":"lc_transfer_to_specialist","arguments":"{}"}]}},
 {"match":{"systemMessage":"ROLE-SPECIALIST"},"response":{"content":"The specialist checked it: all clear."}}]}`)
	r := startRelay(t, mockEndpointConfig(mock, ""), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{"id": "specialist", "name": "Valve Specialist", "instructions": "ROLE-SPECIALIST. Answer."})
	createAgent(t, r, adminKey, map[string]any{"id": "front-desk", "name": "Front Desk", "instructions": "ROLE-FRONT-DESK. Route questions.",
		"edges": []map[string]any{{"from": "front-desk", "to": "specialist", "edgeType": "handoff"}}})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	// The agent builder's "Chat with it" link opens a chat with the agent.
	run(t, ctx, "opening a chat with Front Desk",
		chromedp.Navigate(r.Base+"/?agent=front-desk"),
		chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=agent-picker]`, "Front Desk")
	sendChat(t, ctx, "Are the valves fine?")
	waitAnswered(t, ctx, "all clear")
	waitText(t, ctx, `[data-testid=handoff]`, "Handed off to Valve Specialist")
	var labels []string
	run(t, ctx, "reading the agent labels", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=message][data-role=assistant] [data-testid=answer-section]')].map(s => {
		const l = s.querySelector('[data-testid=section-agent]');
		return (l ? l.innerText.trim() : '') + ': ' + s.innerText.replace(l ? l.innerText : '', '').trim();
	})`, &labels))
	if len(labels) != 2 || !strings.HasPrefix(labels[0], "Front Desk: ") || !strings.HasPrefix(labels[1], "Valve Specialist: ") || !strings.Contains(labels[1], "all clear") {
		t.Errorf("the answer's sections: %q, want Front Desk's handoff, then Valve Specialist's answer", labels)
	}
	var raw bool
	run(t, ctx, "looking for a raw handoff card", chromedp.Evaluate(`!!document.querySelector('[data-tool^="lc_transfer_to_"]')`, &raw))
	if raw {
		t.Error("the handoff is shown as a tool card, want a line")
	}
}

// TestChatCitesUploadedFile: a file uploaded in the message box shows its
// progress until it is ready; an agent with file_search answers with a
// citation marker, shown as [1] linking to the file listed under the answer.
func TestChatCitesUploadedFile(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"relief valves","hasToolResult":false},"response":{"toolCalls":[{"name":"file_search","arguments":"{\"query\":\"relief valves inspected\"}"}]}},
 {"match":{"userMessage":"relief valves","hasToolResult":true},"response":{"content":"Every **18 months** \\ue202turn0file0."}}]}`)
	r := startRelay(t, mockEndpointConfig(mock, ""), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{"name": "Reader", "instructions": "Answer from the files. Cite with the anchors.", "tools": []string{"file_search"}})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	doc := filepath.Join(t.TempDir(), "safety-manual.md")
	text := "# Safety manual\n\n## Chapter 2\n\nPressure relief valves on the primary circuit must be inspected every 18 months by a certified inspector.\n\n" +
		strings.Repeat("This section describes general plant organisation and staffing. ", 20) + "\n"
	if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Reader")
	run(t, ctx, "attaching the file",
		chromedp.SetUploadFiles(`#composer-files`, []string{doc}, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=attachment]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=attachment]`, "safety-manual.md")
	run(t, ctx, "waiting for the file to be ready",
		chromedp.WaitVisible(`[data-testid=attachment][data-status=ready]`, chromedp.ByQuery))
	waitText(t, ctx, `[data-testid=attachment]`, "Ready")

	// A file Relay refuses says why, and can be removed.
	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte{0x00, 0x01, 0x02, 0xff, 0xfe, 0x00, 0x10, 0x80, 0x00, 0x00}, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "attaching a file that is not text",
		chromedp.SetUploadFiles(`#composer-files`, []string{bad}, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=attachment][data-status=failed]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=attachment][data-status=failed]`, "notes.txt")
	var reason string
	run(t, ctx, "reading why", chromedp.Text(`[data-testid=attachment][data-status=failed] .chip-err`, &reason, chromedp.ByQuery))
	if reason == "" {
		t.Error("the refused file does not say why")
	}
	waitText(t, ctx, `.composer .foot`, "Remove the files that failed")
	run(t, ctx, "removing it",
		chromedp.Click(`[data-testid=attachment][data-status=failed] button[aria-label="Remove notes.txt"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`[data-testid=attachment][data-status=failed]`, chromedp.ByQuery),
	)

	sendChat(t, ctx, "When are the relief valves inspected?")
	waitAnswered(t, ctx, "18 months")
	waitText(t, ctx, `[data-testid=message][data-role=user]`, "safety-manual.md")
	var cite struct {
		Text, Href string
		Marker     bool
	}
	run(t, ctx, "reading the citation", chromedp.Evaluate(`(() => {
		const a = document.querySelector('[data-testid=message][data-role=assistant] sup.cite a');
		const body = document.querySelector('[data-testid=message][data-role=assistant]').innerText;
		return {text: a ? a.innerText : '', href: a ? a.getAttribute('href') : '', marker: /ue202|turn0file|\uE202/.test(body)};
	})()`, &cite))
	if cite.Text != "[1]" || !strings.HasPrefix(cite.Href, "#src-") || cite.Marker {
		t.Errorf("the citation: %+v, want a link [1] to the sources and no marker left", cite)
	}
	waitText(t, ctx, `[data-testid=source]`, "[1]")
	waitText(t, ctx, `[data-testid=source]`, "safety-manual.md")
	var target string
	run(t, ctx, "finding the cited source", chromedp.Evaluate(fmt.Sprintf(`document.getElementById(%q.slice(1))?.innerText ?? ''`, cite.Href), &target))
	if !strings.Contains(target, "safety-manual.md") {
		t.Errorf("the citation links to %q, want the source naming the file", target)
	}
	screenshot(t, ctx, "chat-citations")

	// A file uploaded before is attached from the list of uploads.
	run(t, ctx, "picking an uploaded file",
		chromedp.Click(`button[aria-label="Attach uploaded files"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] input[type=checkbox]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `dialog[open]`, "safety-manual.md")
	run(t, ctx, "attaching it",
		chromedp.Click(`dialog[open] input[type=checkbox]:not([disabled])`, chromedp.ByQuery),
		chromedp.Click(`//dialog[@open]//button[contains(., "Attach 1 file")]`, chromedp.BySearch),
		chromedp.WaitVisible(`[data-testid=attachment][data-status=ready]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=attachment]`, "safety-manual.md")
}

// TestAnswersRenderInert: an answer with an image whose onerror runs script
// and a javascript: link renders with neither: nothing runs on render, hover
// or click.
func TestAnswersRenderInert(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"show me"},"response":{"content":"Here: <img src=x onerror=\"window.__pwned=1\"> and [click](javascript:window.__pwned=2) and <a href=\"javascript:window.__pwned=3\" onclick=\"window.__pwned=4\">this</a> <svg onload=\"window.__pwned=5\"></svg> done."}}]}`)
	r := startRelay(t, mockEndpointConfig(mock, ""), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{"name": "Echo", "instructions": "Say it."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Echo")
	sendChat(t, ctx, "show me")
	waitAnswered(t, ctx, "done.")
	answer := `[data-testid=message][data-role=assistant] .markdown`
	run(t, ctx, "hovering and clicking what the answer holds",
		chromedp.WaitVisible(answer, chromedp.ByQuery),
		chromedp.Evaluate(`(() => {
			for (const el of document.querySelectorAll('[data-testid=message][data-role=assistant] .markdown *')) {
				el.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
			}
		})()`, nil),
	)
	var links int
	run(t, ctx, "counting the links", chromedp.Evaluate(`document.querySelectorAll('[data-testid=message][data-role=assistant] .markdown a').length`, &links))
	for i := 0; i < links; i++ {
		run(t, ctx, "clicking a link of the answer", chromedp.Click(fmt.Sprintf(`(//*[@data-testid="message"][@data-role="assistant"]//*[contains(@class,"markdown")]//a)[%d]`, i+1), chromedp.BySearch))
	}
	var got struct {
		Pwned    any
		Handlers []string
		Hrefs    []string
	}
	run(t, ctx, "looking for anything active", chromedp.Evaluate(`(() => {
		const handlers = [], hrefs = [];
		for (const el of document.querySelectorAll('*')) {
			for (const a of el.attributes) {
				if (a.name.startsWith('on')) handlers.push(el.tagName + ' ' + a.name);
				if (/^\s*(javascript|data|vbscript):/i.test(a.value) && /href|src|action/i.test(a.name)) hrefs.push(el.tagName + ' ' + a.name + '=' + a.value);
			}
		}
		return {pwned: window.__pwned ?? null, handlers, hrefs};
	})()`, &got))
	if got.Pwned != nil || len(got.Handlers) > 0 || len(got.Hrefs) > 0 {
		t.Errorf("the answer is not inert: window.__pwned=%v, handlers %q, addresses %q", got.Pwned, got.Handlers, got.Hrefs)
	}
	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	if !strings.HasPrefix(url, r.Base+"/c/") {
		t.Errorf("clicking the answer's links went to %s", url)
	}
	waitText(t, ctx, answer, "click")
}

// TestMemoriesPage: an entry put through the API is listed on the memories
// page, and deleting it there removes it.
func TestMemoriesPage(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx
	if code := r.call(t, ann.key, "PUT", "/api/memories/preferred_language", map[string]string{"value": "Answers in Dutch, please."}, nil); code != http.StatusOK {
		t.Fatalf("putting a memory: HTTP %d", code)
	}
	run(t, ctx, "opening the memories",
		chromedp.Navigate(r.Base+"/memories"),
		chromedp.WaitVisible(`[data-testid=memory][data-key=preferred_language]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=memory]`, "Answers in Dutch, please.")
	screenshot(t, ctx, "memories")
	run(t, ctx, "deleting the memory",
		chromedp.Click(`[data-testid=memory][data-key=preferred_language] button[aria-label="Delete preferred_language"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] [data-testid=confirm-delete]`, chromedp.ByQuery),
		chromedp.Click(`dialog[open] [data-testid=confirm-delete]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`[data-testid=memory]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `.empty`, "Nothing remembered yet")
	var list struct {
		Data []any `json:"data"`
	}
	if code := r.call(t, ann.key, "GET", "/api/memories", nil, &list); code != http.StatusOK || len(list.Data) != 0 {
		t.Errorf("memories after the deletion: HTTP %d, %v", code, list.Data)
	}
}

// TestChatBranchesStopAndErrors: regenerating the first answer and editing
// the first question make branches with ‹ n/m › switchers; Stop ends an
// answer being written; a provider's failure is said on the answer; a chat
// is renamed in place and deleted from the list.
func TestChatBranchesStopAndErrors(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, fmt.Sprintf(`{"fixtures":[
 {"match":{"userMessage":"first question","sequenceIndex":0},"response":{"content":"Answer one."}},
 {"match":{"userMessage":"first question","sequenceIndex":1},"response":{"content":"Answer two."}},
 {"match":{"userMessage":"edited question"},"response":{"content":"Edited answer."}},
 {"match":{"userMessage":"slow please"},"response":{"content":%q},"latency":200,"chunkSize":4},
 {"match":{"userMessage":"fail please"},"response":{"error":{"message":"the model is overloaded","type":"server_error"},"status":400}}]}`,
		strings.Repeat("A long answer that takes its time. ", 20)))
	r := startRelay(t, mockEndpointConfig(mock, ""), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{"name": "Writer", "instructions": "Write."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Writer")
	sendChat(t, ctx, "first question")
	waitAnswered(t, ctx, "Answer one.")

	// Regenerate: a second answer, and a switcher on it.
	run(t, ctx, "regenerating the answer", chromedp.Click(`[data-testid=message][data-role=assistant] button[aria-label="Regenerate answer"]`, chromedp.ByQuery))
	waitAnswered(t, ctx, "Answer two.")
	waitText(t, ctx, `[data-testid=message][data-role=assistant] [data-testid=switcher]`, "2/2")
	run(t, ctx, "going back to the first answer", chromedp.Click(`[data-testid=message][data-role=assistant] button[aria-label="Previous answer"]`, chromedp.ByQuery))
	waitAnswered(t, ctx, "Answer one.")
	waitText(t, ctx, `[data-testid=message][data-role=assistant] [data-testid=switcher]`, "1/2")
	var users int
	run(t, ctx, "counting the questions", chromedp.Evaluate(`document.querySelectorAll('[data-testid=message][data-role=user]').length`, &users))
	if users != 1 {
		t.Errorf("%d questions shown, want 1", users)
	}

	// Edit the question: a new branch with its own answer.
	run(t, ctx, "editing the question",
		chromedp.Click(`[data-testid=message][data-role=user] button[aria-label="Edit message"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=message][data-role=user] textarea`, chromedp.ByQuery),
		retype(`[data-testid=message][data-role=user] textarea`, "edited question"),
		pressEnter(),
	)
	waitAnswered(t, ctx, "Edited answer.")
	waitText(t, ctx, `[data-testid=message][data-role=user]`, "edited question")
	waitText(t, ctx, `[data-testid=message][data-role=user] [data-testid=switcher]`, "2/2")
	run(t, ctx, "going back to the first question", chromedp.Click(`[data-testid=message][data-role=user] button[aria-label="Previous edit"]`, chromedp.ByQuery))
	waitText(t, ctx, `[data-testid=message][data-role=user]`, "first question")
	waitAnswered(t, ctx, "Answer two.") // the newest answer of that branch
	waitText(t, ctx, `[data-testid=message][data-role=user] [data-testid=switcher]`, "1/2")
	run(t, ctx, "going to the edit again", chromedp.Click(`[data-testid=message][data-role=user] button[aria-label="Next edit"]`, chromedp.ByQuery))
	waitAnswered(t, ctx, "Edited answer.")
	screenshot(t, ctx, "chat-branches")

	// Stop: the answer ends where it was.
	sendChat(t, ctx, "slow please")
	waitText(t, ctx, `[data-testid=message][data-role=assistant]`, "A long answer")
	run(t, ctx, "stopping the answer", chromedp.Click(`[data-testid=stop]`, chromedp.ByQuery))
	waitAnswered(t, ctx, "A long answer")
	run(t, ctx, "waiting for the message box", chromedp.WaitVisible(`[data-testid=send]`, chromedp.ByQuery))
	if s := answerText(t, ctx); strings.Count(s, "A long answer") >= 20 {
		t.Errorf("the stopped answer is complete:\n%s", s)
	}
	waitText(t, ctx, `[data-testid=message][data-role=assistant]`, "You stopped this answer.")
	// A screen reader hears that it was stopped, not that it is complete.
	waitText(t, ctx, `p.sr-only[role=status]`, "You stopped the answer.")
	// Read again, the stopped answer still says so: a reload does not pass it
	// off as a whole one.
	written := strings.Count(answerText(t, ctx), "A long answer")
	run(t, ctx, "reloading after the stop", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=message][data-role=assistant]`, chromedp.ByQuery))
	waitAnswered(t, ctx, "A long answer")
	waitText(t, ctx, `[data-testid=message][data-role=assistant] [data-testid=answer-stopped]`, "You stopped this answer.")
	if n := strings.Count(answerText(t, ctx), "A long answer"); n != written {
		t.Errorf("the stopped answer holds %d sentences after a reload, %d before", n, written)
	}

	// A provider's failure is said on the answer.
	sendChat(t, ctx, "fail please")
	run(t, ctx, "waiting for the error",
		chromedp.Poll(`(() => {
			const a = [...document.querySelectorAll('[data-testid=message][data-role=assistant]')].pop();
			return !!a && !a.dataset.messageId.startsWith('live:') && !!a.querySelector('[data-testid=answer-error]');
		})()`, nil, chromedp.WithPollingTimeout(60*time.Second)))
	waitText(t, ctx, `[data-testid=answer-error]`, "Writer could not answer.")
	waitText(t, ctx, `[data-testid=answer-error]`, "the model is overloaded")
	waitText(t, ctx, `p.sr-only[role=status]`, "Writer could not answer.")

	// Rename the chat in the list, then delete it.
	conv := `[data-testid=conversation]`
	run(t, ctx, "renaming the chat",
		chromedp.Click(conv+` button[aria-label^="Rename"]`, chromedp.ByQuery),
		chromedp.WaitVisible(conv+` input`, chromedp.ByQuery),
		retype(conv+` input`, "Branch tests"),
		pressEnter(),
		chromedp.WaitNotPresent(conv+` input`, chromedp.ByQuery),
	)
	waitText(t, ctx, conv, "Branch tests")
	waitText(t, ctx, `.chat-title`, "Branch tests")
	var list struct {
		Data []struct{ ID, Title string }
	}
	if code := r.call(t, ann.key, "GET", "/api/conversations", nil, &list); code != http.StatusOK || len(list.Data) != 1 || list.Data[0].Title != "Branch tests" {
		t.Fatalf("conversations after the rename: HTTP %d %+v", code, list.Data)
	}
	run(t, ctx, "deleting the chat",
		chromedp.Click(conv+` button[aria-label^="Delete"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] [data-testid=confirm-delete]`, chromedp.ByQuery),
		chromedp.Click(`dialog[open] [data-testid=confirm-delete]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(conv, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=chat-empty]`, chromedp.ByQuery),
	)
	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	if url != r.Base+"/" {
		t.Errorf("after deleting the open chat the address is %s, want a new chat", url)
	}
	if code := r.call(t, ann.key, "GET", "/api/conversations/"+list.Data[0].ID, nil, nil); code != http.StatusNotFound {
		t.Errorf("the deleted conversation: HTTP %d, want 404", code)
	}
}

// cutProxy is a TCP proxy to a relay whose open connections a test can cut,
// as a lost network does; new connections go through as before.
type cutProxy struct {
	Base  string
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// startCutProxy proxies a free local port to the relay at base; it stops when
// the test ends.
func startCutProxy(t *testing.T, base string) *cutProxy {
	t.Helper()
	target := strings.TrimPrefix(base, "http://")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{Base: "http://" + l.Addr().String(), conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		l.Close()
		p.cut()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[u] = true, true
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// cut closes every connection open through the proxy.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// TestChatReconnectsAfterNetworkLoss: the connection of an answer being
// written is cut; the page says it is reconnecting, picks the stream up from
// the last event it had, and the answer completes with nothing lost or twice.
// Another tab opening the chat meanwhile finds the run (GET /api/runs) and
// follows it live.
func TestChatReconnectsAfterNetworkLoss(t *testing.T) {
	browser := newBrowser(t)
	words := make([]string, 100)
	for i := range words {
		words[i] = fmt.Sprintf("w%02d", i)
	}
	answer := strings.Join(words, " ") + "."
	mock := llmtest.StartAimock(t, fmt.Sprintf(`{"fixtures":[
 {"match":{"userMessage":"count"},"response":{"content":%q},"latency":120,"chunkSize":4}]}`, answer))
	r := startRelay(t, mockEndpointConfig(mock, ""), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{"name": "Counter", "instructions": "Count."})
	proxy := startCutProxy(t, r.Base)
	ann := newChatterAt(t, r, proxy.Base, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, proxy.Base)
	pickAgent(t, ctx, "Counter")
	sendChat(t, ctx, "count")
	waitText(t, ctx, `[data-testid=message][data-role=assistant]`, "w05")
	proxy.cut()
	run(t, ctx, "seeing that the page reconnects",
		chromedp.Poll(`!!document.querySelector('[data-testid=reconnecting]')`, nil, chromedp.WithPollingTimeout(20*time.Second)))
	var live string
	run(t, ctx, "reading the answer while it is written", chromedp.Poll(`(() => {
		const a = document.querySelector('[data-testid=message][data-role=assistant][data-message-id^="live:"] .markdown');
		if (!a) return 'finished';
		const s = a.innerText.trim();
		return s.includes('w30') ? s : false;
	})()`, &live, chromedp.WithPollingTimeout(30*time.Second)))
	if live != "finished" && !strings.HasPrefix(answer, live) {
		t.Errorf("the answer being written after the reconnection:\n%s\nwant the start of:\n%s", live, answer)
	}

	// Another tab, with no record of the run, finds it running and follows it too.
	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	run(t, tab, "opening the chat in another tab",
		chromedp.Navigate(url),
		chromedp.Poll(`!!document.querySelector('[data-testid=message][data-role=assistant][data-message-id^="live:"]')`, nil,
			chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	waitAnswered(t, tab, "w99.")

	waitAnswered(t, ctx, "w99.")
	var got string
	run(t, ctx, "reading the answer", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=message][data-role=assistant] .markdown')].pop().innerText.trim()`, &got))
	if got != answer {
		t.Errorf("the answer after the reconnection:\n%s\nwant:\n%s", got, answer)
	}
}

// TestChatWithoutAgentsSaysWhatToDo: with no agent to chat with, the chat says
// so and links to making one; the message box cannot send.
func TestChatWithoutAgentsSaysWhatToDo(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx
	openChat(t, ctx, r.Base)
	waitText(t, ctx, `[data-testid=chat-empty]`, "No agents yet")
	var href string
	var ok bool
	run(t, ctx, "finding the link",
		chromedp.AttributeValue(`[data-testid=chat-empty] a`, "href", &href, &ok, chromedp.ByQuery))
	if href != "/agents/new" {
		t.Errorf("the empty chat links to %q, want /agents/new", href)
	}
	waitText(t, ctx, `.composer .foot`, "Create an agent to start chatting.")
	var disabled bool
	run(t, ctx, "trying to send", chromedp.SendKeys(`#composer-text`, "hello", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('[data-testid=send]').disabled`, &disabled))
	if !disabled {
		t.Error("the message box can send with no agent")
	}
}

// TestChatSwitchingVersionsKeepsTheMessageInView: in a conversation longer
// than the screen, a person edits the first question (a new, short branch),
// then goes back to the first version with ‹ to compare: the question they
// switched stays where it was on the screen, its switcher under their
// pointer, rather than the view going to the end of the longer branch.
func TestChatSwitchingVersionsKeepsTheMessageInView(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, fmt.Sprintf(`{"fixtures":[
 {"match":{"userMessage":"edited"},"response":{"content":"The edited answer."}},
 {"match":{"userMessage":"turn"},"response":{"content":%q}}]}`, strings.Repeat("A long answer that fills the screen. ", 40)))
	r := startRelay(t, mockEndpointConfig(mock, ""), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	createAgent(t, r, adminKey, map[string]any{"name": "Writer", "instructions": "Write."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Writer")
	const turns = 6
	for i := 1; i <= turns; i++ {
		sendChat(t, ctx, fmt.Sprintf("turn %d", i))
		waitJS(t, ctx, fmt.Sprintf("answer %d", i), fmt.Sprintf(`(() => {
			const a = document.querySelectorAll('[data-testid=message][data-role=assistant]');
			return a.length === %d && !a[%d].dataset.messageId.startsWith('live:');
		})()`, i, i-1))
	}

	first := `[data-testid=message][data-role=user]`
	run(t, ctx, "editing the first question",
		chromedp.Evaluate(`document.querySelector('`+first+`').scrollIntoView()`, nil),
		chromedp.Click(first+` button[aria-label="Edit message"]`, chromedp.ByQuery),
		chromedp.WaitVisible(first+` textarea`, chromedp.ByQuery),
		retype(first+` textarea`, "turn 1 edited"),
		pressEnter(),
	)
	waitAnswered(t, ctx, "The edited answer.")
	waitText(t, ctx, first+` [data-testid=switcher]`, "2/2")

	run(t, ctx, "going back to the first version", chromedp.Click(first+` button[aria-label="Previous edit"]`, chromedp.ByQuery))
	waitJS(t, ctx, "the longer branch", fmt.Sprintf(`document.querySelectorAll('[data-testid=message]').length === %d`, 2*turns))
	run(t, ctx, "letting the view settle", settle())
	var where struct{ Top, Bottom, ViewTop, ViewBottom float64 }
	run(t, ctx, "placing the switcher", chromedp.Evaluate(`(() => {
		const s = document.querySelector('`+first+` [data-testid=switcher]').getBoundingClientRect();
		const v = document.querySelector('.scroller').getBoundingClientRect();
		return {Top: s.top, Bottom: s.bottom, ViewTop: v.top, ViewBottom: v.bottom};
	})()`, &where))
	if where.Top < where.ViewTop || where.Bottom > where.ViewBottom {
		t.Errorf("after switching, the switcher is at %.0f–%.0f px, out of the chat's view (%.0f–%.0f px)", where.Top, where.Bottom, where.ViewTop, where.ViewBottom)
	}
	waitText(t, ctx, first+` [data-testid=switcher]`, "1/2")
}

// TestChatSaysItsAgentIsGone: a chat whose agent was deleted since opens with
// another agent in the picker; the page says that the chat's agent is gone
// and which agent the next message goes to, until that agent has answered.
func TestChatSaysItsAgentIsGone(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, mockEndpointConfig(mock, ""), adminEnv())
	createAgent(t, r, adminKey, map[string]any{"id": "temp", "name": "Temporary", "instructions": "Answer."})
	createAgent(t, r, adminKey, map[string]any{"id": "writer", "name": "Writer", "instructions": "Write."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Temporary")
	sendChat(t, ctx, "hello")
	waitAnswered(t, ctx, "how can I help")
	if isTrue(t, ctx, `!!document.querySelector('[data-testid=agent-gone]')`) {
		t.Error("the chat says its agent is gone while it is there")
	}
	if code := r.call(t, adminKey, "DELETE", "/api/agents/temp", nil, nil); code != http.StatusNoContent {
		t.Fatalf("deleting the agent: HTTP %d", code)
	}

	run(t, ctx, "opening the chat again", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=message][data-role=assistant]`, chromedp.ByQuery))
	waitText(t, ctx, `[data-testid=agent-gone]`, "no longer exists")
	waitText(t, ctx, `[data-testid=agent-gone]`, "Your next message goes to Writer.")
	screenshot(t, ctx, "chat-agent-gone")

	sendChat(t, ctx, "hello")
	waitJS(t, ctx, "Writer's answer", `document.querySelectorAll('[data-testid=message][data-role=assistant]').length === 2 &&
		![...document.querySelectorAll('[data-testid=message][data-role=assistant]')].pop().dataset.messageId.startsWith('live:')`)
	waitJS(t, ctx, "the note gone once Writer answered", `!document.querySelector('[data-testid=agent-gone]')`)
}
