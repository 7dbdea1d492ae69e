package web_test

// Browser tests of the operations pages (docs/ui.md): the first start's setup
// link and signing in, a one-off schedule firing and its run's trace, the
// refusal of another site's form posts, files and the admin's users.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// byText finds an element by its tag and its whole visible text, for buttons
// and links named by what they say.
func byText(tag, text string) string {
	return fmt.Sprintf(`//%s[normalize-space()=%q]`, tag, text)
}

// waitJSWithin polls a JavaScript condition for up to d.
func waitJSWithin(t *testing.T, ctx context.Context, what, js string, d time.Duration) {
	t.Helper()
	run(t, ctx, what, chromedp.Poll(js, nil, chromedp.WithPollingTimeout(d)))
}

// location returns the browser's address.
func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	var u string
	run(t, ctx, "reading the address", chromedp.Location(&u))
	return u
}

// TestFirstStartSetupSignOutSignIn: a Relay started on an empty data
// directory without a bootstrap key prints a setup link; opening it creates
// the first admin, who lands in the app signed in, signs out, is refused with
// a wrong password and signed in with the right one. The link works once.
func TestFirstStartSetupSignOutSignIn(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", nil)
	link := r.setupLink(t)
	if !strings.HasPrefix(link, r.Base+"/setup#") {
		t.Fatalf("setup link %q is not on %s", link, r.Base)
	}
	ctx := newPerson(t, browser)
	const email, password = "admin@example.com", "a long admin password"

	run(t, ctx, "creating the first admin on the setup page",
		chromedp.Navigate(link),
		chromedp.WaitVisible(`input[name=name]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=name]`, "Ada Admin", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=email]`, email, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=password]`, password, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=confirm]`, password, chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`nav#nav`, chromedp.ByQuery),
	)
	waitText(t, ctx, "nav#nav .who", "Ada Admin")
	if u := location(t, ctx); strings.Contains(u, "/setup") || strings.Contains(u, "#") {
		t.Errorf("after setup the address is %s; want the app without the token", u)
	}

	run(t, ctx, "signing out",
		chromedp.Click(`//nav[@id="nav"]//button[normalize-space()="Sign out"]`, chromedp.BySearch),
		chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery),
	)
	run(t, ctx, "signing in with a wrong password",
		chromedp.SendKeys(`input[name=email]`, email, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=password]`, "not the password", chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
	)
	waitText(t, ctx, ".error-note", "wrong email or password")
	if u := location(t, ctx); !strings.HasPrefix(u, r.Base+"/signin") {
		t.Errorf("after a wrong password the address is %s; want the sign-in page", u)
	}
	var navs int
	run(t, ctx, "counting menus", chromedp.Evaluate(`document.querySelectorAll('nav#nav').length`, &navs))
	if navs != 0 {
		t.Errorf("the app's menu shows after a wrong password")
	}
	run(t, ctx, "signing in with the right password",
		fillField(`input[name=password]`, password),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`nav#nav`, chromedp.ByQuery),
	)

	// The link a second time, in another browser: refused, in words.
	other := newPerson(t, browser)
	run(t, other, "opening the used setup link",
		chromedp.Navigate(link),
		chromedp.WaitVisible(`input[name=name]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=name]`, "Mallory", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=email]`, "mallory@example.com", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=password]`, "another long password", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=confirm]`, "another long password", chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.error-note`, chromedp.ByQuery),
	)
	var msg string
	run(t, other, "reading the error", chromedp.Text(`.error-note`, &msg, chromedp.ByQuery))
	if !strings.Contains(msg, "setup") {
		t.Errorf("the used link's error says %q; want it to say the setup link no longer works", msg)
	}
	run(t, other, "counting menus", chromedp.Evaluate(`document.querySelectorAll('nav#nav').length`, &navs))
	if navs != 0 {
		t.Errorf("the used setup link signed someone in")
	}
}

