package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
)

// MaxTitleRunes is the longest title a conversation may be given, in
// characters.
const MaxTitleRunes = 200

// The fallback title: the first words of the message (docs/api.md,
// "Conversation titles").
const (
	fallbackWords = 8
	fallbackRunes = 60
)

// FirstWords is the title a new conversation starts with: the first
// fallbackWords words of text, on one line, at most fallbackRunes
// characters, with "…" when text goes on.
func FirstWords(text string) string {
	words := strings.Fields(text)
	var b strings.Builder
	n := 0
	for i, w := range words {
		if i == fallbackWords {
			return b.String() + "…"
		}
		wn := utf8.RuneCountInString(w)
		if i > 0 {
			wn++
		}
		if n+wn > fallbackRunes {
			if i == 0 { // one long word: cut it
				return string([]rune(w)[:fallbackRunes]) + "…"
			}
			return b.String() + "…"
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		n += wn
	}
	return b.String()
}

// RenameConversation gives one of u's conversations the title title (spaces
// trimmed, on one line) and returns it. A title that is empty or longer than
// MaxTitleRunes is fault.Invalid; another user's conversation is
// fault.NotFound, as a missing one is.
func (s *Service) RenameConversation(ctx context.Context, u *auth.User, id, title string) (*Conversation, error) {
	title = strings.Join(strings.Fields(title), " ")
	switch n := utf8.RuneCountInString(title); {
	case n == 0:
		return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid title", Fields: []fault.FieldError{{Field: "title", Message: "required"}}}
	case n > MaxTitleRunes:
		return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid title", Fields: []fault.FieldError{{Field: "title", Message: fmt.Sprintf("at most %d characters", MaxTitleRunes)}}}
	}
	c, err := s.Store.GetConversation(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.UserID != u.ID && !u.IsAdmin() {
		return nil, fault.New(fault.NotFound, "conversation %q not found", id)
	}
	if err := s.Store.RenameConversation(ctx, id, title, nil); err != nil {
		return nil, err
	}
	// Read back: the title is answered as stored (docs/api.md, "Text that
	// cannot be stored as it is").
	return s.Store.GetConversation(ctx, id)
}

// TitleModel is the model that names the conversations of an agent, and how.
type TitleModel struct {
	// Provider and Model are the model asked.
	Provider, Model string
	// Prompt is the instruction, with {convo} standing for the conversation;
	// "" means DefaultTitlePrompt.
	Prompt string
	// Template writes the conversation, with {input} for the user's message
	// and {output} for the answer; "" means DefaultTitleTemplate.
	Template string
}

// DefaultTitlePrompt and DefaultTitleTemplate are what a TitleModel sends
// when the config sets no titlePrompt and titlePromptTemplate.
const (
	DefaultTitlePrompt = "Write a short title for the conversation below: at most 7 words, in the conversation's " +
		"language, with no quotes and no final period. Reply with the title alone.\n\n{convo}"
	DefaultTitleTemplate = "User: {input}\nAssistant: {output}"
)

// DefaultTitleTimeout bounds the whole of a title's making: the model's
// answer and storing the title.
const DefaultTitleTimeout = 20 * time.Second

// titleInputRunes caps each of the message and the answer in the title
// request: their start says enough to name them.
const titleInputRunes = 2000

// Titler names a new conversation with a model once its first run has
// succeeded. Its After is meant for Service.After: it works in the
// background, never delaying the answer. Until it is done, and whenever it
// fails, the conversation keeps the title made from the message; a title the
// user has set meanwhile is never replaced.
type Titler struct {
	Store  Store
	Models Models
	// For returns the title model of an agent's conversations; ok is false
	// when the agent's conversations keep the title made from the message.
	For func(a *agent.Agent) (m TitleModel, ok bool)
	// Timeout bounds each title; 0 means DefaultTitleTimeout.
	Timeout time.Duration
	Log     *slog.Logger
}

// After makes the title of f's conversation when f started it, succeeded,
// and the conversation was not named by its starter (a schedule's name, an
// OpenAI-compatible request).
func (t *Titler) After(ctx context.Context, f *Finished) {
	if !f.NewConversation || f.Run.Status != StatusSucceeded || f.Request.Title != "" || f.Request.KeepTitle || f.Answer == nil {
		return
	}
	tm, ok := t.For(f.Agent)
	if !ok {
		return
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTitleTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := t.Log.With(slog.String("run_id", f.Run.ID), slog.String("conversation_id", f.Conversation.ID),
		slog.String("provider", tm.Provider), slog.String("model", tm.Model))
	title, err := t.make(ctx, f.userID(), tm, f.Question.Text, f.Answer.Text)
	if err != nil {
		log.Warn("conversation title: kept the title made from the message", slog.String("err", err.Error()))
		return
	}
	from := f.Conversation.Title
	switch err := t.Store.RenameConversation(ctx, f.Conversation.ID, title, &from); {
	case fault.Is(err, fault.Conflict):
		log.Debug("conversation title: kept the title the user set")
	case fault.Is(err, fault.NotFound):
		log.Debug("conversation title: the conversation was deleted")
	case err != nil:
		log.Warn("conversation title: storing it", slog.String("err", err.Error()))
	default:
		log.Debug("conversation titled")
	}
}

// make asks tm for the title of a conversation of user userID that holds
// question and answer.
func (t *Titler) make(ctx context.Context, userID string, tm TitleModel, question, answer string) (string, error) {
	m, _, err := t.Models(ctx, userID, tm.Provider, tm.Model)
	if err != nil {
		return "", err
	}
	tpl := tm.Template
	if tpl == "" {
		tpl = DefaultTitleTemplate
	}
	convo := strings.NewReplacer("{input}", clip(question, titleInputRunes), "{output}", clip(answer, titleInputRunes)).Replace(tpl)
	instr := tm.Prompt
	if instr == "" {
		instr = DefaultTitlePrompt
	}
	if strings.Contains(instr, "{convo}") {
		instr = strings.ReplaceAll(instr, "{convo}", convo)
	} else {
		instr += "\n\n" + convo
	}
	turn, err := m.Stream(ctx, &llm.Request{Model: tm.Model, Messages: []llm.Message{{Role: llm.RoleUser, Content: instr}}}, nil)
	if err != nil {
		if ctx.Err() != nil {
			return "", errors.New("no answer within the title timeout")
		}
		return "", err
	}
	title := cleanTitle(turn.Text)
	if title == "" {
		return "", errors.New("the model's answer holds no title")
	}
	return title, nil
}

// clip cuts s to n characters.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// generatedTitleRunes caps a model-made title: a model that ignores the
// instruction writes a sentence, not a title.
const generatedTitleRunes = 80

// cleanTitle is the title in a model's answer: its first line with text,
// without a "Title:" label, surrounding quotes or markup, or a final period,
// on one line and at most generatedTitleRunes characters.
func cleanTitle(answer string) string {
	var line string
	for l := range strings.SplitSeq(answer, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.TrimLeft(line, "#*_ ")
	if label, rest, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.Trim(label, "*_ "), "title") {
		line = rest
	}
	const quotes = "\"'`*_“”‘’«»「」"
	line = strings.TrimLeftFunc(line, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(quotes, r) })
	line = strings.TrimRightFunc(line, func(r rune) bool { return unicode.IsSpace(r) || r == '.' || strings.ContainsRune(quotes, r) })
	line = strings.Join(strings.Fields(line), " ")
	if utf8.RuneCountInString(line) > generatedTitleRunes {
		line = strings.TrimSpace(string([]rune(line)[:generatedTitleRunes])) + "…"
	}
	return line
}
