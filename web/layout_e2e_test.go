package web_test

// Browser tests of what a person sees at a phone's width and of what the
// chat keeps while they go elsewhere (docs/ui.md "Chat", "Schedules"): pages
// that fit the screen, the menu drawer as a modal, drafts kept per
// conversation, and time zones by their current names.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	relayrun "github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// fitsSideways is true when nothing in the page reaches past the screen's
// right edge or has been scrolled sideways to show something that does.
const fitsSideways = `document.documentElement.scrollWidth <= innerWidth && scrollX === 0 &&
	[...document.querySelectorAll('*')].every(e => e.scrollLeft === 0 || getComputedStyle(e).overflowX === 'auto' || getComputedStyle(e).overflowX === 'scroll')`

// TestPhonePagesFitTheScreen: at 390×844, with an agent whose name is long,
// the chat page is the screen's height, its message box's placeholder is one
// line, opening the agent picker moves nothing sideways, a wide markdown
// table scrolls inside its answer with its words whole, the run's trace fits
// the screen, and the menu drawer is a modal that Escape closes.
func TestPhonePagesFitTheScreen(t *testing.T) {
	browser := newBrowser(t)
	table := "| Characteristically | Notwithstanding | Incomprehensibilities | Counterrevolutionaries |\n" +
		"|---|---|---|---|\n| one | two | three | four |"
	mock := llmtest.StartAimock(t, fmt.Sprintf(`{"fixtures":[
 {"match":{"userMessage":"a table please"},"response":{"content":%q}}]}`, table))
	r := startRelay(t, mockEndpointConfig(mock, ""), adminEnv())
	const long = "Math helper with a rather long descriptive name"
	createAgent(t, r, adminKey, map[string]any{"name": long, "instructions": "Answer."})
	createAgent(t, r, adminKey, map[string]any{"name": "Writer", "instructions": "Write."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { _ = chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)) })
	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, long)
	run(t, ctx, "settling", settle())
	if !isTrue(t, ctx, `document.documentElement.scrollHeight <= innerHeight`) {
		var h []int
		run(t, ctx, "measuring", chromedp.Evaluate(`[document.documentElement.scrollHeight, innerHeight]`, &h))
		t.Errorf("the chat page is %d px high in a %d px screen", h[0], h[1])
	}
	if !isTrue(t, ctx, `(() => { const b = document.querySelector('#composer-text').getBoundingClientRect(); return b.bottom <= innerHeight; })()`) {
		t.Errorf("the message box is below the screen")
	}
	if !isTrue(t, ctx, `(() => { const ta = document.querySelector('#composer-text'); return ta.placeholder.includes('long descriptive name') && ta.scrollHeight <= ta.clientHeight + 1; })()`) {
		t.Errorf("the message box's placeholder does not fit on one line")
	}
	// Keys and dropping files mean nothing on a phone: their hint takes no line.
	if !isTrue(t, ctx, `(() => { const k = document.querySelector('form .foot .keys'); return !!k && k.getClientRects().length === 0 && document.querySelector('form .foot').getBoundingClientRect().height < 4; })()`) {
		t.Errorf("the hint about Enter and dropping files takes room on a phone")
	}

	run(t, ctx, "opening the agent picker",
		chromedp.Click(`[data-testid=agent-picker]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#agent-list [role=option]`, chromedp.ByQuery),
		settle(),
	)
	if !isTrue(t, ctx, fitsSideways) {
		t.Errorf("opening the agent picker moved the page sideways")
	}
	if !isTrue(t, ctx, `(() => { const b = document.querySelector('#agent-list').getBoundingClientRect(); return b.left >= 0 && b.right <= innerWidth; })()`) {
		t.Errorf("the list of agents reaches past the screen")
	}
	run(t, ctx, "closing the agent picker", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(`#agent-list`, chromedp.ByQuery))

	sendChat(t, ctx, "a table please")
	waitAnswered(t, ctx, "Counterrevolutionaries")
	run(t, ctx, "settling", settle())
	if !isTrue(t, ctx, `!!document.querySelector('[data-testid=message][data-role=assistant] .table-scroll > table')`) {
		t.Errorf("the answer's table is not in a box that scrolls")
	} else if !isTrue(t, ctx, `(() => { const s = document.querySelector('.table-scroll'); return s.scrollWidth > s.clientWidth && getComputedStyle(s).overflowX === 'auto'; })()`) {
		t.Errorf("the table wider than the answer does not scroll sideways")
	}
	var broken []string
	run(t, ctx, "reading the table's headers", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=message][data-role=assistant] th')]
		.filter(th => th.getClientRects().length && (() => { const r = document.createRange(); r.selectNodeContents(th); return r.getClientRects().length > 1; })())
		.map(th => th.innerText)`, &broken))
	if len(broken) > 0 {
		t.Errorf("table headers broken across lines: %q", broken)
	}
	if !isTrue(t, ctx, fitsSideways) {
		t.Errorf("the chat with a wide table scrolls sideways")
	}

	// The run of that answer, at the phone's width.
	var runs struct {
		Data []struct{ ID string } `json:"data"`
	}
	if code := r.call(t, ann.key, "GET", "/api/runs", nil, &runs); code != http.StatusOK || len(runs.Data) == 0 {
		t.Fatalf("listing the runs: HTTP %d, %d runs", code, len(runs.Data))
	}
	run(t, ctx, "opening the run's trace",
		chromedp.Navigate(r.Base+"/runs/"+runs.Data[0].ID),
		chromedp.WaitVisible(`[data-testid=step]`, chromedp.ByQuery),
		settle(),
	)
	if !isTrue(t, ctx, fitsSideways) {
		var w []int
		run(t, ctx, "measuring", chromedp.Evaluate(`[document.documentElement.scrollWidth, innerWidth]`, &w))
		t.Errorf("the run's trace is %d px wide in a %d px screen", w[0], w[1])
	}

	// The menu drawer: focus goes in, Tab stays in, Escape closes it and
	// gives focus back to the Menu button, which it does not hide.
	run(t, ctx, "opening the menu",
		chromedp.Click(`button.menu`, chromedp.ByQuery),
		chromedp.WaitVisible(`#nav a[href="/files"]`, chromedp.ByQuery),
		settle(),
	)
	if !isTrue(t, ctx, `document.querySelector('#nav').contains(document.activeElement)`) {
		t.Errorf("focus is not in the open menu")
	}
	if !isTrue(t, ctx, `(() => { const b = document.querySelector('button.menu').getBoundingClientRect(); const e = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2); return !!e && !!e.closest('#nav button') && /close/i.test(e.closest('button').getAttribute('aria-label') || ''); })()`) {
		t.Errorf("the open menu covers the Menu button with no way to close it there")
	}
	for i := 0; i < 15; i++ {
		run(t, ctx, "pressing Tab", chromedp.KeyEvent(kb.Tab))
		if !isTrue(t, ctx, `document.querySelector('#nav').contains(document.activeElement)`) {
			t.Errorf("Tab %d left the open menu for %s", i+1, "the page")
			break
		}
	}
	run(t, ctx, "pressing Escape", chromedp.KeyEvent(kb.Escape), settle())
	if !isTrue(t, ctx, `!document.querySelector('.shell').classList.contains('nav-open') && document.querySelector('button.menu').getAttribute('aria-expanded') === 'false'`) {
		t.Errorf("Escape did not close the menu")
	}
	if !isTrue(t, ctx, `document.activeElement === document.querySelector('button.menu')`) {
		t.Errorf("after Escape focus is not on the Menu button")
	}
	if !isTrue(t, ctx, `getComputedStyle(document.querySelector('#nav')).visibility === 'hidden'`) {
		t.Errorf("the closed menu's links can still be reached with Tab")
	}
}

