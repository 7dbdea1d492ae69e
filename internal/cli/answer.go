package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
)

func runsAnswerCommand() *command {
	return &command{
		name:    "runs answer",
		args:    "RUN_ID ELICITATION_ID",
		summary: "answer a question an MCP server asked during one of your runs",
		detail: "The run's stream shows the question as an elicitation.requested event, with its id and\n" +
			"schema (docs/api.md \"Questions\"). The answer goes to the database, where the Relay process\n" +
			"running the call finds it. Fields left out of --content take the schema's defaults.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "answer as this user (`id or email`; default: the bootstrap admin)")
			action := fs.String("action", "accept", "accept, decline or cancel")
			content := fs.String("content", "{}", "the fields of an accepted form question, as a JSON `object`")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 2 {
					return usageErr("want RUN_ID ELICITATION_ID")
				}
				switch *action {
				case mcp.ActionAccept, mcp.ActionDecline, mcp.ActionCancel:
				default:
					return usageErr("--action %q: want accept, decline or cancel", *action)
				}
				var c map[string]any
				if err := json.Unmarshal([]byte(*content), &c); err != nil {
					return usageErr("--content must be a JSON object: %v", err)
				}
				return withConversations(ctx, e, *user, func(runs *run.Service, u *auth.User) error {
					el, err := runs.Answer(ctx, u, args[0], args[1], run.AnswerRequest{Action: *action, Content: c})
					if err != nil {
						return err
					}
					return printJSON(e.Stdout, el)
				})
			}
		},
	}
}

// terminalAsker puts the questions of a run to the user at a terminal, field
// by field, and answers them through runs.
type terminalAsker struct {
	in   *bufio.Reader
	out  io.Writer
	runs *run.Service
	u    *auth.User
}

// ask shows the question of an elicitation.requested event, reads the answer
// and sends it. At the end of the input the question is declined.
func (t *terminalAsker) ask(ctx context.Context, runID string, q run.ElicitationRequested) error {
	fmt.Fprintf(t.out, "\n? %s asks: %s\n", q.Server, q.Message)
	if q.Mode == "url" {
		fmt.Fprintf(t.out, "  open %s\n", q.URL)
	}
	for range 3 {
		a, err := t.read(q.Mode, q.RequestedSchema)
		if errors.Is(err, io.EOF) {
			a = run.AnswerRequest{Action: mcp.ActionDecline}
		} else if err != nil {
			return err
		}
		_, err = t.runs.Answer(ctx, t.u, runID, q.ID, a)
		if fault.KindOf(err) != fault.Invalid {
			return err
		}
		fmt.Fprintf(t.out, "  %v\n", err)
	}
	_, err := t.runs.Answer(ctx, t.u, runID, q.ID, run.AnswerRequest{Action: mcp.ActionDecline})
	return err
}

// read reads an answer: the action, then for an accepted form each field,
// with its default shown and taken on an empty line.
func (t *terminalAsker) read(mode string, schema json.RawMessage) (run.AnswerRequest, error) {
	line, err := t.line("  accept, decline or cancel? [accept] ")
	if err != nil {
		return run.AnswerRequest{}, err
	}
	a := run.AnswerRequest{Action: mcp.ActionAccept}
	switch strings.ToLower(line) {
	case "", "a", "accept", "y", "yes":
	case "d", "decline", "n", "no":
		return run.AnswerRequest{Action: mcp.ActionDecline}, nil
	case "c", "cancel":
		return run.AnswerRequest{Action: mcp.ActionCancel}, nil
	default:
		return run.AnswerRequest{Action: line}, nil // refused by Answer, with the reason
	}
	if mode == "url" {
		return a, nil
	}
	fields, err := mcp.Fields(schema)
	if err != nil {
		return run.AnswerRequest{}, err
	}
	a.Content = map[string]any{}
	for _, f := range fields {
		label := f.Name
		if f.Title != "" {
			label = f.Title + " (" + f.Name + ")"
		}
		hint := f.Type
		if len(f.Options) > 0 {
			hint = strings.Join(f.Options, "|")
			if f.Type == "array" {
				hint += ", comma-separated"
			}
		}
		if f.Required {
			hint += ", required"
		}
		prompt := fmt.Sprintf("  %s [%s]", label, hint)
		if f.Default != nil {
			prompt += fmt.Sprintf(" (default %v)", f.Default)
		}
		if f.Description != "" {
			fmt.Fprintf(t.out, "  %s\n", f.Description)
		}
		v, err := t.line(prompt + ": ")
		if err != nil {
			return run.AnswerRequest{}, err
		}
		if v == "" {
			continue // the default, or "required" from Answer
		}
		a.Content[f.Name] = typed(f.Type, v)
	}
	return a, nil
}

// typed reads a field's text as its type; text that is not one is kept, and
// Answer says what is wrong with it.
func typed(typ, v string) any {
	switch typ {
	case "number":
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			return x
		}
	case "integer":
		if x, err := strconv.ParseInt(v, 10, 64); err == nil {
			return x
		}
	case "boolean":
		switch strings.ToLower(v) {
		case "y", "yes", "true":
			return true
		case "n", "no", "false":
			return false
		}
	case "array":
		var items []any
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		return items
	}
	return v
}

func (t *terminalAsker) line(prompt string) (string, error) {
	fmt.Fprint(t.out, prompt)
	s, err := t.in.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimSpace(s), nil
}
