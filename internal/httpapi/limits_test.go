package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/quota"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// limitsBundle is the API with runs, files and schedules on SQLite, quotas
// from limits on a clock the test moves, and keys for ann, bob and an admin,
// each owning an agent named after them. A message containing "wait" is
// answered only once release is called.
type limitsBundle struct {
	srv     *httptest.Server
	opts    httpapi.Options
	handler http.Handler
	keys    map[string]string // by user name
	clock   *fakeClock
	release func()
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func setupLimits(t *testing.T, limits quota.Limits, maxSchedules int) *limitsBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	as := auth.NewService(st, nil)
	agents := agent.NewService(st, agent.Rules{Providers: []string{"openAI"}})
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	model := llmtest.Func(func(req *llm.Request) llmtest.Turn {
		if strings.Contains(lastUserText(req), "wait") {
			<-gate
		}
		return llmtest.Turn{Text: []string{"ok"}}
	})
	m := mcp.NewManager(nil, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	runs := &run.Service{Store: st, MCP: m, Log: slog.New(slog.DiscardHandler), Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	t.Cleanup(func() { runs.Drain(context.Background()) })
	t.Cleanup(release) // before the drain: waiting runs end
	clock := &fakeClock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	q := quota.New(limits, st, clock.Now)
	runs.Admit = q.StartRun
	sched := &schedule.Service{Store: st, Agents: agents, Users: st, Runner: runs, Log: slog.New(slog.DiscardHandler),
		Opts: schedule.Options{MaxPerUser: maxSchedules, AdminsLimited: limits.IncludeAdmins}}
	files := file.NewService(file.Options{Store: st})
	b := &limitsBundle{keys: map[string]string{}, clock: clock, release: release}
	b.opts = httpapi.Options{Auth: as, Agents: agents, Runs: runs, Schedules: sched, Files: files, Quota: q, MaxBodyBytes: 64 << 10}
	b.handler = newAPI(t, b.opts)
	b.srv = httptest.NewServer(b.handler)
	t.Cleanup(b.srv.Close)
	for _, name := range []string{"ann", "bob", "admin"} {
		role := auth.RoleUser
		if name == "admin" {
			role = auth.RoleAdmin
		}
		u, err := as.CreateUser(ctx, auth.NewUser{Email: name + "@example.com", Role: role})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agents.Create(ctx, u, name+"-agent", agent.Spec{Name: name, Provider: "openAI", Model: "m"}); err != nil {
			t.Fatal(err)
		}
		_, key, err := as.CreateKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		b.keys[name] = key
	}
	return b
}

// serveWithin serves the bundle's API from an http.Server made by
// httpapi.NewHTTPServer with c, in place of the plain test server.
func (b *limitsBundle) serveWithin(t *testing.T, c httpapi.Conns) {
	t.Helper()
	b.srv.Close()
	b.srv = httptest.NewUnstartedServer(b.handler)
	b.srv.Config = httpapi.NewHTTPServer(b.handler, c)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
}

// lastUserText is the text of the request's last user message.
func lastUserText(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// answer is one HTTP answer, read whole unless it is a stream left open.
type answer struct {
	status     int
	retryAfter string
	body       string
	resp       *http.Response
}

// limitErr is the error of a 429 in either shape.
type limitErr struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

func (b *limitsBundle) send(t *testing.T, who, method, path, contentType string, body io.Reader, keepOpen bool) answer {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.keys[who])
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), resp: resp}
	if keepOpen && resp.StatusCode == http.StatusOK {
		t.Cleanup(func() { resp.Body.Close() })
		return a
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.body = string(raw)
	return a
}

func (b *limitsBundle) chat(t *testing.T, who, text string, keepOpen bool) answer {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"agent_id": who + "-agent", "text": text})
	return b.send(t, who, "POST", "/api/chat", "application/json", bytes.NewReader(body), keepOpen)
}

func (b *limitsBundle) upload(t *testing.T, who string, size int) answer {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	fw.Write(bytes.Repeat([]byte("a"), size))
	mw.Close()
	return b.send(t, who, "POST", "/api/files", mw.FormDataContentType(), &buf, false)
}