// TestChatKeepsDraftPerConversation: what is typed and not sent is still in
// the message box after going to another page and back, each conversation
// keeps its own, and sending it clears it.
func TestChatKeepsDraftPerConversation(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"first question"},"response":{"content":"Answer one."}}]}`)
	r := startRelay(t, mockEndpointConfig(mock, ""), adminEnv())
	createAgent(t, r, adminKey, map[string]any{"name": "Writer", "instructions": "Write."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	box := func() string {
		var v string
		run(t, ctx, "reading the message box", chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery), chromedp.Value(`#composer-text`, &v, chromedp.ByQuery))
		return v
	}
	away := func() {
		run(t, ctx, "going to Files and back to the chat",
			chromedp.Click(`#nav a[href="/files"]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(`#composer-text`, chromedp.ByQuery),
			chromedp.Evaluate(`history.back()`, nil),
			chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery),
		)
	}

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Writer")
	// On a desktop's screen the message box says how keys and files work.
	if !isTrue(t, ctx, `(() => { const k = document.querySelector('form .foot .keys'); return !!k && k.getClientRects().length > 0 && k.innerText.includes('new line'); })()`) {
		t.Errorf("no hint about Enter and dropping files under the message box on a desktop")
	}
	sendChat(t, ctx, "first question")
	waitAnswered(t, ctx, "Answer one.")
	var conv string
	run(t, ctx, "reading the address", chromedp.Location(&conv))
	if v := box(); v != "" {
		t.Errorf("after sending, the message box holds %q", v)
	}

	run(t, ctx, "typing a draft", chromedp.SendKeys(`#composer-text`, "half a thought", chromedp.ByQuery))
	away()
	if v := box(); v != "half a thought" {
		t.Errorf("back in the chat, the message box holds %q, want the draft", v)
	}

	// A new chat has a draft of its own.
	run(t, ctx, "starting a new chat", chromedp.Click(`[data-testid=new-chat]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-testid=chat-empty]`, chromedp.ByQuery))
	if v := box(); v != "" {
		t.Errorf("a new chat's message box holds %q", v)
	}
	run(t, ctx, "typing in the new chat", chromedp.SendKeys(`#composer-text`, "another idea", chromedp.ByQuery))
	run(t, ctx, "going back to the first chat",
		chromedp.Click(`[data-testid=conversation] a`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=message][data-role=assistant]`, chromedp.ByQuery),
	)
	if v := box(); v != "half a thought" {
		t.Errorf("back in the first chat, the message box holds %q, want its draft", v)
	}
	run(t, ctx, "reloading", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=message][data-role=assistant]`, chromedp.ByQuery))
	if v := box(); v != "half a thought" {
		t.Errorf("after a reload, the message box holds %q, want the draft", v)
	}
	run(t, ctx, "sending the draft", chromedp.Focus(`#composer-text`, chromedp.ByQuery), pressEnter())
	waitText(t, ctx, `[data-testid=message][data-role=user]`, "half a thought")
	away()
	if v := box(); v != "" {
		t.Errorf("after sending the draft and coming back, the message box holds %q", v)
	}
	if !strings.Contains(conv, "/c/") {
		t.Errorf("the first chat's address is %s", conv)
	}
}