// TestOneOffScheduleFiresAndShowsTrace: a user makes a one-off schedule a few
// seconds ahead on the schedules page, sees when it will run, watches its
// history until the firing succeeded, and opens the run's trace: the model
// request with the prompt in its body, the MCP tool call and the answer.
func TestOneOffScheduleFiresAndShowsTrace(t *testing.T) {
	browser := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"Add 2 and 3 for the weekly check","hasToolResult":false},"response":{"content":"Let me add them with the calculator.","toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"Add 2 and 3 for the weekly check","hasToolResult":true},"response":{"content":"The weekly check is done: 2 + 3 = **5**."}}]}`)
	r := startRelay(t, fmt.Sprintf(`server:
  data_dir: %%DATA%%
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
`, mock, everything), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	ann := r.addUser(t, "ann@example.com", "Ann", "ann's long password", "user")
	key := r.keyFor(t, ann)
	var ag struct{ ID string }
	if code := r.call(t, key, "POST", "/api/agents", map[string]any{"name": "Calculator", "provider": "mock", "model": "calc-1",
		"instructions": "You add numbers with the get-sum tool.", "tools": []string{"get-sum__mcp__everything"}}, &ag); code != http.StatusCreated {
		t.Fatalf("creating the agent: %d", code)
	}

	ctx := newPerson(t, browser)
	// A browser far from UTC, so that the time typed is read in its zone.
	run(t, ctx, "putting the browser in Auckland", emulation.SetTimezoneOverride("Pacific/Auckland"))
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")
	const prompt = "Add 2 and 3 for the weekly check"
	run(t, ctx, "opening the new schedule form",
		chromedp.Navigate(r.Base+"/schedules"),
		chromedp.WaitVisible(byText("button", "New schedule"), chromedp.BySearch),
		chromedp.Click(byText("button", "New schedule"), chromedp.BySearch),
		chromedp.WaitVisible(`dialog form input[name=name]`, chromedp.ByQuery),
		chromedp.SendKeys(`dialog form input[name=name]`, "Weekly check", chromedp.ByQuery),
		chromedp.SendKeys(`dialog form textarea[name=prompt]`, prompt, chromedp.ByQuery),
		chromedp.Click(`dialog form input[name=type][value=once]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog form input[name=run_at]`, chromedp.ByQuery),
	)
	var step, zone string
	run(t, ctx, "reading the date field and the zone",
		chromedp.AttributeValue(`dialog form input[name=run_at]`, "step", &step, nil, chromedp.ByQuery),
		chromedp.Value(`dialog form input[name=timezone]`, &zone, chromedp.ByQuery),
	)
	if step != "1" {
		t.Errorf("the date and time field has step %q; want 1 (seconds)", step)
	}
	if zone != "Pacific/Auckland" {
		t.Errorf("the time zone is %q; want the browser's, Pacific/Auckland", zone)
	}
	// The browser's own time zone is the form's default: the time typed is
	// the browser's wall-clock time, a few seconds ahead.
	var want string
	run(t, ctx, "choosing a time a few seconds ahead", chromedp.Evaluate(`(() => {
		const d = new Date(Date.now() + 15000); d.setMilliseconds(0);
		const p = n => String(n).padStart(2, '0');
		const el = document.querySelector('dialog form input[name=run_at]');
		el.value = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
		el.dispatchEvent(new Event('input', {bubbles: true}));
		return d.toISOString();
	})()`, &want))
	waitJSWithin(t, ctx, "the preview shows the time", `!!document.querySelector('[data-testid=fire-preview] li')`, 20*time.Second)
	run(t, ctx, "creating the schedule",
		chromedp.Click(byText("button", "Create schedule"), chromedp.BySearch),
		chromedp.WaitVisible(`[data-testid=next-run] time`, chromedp.ByQuery),
	)
	var next string
	run(t, ctx, "reading the next run", chromedp.AttributeValue(`[data-testid=next-run] time`, "datetime", &next, nil, chromedp.ByQuery))
	wt, _ := time.Parse(time.RFC3339, want)
	nt, err := time.Parse(time.RFC3339Nano, next)
	if err != nil || !nt.Equal(wt) {
		t.Errorf("next run %q, want %q (the time chosen in the browser's zone)", next, want)
	}
	waitText(t, ctx, "h1", "Weekly check")

	waitJSWithin(t, ctx, "the firing succeeds", `!!document.querySelector('[data-testid=firing][data-status=succeeded] [data-testid=trace-link]')`, 60*time.Second)
	screenshot(t, ctx, "schedules")

	run(t, ctx, "opening the run's trace",
		chromedp.Click(`[data-testid=firing][data-status=succeeded] [data-testid=trace-link]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=timeline]`, chromedp.ByQuery),
	)
	if u := location(t, ctx); !strings.HasPrefix(u, r.Base+"/runs/run_") {
		t.Errorf("the trace link went to %s", u)
	}
	waitText(t, ctx, "[data-testid=run-answer]", "The weekly check is done: 2 + 3 = 5.")
	waitText(t, ctx, "[data-testid=step][data-kind=tool]", "get-sum")
	waitText(t, ctx, "[data-testid=step][data-kind=tool]", "The sum of 2 and 3 is 5")
	waitText(t, ctx, "[data-testid=step][data-kind=model]", "Let me add them with the calculator.")
	var steps []string
	run(t, ctx, "reading the steps", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=step]')].map(s => s.dataset.kind)`, &steps))
	if got := strings.Join(steps, ","); got != "model,tool,model" {
		t.Errorf("steps %s, want model,tool,model", got)
	}
	run(t, ctx, "opening the first request body",
		chromedp.Click(`[data-testid=step][data-kind=model] details.json summary`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=step][data-kind=model] pre.json-body`, chromedp.ByQuery),
	)
	var body string
	run(t, ctx, "reading the request body", chromedp.Text(`[data-testid=step][data-kind=model] pre.json-body`, &body, chromedp.ByQuery))
	var sent struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &sent); err != nil {
		t.Fatalf("the request body shown is not JSON: %v\n%s", err, body)
	}
	if sent.Model != "calc-1" || !strings.Contains(body, prompt) {
		t.Errorf("the request body shown has model %q and lacks the prompt %q:\n%s", sent.Model, prompt, body)
	}
	// Collapsed again, so that the whole timeline is in the picture.
	run(t, ctx, "closing the body", chromedp.Click(`[data-testid=step][data-kind=model] details.json summary`, chromedp.ByQuery))
	screenshot(t, ctx, "run-trace")

	// The run is on the runs page; chosen there, it is exported for Ragas.
	dir := t.TempDir()
	run(t, ctx, "exporting the run for Ragas",
		cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(dir).
			WithBrowserContextID(chromedp.FromContext(ctx).BrowserContextID),
		chromedp.Navigate(r.Base+"/runs"),
		chromedp.WaitVisible(`[data-testid=run-row] input[type=checkbox]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=run-row] input[type=checkbox]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid=export-ragas]`, chromedp.ByQuery),
	)
	waitText(t, ctx, ".ok-note", "Exported 1 sample")
	var sample string
	t.Cleanup(func() {
		if sample == "" {
			entries, _ := os.ReadDir(dir)
			t.Logf("the download folder has %v", entries)
		}
	})
	poll.Until(t, 20*time.Second, "relay-ragas-YYYYMMDD.jsonl downloaded", func() bool {
		if m, _ := filepath.Glob(filepath.Join(dir, "relay-ragas-*.jsonl")); len(m) == 1 {
			if b, err := os.ReadFile(m[0]); err == nil && strings.HasSuffix(string(b), "\n") {
				sample = string(b)
			}
		}
		return sample != ""
	})
	var got struct {
		UserInput string `json:"user_input"`
		Response  string `json:"response"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(sample)), &got); err != nil || got.UserInput != prompt || !strings.Contains(got.Response, "The weekly check is done") {
		t.Errorf("the Ragas sample %q (%v); want the prompt and the answer", sample, err)
	}
}

