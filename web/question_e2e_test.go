package web_test

// Browser test of a question an MCP server asks in the middle of a tool call
// (docs/ui.md "Chat", docs/api.md "Questions"), with server-everything's
// trigger-elicitation-request, whose schema has every kind of field.
//
// Stable selectors: [data-testid=question] (the card; data-state open, sent
// or answered), [data-field=NAME] (a field of its form, with
// [data-testid=question-field-error]), [data-testid=question-outcome].

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// TestChatAnswersServerQuestion: the agent calls a tool that asks the user a
// question; the chat shows it as a form with the schema's defaults filled in
// and required fields marked; a value the schema refuses is shown at its
// field; the accepted answer reaches the server (its tool result names it),
// the card says it was answered, and the answer goes on.
func TestChatAnswersServerQuestion(t *testing.T) {
	browser := newBrowser(t)
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"sign me up","hasToolResult":false},"response":{"toolCalls":[{"name":"trigger-elicitation-request__mcp__everything","arguments":"{}"}]}},
 {"match":{"userMessage":"sign me up","hasToolResult":true},"response":{"content":"You are signed up. Thank you for answering the questions."},"latency":150,"chunkSize":6}]}`)
	r := startRelay(t, mockEndpointConfig(mock, everything)+"    elicitationTimeout: 300000\n", adminEnv())
	createAgent(t, r, adminKey, map[string]any{"name": "Sign-up", "instructions": "Use the tools.",
		"tools": []string{"trigger-elicitation-request__mcp__everything"}})
	ann := newChatter(t, r, browser, "ann@example.com")
	ctx := ann.ctx

	openChat(t, ctx, r.Base)
	pickAgent(t, ctx, "Sign-up")
	sendChat(t, ctx, "Please sign me up.")
	q := `[data-testid=question]`
	run(t, ctx, "waiting for the question", chromedp.WaitVisible(q+` form`, chromedp.ByQuery))
	waitText(t, ctx, q, "everything asks")
	waitText(t, ctx, q, "Please provide inputs for the following fields:")

	// Defaults are filled in; the required field is marked; each kind of field has its control.
	for _, c := range []struct{ js, what string }{
		{`document.querySelector('` + q + ` [name=firstLine]').value === 'It was a dark and stormy night.'`, "a string's default"},
		{`document.querySelector('` + q + ` [name=integer]').value === '42' && document.querySelector('` + q + ` [name=integer]').max === '100'`, "an integer's default and maximum"},
		{`document.querySelector('` + q + ` [name=email]').type === 'email'`, "an email field"},
		{`document.querySelector('` + q + ` [name=birthdate]').type === 'date'`, "a date field"},
		{`document.querySelector('` + q + ` [name=check]').type === 'checkbox'`, "a checkbox for a boolean"},
		{`document.querySelector('` + q + ` select[name=untitledSingleSelectEnum]').value === 'Monica'`, "an enum's select with its default"},
		{`[...document.querySelector('` + q + ` select[name=titledSingleSelectEnum]').options].some(o => o.text === 'Wonder Woman')`, "oneOf titles as options"},
		{`[...document.querySelector('` + q + ` select[name=legacyTitledEnum]').options].some(o => o.value === 'pet-2' && o.text === 'Dogs')`, "enumNames as options"},
		{`document.querySelector('` + q + ` [data-field=name]').innerText.includes('required')`, "the required field marked"},
	} {
		if !isTrue(t, ctx, c.js) {
			t.Errorf("the question's form lacks %s", c.what)
		}
	}

	// An integer over the schema's maximum is refused at its field.
	run(t, ctx, "answering with an integer too large",
		chromedp.SendKeys(q+` input[name=name]`, "Ann Smith", chromedp.ByQuery),
		fillField(q+` input[name=integer]`, "500"),
		chromedp.Click(q+` button[type=submit]`, chromedp.ByQuery),
	)
	waitText(t, ctx, q+` [data-field=integer] [data-testid=question-field-error]`, "100")

	run(t, ctx, "filling the rest",
		fillField(q+` input[name=integer]`, "7"),
		chromedp.Click(q+` input[name=check]`, chromedp.ByQuery),
		chromedp.SendKeys(q+` input[name=email]`, "ann@example.com", chromedp.ByQuery),
		fillField(q+` select[name=legacyTitledEnum]`, "pet-2"),
	)
	if isTrue(t, ctx, `!!document.querySelector('`+q+` [data-field=integer] [data-testid=question-field-error]')`) {
		t.Error("the integer's error is still shown after it was changed")
	}
	run(t, ctx, "scrolling to the question", chromedp.Evaluate(`document.querySelector('`+q+`').scrollIntoView({block: 'start'}); document.activeElement.blur(); true`, nil))
	screenshot(t, ctx, "question")
	run(t, ctx, "accepting", chromedp.Click(q+` button[type=submit]`, chromedp.ByQuery))
	waitText(t, ctx, q+` [data-testid=question-outcome]`, "Answered")
	if !isTrue(t, ctx, `document.querySelector('`+q+` button[type=submit]').disabled`) {
		t.Error("the answered question still takes answers")
	}
	waitAnswered(t, ctx, "Thank you for answering the questions.")
	card := `[data-testid=tool-card][data-tool="trigger-elicitation-request__mcp__everything"]`
	run(t, ctx, "opening the tool card", chromedp.Evaluate(`document.querySelector('`+card+`').open = true`, nil))
	for _, want := range []string{"Name: Ann Smith", "Email: ann@example.com", "Favorite Integer: 7", "Agreed to terms: true"} {
		waitText(t, ctx, card+` [data-testid=tool-result]`, want)
	}
	if s := answerText(t, ctx); !strings.Contains(s, "You are signed up.") {
		t.Errorf("the answer: %q", s)
	}
}
