package web_test

// Browser tests of the agents list and the agent builder (docs/ui.md
// "Agents", "Agent builder"). Stable selectors of these pages, for other tests:
//
//	/agents            [data-testid=agent-card][data-agent-id=ID], its [data-testid=badge-permission]
//	                   (Owner, Editor, Viewer), [data-testid=chat-with] (a link to /?agent=ID)
//	/agents/new, /agents/ID
//	                   input[name=name], textarea[name=instructions], #agent-provider, #agent-model-select,
//	                   input[name=tool][value=KEY], [data-testid=save-agent], [data-testid=notice],
//	                   [data-testid=readonly-note], [data-testid=preview-tool], [data-testid=preview-system],
//	                   .svelte-flow__edge[data-source][data-target][data-type], [data-testid=edge-add],
//	                   input[name=edge-to][value=ID], [data-testid=edge-submit], [data-testid=open-versions],
//	                   [data-testid=open-share]

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// helloFixtures make the aimock peer answer "hello" with a greeting.
const helloFixtures = `{"fixtures":[{"match":{"userMessage":"hello"},"response":{"content":"Hi there, how can I help?"}}]}`

// apiAgent is an agent as the tests read it from the API.
type apiAgent struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Instructions string           `json:"instructions"`
	Tools        []string         `json:"tools"`
	Edges        []map[string]any `json:"edges"`
	Version      int              `json:"version"`
	Permission   string           `json:"permission"`
}

// makeAgent creates an agent through the API with the key and returns it.
func (r *relay) makeAgent(t *testing.T, key string, body map[string]any) apiAgent {
	t.Helper()
	var a apiAgent
	if code := r.call(t, key, "POST", "/api/agents", body, &a); code != http.StatusCreated {
		t.Fatalf("creating agent %v: %d", body["name"], code)
	}
	return a
}

// readAgent reads an agent through the API with the key.
func (r *relay) readAgent(t *testing.T, key, id string) apiAgent {
	t.Helper()
	var a apiAgent
	if code := r.call(t, key, "GET", "/api/agents/"+id, nil, &a); code != http.StatusOK {
		t.Fatalf("reading agent %s: %d", id, code)
	}
	return a
}