// TestCrossSiteFormPostRefused: while Ann is signed in, pages of another
// origin post forms to Relay's state-changing routes. From the same site (the
// same host, another port: the browser sends her cookie) Relay refuses with
// 403; from another site the browser does not send the cookie at all. Either
// way nothing happens: her session still works and no key was made.
func TestCrossSiteFormPostRefused(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	ann := r.addUser(t, "ann@example.com", "Ann", "ann's long password", "user")

	// The other origin serves pages that post a form to Relay as soon as they load.
	page := func(path, field string) string {
		input := ""
		if field != "" {
			input = fmt.Sprintf(`<input name=%q value="evil">`, field)
		}
		return fmt.Sprintf(`<!doctype html><title>Win a prize</title><form id=f method=POST action="%s%s">%s</form>
<script>document.getElementById('f').submit()</script>`, r.Base, path, input)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch req.URL.Path {
		case "/logout":
			fmt.Fprint(w, page("/api/auth/logout-all", ""))
		case "/key":
			fmt.Fprint(w, page("/api/keys", "name"))
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(evil.Close)
	port := evil.URL[strings.LastIndex(evil.URL, ":")+1:]

	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")

	// What Relay answered to each form post, by the browser's account.
	var mu sync.Mutex
	statuses := map[string]int64{}
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && strings.HasPrefix(e.Response.URL, r.Base+"/api/") {
			mu.Lock()
			statuses[strings.TrimPrefix(e.Response.URL, r.Base)] = e.Response.Status
			mu.Unlock()
		}
	})
	run(t, ctx, "watching the network", network.Enable())

	for _, c := range []struct {
		name, origin string
		sameSite     bool
	}{
		{"same site, another origin", "http://127.0.0.1:" + port, true},
		{"another site", "http://localhost:" + port, false},
	} {
		for _, p := range []struct{ page, route string }{{"/logout", "/api/auth/logout-all"}, {"/key", "/api/keys"}} {
			mu.Lock()
			delete(statuses, p.route)
			mu.Unlock()
			run(t, ctx, c.name+": a page posting to "+p.route,
				chromedp.Navigate(c.origin+p.page),
				chromedp.Poll(fmt.Sprintf(`location.href.startsWith(%q) && document.readyState === 'complete'`, r.Base+p.route), nil, chromedp.WithPollingTimeout(20*time.Second)),
			)
			var text string
			run(t, ctx, "reading Relay's answer", chromedp.Text("body", &text, chromedp.ByQuery))
			mu.Lock()
			status := statuses[p.route]
			mu.Unlock()
			if c.sameSite {
				if status != http.StatusForbidden || !strings.Contains(text, "cross-origin request refused") {
					t.Errorf("%s: POST %s answered %d %s; want 403, cross-origin request refused", c.name, p.route, status, text)
				}
			} else if status != http.StatusForbidden && status != http.StatusUnauthorized {
				t.Errorf("%s: POST %s answered %d %s; want it refused", c.name, p.route, status, text)
			}

			// Ann is still signed in: her pages load without the sign-in page.
			run(t, ctx, c.name+": Ann's session after the post to "+p.route,
				chromedp.Navigate(r.Base+"/settings"),
				chromedp.WaitVisible(`nav#nav`, chromedp.ByQuery),
			)
			waitText(t, ctx, "[data-testid=profile-name]", "Ann")
		}
	}
	var keys struct {
		Data []struct{ Name string } `json:"data"`
	}
	if code := r.call(t, adminKey, "GET", "/api/keys?user="+ann, nil, &keys); code != http.StatusOK {
		t.Fatalf("listing Ann's keys: %d", code)
	}
	if len(keys.Data) != 0 {
		t.Errorf("another site's form made keys for Ann: %+v", keys.Data)
	}
}