// TestDraftsStayWithThePersonWhoTypedThem: on a computer people share, what
// one person typed and did not send is not in the message box of the next
// one to sign in in the same tab, whether the first signed out or their
// session ended; the person whose session ended finds their draft again.
func TestDraftsStayWithThePersonWhoTypedThem(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, mockEndpointConfig(mock, ""), adminEnv())
	createAgent(t, r, adminKey, map[string]any{"name": "Writer", "instructions": "Write."})
	const password = "correct horse battery staple"
	r.addUser(t, "bob@example.com", "Bob", password, "user")
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	box := func() string {
		var v string
		run(t, ctx, "reading the message box", chromedp.WaitVisible(`#composer-text`, chromedp.ByQuery), chromedp.Value(`#composer-text`, &v, chromedp.ByQuery))
		return v
	}
	signInHere := func(email, pw string) {
		run(t, ctx, "signing in as "+email,
			chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery),
			chromedp.SendKeys(`input[name=email]`, email, chromedp.ByQuery),
			chromedp.SendKeys(`input[name=password]`, pw, chromedp.ByQuery),
			chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`nav#nav`, chromedp.ByQuery),
			chromedp.Navigate(r.Base+"/"),
		)
	}
	signOut := func() {
		run(t, ctx, "signing out",
			chromedp.Click(byText("button", "Sign out"), chromedp.BySearch),
			chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery),
		)
	}
	const secret = "the offer to Bob is 100k, keep it quiet"

	// Ann signs out with a draft in the box; Bob signs in in the same tab.
	openChat(t, ctx, r.Base)
	run(t, ctx, "typing a draft", chromedp.SendKeys(`#composer-text`, secret, chromedp.ByQuery))
	signOut()
	signInHere("bob@example.com", password)
	if v := box(); v != "" {
		t.Errorf("after Ann signed out, Bob's message box holds %q", v)
	}
	signOut()

	// Ann's session ends while her draft waits; Bob signs in after her.
	signInHere("ann@example.com", password)
	run(t, ctx, "typing a draft", chromedp.SendKeys(`#composer-text`, secret, chromedp.ByQuery))
	if code, _ := browserFetch(t, ctx, "POST", "/api/auth/logout", nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("ending the session: HTTP %d", code)
	}
	run(t, ctx, "reloading without a session", chromedp.Reload(), chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery))
	signInHere("bob@example.com", password)
	if v := box(); v != "" {
		t.Errorf("after Ann's session ended, Bob's message box holds %q", v)
	}
	signOut()

	// Ann's own draft waits for her when only her session ended.
	signInHere("ann@example.com", password)
	run(t, ctx, "typing a draft", chromedp.SendKeys(`#composer-text`, "half a thought", chromedp.ByQuery))
	if code, _ := browserFetch(t, ctx, "POST", "/api/auth/logout", nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("ending the session: HTTP %d", code)
	}
	run(t, ctx, "reloading without a session", chromedp.Reload(), chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery))
	signInHere("ann@example.com", password)
	if v := box(); v != "half a thought" {
		t.Errorf("Ann signed in again after her session ended, and her message box holds %q, want her draft", v)
	}
}

