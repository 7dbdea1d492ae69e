package window

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/token"
)

// HardMaxToolResultChars caps the default limit of a tool result, whatever
// the budget.
const HardMaxToolResultChars = 400000

// DefaultToolResultChars is the limit of a tool result when
// agents.maxToolResultChars sets none, as LibreChat computes it: 30% of the
// budget at 4 characters a token, at most HardMaxToolResultChars.
func DefaultToolResultChars(budget int) int {
	if budget <= 0 {
		return HardMaxToolResultChars
	}
	return min(budget*3/10*4, HardMaxToolResultChars)
}

// Options configure a Fitter.
type Options struct {
	// Counter counts the tokens of the agent's model.
	Counter *token.Counter
	Budget  Budget
	// MaxToolResultChars is agents.maxToolResultChars: longer tool results are
	// cut to it. 0 means DefaultToolResultChars of the budget; < 0 means never.
	MaxToolResultChars int
	// Summarize, when set, summarises the messages dropped by the first fit,
	// that of the request as built; the summary is appended to the system
	// message (docs/config.md, "summarization"). Later fits of the run drop
	// turns without a summary. Its failure only means no summary.
	Summarize func(ctx context.Context, dropped []llm.Message) (string, error)
	// SummaryTokens is kept free of the budget for the summary.
	SummaryTokens int
}

// SummaryHeader introduces the summary of the dropped turns in the system
// message.
const SummaryHeader = "Summary of the earlier conversation (turns left out to fit the context window):"

// Report is what fitting a request did.
type Report struct {
	// Tokens is the request's count after the last fit.
	Tokens int `json:"tokens"`
	Budget
	// CountedBy says how tokens were counted: an encoding, or an estimate.
	CountedBy string `json:"counted_by"`
	// DroppedMessages and DroppedTurns are the messages and the turns (a user
	// message and what answered it) left out to fit, over every fit so far.
	DroppedMessages int `json:"dropped_messages"`
	DroppedTurns    int `json:"dropped_turns"`
	// TruncatedToolResults counts the tool results cut to maxToolResultChars.
	TruncatedToolResults int `json:"truncated_tool_results"`
	// SummarizedMessages counts the dropped messages a summary stands for.
	SummarizedMessages int `json:"summarized_messages,omitempty"`
	// SummaryError says why the dropped turns have no summary.
	SummaryError string `json:"summary_error,omitempty"`
}

// Fitter keeps the requests of one agent's run inside its budget. Its Fit is
// called on the built request and again before every model call of the
// agent's loop, as tool results pile up; what it dropped stays dropped.
type Fitter struct {
	opts Options

	mu     sync.Mutex
	report Report
	counts []int // scratch: the count of each message
	fitted bool  // Fit ran: later fits do not summarise
}

// New returns a Fitter.
func New(o Options) *Fitter {
	if o.MaxToolResultChars == 0 {
		o.MaxToolResultChars = DefaultToolResultChars(o.Budget.Tokens)
	}
	return &Fitter{opts: o, report: Report{Budget: o.Budget, CountedBy: o.Counter.Method()}}
}

// Report returns what the fitter did so far.
func (f *Fitter) Report() Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.report
}

// ErrorPrefix begins the error of a request that cannot fit its context
// window, so that callers can tell it from other failures of a run (the /v1
// API answers it as OpenAI does, context_length_exceeded).
const ErrorPrefix = "context window:"