// TestFilesPageUploadsAndShowsReady: a file chosen with the picker is
// uploaded, becomes ready, and is deleted after a confirmation, focus
// staying in the page.
func TestFilesPageUploadsAndShowsReady(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	r.addUser(t, "ann@example.com", "Ann", "ann's long password", "user")
	path := filepath.Join(t.TempDir(), "incident-rules.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("Operators report incidents to the authority within 24 hours.\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")
	run(t, ctx, "opening the files page",
		chromedp.Navigate(r.Base+"/files"),
		chromedp.WaitVisible(`.empty`, chromedp.ByQuery),
	)
	waitText(t, ctx, ".empty", "file search")
	run(t, ctx, "choosing a file", chromedp.SetUploadFiles(`input[data-testid=file-input]`, []string{path}, chromedp.ByQuery))
	waitJSWithin(t, ctx, "the file becomes ready", `!!document.querySelector('[data-testid=file-row][data-name="incident-rules.txt"][data-status=ready]')`, 60*time.Second)
	waitText(t, ctx, "[data-testid=file-row]", "2.4 KB")
	run(t, ctx, "deleting the file",
		chromedp.Click(`button[aria-label="Delete incident-rules.txt"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog [data-testid=confirm]`, chromedp.ByQuery),
		chromedp.Click(`dialog [data-testid=confirm]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.empty`, chromedp.ByQuery),
		settle(),
	)
	// The Delete button that had focus went with its row: focus stays in the
	// page, not at the top of the document.
	if !isTrue(t, ctx, `document.getElementById('main').contains(document.activeElement)`) {
		var at string
		run(t, ctx, "reading the focus", chromedp.Evaluate(`document.activeElement ? document.activeElement.tagName : 'nothing'`, &at))
		t.Errorf("after deleting the file, focus is on %s, not in the page", at)
	}
	run(t, ctx, "reloading", chromedp.Reload(), chromedp.WaitVisible(`.empty`, chromedp.ByQuery))
}

// TestAdminCreatesUserAndDisables: an admin adds a user with a password on
// the users page and puts them in a group; the user signs in in their own
// browser; the admin disables them, and their next page load sends them to
// the sign-in page. The admin's own row cannot be disabled.
func TestAdminCreatesUserAndDisables(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	r.addUser(t, "boss@example.com", "Boss", "the boss's long password", "admin")

	admin := newPerson(t, browser)
	signIn(t, admin, r.Base, "boss@example.com", "the boss's long password")
	run(t, admin, "adding Bob on the users page",
		chromedp.Navigate(r.Base+"/admin/users"),
		chromedp.WaitVisible(byText("button", "New user"), chromedp.BySearch),
		chromedp.Click(byText("button", "New user"), chromedp.BySearch),
		chromedp.WaitVisible(`dialog input[name=email]`, chromedp.ByQuery),
		chromedp.SendKeys(`dialog input[name=email]`, "bob@example.com", chromedp.ByQuery),
		chromedp.SendKeys(`dialog input[name=name]`, "Bob", chromedp.ByQuery),
		chromedp.SendKeys(`dialog input[name=password]`, "bob's long password", chromedp.ByQuery),
		chromedp.Click(byText("button", "Create user"), chromedp.BySearch),
		chromedp.WaitVisible(`[data-testid=user-row][data-email="bob@example.com"]`, chromedp.ByQuery),
	)
	var selfDisabled bool
	run(t, admin, "the admin's own row", chromedp.Evaluate(`(() => {
		const row = document.querySelector('[data-testid=user-row][data-email="boss@example.com"]');
		const b = row.querySelector('button[aria-label^="Disable"]');
		return !!b && b.disabled && row.querySelector('select').disabled;
	})()`, &selfDisabled))
	if !selfDisabled {
		t.Errorf("the admin can disable or demote themself on the users page")
	}
	waitText(t, admin, `[data-testid=user-row][data-email="boss@example.com"]`, "cannot demote or disable yourself")

	run(t, admin, "putting Bob in a group",
		chromedp.Click(byText("button", "New group"), chromedp.BySearch),
		chromedp.WaitVisible(`dialog input[name=group_name]`, chromedp.ByQuery),
		chromedp.SendKeys(`dialog input[name=group_name]`, "Reviewers", chromedp.ByQuery),
		chromedp.Click(`//dialog//label[contains(., "bob@example.com")]/input`, chromedp.BySearch),
		chromedp.Click(byText("button", "Save group"), chromedp.BySearch),
	)
	waitText(t, admin, "[data-testid=group-row]", "1 member: Bob")
	var groups struct {
		Data []struct {
			Name      string   `json:"name"`
			MemberIDs []string `json:"member_ids"`
		} `json:"data"`
	}
	if code := r.call(t, adminKey, "GET", "/api/groups", nil, &groups); code != http.StatusOK || len(groups.Data) != 1 || groups.Data[0].Name != "Reviewers" || len(groups.Data[0].MemberIDs) != 1 {
		t.Errorf("groups after the page made one: %d %+v", code, groups.Data)
	}

	bob := newPerson(t, browser)
	signIn(t, bob, r.Base, "bob@example.com", "bob's long password")

	run(t, admin, "disabling Bob",
		chromedp.Click(`button[aria-label="Disable bob@example.com"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=user-row][data-email="bob@example.com"][data-disabled=true]`, chromedp.ByQuery),
	)
	run(t, bob, "Bob's next page load",
		chromedp.Navigate(r.Base+"/files"),
		chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery),
	)
	if u := location(t, bob); !strings.HasPrefix(u, r.Base+"/signin") {
		t.Errorf("a disabled user's page load went to %s; want the sign-in page", u)
	}
	run(t, bob, "Bob signs in again",
		chromedp.SendKeys(`input[name=email]`, "bob@example.com", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=password]`, "bob's long password", chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
	)
	waitText(t, bob, ".error-note", "wrong email or password")
}

// TestRunTraceFollowsALiveRun: the trace of a run that is still going shows
// it as running and grows as its events arrive, until it has succeeded, with
// no reload.
func TestRunTraceFollowsALiveRun(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"Summarise the incident rules slowly"},"latency":250,"chunkSize":6,
  "response":{"content":"Operators report every incident to the authority within 24 hours, then send a full report within a month, naming the cause and the measures taken."}}]}`)
	r := startRelay(t, fmt.Sprintf(`server:
  data_dir: %%DATA%%
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
`, mock), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	ann := r.addUser(t, "ann@example.com", "Ann", "ann's long password", "user")
	key := r.keyFor(t, ann)
	var ag struct{ ID string }
	if code := r.call(t, key, "POST", "/api/agents", map[string]any{"name": "Summariser", "provider": "mock", "model": "m"}, &ag); code != http.StatusCreated {
		t.Fatalf("creating the agent: %d", code)
	}

	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")

	body, _ := json.Marshal(map[string]string{"agent_id": ag.ID, "text": "Summarise the incident rules slowly"})
	req, _ := http.NewRequest("POST", r.Base+"/api/chat", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	runID := resp.Header.Get("Relay-Run-Id")
	done := make(chan struct{})
	go func() { defer close(done); io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	t.Cleanup(func() { <-done })
	if runID == "" {
		t.Fatalf("no Relay-Run-Id: %d", resp.StatusCode)
	}

	run(t, ctx, "opening the run while it goes",
		chromedp.Navigate(r.Base+"/runs/"+runID),
		chromedp.WaitVisible(`[data-status=running]`, chromedp.ByQuery),
	)
	waitJSWithin(t, ctx, "the run succeeds on the page", `!!document.querySelector('h1 + [data-status=succeeded], .title [data-status=succeeded]')`, 60*time.Second)
	waitText(t, ctx, "[data-testid=run-answer]", "naming the cause and the measures taken.")
	waitText(t, ctx, "[data-testid=step][data-kind=model]", "Operators report every incident")
}

// TestRunTraceShowsTheSummaryRequest: a run whose conversation no longer fits
// its agent's context window shows, in its trace, the request that
// summarised the dropped turns apart from the agent's own turn.
func TestRunTraceShowsTheSummaryRequest(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"Human: First question"},"response":{"content":"The user asked a first question."}},
 {"match":{"userMessage":"First question"},"response":{"content":"First answer."}},
 {"match":{"userMessage":"Second question"},"response":{"content":"Second answer."}}]}`)
	r := startRelay(t, fmt.Sprintf(`server:
  data_dir: %%DATA%%
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
summarization:
  enabled: true
  maxSummaryTokens: 40