func (b *limitsBundle) schedule(t *testing.T, who string) answer {
	t.Helper()
	body := `{"agent_id":"` + who + `-agent","name":"daily","prompt":"hi","type":"recurring","cron":"0 9 * * *"}`
	return b.send(t, who, "POST", "/api/schedules", "application/json", strings.NewReader(body), false)
}

// wantOK fails unless a is a success.
func wantOK(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status/100 != 2 {
		t.Fatalf("%s: status %d, want success: %s", what, a.status, a.body)
	}
}

// want429 checks that a is a 429 of code whose message names the limit, with
// a Retry-After of retryAfter seconds.
func want429(t *testing.T, what string, a answer, code, names, retryAfter string) limitErr {
	t.Helper()
	var e limitErr
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("%s: status %d, want 429: %s", what, a.status, a.body)
	}
	if err := json.Unmarshal([]byte(a.body), &e); err != nil {
		t.Fatalf("%s: %v: %s", what, err, a.body)
	}
	if e.Error.Code != code || !strings.Contains(e.Error.Message, names) {
		t.Errorf("%s: error %+v, want code %s and a message naming %q", what, e.Error, code, names)
	}
	if a.retryAfter != retryAfter {
		t.Errorf("%s: Retry-After %q, want %q", what, a.retryAfter, retryAfter)
	}
	return e
}