// Fit makes req fit the budget, in place. Tool results longer than the limit
// are cut, with a marker saying so. Then, while the request counts more than
// the budget, the oldest turn of the conversation is dropped: a turn is a user
// message and every message up to the next one, so an assistant message that
// calls tools goes with the tool messages that answer it. The system message
// (the first, when it is one) and the newest turn — from the question the run
// answers, or the last user message, to the end, which in a run holds what
// the agents before this one and its own loop added — always stay;
// a tool message whose call is gone, or a call whose results are, is dropped
// too. When the newest turn alone does not fit, Fit returns a fault.Invalid
// error and leaves req as it was: nothing is to be sent.
//
// With Options.Summarize, the first fit keeps Options.SummaryTokens free
// and, when it drops turns, has the dropped messages summarised and appends
// the summary to the system message (adding one when there is none); when
// the summary does not fit after all, more turns are dropped. Later fits, as
// tool results pile up in the run, drop turns without a summary: the system
// message stays as the run began.
func (f *Fitter) Fit(ctx context.Context, req *llm.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := !f.fitted
	f.fitted = true
	c := f.opts.Counter
	budget := f.opts.Budget.Tokens
	if budget <= 0 {
		return fault.New(fault.Invalid, ErrorPrefix+" the reply's maximum of %d tokens (max_tokens) leaves no room in the %d-token context window of model %q", f.opts.Budget.Reply, f.opts.Budget.Context, req.Model)
	}
	msgs := req.Messages
	f.cutResults(msgs)
	// Each message is counted once (from the cache when it was before).
	total := c.Tools(req.Tools) + token.ReplyPriming
	f.counts = f.counts[:0]
	for i := range msgs {
		n := c.Message(&msgs[i])
		f.counts = append(f.counts, n)
		total += n
	}
	if total <= budget {
		f.report.Tokens = total
		return nil
	}
	sys := 0
	if len(msgs) > 0 && msgs[0].Role == llm.RoleSystem {
		sys = 1
	}
	newest := newestTurn(msgs, sys)
	// Drop whole turns, oldest first, until the rest fits.
	keep := make([]bool, len(msgs))
	for i := range keep {
		keep[i] = true
	}
	need, turns, from := total, 0, sys
	dropUntil := func(limit int) {
		for from < newest && need > limit {
			end := from + 1
			for end < newest && msgs[end].Role != llm.RoleUser {
				end++
			}
			for i := from; i < end; i++ {
				keep[i] = false
				need -= f.counts[i]
			}
			turns++
			from = end
		}
		// No tool message without its call, no call without its results.
		need -= orphans(msgs, keep, f.counts, sys, newest)
	}
	summarize := f.opts.Summarize != nil && first && f.opts.SummaryTokens > 0 && f.opts.SummaryTokens < budget
	limit := budget
	if summarize {
		limit = budget - f.opts.SummaryTokens
	}
	dropUntil(limit)
	var summary *llm.Message // the system message with the summary
	summarized := 0
	if summarize && from > sys {
		var dropped []llm.Message
		for i := sys; i < newest; i++ {
			if !keep[i] {
				dropped = append(dropped, msgs[i])
			}
		}
		text, err := f.opts.Summarize(ctx, dropped)
		text = strings.TrimSpace(text)
		switch {
		case err != nil:
			f.report.SummaryError = err.Error()
		case text != "":
			m := llm.Message{Role: llm.RoleSystem, Content: SummaryHeader + "\n" + text}
			if sys == 1 {
				m = msgs[0]
				m.Content += "\n\n" + SummaryHeader + "\n" + text
				need -= f.counts[0]
			}
			added := c.Message(&m)
			need += added
			summary, summarized = &m, len(dropped)
			dropUntil(budget)
			if need > budget { // no turn left to drop for it: the request goes without it
				need -= added
				if sys == 1 {
					need += f.counts[0]
					added -= f.counts[0]
				}
				summary, summarized = nil, 0
				f.report.SummaryError = fmt.Sprintf("the summary (%d tokens) does not fit beside the newest turn", added)
			}
		}
	}
	if need > budget {
		return fault.New(fault.Invalid, ErrorPrefix+" the system prompt, the tools and the newest message need %d tokens (%s), more than the budget of %d (%s)",
			need, c.Method(), budget, describe(f.opts.Budget, req.Model))
	}
	out := msgs[:0]
	dropped := 0
	for i := range msgs {
		if keep[i] {
			out = append(out, msgs[i])
		} else {
			dropped++
		}
	}
	clear(msgs[len(out):]) // what was dropped is not kept alive by the array
	if summary != nil {
		if sys == 1 {
			out[0] = *summary
		} else {
			out = slices.Insert(out, 0, *summary)
		}
		f.report.SummarizedMessages += summarized
	}
	req.Messages = out
	f.report.Tokens = need
	f.report.DroppedMessages += dropped
	f.report.DroppedTurns += turns
	return nil
}

// CutResults cuts the tool results of req longer than the limit, as Fit
// does, and counts them in the report. It is for a request whose tool
// messages are about to be rewritten as text (prompt.ForeignCalls: another
// agent's calls in a handoff, an earlier turn's calls of a tool the agent no
// longer has), which Fit would no longer see as tool results: every result
// sent to a model is cut (docs/config.md "maxToolResultChars").
func (f *Fitter) CutResults(req *llm.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cutResults(req.Messages)
}

// cutResults cuts the tool messages of msgs to the limit, in place; f.mu is
// held. A result cut already is left as it is and not counted again.
func (f *Fitter) cutResults(msgs []llm.Message) {
	limit := f.opts.MaxToolResultChars
	if limit <= 0 {
		return
	}
	for i := range msgs {
		if msgs[i].Role == llm.RoleTool && cutResult(&msgs[i], limit) {
			f.report.TruncatedToolResults++
		}
	}
}

// newestTurn is where the newest turn of msgs begins, the system message
// (msgs[:sys]) aside: at the question the run answers (llm.Message.Question),
// so that the user messages an agents' flow adds after it (a handoff's note)
// do not leave it to be dropped; else at the last user message; else, with no
// user message, at sys: nothing is a turn to drop.
func newestTurn(msgs []llm.Message, sys int) int {
	last := -1
	for i := len(msgs) - 1; i >= sys; i-- {
		if msgs[i].Question {
			return i
		}
		if last < 0 && msgs[i].Role == llm.RoleUser {
			last = i
		}
	}
	if last < 0 {
		return sys
	}
	return last
}