`, mock), map[string]string{"RELAY_BOOTSTRAP_API_KEY": adminKey})
	ann := r.addUser(t, "ann@example.com", "Ann", "ann's long password", "user")
	key := r.keyFor(t, ann)
	var ag struct{ ID string }
	if code := r.call(t, key, "POST", "/api/agents", map[string]any{"name": "Brief", "provider": "mock", "model": "m",
		"model_parameters": map[string]any{"maxContextTokens": 400}}, &ag); code != http.StatusCreated {
		t.Fatalf("creating the agent: %d", code)
	}
	chat := func(text, conv string) (runID, convID string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"agent_id": ag.ID, "text": text, "conversation_id": conv})
		req, _ := http.NewRequest("POST", r.Base+"/api/chat", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(out), `"status":"succeeded"`) {
			t.Fatalf("%s: %d %s", text, resp.StatusCode, out)
		}
		m := regexp.MustCompile(`"conversation_id":"([^"]+)"`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("no conversation in %s", out)
		}
		return resp.Header.Get("Relay-Run-Id"), m[1]
	}
	_, conv := chat("First question "+strings.Repeat("about the rules ", 80), "")
	second, _ := chat("Second question "+strings.Repeat("about the rules ", 40), conv)

	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")
	run(t, ctx, "opening the second run's trace",
		chromedp.Navigate(r.Base+"/runs/"+second),
		chromedp.WaitVisible(`[data-testid=step][data-kind=model]`, chromedp.ByQuery),
	)
	waitText(t, ctx, "[data-testid=step][data-kind=model]", "Summary of earlier turns")
	waitText(t, ctx, "[data-testid=step][data-kind=model]", "Model turn 1")
	var steps []string
	run(t, ctx, "reading the steps", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=step][data-kind=model] .what')].map(e => e.textContent.trim())`, &steps))
	if len(steps) != 2 {
		t.Errorf("model steps %q, want the summary and the agent's one turn", steps)
	}
}

