package web_test

// Browser tests of the Connections page (docs/ui.md "Connections"): a user
// gives an MCP server's customUserVars value and their own endpoint key, and
// connects their account at an OAuth-protected MCP server through its
// authorization server, against a real relay serve and real MCP servers
// (internal/mcp/mcptest).
//
// Stable selectors: [data-testid=mcp-account][data-server=NAME] (a server's
// card: [data-testid=account-state], [data-testid=oauth-state],
// [data-testid=connect], [data-testid=vars] with input[name=VAR] and
// [data-var=VAR] [data-testid=var-state]), [data-testid=endpoint-key]
// [data-endpoint=NAME] (input[name=apiKey|baseURL]), [data-testid=connected-note],
// [data-testid=connect-error], and in the chat [data-testid=needs-connection].

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// callToolAs calls an MCP tool through the API as the owner of key and
// returns the text the model would read and whether it is an error.
func callToolAs(t *testing.T, r *relay, key, tool string) (string, bool) {
	t.Helper()
	var res struct {
		Text    string `json:"text"`
		IsError bool   `json:"is_error"`
	}
	if code := r.call(t, key, "POST", "/api/mcp/tools/"+tool+"/call", map[string]any{"arguments": map[string]any{}}, &res); code != http.StatusOK {
		t.Fatalf("calling %s: HTTP %d", tool, code)
	}
	return res.Text, res.IsError
}

// TestConnectionsSettingsKeysAndOAuth: a tool of a server that needs the
// user's settings fails in the chat with a link to the Connections page;
// there the user sets the server's variable (the next call reaches the
// server with it), gets a field error for a base URL Relay refuses and sets
// their endpoint key, then connects their account at an OAuth-protected
// server: the browser goes to its authorization server and comes back to the
// page, which says so and shows the account connected.
func TestConnectionsSettingsKeysAndOAuth(t *testing.T) {
	browser := newBrowser(t)
	as := mcptest.StartOAuth(t, mcptest.OAuthOptions{TokenTTL: time.Hour, DefaultLogin: "ann-at-tickets"})
	private := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	// The model calls the tool once: no one has connected to the server yet,
	// so the request does not offer it, and the call goes back as text.
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"who am i","sequenceIndex":0},"response":{"toolCalls":[{"name":"whoami__mcp__private","arguments":"{}"}]}},
 {"match":{"userMessage":"who am i"},"response":{"content":"The notes server did not answer."}}]}`)
	r := startRelay(t, fmt.Sprintf(`server:
  data_dir: %%DATA%%
  public_url: %%BASE%%
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
    - name: byok
      baseURL: user_provided
      apiKey: user_provided
mcpServers:
  tickets:
    type: streamable-http
    url: %s
    title: Tickets
    requiresOAuth: true
  private:
    type: streamable-http
    url: %s
    title: Private notes
    headers:
      X-User: "{{MY_TOKEN}}"
    customUserVars:
      MY_TOKEN:
        title: Your token
        description: The token on your profile page at Private notes.