// orphans marks, among msgs[sys:newest] still kept, the tool messages whose
// call is no longer kept and the assistant messages whose calls lack a kept
// result (with the results they have), and returns their tokens.
func orphans(msgs []llm.Message, keep []bool, counts []int, sys, newest int) int {
	calls := map[string]int{} // call id → index of the kept assistant message
	for i := sys; i < len(msgs); i++ {
		if keep[i] && msgs[i].Role == llm.RoleAssistant {
			for _, tc := range msgs[i].ToolCalls {
				calls[tc.ID] = i
			}
		}
	}
	answered := map[string]bool{}
	for i := sys; i < len(msgs); i++ {
		if keep[i] && msgs[i].Role == llm.RoleTool {
			answered[msgs[i].ToolCallID] = true
		}
	}
	freed := 0
	for i := sys; i < newest; i++ {
		if !keep[i] || msgs[i].Role != llm.RoleAssistant {
			continue
		}
		for _, tc := range msgs[i].ToolCalls {
			if !answered[tc.ID] {
				keep[i] = false
				freed += counts[i]
				for _, tc := range msgs[i].ToolCalls {
					delete(calls, tc.ID)
				}
				break
			}
		}
	}
	for i := sys; i < newest; i++ {
		if keep[i] && msgs[i].Role == llm.RoleTool {
			if _, ok := calls[msgs[i].ToolCallID]; !ok {
				keep[i] = false
				freed += counts[i]
			}
		}
	}
	return freed
}

// describe says where a budget comes from, for an error.
func describe(b Budget, model string) string {
	switch b.Source {
	case SourceAgent:
		return "the agent's model_parameters.maxContextTokens"
	case SourceTokenConfig:
		return fmt.Sprintf("the endpoint's tokenConfig context of %d tokens for %q, less %d for the reply", b.Context, model, b.Reply)
	case SourceKnown:
		return fmt.Sprintf("the %d-token context window of %q, less %d for the reply", b.Context, model, b.Reply)
	}
	return fmt.Sprintf("the default context window of %d tokens for a model Relay does not know, less %d for the reply; set maxContextTokens or the endpoint's tokenConfig", b.Context, b.Reply)
}

// The marker appended to a cut tool result.
const (
	cutOpen  = "\n\n[… truncated by Relay: "
	cutClose = " …]"
)

// cutResult cuts a tool message's text to limit characters and appends the
// marker, and reports whether it did. A text already cut is left as it is.
func cutResult(m *llm.Message, limit int) bool {
	cut := false
	if s, ok := cutText(m.Content, limit); ok {
		m.Content, cut = s, true
	}
	if len(m.Parts) > 0 {
		var parts []llm.Part
		for i := range m.Parts {
			if m.Parts[i].Type == llm.PartImage {
				continue
			}
			if s, ok := cutText(m.Parts[i].Text, limit); ok {
				if parts == nil { // the parts may be shared with the caller's copy
					parts = append([]llm.Part(nil), m.Parts...)
				}
				parts[i].Text, cut = s, true
			}
		}
		if parts != nil {
			m.Parts = parts
		}
	}
	return cut
}

// cutText returns s cut to limit characters with the marker, and true; or
// false when s is within the limit or was cut already.
func cutText(s string, limit int) (string, bool) {
	if len(s) <= limit || utf8.RuneCountInString(s) <= limit {
		return s, false
	}
	at, n := 0, 0
	for at = range s {
		if n == limit {
			break
		}
		n++
	}
	if rest := s[at:]; strings.HasPrefix(rest, cutOpen) && strings.HasSuffix(rest, cutClose) && len(rest) < 128 {
		return s, false
	}
	total := utf8.RuneCountInString(s)
	return s[:at] + cutOpen + strconv.Itoa(total) + " characters, more than the limit of " + strconv.Itoa(limit) + " (agents.maxToolResultChars)" + cutClose, true
}

// Summary is the report on one line, `key=value` pairs separated by "; ",
// the value quoted when it holds a space: what the prompt preview shows.
func (r Report) Summary() string {
	var b strings.Builder
	add := func(k, v string) {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		if strings.ContainsAny(v, ` ;"`) {
			v = strconv.Quote(v)
		}
		b.WriteString(v)
	}
	add("tokens", strconv.Itoa(r.Tokens))
	add("budget", strconv.Itoa(r.Budget.Tokens))
	if r.Context > 0 {
		add("context_window", strconv.Itoa(r.Context))
		add("reply_reserve", strconv.Itoa(r.Reply))
	}
	add("budget_source", r.Source)
	add("counted_by", r.CountedBy)
	add("dropped_messages", strconv.Itoa(r.DroppedMessages))
	add("dropped_turns", strconv.Itoa(r.DroppedTurns))
	add("truncated_tool_results", strconv.Itoa(r.TruncatedToolResults))
	if r.SummarizedMessages > 0 {
		add("summarized_messages", strconv.Itoa(r.SummarizedMessages))
	}
	if r.SummaryError != "" {
		add("summary_error", r.SummaryError)
	}
	return b.String()
}