// TestAdminSeesMCPServersAndReconnects: the MCP servers page lists the
// configured server with its state; its tools are listed with their
// descriptions, can be filtered, and Reconnect says how it went.
func TestAdminSeesMCPServersAndReconnects(t *testing.T) {
	browser := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	r := startRelay(t, fmt.Sprintf("server:\n  data_dir: %%DATA%%\n  log_level: warn\nmcpServers:\n  everything:\n    command: node\n    args: [%q, stdio]\n", everything), adminEnv())
	r.addUser(t, "boss@example.com", "Boss", "the boss's long password", "admin")

	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "boss@example.com", "the boss's long password")
	run(t, ctx, "showing the tools of server-everything",
		chromedp.Navigate(r.Base+"/admin/mcp"),
		chromedp.WaitVisible(`[data-testid=mcp-server][data-name=everything]`, chromedp.ByQuery),
		chromedp.Click(`[aria-controls="tools-everything"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=mcp-tool]`, chromedp.ByQuery),
	)
	waitText(t, ctx, "[data-testid=mcp-tool]", "get-sum__mcp__everything")
	waitText(t, ctx, "[data-testid=mcp-tool]", "Returns the sum of two numbers")
	waitText(t, ctx, "[data-testid=mcp-server][data-state=connected]", "Connected")
	run(t, ctx, "filtering the tools", fillField(`#tools-everything input[type=search]`, "sum"))
	var shown int
	run(t, ctx, "counting the tools shown", chromedp.Evaluate(`document.querySelectorAll('#tools-everything [data-testid=mcp-tool]').length`, &shown))
	if shown != 1 {
		t.Errorf("%d tools match “sum”; want get-sum alone", shown)
	}
	run(t, ctx, "reconnecting", chromedp.Click(`//li[@data-name="everything"]//button[normalize-space()="Reconnect"]`, chromedp.BySearch))
	waitText(t, ctx, "[data-testid=reconnect-outcome]", "Reconnected")
}