// TestChatListTellsScheduledChatsApart: a schedule's runs are chats titled
// "Name — date time", alike but for their end. On a phone, where each chat's
// rename and delete buttons always show, the list shows each title whole,
// so that the runs can be told apart.
func TestChatListTellsScheduledChatsApart(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, helloFixtures)
	r := startRelay(t, mockEndpointConfig(mock, ""), adminEnv())
	createAgent(t, r, adminKey, map[string]any{"name": "Writer", "instructions": "Write."})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	long := strings.Repeat("A chat with a title far too long for two lines ", 4)
	titles := []string{"Morning briefing — 2026-11-28 07:00 UTC", "Morning briefing — 2026-11-29 07:00 UTC", long}
	for range titles {
		openChat(t, ctx, r.Base)
		pickAgent(t, ctx, "Writer")
		sendChat(t, ctx, "hello")
		waitAnswered(t, ctx, "how can I help")
	}
	var list struct {
		Data []struct{ ID string }
	}
	if code := r.call(t, ann.key, "GET", "/api/conversations", nil, &list); code != http.StatusOK || len(list.Data) != len(titles) {
		t.Fatalf("conversations: HTTP %d, %d of them", code, len(list.Data))
	}
	for i, c := range list.Data {
		if code := r.call(t, ann.key, "PATCH", "/api/conversations/"+c.ID, map[string]any{"title": titles[i]}, nil); code != http.StatusOK {
			t.Fatalf("renaming %s: HTTP %d", c.ID, code)
		}
	}

	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { _ = chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)) })
	openChat(t, ctx, r.Base)
	run(t, ctx, "opening the list of chats",
		chromedp.Click(`button.drawer-toggle`, chromedp.ByQuery),
		chromedp.WaitVisible(`#conv-drawer [data-testid=conversation] a`, chromedp.ByQuery),
		settle(),
	)
	var cut []string
	run(t, ctx, "measuring the titles", chromedp.Evaluate(`[...document.querySelectorAll('#conv-drawer [data-testid=conversation] a .t')]
		.filter(e => e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)`, &cut))
	if len(cut) != 1 || cut[0] != strings.TrimSpace(long) {
		t.Errorf("on a phone, the list cuts the titles %q, want only the one too long for two lines", cut)
	}
	// The long one ends after two lines, with nothing of a third in the link.
	var lines float64
	run(t, ctx, "counting the long title's lines", chromedp.Evaluate(`(() => {
		const e = [...document.querySelectorAll('#conv-drawer [data-testid=conversation] a .t')].find(e => e.innerText.startsWith('A chat with'));
		const a = e.closest('a'), pad = parseFloat(getComputedStyle(a).paddingBottom);
		if (e.getBoundingClientRect().bottom > a.getBoundingClientRect().bottom - pad + 0.5) return -1;
		return e.clientHeight / parseFloat(getComputedStyle(e).lineHeight);
	})()`, &lines))
	if lines < 1.9 || lines > 2.1 {
		t.Errorf("the long title takes %.1f lines in the list (-1: it runs into the link's padding), want 2", lines)
	}
	screenshot(t, ctx, "chat-list-titles")
}