// Over the runs per minute a user's next run is a 429 naming the quota, in
// Relay's shape under /api and OpenAI's under /v1; another user and an admin
// still run, and the bucket refills with time.
func TestQuotaRunsPerMinute(t *testing.T) {
	b := setupLimits(t, quota.Limits{RunsPerMinute: 3}, 50)
	for range 3 {
		wantOK(t, "a run within the quota", b.chat(t, "ann", "hello", false))
	}
	want429(t, "the fourth run in a minute", b.chat(t, "ann", "hello", false), "quota_exceeded", "runs per minute (3)", "20")
	v1 := b.send(t, "ann", "POST", "/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"ann-agent","messages":[{"role":"user","content":"hi"}]}`), false)
	if e := want429(t, "/v1 over the quota", v1, "quota_exceeded", "runs per minute (3)", "20"); e.Error.Type != "rate_limit_error" {
		t.Errorf("/v1 error type %q, want rate_limit_error", e.Error.Type)
	}
	wantOK(t, "another user's run", b.chat(t, "bob", "hello", false))
	for range 4 {
		wantOK(t, "an admin's run", b.chat(t, "admin", "hello", false))
	}
	b.clock.Add(20 * time.Second)
	wantOK(t, "a run once a token is back", b.chat(t, "ann", "hello", false))
	want429(t, "the run after it", b.chat(t, "ann", "hello", false), "quota_exceeded", "runs per minute (3)", "20")
}

// Over the concurrent runs a user's next run is a 429 until one of theirs ends.
func TestQuotaConcurrentRuns(t *testing.T) {
	b := setupLimits(t, quota.Limits{ConcurrentRuns: 2}, 50)
	var open []answer
	for range 2 {
		a := b.chat(t, "ann", "wait", true)
		wantOK(t, "a run within the quota", a)
		open = append(open, a)
	}
	want429(t, "a third run at once", b.chat(t, "ann", "hello", false), "quota_exceeded", "concurrent runs (2)", "1")
	for range 3 {
		a := b.chat(t, "admin", "wait", true)
		wantOK(t, "an admin's run", a)
		open = append(open, a)
	}
	wantOK(t, "another user's run", b.chat(t, "bob", "hello", false))
	b.release()
	for _, a := range open {
		io.Copy(io.Discard, a.resp.Body) // the stream ends with the run
	}
	wantOK(t, "a run once the others ended", b.chat(t, "ann", "hello", false))
}

// Uploads over the files or bytes a user may store are 429s naming the
// quota, and nothing of them is stored; another user still uploads.
func TestQuotaFiles(t *testing.T) {
	b := setupLimits(t, quota.Limits{Files: 2, Bytes: 100}, 50)
	wantOK(t, "60 bytes", b.upload(t, "ann", 60))
	want429(t, "50 more bytes", b.upload(t, "ann", 50), "quota_exceeded", "bytes stored (100 bytes", "86400")
	wantOK(t, "30 more bytes", b.upload(t, "ann", 30))
	want429(t, "a third file", b.upload(t, "ann", 1), "quota_exceeded", "files stored (2)", "86400")
	list := b.send(t, "ann", "GET", "/api/files", "", nil, false)
	var files struct {
		Data []file.File `json:"data"`
	}
	if err := json.Unmarshal([]byte(list.body), &files); err != nil {
		t.Fatalf("%v: %s", err, list.body)
	}
	if len(files.Data) != 2 {
		t.Errorf("ann has %d files, want the 2 within the quota: %s", len(files.Data), list.body)
	}
	wantOK(t, "another user's upload", b.upload(t, "bob", 99))
	for range 3 {
		wantOK(t, "an admin's upload", b.upload(t, "admin", 100))
	}
}

// usageSeen is a quota store that says when a user's usage is first read:
// an upload has found its room then, before it streams.
type usageSeen struct {
	quota.Store
	seen chan struct{}
}

func (u *usageSeen) FileUsage(ctx context.Context, owner string) (int, int64, error) {
	select {
	case u.seen <- struct{}{}:
	default:
	}
	return u.Store.FileUsage(ctx, owner)
}

// Uploads of one user at once do not pass the storage quota together: each
// found room for itself before it streamed, so the quota is checked again as
// the file is recorded. Uploads that raced once each fit in the room left at
// their start, and were all stored.
func TestQuotaFilesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits quota.Limits
		sizes  [2]int // of the slow upload, then of the quick one
		names  string
	}{
		{"bytes", quota.Limits{Bytes: 100}, [2]int{60, 60}, "bytes stored (100 bytes"},
		{"files", quota.Limits{Files: 1}, [2]int{5, 5}, "files stored (1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			as := auth.NewService(st, nil)
			u, err := as.CreateUser(ctx, auth.NewUser{Email: "ann@example.com", Role: auth.RoleUser})
			if err != nil {
				t.Fatal(err)
			}
			_, key, err := as.CreateKey(ctx, u.ID, "test")
			if err != nil {
				t.Fatal(err)
			}
			usage := &usageSeen{Store: st, seen: make(chan struct{}, 1)}
			srv := httptest.NewServer(newAPI(t, httpapi.Options{Auth: as, Files: file.NewService(file.Options{Store: st}),
				Quota: quota.New(tc.limits, usage, nil), MaxBodyBytes: 64 << 10}))
			t.Cleanup(srv.Close)
			post := func(body io.Reader, contentType string) answer {
				req, err := http.NewRequest("POST", srv.URL+"/api/files", body)
				if err != nil {
					t.Error(err)
					return answer{}
				}
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", contentType)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Error(err)
					return answer{}
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(raw)}
			}
			form := func(size int) (*bytes.Buffer, string) {
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				fw, _ := mw.CreateFormFile("file", "notes.txt")
				fw.Write(bytes.Repeat([]byte("a"), size))
				mw.Close()
				return &buf, mw.FormDataContentType()
			}

			// The slow upload starts, finds room, and waits half sent.
			slow, contentType := form(tc.sizes[0])
			pr, pw := io.Pipe()
			slowDone := make(chan answer, 1)
			go func() { slowDone <- post(pr, contentType) }()
			half := slow.Len() / 2
			if _, err := pw.Write(slow.Next(half)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-usage.seen:
			case <-time.After(10 * time.Second):
				t.Fatal("the slow upload never read the quota")
			}
			// Another upload of the same user's is stored meanwhile.
			quick, quickType := form(tc.sizes[1])
			wantOK(t, "the quick upload", post(quick, quickType))
			// The slow one ends: together they would pass the quota.
			if _, err := pw.Write(slow.Bytes()); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			want429(t, "the slow upload", <-slowDone, "quota_exceeded", tc.names, "86400")
			n, size, err := st.FileUsage(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 || size != int64(tc.sizes[1]) {
				t.Errorf("ann has %d files of %d bytes; want the quick one alone", n, size)
			}
		})
	}
}