`, mock, as.MCPURL, private), adminEnv())
	createAgent(t, r, adminKey, map[string]any{"name": "Notes", "instructions": "Use the tools.", "tools": []string{"whoami__mcp__private"}})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	// In the chat, the failed call links to the Connections page.
	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Notes")
	sendChat(t, ctx, "who am i")
	waitAnswered(t, ctx, "did not answer")
	waitText(t, ctx, `[data-testid=needs-connection]`, "Open Connections")
	run(t, ctx, "following the link to Connections",
		chromedp.Click(`[data-testid=needs-connection] a`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=mcp-account][data-server=private]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `h1`, "Connections")
	waitText(t, ctx, `nav#nav [aria-current=page]`, "Connections")
	priv := `[data-testid=mcp-account][data-server=private]`
	waitText(t, ctx, priv+` [data-testid=account-state]`, "Needs you")
	waitText(t, ctx, priv, "Your token")
	waitText(t, ctx, priv, "The token on your profile page at Private notes.")
	waitText(t, ctx, priv+` [data-var=MY_TOKEN] [data-testid=var-state]`, "Not set")

	// The value is typed into a password field and saved; it is never shown again.
	const token = "ann-token-7Qx2vLp9"
	if !isTrue(t, ctx, `document.querySelector('`+priv+` input[name=MY_TOKEN]').type === 'password'`) {
		t.Error("the variable's field is not a password field")
	}
	run(t, ctx, "saving the token",
		chromedp.SendKeys(priv+` input[name=MY_TOKEN]`, token, chromedp.ByQuery),
		chromedp.Click(priv+` [data-testid=vars] button[type=submit]`, chromedp.ByQuery),
	)
	waitText(t, ctx, priv+` [data-var=MY_TOKEN] [data-testid=var-state]`, "Set")
	waitText(t, ctx, priv+` [data-testid=account-state]`, "Ready")
	if !isTrue(t, ctx, `document.querySelector('`+priv+` input[name=MY_TOKEN]').value === ''`) {
		t.Error("the saved value is still in its field")
	}
	text, isErr := callToolAs(t, r, ann.key, "whoami__mcp__private")
	var who mcptest.Whoami
	if err := json.Unmarshal([]byte(text), &who); err != nil || isErr || who.Header != token {
		t.Fatalf("whoami after saving the token: %q (error %v); want the server to get X-User %q", text, isErr, token)
	}
	// Saving with the field left empty keeps the value: Save is not even offered.
	if !isTrue(t, ctx, `document.querySelector('`+priv+` [data-testid=vars] button[type=submit]').disabled`) {
		t.Error("Save is enabled with every field empty")
	}

	// The endpoint's base URL is refused at its field; the key is saved.
	ep := `[data-testid=endpoint-key][data-endpoint=byok]`
	run(t, ctx, "saving a loopback base URL",
		chromedp.WaitVisible(ep, chromedp.ByQuery),
		chromedp.SendKeys(ep+` input[name=baseURL]`, "http://127.0.0.1:9/v1", chromedp.ByQuery),
		chromedp.Click(ep+` button[type=submit]`, chromedp.ByQuery),
	)
	waitJS(t, ctx, "the base URL's error shows at its field",
		`!!document.querySelector('`+ep+` [data-field=baseURL] .field-error')`)
	run(t, ctx, "saving the API key",
		fillField(ep+` input[name=baseURL]`, ""),
		chromedp.SendKeys(ep+` input[name=apiKey]`, "sk-ann-own-key", chromedp.ByQuery),
		chromedp.Click(ep+` button[type=submit]`, chromedp.ByQuery),
	)
	waitText(t, ctx, ep+` [data-field=apiKey]`, "Set")
	var keys struct {
		Data []struct {
			Endpoint string `json:"endpoint"`
			Fields   []struct {
				Name string `json:"name"`
				Set  bool   `json:"set"`
			} `json:"fields"`
		} `json:"data"`
	}
	r.call(t, ann.key, "GET", "/api/endpoints/keys", nil, &keys)
	if len(keys.Data) != 1 || fmt.Sprint(keys.Data[0].Fields) != "[{apiKey true} {baseURL false}]" {
		t.Errorf("ann's endpoint keys after saving: %+v; want the API key set, the base URL not", keys.Data)
	}

	// Connect: to the authorization server and back.
	tick := `[data-testid=mcp-account][data-server=tickets]`
	waitText(t, ctx, tick+` [data-testid=account-state]`, "Needs you")
	run(t, ctx, "connecting to Tickets",
		chromedp.Click(tick+` [data-testid=connect]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=connected-note]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=connected-note]`, "Tickets")
	waitText(t, ctx, tick+` [data-testid=oauth-state]`, "Connected")
	waitText(t, ctx, tick+` [data-testid=account-state]`, "Ready")
	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	if url != r.Base+"/connections" {
		t.Errorf("the address after connecting is %s; want %s/connections without the callback's query", url, r.Base)
	}
	if text, isErr := callToolAs(t, r, ann.key, "subject__mcp__tickets"); isErr || text != "ann-at-tickets" {
		t.Errorf("subject after connecting: %q (error %v); want the server to see ann's account", text, isErr)
	}
	screenshot(t, ctx, "connections")

	// The server comes to ask for more than ann allowed: the card says so, and
	// connecting again asks for it, and ends the refusal.
	as.RequireScope("tickets:write")
	if text, isErr := callToolAs(t, r, ann.key, "subject__mcp__tickets"); !isErr || !strings.Contains(text, "needs more permissions") {
		t.Fatalf("subject once the server wants more scope: %q (error %v); want the needs-more-permissions result", text, isErr)
	}
	run(t, ctx, "reloading Connections", chromedp.Navigate(r.Base+"/connections"), chromedp.WaitVisible(tick, chromedp.ByQuery))
	waitText(t, ctx, tick+` [data-testid=oauth-state]`, "Needs more permissions")
	waitText(t, ctx, tick+` [data-testid=account-state]`, "Needs you")
	screenshot(t, ctx, "connections-needs-permissions")
	run(t, ctx, "connecting again with more scope",
		chromedp.Click(tick+` [data-testid=connect]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=connected-note]`, chromedp.ByQuery),
	)
	waitText(t, ctx, tick+` [data-testid=oauth-state]`, "Connected")
	waitText(t, ctx, tick, "tickets:write")
	if text, isErr := callToolAs(t, r, ann.key, "subject__mcp__tickets"); isErr || text != "ann-at-tickets" {
		t.Errorf("subject after allowing more: %q (error %v); want the call to go through", text, isErr)
	}

	// Disconnect asks first, then the account is no longer connected.
	run(t, ctx, "disconnecting",
		chromedp.Click(tick+` .oauth button.danger`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] [data-testid=confirm]`, chromedp.ByQuery),
		chromedp.Click(`dialog[open] [data-testid=confirm]`, chromedp.ByQuery),
		chromedp.WaitVisible(tick+` [data-testid=connect]`, chromedp.ByQuery),
	)
	if text, isErr := callToolAs(t, r, ann.key, "subject__mcp__tickets"); !isErr || !strings.Contains(text, "connect your account") {
		t.Errorf("subject after disconnecting: %q (error %v); want the connect-your-account result", text, isErr)
	}
}

// TestConnectionsErrorAndEmpty: the page says what the authorization server
// refused when the callback comes back with an error, and says that nothing
// needs the user on a server without such MCP servers or endpoints.
func TestConnectionsErrorAndEmpty(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, `server:
  data_dir: %DATA%
  log_level: warn
`, adminEnv())
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx
	run(t, ctx, "opening the page as the callback would",
		chromedp.Navigate(r.Base+"/connections?error="+strings.ReplaceAll("the authorization server answered: access_denied", " ", "%20")),
		chromedp.WaitVisible(`[data-testid=connect-error]`, chromedp.ByQuery),
	)
	waitText(t, ctx, `[data-testid=connect-error]`, "access_denied")
	waitText(t, ctx, `.empty`, "Nothing needs you")
	var url string
	run(t, ctx, "reading the address", chromedp.Location(&url))
	if url != r.Base+"/connections" {
		t.Errorf("the address is %s; want the error taken off it", url)
	}
}