// TestScheduleTakesCurrentZoneNames: the schedule form takes the current
// IANA names of renamed zones (Asia/Kolkata, not only Asia/Calcutta), which
// browsers may not list, and refuses a name that is none.
func TestScheduleTakesCurrentZoneNames(t *testing.T) {
	browser := newBrowser(t)
	mock := llmtest.StartAimock(t, `{"fixtures":[]}`)
	r := startRelay(t, mockEndpointConfig(mock, ""), adminEnv())
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx
	createAgent(t, r, ann.key, map[string]any{"name": "Briefer", "instructions": "Brief."})

	run(t, ctx, "opening the new schedule form",
		chromedp.Navigate(r.Base+"/schedules"),
		chromedp.WaitVisible(byText("button", "New schedule"), chromedp.BySearch),
		chromedp.Click(byText("button", "New schedule"), chromedp.BySearch),
		chromedp.WaitVisible(`dialog form input[name=name]`, chromedp.ByQuery),
		chromedp.SendKeys(`dialog form input[name=name]`, "Morning", chromedp.ByQuery),
		chromedp.SendKeys(`dialog form textarea[name=prompt]`, "Brief me.", chromedp.ByQuery),
		fillField(`dialog form input[name=cron]`, "0 7 * * 1-5"),
	)
	tz := `dialog form input[name=timezone]`
	for _, z := range []string{"Asia/Kolkata", "Europe/Kyiv", "Asia/Ho_Chi_Minh", "Asia/Kathmandu", "Asia/Yangon", "America/Nuuk", "Asia/Calcutta"} {
		run(t, ctx, "choosing "+z, fillField(tz, z))
		if !isTrue(t, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-invalid') === 'false'`, tz)) {
			t.Errorf("the form refuses the time zone %s", z)
		}
	}
	for _, z := range []string{"Mars/Olympus_Mons", "+05:00", "asia/kolkata"} {
		run(t, ctx, "choosing "+z, fillField(tz, z))
		if !isTrue(t, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-invalid') === 'true'`, tz)) {
			t.Errorf("the form takes %q as a time zone", z)
		}
	}
	run(t, ctx, "choosing Asia/Kolkata", fillField(tz, "Asia/Kolkata"))
	waitJS(t, ctx, "the next runs shown", `!!document.querySelector('[data-testid=fire-preview] li')`)
	run(t, ctx, "creating the schedule",
		chromedp.Click(byText("button", "Create schedule"), chromedp.BySearch),
		chromedp.WaitVisible(`[data-testid=next-run] time`, chromedp.ByQuery),
	)
	var list struct {
		Data []struct{ Timezone string } `json:"data"`
	}
	if code := r.call(t, ann.key, "GET", "/api/schedules", nil, &list); code != http.StatusOK || len(list.Data) != 1 || list.Data[0].Timezone != "Asia/Kolkata" {
		t.Errorf("schedules after creating one in Asia/Kolkata: HTTP %d %+v", code, list.Data)
	}
}