// A person builds an agent in the browser: names it, picks the mock model and
// the MCP tool get-sum of server-everything from the server's live tool list,
// saves, and sees the tool in the request the model will get.
func TestBuilderAddsMCPToolAndPreviewShowsIt(t *testing.T) {
	alloc := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, everythingConfig(mock, everything), adminEnv())
	annID := r.addUser(t, "ann@example.com", "Ann Jansen", "ann-password-1", "user")
	// Agents to connect to, shared with everyone, for the picture of the graph.
	r.makeAgent(t, adminKey, map[string]any{"id": "permits", "name": "Permits specialist", "provider": "mock", "model": "mock-small", "shared": true})
	r.makeAgent(t, adminKey, map[string]any{"id": "summariser", "name": "Summariser", "provider": "mock", "model": "mock-small", "shared": true})
	r.makeAgent(t, adminKey, map[string]any{"id": "citations", "name": "Citation checker", "provider": "mock", "model": "mock-small", "shared": true})

	ctx := newPerson(t, alloc)
	signIn(t, ctx, r.Base, "ann@example.com", "ann-password-1")
	run(t, ctx, "opening the builder",
		chromedp.Navigate(r.Base+"/agents"),
		chromedp.WaitVisible(`[data-testid=new-agent]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=new-agent]`, chromedp.ByQuery),
		chromedp.WaitVisible(`input[name=name]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=name]`, "Regulations expert", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=description]`, "Answers questions on the nuclear energy act, citing its sections", chromedp.ByQuery),
		chromedp.SendKeys(`textarea[name=instructions]`, "You are an expert in nuclear safety regulations. Cite the sections you rely on. Today is ", chromedp.ByQuery),
	)
	// The placeholder chip inserts at the cursor.
	run(t, ctx, "inserting a placeholder",
		chromedp.Click(`[data-testid=placeholder]`, chromedp.ByQuery),
	)
	waitJS(t, ctx, "the placeholder is in the instructions",
		`document.querySelector('textarea[name=instructions]').value.endsWith('Today is {{current_date}}')`)
	run(t, ctx, "choosing the model among those the server lists for the provider",
		fillField(`#agent-provider`, "mock"),
		chromedp.WaitVisible(`#agent-model-select`, chromedp.ByQuery),
		fillField(`#agent-model-select`, "mock-large"),
		fillField(`#param-temperature`, "0.2"),
	)
	const tool = `input[name=tool][value="get-sum__mcp__everything"]`
	run(t, ctx, "ticking the MCP tool get-sum of everything",
		chromedp.WaitVisible(tool, chromedp.ByQuery),
		chromedp.Click(tool, chromedp.ByQuery),
	)
	waitJS(t, ctx, "the server's state is shown", `[...document.querySelectorAll('[data-server=everything] [data-testid=mcp-state]')].some(e => e.innerText.includes('connected'))`)
	waitText(t, ctx, `[data-testid=unsaved]`, "Unsaved changes")
	run(t, ctx, "creating the agent", chromedp.Click(`[data-testid=save-agent]`, chromedp.ByQuery))
	waitText(t, ctx, `[data-testid=notice]`, "was created")
	waitText(t, ctx, `[data-testid=preview-tool]`, "get-sum__mcp__everything")
	waitText(t, ctx, `[data-testid=preview-system]`, "You are an expert in nuclear safety regulations.")

	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	id := url[strings.LastIndex(url, "/")+1:]
	if !strings.HasPrefix(id, "agent_") {
		t.Fatalf("after creating, the address is %s, want /agents/agent_…", url)
	}
	a := r.readAgent(t, adminKey, id)
	if !slices.Contains(a.Tools, "get-sum__mcp__everything") || a.Name != "Regulations expert" || a.Version != 1 ||
		!strings.HasSuffix(a.Instructions, "Today is {{current_date}}") {
		t.Errorf("the agent as stored: %+v", a)
	}
	if a.Permission != "" && a.Permission != "owner" {
		t.Errorf("the author's permission is %q, want owner", a.Permission)
	}
	var owned struct {
		Author string `json:"author"`
	}
	r.call(t, adminKey, "GET", "/api/agents/"+id, nil, &owned)
	if owned.Author != annID {
		t.Errorf("author %q, want Ann (%s)", owned.Author, annID)
	}

	// For the picture: a handoff to the permits specialist and two agents
	// that run side by side after it, as saved through the API.
	if code := r.call(t, adminKey, "PATCH", "/api/agents/"+id, map[string]any{"edges": []map[string]any{
		{"from": id, "to": "permits", "edgeType": "handoff", "description": "Questions about permits", "promptKey": "question"},
		{"from": id, "to": []string{"summariser", "citations"}, "edgeType": "direct", "prompt": "Check this answer: {results}"},
	}}, nil); code != http.StatusOK {
		t.Fatalf("adding edges: %d", code)
	}
	run(t, ctx, "reloading the builder", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=agent-graph]`, chromedp.ByQuery))
	waitJS(t, ctx, "the graph shows the three edges", `document.querySelectorAll('.svelte-flow__edge[data-source]').length === 3`)
	waitJS(t, ctx, "the parallel group is highlighted", `document.querySelector('[data-testid=graph-group]') !== null`)
	waitText(t, ctx, `[data-testid=preview-tool]`, "lc_transfer_to_permits")
	run(t, ctx, "scrolling to the top", chromedp.Evaluate(`window.scrollTo(0, 0)`, nil))
	screenshot(t, ctx, "builder")
}

// A person connects an agent to another in the graph editor's form: the
// graph draws the saved handoff and the agent's edges hold it; a drag in the
// graph adds one too.
func TestGraphEditorAddsHandoffEdge(t *testing.T) {
	alloc := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, everythingConfig(mock, everything), adminEnv())
	annID := r.addUser(t, "ann@example.com", "Ann Jansen", "ann-password-1", "user")
	key := r.keyFor(t, annID)
	a := r.makeAgent(t, key, map[string]any{"name": "Front desk", "provider": "mock", "model": "mock-small", "instructions": "Route questions."})
	b := r.makeAgent(t, key, map[string]any{"name": "Permits specialist", "provider": "mock", "model": "mock-small"})

	ctx := newPerson(t, alloc)
	signIn(t, ctx, r.Base, "ann@example.com", "ann-password-1")
	target := fmt.Sprintf(`input[name=edge-to][value=%q]`, b.ID)
	run(t, ctx, "adding a handoff edge in the form",
		chromedp.Navigate(r.Base+"/agents/"+a.ID),
		chromedp.WaitVisible(`[data-testid=agent-graph] .svelte-flow__node`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=edge-add]`, chromedp.ByQuery),
		chromedp.WaitVisible(target, chromedp.ByQuery),
		settle(),
		chromedp.Click(target, chromedp.ByQuery),
		chromedp.Click(`input[name=edge-type][value=handoff]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=edge-description]`, "Questions about permits", chromedp.ByQuery),
	)
	waitJS(t, ctx, "the target is ticked", fmt.Sprintf(`document.querySelector(%q)?.checked === true`, target))
	run(t, ctx, "adding the edge", chromedp.Click(`[data-testid=edge-submit]`, chromedp.ByQuery))
	edge := fmt.Sprintf(`.svelte-flow__edge[data-source=%q][data-target=%q][data-type=handoff]`, a.ID, b.ID)
	waitJS(t, ctx, "the graph draws the unsaved edge", fmt.Sprintf(`document.querySelector(%q) !== null`, edge+`[data-unsaved=true]`))
	waitText(t, ctx, `[data-testid=edge-item]`, "Permits specialist")
	// The preview already shows the unsaved handoff's tool.
	waitText(t, ctx, `[data-testid=preview-tool]`, "lc_transfer_to_"+b.ID)
	run(t, ctx, "saving", chromedp.Click(`[data-testid=save-agent]`, chromedp.ByQuery))
	waitText(t, ctx, `[data-testid=notice]`, "Saved as version 2")
	waitJS(t, ctx, "the graph draws the saved edge, as the server resolved it",
		fmt.Sprintf(`document.querySelector(%q) !== null && document.querySelectorAll('[data-testid=graph-node]').length === 2`, edge+`[data-unsaved=false]`))

	got := r.readAgent(t, key, a.ID)
	if len(got.Edges) != 1 || got.Edges[0]["from"] != a.ID || got.Edges[0]["to"] != b.ID || got.Edges[0]["edgeType"] != "handoff" ||
		got.Edges[0]["description"] != "Questions about permits" || got.Version != 2 {
		t.Errorf("the agent's edges after saving: %+v (version %d)", got.Edges, got.Version)
	}

	// Dragging from the agent's lower dot onto another agent, placed in the
	// graph with "Show an agent…", adds a handoff to it.
	c := r.makeAgent(t, key, map[string]any{"name": "Summariser", "provider": "mock", "model": "mock-small"})
	run(t, ctx, "reloading and placing the third agent in the graph",
		chromedp.Reload(),
		chromedp.WaitVisible(`[data-testid=agent-graph] .svelte-flow__node`, chromedp.ByQuery),
		chromedp.WaitVisible(`select[aria-label^="Show another agent"]`, chromedp.ByQuery),
		fillField(`select[aria-label^="Show another agent"]`, c.ID),
		chromedp.Evaluate(`document.querySelector('#graph-title').scrollIntoView()`, nil),
	)
	waitJS(t, ctx, "the third agent is in the graph", fmt.Sprintf(`document.querySelector('[data-testid=graph-node][data-agent-id=%q]') !== null`, c.ID))
	var from, to []float64
	run(t, ctx, "finding where to drag",
		settle(),
		chromedp.Evaluate(fmt.Sprintf(`(() => { const r = document.querySelector('.svelte-flow__node[data-id=%q] .svelte-flow__handle.source').getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`, a.ID), &from),
		chromedp.Evaluate(fmt.Sprintf(`(() => { const r = document.querySelector('.svelte-flow__node[data-id=%q]').getBoundingClientRect(); return [r.x + r.width/3, r.y + r.height/2]; })()`, c.ID), &to),
	)
	run(t, ctx, "dragging from the agent to the third one",
		chromedp.MouseEvent("mousePressed", from[0], from[1], chromedp.ButtonLeft),
		chromedp.MouseEvent("mouseMoved", (from[0]+to[0])/2, (from[1]+to[1])/2, chromedp.ButtonLeft),
		chromedp.MouseEvent("mouseMoved", to[0], to[1], chromedp.ButtonLeft),
		chromedp.MouseEvent("mouseReleased", to[0], to[1], chromedp.ButtonLeft),
	)
	waitJS(t, ctx, "the dragged edge is drawn, unsaved", fmt.Sprintf(`document.querySelector(%q) !== null`,
		fmt.Sprintf(`.svelte-flow__edge[data-source=%q][data-target=%q][data-type=handoff][data-unsaved=true]`, a.ID, c.ID)))
	waitJS(t, ctx, "the edge's form is open on it", fmt.Sprintf(`document.querySelector('input[name=edge-to][value=%q]')?.checked === true`, c.ID))
}