// One schedule over scheduler.max_per_user is a 429 naming the quota.
func TestQuotaSchedules(t *testing.T) {
	b := setupLimits(t, quota.Limits{}, 2)
	for range 2 {
		wantOK(t, "a schedule within the quota", b.schedule(t, "ann"))
	}
	want429(t, "a third schedule", b.schedule(t, "ann"), "quota_exceeded", "schedules (2)", "86400")
	wantOK(t, "another user's schedule", b.schedule(t, "bob"))
	for range 3 {
		wantOK(t, "an admin's schedule", b.schedule(t, "admin"))
	}
}

// Admins are held to the quotas too with IncludeAdmins.
func TestQuotaIncludeAdmins(t *testing.T) {
	b := setupLimits(t, quota.Limits{RunsPerMinute: 1, IncludeAdmins: true}, 1)
	wantOK(t, "an admin's first run", b.chat(t, "admin", "hello", false))
	want429(t, "an admin's second run", b.chat(t, "admin", "hello", false), "quota_exceeded", "runs per minute (1)", "60")
	wantOK(t, "an admin's first schedule", b.schedule(t, "admin"))
	want429(t, "an admin's second schedule", b.schedule(t, "admin"), "quota_exceeded", "schedules (1)", "86400")
}

// One API key over its rate gets 429s naming the limit; another key, even
// of the same user, and other users are not slowed.
func TestRateLimitPerKey(t *testing.T) {
	b := setupLimits(t, quota.Limits{KeyPerMinute: 60, KeyBurst: 3}, 50)
	for range 3 {
		wantOK(t, "a request within the burst", b.send(t, "ann", "GET", "/api/me", "", nil, false))
	}
	want429(t, "the fourth at once", b.send(t, "ann", "GET", "/api/me", "", nil, false), "rate_limited", "requests per minute with one API key (60)", "1")
	v1 := b.send(t, "ann", "GET", "/v1/models", "", nil, false)
	if e := want429(t, "/v1 over the rate", v1, "rate_limited", "one API key (60)", "1"); e.Error.Type != "rate_limit_error" {
		t.Errorf("/v1 error type %q, want rate_limit_error", e.Error.Type)
	}
	wantOK(t, "another user", b.send(t, "bob", "GET", "/api/me", "", nil, false))
	for range 5 {
		wantOK(t, "an admin", b.send(t, "admin", "GET", "/api/me", "", nil, false))
	}
	b.clock.Add(time.Second)
	wantOK(t, "a request a second later", b.send(t, "ann", "GET", "/api/me", "", nil, false))
}

// One client address over its rate gets 429s naming the limit, before its
// key is even looked at; another address is served, and the probes are not
// counted.
func TestRateLimitPerAddress(t *testing.T) {
	b := setupLimits(t, quota.Limits{IPPerMinute: 120, IPBurst: 2}, 50)
	get := func(addr, who, path string) answer {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+b.keys[who])
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		return answer{status: rec.Code, retryAfter: rec.Header().Get("Retry-After"), body: rec.Body.String()}
	}
	wantOK(t, "first", get("192.0.2.1:4000", "ann", "/api/me"))
	wantOK(t, "second, another key", get("192.0.2.1:4001", "admin", "/api/me"))
	want429(t, "third from the address", get("192.0.2.1:4002", "bob", "/api/me"), "rate_limited", "from one client address (120)", "1")
	want429(t, "a bad key from the address", get("192.0.2.1:4002", "nobody", "/api/me"), "rate_limited", "client address (120)", "1")
	wantOK(t, "a probe from the address", get("192.0.2.1:4003", "ann", "/healthz"))
	wantOK(t, "another address", get("[2001:db8::1]:4000", "ann", "/api/me"))
	wantOK(t, "another address of its /64", get("[2001:db8::2]:4000", "ann", "/api/me"))
	want429(t, "a third address of the /64", get("[2001:db8::3]:4000", "ann", "/api/me"), "rate_limited", "client address (120)", "1")
	wantOK(t, "another /64", get("[2001:db8:0:1::1]:4000", "ann", "/api/me"))
	b.clock.Add(500 * time.Millisecond)
	wantOK(t, "half a second later", get("192.0.2.1:4000", "ann", "/api/me"))
}

