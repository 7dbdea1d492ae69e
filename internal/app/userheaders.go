package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/redact"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/ttl"
)

// userPlaceholder begins the placeholders of an endpoint's headers that name
// the user a request is for (docs/config.md, "Headers that name the user").
const userPlaceholder = "{{LIBRECHAT_USER_"

// namesUser reports whether a value of headers holds a {{LIBRECHAT_USER_*}}
// placeholder: the endpoint then gets a client per user.
func namesUser(headers map[string]string) bool {
	for _, v := range headers {
		if strings.Contains(v, userPlaceholder) {
			return true
		}
	}
	return false
}

// markConversation returns an endpoint's headers, as the config gives them,
// with the placeholders that name the conversation marked for each request to
// fill (provider.MarkConversation): before a user's details are filled in, so
// that a user's name holding such a placeholder is sent as typed.
func markConversation(headers map[string]string) map[string]string {
	var out map[string]string
	for k, v := range headers {
		if m := provider.MarkConversation(v); m != v {
			if out == nil {
				out = maps.Clone(headers)
			}
			out[k] = m
		}
	}
	if out == nil {
		return headers
	}
	return out
}

// userHeaders returns headers with the placeholders filled for u (nil: no
// user, each value ""), as the MCP manager fills an MCP server's headers,
// and the values inserted.
func userHeaders(headers map[string]string, u *mcp.User) (map[string]string, []string) {
	out := maps.Clone(headers)
	var filled []string
	for k, v := range headers {
		if strings.Contains(v, userPlaceholder) {
			var used []string
			out[k], used = mcp.HeaderValue(v, u)
			filled = append(filled, used...)
		}
	}
	return out, filled
}

// userTTL is how long a user's details, as the placeholders of endpoint
// headers give them, are trusted: a changed email reaches the headers
// within it.
const userTTL = time.Minute

// headerUsers looks up the users whose details go into endpoint headers,
// keeping each for userTTL.
type headerUsers struct {
	get   func(ctx context.Context, id string) (*auth.User, error)
	cache ttl.Cache[string, *mcp.User]
	now   func() time.Time
}

func newHeaderUsers(get func(ctx context.Context, id string) (*auth.User, error)) *headerUsers {
	return &headerUsers{get: get, cache: ttl.Cache[string, *mcp.User]{TTL: userTTL, Max: maxUserClients}, now: time.Now}
}

// user returns the details of user id, as the MCP manager's placeholders
// take them (run.MCPUser); nil for no user (id ""), whose placeholders are
// filled with "".
func (h *headerUsers) user(ctx context.Context, id string) (*mcp.User, error) {
	if id == "" {
		return nil, nil
	}
	if h == nil || h.get == nil {
		return nil, fault.New(fault.Unavailable, "the endpoint's headers name the user, and users cannot be looked up here")
	}
	if u, ok := h.cache.Get(id, h.now()); ok {
		return u, nil
	}
	gen := h.cache.Generation()
	au, err := h.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("looking up the user the endpoint's headers name: %w", err)
	}
	u := run.MCPUser(au)
	h.cache.Put(id, u, gen, h.now())
	return u, nil
}

// maskedLog returns log with the values filled into a client's headers
// masked in its records: a user's details are theirs.
func maskedLog(log *slog.Logger, filled []string) *slog.Logger {
	r := fillMask(filled)
	if r.Empty() {
		return log
	}
	return slog.New(redact.NewHandler(log.Handler(), r))
}

// maskedModel returns m with the values filled into its headers masked in
// its errors: an endpoint refusing a header may quote it.
func maskedModel(m llm.Model, filled []string) llm.Model {
	r := fillMask(filled)
	if r.Empty() {
		return m
	}
	return &masking{next: m, r: r}
}

// fillMask is the replacer masking filled values.
func fillMask(filled []string) *redact.Replacer {
	var s redact.Secrets
	s.Add(filled...)
	return s.Replacer()
}

// masking is a model whose errors are masked by r. It is a Bodier, a
// ParamChecker and a Lister as the model it wraps is; one that is not
// checks no parameter (it sends them all) and has no body or list to give.
type masking struct {
	next llm.Model
	r    *redact.Replacer
}

var (
	_ llm.Bodier       = (*masking)(nil)
	_ llm.ParamChecker = (*masking)(nil)
	_ llm.Lister       = (*masking)(nil)
)

// Stream masks the error of the turn and those of its retry events, which
// runs show and log.
func (m *masking) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	pass := emit
	if emit != nil {
		pass = func(ev llm.Event) {
			if ev.Retry != nil && m.r.Any(ev.Retry.Message) {
				c := *ev.Retry
				c.Message = m.r.String(c.Message)
				ev.Retry = &c
			}
			emit(ev)
		}
	}
	turn, err := m.next.Stream(ctx, req, pass)
	return turn, m.clean(err)
}

func (m *masking) Body(req *llm.Request) ([]byte, error) {
	b, ok := m.next.(llm.Bodier)
	if !ok {
		return nil, errors.New("this provider's client cannot show its request body")
	}
	body, err := b.Body(req)
	return body, m.clean(err)
}

func (m *masking) CheckParam(name string, value any) error {
	if c, ok := m.next.(llm.ParamChecker); ok {
		return c.CheckParam(name, value)
	}
	return nil
}

func (m *masking) CheckStrict(strict bool) error {
	if c, ok := m.next.(llm.ParamChecker); ok {
		return c.CheckStrict(strict)
	}
	return nil
}

func (m *masking) ListModels(ctx context.Context) ([]string, error) {
	l, ok := m.next.(llm.Lister)
	if !ok {
		return nil, errors.New("this provider's client cannot list its models")
	}
	ids, err := l.ListModels(ctx)
	return ids, m.clean(err)
}

// clean masks err's text. A provider's error (*llm.Error) stays one, masked,
// for errors.As; the errors inside are not reachable, since they still
// quote the values.
func (m *masking) clean(err error) error {
	if err == nil || !m.r.Any(err.Error()) {
		return err
	}
	var le *llm.Error
	if errors.As(err, &le) {
		c := *le
		c.Message = m.r.String(c.Message)
		if err == error(le) {
			return &c
		}
		return &maskedError{msg: m.r.String(err.Error()), orig: err, le: &c}
	}
	return &maskedError{msg: m.r.String(err.Error()), orig: err}
}

// maskedError is an error whose text was masked.
type maskedError struct {
	msg  string
	orig error
	le   *llm.Error // masked, nil when orig holds none
}

func (e *maskedError) Error() string { return e.msg }

// Is reports whether the original error is target (a cancellation, a
// timeout), without exposing it.
func (e *maskedError) Is(target error) bool { return errors.Is(e.orig, target) }

// As finds the masked provider error.
func (e *maskedError) As(target any) bool {
	if p, ok := target.(**llm.Error); ok && e.le != nil {
		*p = e.le
		return true
	}
	return false
}