// An owner shares an agent with a colleague as a viewer in the share dialog:
// the colleague sees it with a viewer badge, can chat with it and cannot
// change it; a third person does not see it at all.
func TestSharingViewerCanChatNotEdit(t *testing.T) {
	alloc := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, everythingConfig(mock, everything), adminEnv())
	annID := r.addUser(t, "ann@example.com", "Ann Jansen", "ann-password-1", "user")
	bobID := r.addUser(t, "bob@example.com", "Bob de Vries", "bob-password-1", "user")
	r.addUser(t, "carol@example.com", "Carol Smit", "carol-password-1", "user")
	annKey := r.keyFor(t, annID)
	a := r.makeAgent(t, annKey, map[string]any{"name": "Permit checker", "provider": "mock", "model": "mock-small", "instructions": "Check permits."})

	ann := newPerson(t, alloc)
	signIn(t, ann, r.Base, "ann@example.com", "ann-password-1")
	run(t, ann, "sharing with Bob as a viewer",
		chromedp.Navigate(r.Base+"/agents/"+a.ID),
		chromedp.WaitVisible(`[data-testid=open-share]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=open-share]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=share-search]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid=share-search]`, "Bob", chromedp.ByQuery),
	)
	waitText(t, ann, `[data-testid=share-option]`, "Bob de Vries")
	run(t, ann, "picking Bob", chromedp.Click(`[data-testid=share-option]`, chromedp.ByQuery))
	waitText(t, ann, `[data-testid=share-item]`, "Bob de Vries")
	if !isTrue(t, ann, `[...document.querySelectorAll('[data-testid=share-item] select')].every(s => s.value === 'viewer')`) {
		t.Errorf("Bob is not added as a viewer")
	}
	run(t, ann, "saving the shares", chromedp.Click(`[data-testid=share-save]`, chromedp.ByQuery))
	waitText(t, ann, `[data-testid=notice]`, "Sharing saved")
	var shares struct {
		Data []struct {
			PrincipalID string `json:"principal_id"`
			Role        string `json:"role"`
		} `json:"data"`
	}
	if r.call(t, annKey, "GET", "/api/agents/"+a.ID+"/shares", nil, &shares); len(shares.Data) != 1 || shares.Data[0].PrincipalID != bobID || shares.Data[0].Role != "viewer" {
		t.Fatalf("shares after the dialog: %+v", shares.Data)
	}

	bob := newPerson(t, alloc)
	signIn(t, bob, r.Base, "bob@example.com", "bob-password-1")
	card := fmt.Sprintf(`[data-testid=agent-card][data-agent-id=%q]`, a.ID)
	run(t, bob, "opening the agents", chromedp.Navigate(r.Base+"/agents"), chromedp.WaitVisible(card, chromedp.ByQuery))
	waitText(t, bob, card+` [data-testid=badge-permission]`, "Viewer")
	if isTrue(t, bob, fmt.Sprintf(`document.querySelector(%q + ' button[aria-label^="Delete"]') !== null`, card)) {
		t.Errorf("a viewer is offered to delete the agent")
	}
	run(t, bob, "opening the builder",
		chromedp.Navigate(r.Base+"/agents/"+a.ID),
		chromedp.WaitVisible(`[data-testid=readonly-note]`, chromedp.ByQuery),
	)
	waitText(t, bob, `[data-testid=badge-permission]`, "Viewer")
	if !isTrue(t, bob, `document.querySelector('[data-testid=save-agent]') === null && document.querySelector('[data-testid=open-share]') === null`) {
		t.Errorf("a viewer is offered to save or share the agent")
	}
	for _, sel := range []string{`input[name=name]`, `textarea[name=instructions]`, `#agent-provider`, `input[name=tool][value=file_search]`} {
		if !isTrue(t, bob, fmt.Sprintf(`document.querySelector(%q)?.matches(':disabled') === true`, sel)) {
			t.Errorf("%s can be changed by a viewer", sel)
		}
	}
	// Ctrl+S, the builder's shortcut for saving, saves nothing for a viewer.
	run(t, bob, "pressing Ctrl+S", chromedp.KeyEvent("s", chromedp.KeyModifiers(input.ModifierCtrl)))
	if got := r.readAgent(t, annKey, a.ID); got.Version != 1 {
		t.Errorf("after a viewer's visit the agent is version %d", got.Version)
	}
	// A viewer may chat with it: the chat page's link, and the chat API with Bob's cookie.
	if !isTrue(t, bob, fmt.Sprintf(`document.querySelector('[data-testid=chat-with]')?.getAttribute('href') === %q`, "/?agent="+a.ID)) {
		t.Errorf("the builder has no link to chat with the agent")
	}
	status, body := browserFetch(t, bob, "POST", "/api/chat", map[string]any{"agent_id": a.ID, "text": "hello"})
	if status != http.StatusOK || !strings.Contains(body, "run.finished") {
		t.Errorf("Bob chatting with the shared agent: %d\n%s", status, body)
	}
	if status, _ := browserFetch(t, bob, "PATCH", "/api/agents/"+a.ID, map[string]any{"name": "Bob's now"}); status != http.StatusForbidden {
		t.Errorf("a viewer's PATCH: %d, want 403", status)
	}
	// And on the chat page, through the builder's link.
	run(t, bob, "following the link to chat with the agent",
		chromedp.Click(`[data-testid=chat-with]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery),
	)
	sendChat(t, bob, "hello")
	waitAnswered(t, bob, "Hi there, how can I help?")

	carol := newPerson(t, alloc)
	signIn(t, carol, r.Base, "carol@example.com", "carol-password-1")
	run(t, carol, "opening the agents", chromedp.Navigate(r.Base+"/agents"))
	waitText(t, carol, `main`, "Create your first agent")
	if isTrue(t, carol, fmt.Sprintf(`document.querySelector(%q) !== null`, card)) {
		t.Errorf("Carol sees the agent that was not shared with her")
	}
	run(t, carol, "opening the agent's address", chromedp.Navigate(r.Base+"/agents/"+a.ID))
	waitText(t, carol, `main h1`, "Not found")
}

// Two edits of the instructions make versions 2 and 3; the versions dialog
// shows what changed, and restoring version 1 brings its instructions back.
func TestVersionsDiffAndRevert(t *testing.T) {
	alloc := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, everythingConfig(mock, everything), adminEnv())
	annID := r.addUser(t, "ann@example.com", "Ann Jansen", "ann-password-1", "user")
	key := r.keyFor(t, annID)
	a := r.makeAgent(t, key, map[string]any{"name": "Drafter", "provider": "mock", "model": "mock-small", "instructions": "First words."})

	ctx := newPerson(t, alloc)
	signIn(t, ctx, r.Base, "ann@example.com", "ann-password-1")
	run(t, ctx, "opening the builder", chromedp.Navigate(r.Base+"/agents/"+a.ID), chromedp.WaitVisible(`textarea[name=instructions]`, chromedp.ByQuery))
	for i, words := range []string{"Second words.", "Third words."} {
		run(t, ctx, "editing the instructions",
			fillField(`textarea[name=instructions]`, words),
			chromedp.WaitVisible(`[data-testid=unsaved]`, chromedp.ByQuery),
			chromedp.Click(`[data-testid=save-agent]`, chromedp.ByQuery),
		)
		waitText(t, ctx, `[data-testid=notice]`, fmt.Sprintf("Saved as version %d", i+2))
	}
	run(t, ctx, "opening the versions", chromedp.Click(`[data-testid=open-versions]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-testid=version-diff]`, chromedp.ByQuery))
	waitJS(t, ctx, "the diff of versions 2 and 3", `(() => {
  const lines = [...document.querySelectorAll('[data-testid=diff-line]')];
  return lines.some(l => l.dataset.op === '-' && l.innerText.includes('"instructions": "Second words."')) &&
         lines.some(l => l.dataset.op === '+' && l.innerText.includes('"instructions": "Third words."'));
})()`)
	run(t, ctx, "restoring version 1",
		chromedp.Click(`[data-testid=version-item][data-version="1"] [data-testid=version-restore]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=version-restore-confirm]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=version-restore-confirm]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=notice]`, "now version 4")
	run(t, ctx, "closing the dialog", chromedp.KeyEvent(kb.Escape))
	waitJS(t, ctx, "the form holds version 1's instructions", `document.querySelector('textarea[name=instructions]').value === 'First words.'`)
	if got := r.readAgent(t, key, a.ID); got.Instructions != "First words." || got.Version != 4 {
		t.Errorf("after the restore: %q, version %d", got.Instructions, got.Version)
	}
}

// A server that waits for a person's own settings (customUserVars not set
// yet) is, in the builder's tool list, something to do on the Connections
// page: its state says "needs you" and a link goes there, not a red error
// naming a state and a command line (docs/ui.md "Agent builder").
func TestBuilderSendsToConnectionsForServerThatNeedsYou(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, helloFixtures)
	private := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	r := startRelay(t, mockEndpointConfig(mock, "")+fmt.Sprintf(`mcpServers:
  private:
    type: streamable-http
    url: %s
    title: Private notes
    headers:
      X-User: "{{MY_TOKEN}}"
    customUserVars:
      MY_TOKEN:
        title: Your token