// TestChatListPagesToOlderChats: a person whose schedule made 120 chats sees
// the 50 most recently active; "Show older chats" brings the next pages until
// the oldest chat is in the list, the button goes with the last page and
// focus moves to the first chat it brought. A new chat refreshes the list
// and keeps the older pages shown. The search asks the server, so that it
// finds a chat the first page does not hold; clearing it shows the first
// page again. On a phone, the list of chats pages the same way.
func TestChatListPagesToOlderChats(t *testing.T) {
	browser := newBrowser(t)
	// No model answers: the chats are written to the database as history.
	r := startRelay(t, mockEndpointConfig("http://127.0.0.1:9", ""), adminEnv())
	agentID := createAgent(t, r, adminKey, map[string]any{"name": "Digest", "instructions": "Summarise."})
	ann := newChatter(t, r, browser, "ann@example.com")
	const n = 120
	db, err := sqlite.Open(t.Context(), filepath.Join(r.Dir, "data", "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.GetUserByEmail(t.Context(), "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Truncate(time.Minute).Add(-n * time.Minute)
	for i := range n {
		at := start.Add(time.Duration(i) * time.Minute)
		title := "Morning digest — " + at.Format("2006-01-02 15:04") + " UTC"
		if i == 0 {
			title = "Quarterly permit review"
		}
		c := &relayrun.Conversation{ID: fmt.Sprintf("conv_%03d", i), UserID: u.ID, AgentID: agentID, Title: title, CreatedAt: at, UpdatedAt: at}
		if err := db.CreateConversation(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	ctx := ann.ctx
	const items = `document.querySelectorAll('#conv-drawer [data-testid=conversation]').length`
	const oldest = `!!document.querySelector('#conv-drawer [data-conversation-id=conv_000]')`
	const button = `#conv-drawer [data-testid=older-chats]`
	openChat(t, ctx, r.Base)
	run(t, ctx, "waiting for the list", chromedp.WaitVisible(button, chromedp.ByQuery))
	var count int
	run(t, ctx, "counting the chats", chromedp.Evaluate(items, &count))
	if count != 50 || isTrue(t, ctx, oldest) {
		t.Errorf("the first page shows %d chats (the oldest among them: %t); want the 50 most recent", count, isTrue(t, ctx, oldest))
	}
	if !isTrue(t, ctx, `document.querySelector('#conv-drawer [data-testid=conversation]').dataset.conversationId === 'conv_119'`) {
		t.Errorf("the list does not start with the most recent chat")
	}
	run(t, ctx, "scrolling to the end of the list", chromedp.ScrollIntoView(button, chromedp.ByQuery))
	screenshot(t, ctx, "chat-list-first-page")

	for page, want := range []int{100, 120} {
		run(t, ctx, fmt.Sprintf("showing older chats (page %d)", page+2),
			chromedp.ScrollIntoView(button, chromedp.ByQuery),
			chromedp.Click(button, chromedp.ByQuery),
		)
		waitJS(t, ctx, fmt.Sprintf("%d chats are shown", want), fmt.Sprintf(`%s === %d`, items, want))
	}
	if !isTrue(t, ctx, oldest) {
		t.Fatalf("the oldest chat is not listed after the last page")
	}
	waitJS(t, ctx, "the button is gone with the last page", `!document.querySelector('`+button+`')`)
	if !isTrue(t, ctx, `document.activeElement === document.querySelector('#conv-drawer [data-conversation-id=conv_019] a')`) {
		var at string
		run(t, ctx, "reading the focus", chromedp.Evaluate(`document.activeElement.outerHTML.slice(0, 120)`, &at))
		t.Errorf("focus is on %s; want the first chat of the last page (conv_019)", at)
	}
	waitText(t, ctx, `[data-testid=older-chats-note]`, "120 in all")
	var ids []string
	run(t, ctx, "reading the list", chromedp.Evaluate(`[...document.querySelectorAll('#conv-drawer [data-testid=conversation]')].map(e => e.dataset.conversationId)`, &ids))
	for i, id := range ids {
		if want := fmt.Sprintf("conv_%03d", n-1-i); id != want {
			t.Fatalf("chat %d is %s, want %s: the list is not most recent first, each chat once", i, id, want)
		}
	}
	run(t, ctx, "opening the oldest chat",
		chromedp.Click(`#conv-drawer [data-conversation-id=conv_000] a`, chromedp.ByQuery),
		chromedp.WaitVisible(`#conv-drawer [data-conversation-id=conv_000].current`, chromedp.ByQuery),
	)
	screenshot(t, ctx, "chat-list-oldest")

	// A new chat refreshes the list: it comes first, and the older pages
	// shown stay under it.
	run(t, ctx, "starting a new chat", chromedp.Click(`[data-testid=new-chat]`, chromedp.ByQuery))
	sendChat(t, ctx, "Anything new?")
	waitJS(t, ctx, "the new chat heads the list", `(() => { const f = document.querySelector('#conv-drawer [data-testid=conversation]');
		return !/^conv_\d{3}$/.test(f.dataset.conversationId); })()`)
	run(t, ctx, "counting the chats", chromedp.Evaluate(items, &count))
	if count != n+1 || !isTrue(t, ctx, oldest) {
		t.Errorf("after a refresh %d chats are listed (the oldest among them: %t); want all %d", count, isTrue(t, ctx, oldest), n+1)
	}

	// A fresh page holds the first 50 again; the search finds the oldest.
	openChat(t, ctx, r.Base)
	run(t, ctx, "waiting for the list", chromedp.WaitVisible(button, chromedp.ByQuery))
	run(t, ctx, "searching for the oldest chat", chromedp.SendKeys(`#conv-search`, "PERMIT review", chromedp.ByQuery))
	waitJS(t, ctx, "the search finds the oldest chat", oldest+` && `+items+` === 1 && !document.querySelector('`+button+`')`)
	screenshot(t, ctx, "chat-list-search")
	search := func(what, q string) {
		t.Helper()
		run(t, ctx, what, chromedp.Evaluate(fmt.Sprintf(`(() => { const e = document.querySelector('#conv-search');
			e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); })()`, q), nil))
	}
	search("searching for what no title holds", "no such chat")
	waitText(t, ctx, `#conv-drawer nav`, "No chat title contains “no such chat”")
	search("clearing the search", "")
	waitJS(t, ctx, "the first page is back", items+` === 50 && !`+oldest+` && !!document.querySelector('`+button+`')`)

	// On a phone, the list is a drawer that pages the same way.
	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { _ = chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)) })
	openChat(t, ctx, r.Base)
	run(t, ctx, "opening the list of chats",
		chromedp.WaitVisible(button, chromedp.ByQuery),
		settle(),
		chromedp.Click(`button.drawer-toggle`, chromedp.ByQuery),
		chromedp.WaitVisible(`.chat-page.drawer-open`, chromedp.ByQuery),
		chromedp.ScrollIntoView(button, chromedp.ByQuery),
		settle(),
	)
	if !isTrue(t, ctx, `(() => { const b = document.querySelector('`+button+`').getBoundingClientRect(); return b.left >= 0 && b.right <= innerWidth && b.bottom <= innerHeight && b.height >= 36; })()`) {
		t.Errorf("the Show older chats button is not a whole, tappable button at a phone's width")
	}
	drawerShot(t, ctx, "chat-list-older-button-phone")
	run(t, ctx, "showing older chats on a phone", chromedp.Click(button, chromedp.ByQuery))
	waitJS(t, ctx, "100 chats are shown", items+` === 100`)
	if !isTrue(t, ctx, fitsSideways) {
		t.Errorf("the list of 100 chats does not fit a phone's width")
	}
	run(t, ctx, "scrolling to the end of the list", chromedp.ScrollIntoView(button, chromedp.ByQuery), settle())
	drawerShot(t, ctx, "chat-list-more-phone")
}

// drawerShot writes the screen as it is (screenshot takes it at two widths,
// closing a phone's drawer) to -screenshots when it is set, as name.png.
func drawerShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	run(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot(&png))
	dir := *shotsDir
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLongNamesFitWhereTheyAreShown: a person whose email is long and has a
// hyphen sees it whole in the menu's foot, on one line that ends in "…" when
// it is cut (the whole address in its tooltip), not cut in its middle and
// wrapped; and at a phone's width the builder's graph, whose "Show an
// agent…" list names an agent with a long name, stays within the screen.
func TestLongNamesFitWhereTheyAreShown(t *testing.T) {
	browser := newBrowser(t)
	r := startRelay(t, mockEndpointConfig("http://127.0.0.1:9", ""), adminEnv())
	createAgent(t, r, adminKey, map[string]any{"name": "Quarterly report writer for the finance department", "instructions": "Write."})
	const email = "ann.marie.longname@finance-department.example.com"
	const password = "correct horse battery staple"
	id := r.addUser(t, email, "Ann", password, "user")
	writer := createAgent(t, r, r.keyFor(t, id), map[string]any{"name": "Writer", "instructions": "Write."})
	ctx := newPerson(t, browser)
	signIn(t, ctx, r.Base, email, password)

	run(t, ctx, "settling", chromedp.WaitVisible(`.who-mail`, chromedp.ByQuery), settle())
	if !isTrue(t, ctx, `(() => { const m = document.querySelector('.who-mail'); return m.getBoundingClientRect().height < 1.5 * parseFloat(getComputedStyle(m).lineHeight || '16') && m.title === m.textContent; })()`) {
		var lines []string
		run(t, ctx, "reading the email's lines", chromedp.Evaluate(`(() => { const m = document.querySelector('.who-mail'); const r = document.createRange(); r.selectNodeContents(m); return [...r.getClientRects()].map(c => Math.round(c.top) + ':' + Math.round(c.width)).concat(['title=' + m.title]); })()`, &lines))
		t.Errorf("the email in the menu is not one line with the whole address as its tooltip: %q", lines)
	}
	drawerShot(t, ctx, "long-email-desktop")

	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { _ = chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)) })
	sel := `select[aria-label^="Show another agent"]`
	run(t, ctx, "opening the builder",
		chromedp.Navigate(r.Base+"/agents/"+writer),
		chromedp.WaitVisible(sel, chromedp.ByQuery),
		chromedp.ScrollIntoView(sel, chromedp.ByQuery),
		settle(),
	)
	drawerShot(t, ctx, "builder-graph-phone")
	if !isTrue(t, ctx, fitsSideways) {
		var w []int
		run(t, ctx, "measuring", chromedp.Evaluate(`[document.documentElement.scrollWidth, innerWidth]`, &w))
		t.Errorf("the builder is %d px wide in a %d px screen", w[0], w[1])
	}
	if !isTrue(t, ctx, `(() => { const b = document.querySelector(`+"`"+sel+"`"+`).getBoundingClientRect(); return b.left >= 0 && b.right <= innerWidth; })()`) {
		t.Errorf("the graph's Show an agent list reaches past the screen")
	}
}