// startedRun is what a chat's stream says first: its run and conversation.
type startedRun struct {
	RunID          string `json:"run_id"`
	ConversationID string `json:"conversation_id"`
}

// answering sends ann's message "wait", which the model holds until
// b.release, reads its stream's first event, and returns the stream, that
// event and a func that sends ann's message "next" to the same conversation.
func (b *limitsBundle) answering(t *testing.T, what string) (answer, startedRun, func() answer) {
	t.Helper()
	first := b.chat(t, "ann", "wait", true)
	wantOK(t, what, first)
	line, err := bufio.NewReader(first.resp.Body).ReadString('}')
	if err != nil {
		t.Fatal(err)
	}
	var started startedRun
	if _, data, ok := strings.Cut(line, "data: "); !ok || json.Unmarshal([]byte(data), &started) != nil || started.ConversationID == "" {
		t.Fatalf("the stream's first event: %q", line)
	}
	next := func() answer {
		body, _ := json.Marshal(map[string]string{"agent_id": "ann-agent", "text": "next", "conversation_id": started.ConversationID})
		return b.send(t, "ann", "POST", "/api/chat", "application/json", bytes.NewReader(body), false)
	}
	return first, started, next
}

// A conversation answers one message at a time: a message sent to it while
// its run is going is a 409 naming the run, nothing of it is saved, and once
// the run has answered the next message continues from that answer.
func TestChatOneMessageAtATime(t *testing.T) {
	b := setupLimits(t, quota.Limits{}, 50)
	first, started, next := b.answering(t, "the first message")
	a := next()
	var e limitErr
	if err := json.Unmarshal([]byte(a.body), &e); a.status != http.StatusConflict || err != nil || e.Error.Code != "conflict" ||
		!strings.Contains(e.Error.Message, started.RunID) {
		t.Fatalf("a message while the run is going: %d %s, want 409 conflict naming %s", a.status, a.body, started.RunID)
	}
	b.release()
	io.Copy(io.Discard, first.resp.Body) // the stream ends with the run
	first.resp.Body.Close()
	wantOK(t, "the message once the run has answered", next())
	var msgs struct {
		Messages []struct {
			Role string `json:"role"`
			Text string `json:"text"`
		} `json:"messages"`
	}
	list := b.send(t, "ann", "GET", "/api/conversations/"+started.ConversationID, "", nil, false)
	if err := json.Unmarshal([]byte(list.body), &msgs); err != nil {
		t.Fatalf("%v: %s", err, list.body)
	}
	var texts []string
	for _, m := range msgs.Messages {
		texts = append(texts, m.Role+": "+m.Text)
	}
	if want := []string{"user: wait", "assistant: ok", "user: next", "assistant: ok"}; !slices.Equal(texts, want) {
		t.Errorf("the conversation's messages %q, want %q", texts, want)
	}
}

// A message refused because its conversation is still answering another one
// spends nothing of the runs per minute: with two runs a minute, a run, three
// refused messages and a second run all fit, and only the third run is over
// the quota.
func TestQuotaRunsPerMinuteSparesRefusedMessages(t *testing.T) {
	b := setupLimits(t, quota.Limits{RunsPerMinute: 2}, 50)
	first, _, next := b.answering(t, "the first run")
	for i := range 3 {
		if a := next(); a.status != http.StatusConflict {
			t.Fatalf("message %d while the run is going: %d %s, want 409", i+1, a.status, a.body)
		}
	}
	b.release()
	io.Copy(io.Discard, first.resp.Body) // the stream ends with the run
	first.resp.Body.Close()
	wantOK(t, "the second run", next())
	want429(t, "the third run in a minute", b.chat(t, "ann", "hello", false), "quota_exceeded", "runs per minute (2)", "30")
}