// TestSettingsPasswordAndKeys: on the settings page a user changes their
// password (a wrong current one is refused where it was typed), creates an
// API key whose secret is shown once and works, and revokes it.
func TestSettingsPasswordAndKeys(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, "server:\n  data_dir: %DATA%\n  log_level: warn\n", adminEnv())
	r.addUser(t, "ann@example.com", "Ann", "ann's long password", "user")
	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")

	run(t, ctx, "changing the password with a wrong current one",
		chromedp.Navigate(r.Base+"/settings"),
		chromedp.WaitVisible(`input[name=current]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=current]`, "not my password", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=new]`, "ann's new long password", chromedp.ByQuery),
		chromedp.SendKeys(`input[name=repeat]`, "ann's new long password", chromedp.ByQuery),
		chromedp.Click(byText("button", "Change password"), chromedp.BySearch),
	)
	waitText(t, ctx, "label", "This is not your current password.")
	run(t, ctx, "changing it with the right one",
		fillField(`input[name=current]`, "ann's long password"),
		chromedp.Click(byText("button", "Change password"), chromedp.BySearch),
	)
	waitText(t, ctx, ".ok-note", "Your password is changed")

	run(t, ctx, "creating a key",
		chromedp.SendKeys(`input[name=key_name]`, "laptop", chromedp.ByQuery),
		chromedp.Click(byText("button", "Create key"), chromedp.BySearch),
		chromedp.WaitVisible(`[data-testid=key-secret]`, chromedp.ByQuery),
	)
	waitText(t, ctx, "[data-testid=new-key]", "you won't see it again")
	var secret string
	run(t, ctx, "reading the secret", chromedp.Text(`[data-testid=key-secret]`, &secret, chromedp.ByQuery))
	var me struct {
		Email string `json:"email"`
	}
	if code := r.call(t, secret, "GET", "/api/me", nil, &me); code != http.StatusOK || me.Email != "ann@example.com" {
		t.Fatalf("the new key: %d %+v", code, me)
	}
	run(t, ctx, "revoking it",
		chromedp.Click(byText("button", "I have copied it"), chromedp.BySearch),
		chromedp.Click(`button[aria-label="Revoke laptop"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog [data-testid=confirm]`, chromedp.ByQuery),
		chromedp.Click(`dialog [data-testid=confirm]`, chromedp.ByQuery),
	)
	waitJS(t, ctx, "the key is gone from the list", `!document.querySelector('[data-testid=key-row][data-name=laptop]')`)
	run(t, ctx, "opening the revoked keys", chromedp.Click(`details.revoked summary`, chromedp.ByQuery))
	waitText(t, ctx, "details.revoked li", "revoked")
	// Three minutes later by the page's clock, coming back to the tab: the
	// relative time has followed.
	run(t, ctx, "coming back three minutes later", chromedp.Evaluate(`{
		const real = Date.now.bind(Date);
		Date.now = () => real() + 3 * 60 * 1000;
		window.dispatchEvent(new Event('focus'));
	}`, nil))
	waitText(t, ctx, "details.revoked li", "revoked 3 minutes ago")
	if code := r.call(t, secret, "GET", "/api/me", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("the revoked key answered %d; want 401", code)
	}
	var page string
	run(t, ctx, "reading the page", chromedp.Text("main", &page, chromedp.ByQuery))
	if strings.Contains(page, secret) {
		t.Errorf("the secret is still on the page after it was dismissed")
	}

	run(t, ctx, "signing out", chromedp.Click(`//nav[@id="nav"]//button[normalize-space()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery))
	signIn(t, ctx, r.Base, "ann@example.com", "ann's new long password")
}

// TestScheduleHistoryPagesToOlderFirings: on a phone, the history of a
// schedule that has fired 120 times shows the newest 50; "Show older
// firings" brings the next pages until the oldest firing is on the screen,
// the button goes with the last page and focus moves to the first firing it
// brought. The page's own refresh keeps the older pages shown.
func TestScheduleHistoryPagesToOlderFirings(t *testing.T) {
	browser := newBrowser(t)
	// No model answers: the firings are written to the database as history,
	// and the one run by hand fails.
	r := startRelay(t, mockEndpointConfig("http://127.0.0.1:9", ""), adminEnv())
	agentID := createAgent(t, r, adminKey, map[string]any{"name": "Digest", "instructions": "Summarise."})
	ann := newChatter(t, r, browser, "ann@example.com")
	var sc struct{ ID string }
	if code := r.call(t, ann.key, "POST", "/api/schedules", map[string]any{"agent_id": agentID, "name": "Every minute",
		"prompt": "What is new?", "cron": "* * * * *", "timezone": "UTC", "enabled": false}, &sc); code != http.StatusCreated {
		t.Fatalf("creating the schedule: HTTP %d", code)
	}
	const n = 120
	db, err := sqlite.Open(t.Context(), filepath.Join(r.Dir, "data", "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Truncate(time.Minute).Add(-n * time.Minute)
	for i := range n {
		f := &schedule.Firing{ID: fmt.Sprintf("fire_%03d", i), ScheduleID: sc.ID, FireAt: start.Add(time.Duration(i) * time.Minute),
			Prompt: "What is new?", Status: schedule.FiringSucceeded}
		if i == 0 {
			f.Status, f.Error = schedule.FiringFailed, "the oldest firing's error"
		}
		if err := db.CreateFiring(t.Context(), f); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	ctx := ann.ctx
	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { _ = chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)) })
	const rows = `document.querySelectorAll('[data-testid=firing]').length`
	const oldest = `!!document.querySelector('[data-firing-id=fire_000]')`
	run(t, ctx, "opening the schedule",
		chromedp.Navigate(r.Base+"/schedules/"+sc.ID),
		chromedp.WaitVisible(`[data-testid=older-firings]`, chromedp.ByQuery),
	)
	var count int
	run(t, ctx, "counting the firings", chromedp.Evaluate(rows, &count))
	if count != 50 || isTrue(t, ctx, oldest) {
		t.Errorf("the first page shows %d firings (the oldest among them: %t); want the newest 50", count, isTrue(t, ctx, oldest))
	}
	if !isTrue(t, ctx, `document.querySelector('[data-testid=firing]').dataset.firingId === 'fire_119'`) {
		t.Errorf("the history does not start with the newest firing")
	}
	run(t, ctx, "settling", settle())
	if !isTrue(t, ctx, `(() => { const b = document.querySelector('[data-testid=older-firings]').getBoundingClientRect(); return b.left >= 0 && b.right <= innerWidth && b.height >= 36; })()`) {
		t.Errorf("the Show older firings button is not a whole, tappable button at a phone's width")
	}

	for page, want := range []int{100, 120} {
		run(t, ctx, fmt.Sprintf("showing older firings (page %d)", page+2),
			chromedp.ScrollIntoView(`[data-testid=older-firings]`, chromedp.ByQuery),
			chromedp.Click(`[data-testid=older-firings]`, chromedp.ByQuery),
		)
		waitJS(t, ctx, fmt.Sprintf("%d firings are shown", want), fmt.Sprintf(`%s === %d`, rows, want))
	}
	if !isTrue(t, ctx, oldest) {
		t.Fatalf("the oldest firing is not shown after the last page")
	}
	waitText(t, ctx, `[data-firing-id=fire_000]`, "the oldest firing's error")
	waitJS(t, ctx, "the button is gone with the last page", `!document.querySelector('[data-testid=older-firings]')`)
	if !isTrue(t, ctx, `document.activeElement === document.querySelector('[data-firing-id=fire_019]')`) {
		var at string
		run(t, ctx, "reading the focus", chromedp.Evaluate(`document.activeElement.outerHTML.slice(0, 120)`, &at))
		t.Errorf("focus is on %s; want the first firing of the last page (fire_019)", at)
	}
	waitText(t, ctx, `[role=status]`, "120 in all, the whole history")
	var ids []string
	run(t, ctx, "reading the history", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=firing]')].map(r => r.dataset.firingId)`, &ids))
	for i, id := range ids {
		if want := fmt.Sprintf("fire_%03d", n-1-i); id != want {
			t.Fatalf("row %d is %s, want %s: the history is not newest first, each firing once", i, id, want)
		}
	}
	run(t, ctx, "settling", settle())
	if !isTrue(t, ctx, fitsSideways) {
		t.Errorf("the history of 120 firings does not fit a phone's width")
	}

	// A firing run by hand makes the page refresh often; each refresh keeps
	// the older pages under the newest.
	run(t, ctx, "running the schedule now",
		chromedp.ScrollIntoView(byText("button", "Run now"), chromedp.BySearch),
		chromedp.Click(byText("button", "Run now"), chromedp.BySearch),
	)
	waitJS(t, ctx, "the new firing is shown", rows+` === 121`)
	waitJSWithin(t, ctx, "a refresh shows the new firing moving on", `(() => { const f = document.querySelector('[data-testid=firing]'); return !/^fire_\d{3}$/.test(f.dataset.firingId) && f.dataset.status !== 'queued'; })()`, 60*time.Second)
	if count := 0; !isTrue(t, ctx, oldest) || chromedp.Run(ctx, chromedp.Evaluate(rows, &count)) != nil || count != 121 {
		t.Errorf("after a refresh %d firings are shown (the oldest among them: %t); want all 121", count, isTrue(t, ctx, oldest))
	}
}

// TestListPagesSayTheyAreLoading: while the list of the files, schedules,
// runs or users page is on its way (held back here, as on a slow
// connection), the page says it is loading, not a blank space under its
// heading; once it comes, the note goes.
func TestListPagesSayTheyAreLoading(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, mockEndpointConfig("http://127.0.0.1:9", ""), adminEnv())
	r.addUser(t, "ann@example.com", "Ann", "ann's long password", "admin")
	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, "ann@example.com", "ann's long password")

	held := make(chan fetch.RequestID, 16)
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			held <- e.RequestID
		}
	})
	for _, p := range []struct{ path, api, note string }{
		{"/files", "/api/files", "Loading files…"},
		{"/schedules", "/api/schedules", "Loading schedules…"},
		{"/runs", "/api/runs", "Loading runs…"},
		{"/admin/users", "/api/users", "Loading users…"},
	} {
		run(t, ctx, "holding back "+p.api,
			fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*" + p.api + "*"}}),
			chromedp.Navigate(r.Base+p.path),
		)
		var id fetch.RequestID
		select {
		case id = <-held:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s asked nothing of %s", p.path, p.api)
		}
		if !isTrue(t, ctx, fmt.Sprintf(`(() => { const b = document.querySelector('main [aria-busy=true]'); return !!b && b.innerText.includes(%q); })()`, p.note)) {
			var text string
			run(t, ctx, "reading the page", chromedp.Text("main", &text, chromedp.ByQuery))
			t.Errorf("%s while its list loads says %q; want %q", p.path, text, p.note)
		}
		drawerShot(t, ctx, "loading"+strings.ReplaceAll(p.path, "/", "-"))
		run(t, ctx, "letting "+p.api+" through", fetch.ContinueRequest(id), fetch.Disable())
		for len(held) > 0 {
			run(t, ctx, "letting the rest through", fetch.ContinueRequest(<-held))
		}
		waitJS(t, ctx, "the loading note goes on "+p.path, `!document.querySelector('main [aria-busy=true]')`)
	}
}