`, private), adminEnv())
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	srv := `[data-testid=mcp-server][data-server=private]`
	run(t, ctx, "opening a new agent", chromedp.Navigate(r.Base+"/agents/new"))
	waitText(t, ctx, srv+` [data-testid=mcp-state]`, "needs you")
	waitText(t, ctx, srv+` [data-testid=mcp-needs-you]`, "Open Connections")
	if !isTrue(t, ctx, `document.querySelector('`+srv+` [data-testid=mcp-needs-you] a').getAttribute('href') === '/connections'`) {
		t.Error("the note does not link to the Connections page")
	}
	var alerts []string
	run(t, ctx, "reading the server's alerts", chromedp.Evaluate(`[...document.querySelectorAll('`+srv+` [role=alert]')].map(e => e.innerText)`, &alerts))
	if len(alerts) > 0 {
		t.Errorf("the server shows errors %q, want a note that it needs the person's settings", alerts)
	}
	if s := strings.ToLower(textOf(t, ctx, srv)); strings.Contains(s, "auth_required") || strings.Contains(s, "relay mcp vars") {
		t.Errorf("the server's part of the form shows the raw state or a command line:\n%s", s)
	}
	run(t, ctx, "scrolling to the server", chromedp.ScrollIntoView(srv, chromedp.ByQuery))
	screenshot(t, ctx, "builder-needs-you")
}

// textOf is the text of the first element of sel.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	run(t, ctx, "reading "+sel, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).innerText`, sel), &s))
	return s
}

