package web_test

// Helpers the browser tests of every page share: a config with the aimock
// peer and server-everything, API keys for users, filling fields the way
// Svelte's bindings see it, waiting for a condition in the page, and
// calling the API from the page with its session cookie.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// everythingConfig is a relay.yaml (for startRelay) with the aimock peer at
// aimockURL (llmtest.StartAimock's answer) as the custom endpoint `mock`,
// offering the models mock-small and mock-large, and server-everything (its
// path, mcptest.Peer(t, "PEER_EVERYTHING")) over stdio as the MCP server
// `everything`, whose tool keys are `<tool>__mcp__everything`
// (get-sum__mcp__everything, echo__mcp__everything, …).
func everythingConfig(aimockURL, everythingPath string) string {
	return fmt.Sprintf(`server:
  data_dir: %%DATA%%
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
      models:
        default: [mock-small, mock-large]
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
`, aimockURL, everythingPath)
}

// adminEnv is the environment of a relay serve whose admin is adminKey.
func adminEnv() map[string]string {
	return map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey}
}

// keyFor makes an API key of the user with the id userID, as an admin, and
// returns its secret: a test then sets up through the API what that user owns.
func (r *relay) keyFor(t *testing.T, userID string) string {
	t.Helper()
	var k struct {
		Secret string `json:"secret"`
	}
	if code := r.call(t, adminKey, "POST", "/api/keys", map[string]any{"name": "test", "user_id": userID}, &k); code != http.StatusCreated || k.Secret == "" {
		t.Fatalf("creating an API key for %s: %d", userID, code)
	}
	return k.Secret
}

// fillField sets the value of the input, textarea or select of sel (a CSS
// selector) and sends the input and change events that Svelte's bindings
// and handlers listen to. Unlike chromedp.SendKeys it replaces what is there
// and works on selects.
func fillField(sel, value string) chromedp.Action {
	js := fmt.Sprintf(`(() => {
  const el = document.querySelector(%q);
  if (!el) throw new Error('no element ' + %q);
  const proto = el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, %q);
  if (el instanceof HTMLSelectElement && el.value !== %q) throw new Error(%q + ' has no option ' + %q);
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return true;
})()`, sel, sel, value, value, sel, value)
	return chromedp.Evaluate(js, nil)
}

// waitJS waits until the JavaScript expression js is true in the page.
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	run(t, ctx, "waiting until "+what, chromedp.Poll(js, nil, chromedp.WithPollingTimeout(45*time.Second)))
}

// isTrue evaluates the JavaScript expression js in the page once.
func isTrue(t *testing.T, ctx context.Context, js string) bool {
	t.Helper()
	var ok bool
	run(t, ctx, "evaluating "+js, chromedp.Evaluate(js, &ok))
	return ok
}

// browserFetch calls the API from the page, with the person's session
// cookie, as the UI would, and returns the status and the body's text.
func browserFetch(t *testing.T, ctx context.Context, method, path string, body any) (int, string) {
	t.Helper()
	payload := "undefined"
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		payload = fmt.Sprintf("%q", b)
	}
	js := fmt.Sprintf(`fetch(%q, {method: %q, headers: {'Content-Type': 'application/json', 'Accept': 'application/json'}, credentials: 'same-origin', body: %s})
  .then(async r => ({status: r.status, text: await r.text()}))`, path, method, payload)
	var out struct {
		Status int    `json:"status"`
		Text   string `json:"text"`
	}
	run(t, ctx, method+" "+path+" from the page", chromedp.Evaluate(js, &out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	return out.Status, out.Text
}