// TestFollowingALinkKeepsFocusInThePage: a person who opens a schedule from
// the list with the keyboard finds focus in the schedule's page, not back at
// the top of the document (the link they followed went with the list).
func TestFollowingALinkKeepsFocusInThePage(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, mockEndpointConfig("http://127.0.0.1:9", ""), adminEnv())
	agentID := createAgent(t, r, adminKey, map[string]any{"name": "Digest", "instructions": "Summarise."})
	ann := newChatter(t, r, browser, "ann@example.com")
	if code := r.call(t, ann.key, "POST", "/api/schedules", map[string]any{"agent_id": agentID, "name": "Morning digest",
		"prompt": "What is new?", "cron": "0 7 * * *", "timezone": "UTC", "enabled": false}, nil); code != http.StatusCreated {
		t.Fatalf("creating the schedule: HTTP %d", code)
	}
	ctx := ann.ctx
	link := `[data-testid=schedule-row] a.sched-name`
	run(t, ctx, "opening the schedule from the list with the keyboard",
		chromedp.Navigate(r.Base+"/schedules"),
		chromedp.WaitVisible(link, chromedp.ByQuery),
		chromedp.Focus(link, chromedp.ByQuery),
		chromedp.KeyEvent(kb.Enter),
	)
	waitText(t, ctx, "h1", "Morning digest")
	run(t, ctx, "settling", settle())
	if !isTrue(t, ctx, `document.getElementById('main').contains(document.activeElement)`) {
		var at string
		run(t, ctx, "reading the focus", chromedp.Evaluate(`document.activeElement ? document.activeElement.tagName : 'nothing'`, &at))
		t.Errorf("after following the link, focus is on %s, not in the page", at)
	}
}