// TestShareDialogOfAgentSharedWithEveryone: the Share dialog of an agent that
// every user may already use says so, and does not also say that only its
// owner can use it.
func TestShareDialogOfAgentSharedWithEveryone(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, mockEndpointConfig("http://127.0.0.1:9", ""), adminEnv())
	ann := newChatter(t, r, browser, "ann@example.com")
	id := createAgent(t, r, ann.key, map[string]any{"name": "Permit checker", "instructions": "Check permits.", "shared": true})
	run(t, ann.ctx, "opening the Share dialog",
		chromedp.Navigate(r.Base+"/agents/"+id),
		chromedp.WaitVisible(`[data-testid=open-share]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=open-share]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] .ok-note`, chromedp.ByQuery),
	)
	waitText(t, ann.ctx, `dialog[open] .ok-note`, "Everyone can already use this agent")
	waitJS(t, ann.ctx, "the shares are loaded", `!document.querySelector('dialog[open] [aria-busy=true]')`)
	drawerShot(t, ann.ctx, "share-shared-agent")
	var text string
	run(t, ann.ctx, "reading the dialog", chromedp.Text(`dialog[open]`, &text, chromedp.ByQuery))
	if strings.Contains(text, "Only you") {
		t.Errorf("the Share dialog of an agent shared with everyone says only its owner can use it:\n%s", text)
	}
}
