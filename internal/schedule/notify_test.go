package schedule_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/netguard"
	. "github.com/relay-ai/relay/internal/schedule"
)

// logLines is a log that tests can wait on.
type logLines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newLogLines() *logLines { return &logLines{lines: make(chan string, 100)} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.lines <- string(p)
	return len(p), nil
}

func (l *logLines) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// wait returns the first line holding msg.
func (l *logLines) wait(t *testing.T, msg string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-l.lines:
			if strings.Contains(line, msg) {
				return line
			}
		case <-timeout:
			t.Fatalf("no log line %q in:\n%s", msg, l.String())
		}
	}
}

func guard(t *testing.T, allowed ...string) *netguard.Guard {
	t.Helper()
	g, err := netguard.New(allowed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// receiver is a webhook receiver on 127.0.0.1 that passes on what it is sent.
func receiver(t *testing.T) (*httptest.Server, chan map[string]any) {
	t.Helper()
	got := make(chan map[string]any, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		body["path"] = r.URL.Path
		got <- body
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestNotifyURLValidated(t *testing.T) {
	ctx := context.Background()
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	in := func(u string) Input {
		return Input{AgentID: str("digest"), Name: str("x"), Prompt: str("p"), Cron: str("0 7 * * *"), NotifyURL: str(u)}
	}
	for u, want := range map[string]string{
		"ftp://hooks.example.com/x":         "must be an http or https URL",
		"hooks.example.com/x":               "must be an http or https URL",
		"https://":                          "must name a host",
		"http://127.0.0.1:9/hook":           "127.0.0.1 is a loopback address",
		"http://169.254.169.254/latest/":    "169.254.169.254 is a link-local address",
		"http://[::1]:8080/":                "::1 is a loopback address",
		"http://[::ffff:10.0.0.1]/":         "10.0.0.1 is a private address",
		"http://0.0.0.0/":                   "0.0.0.0 is an unspecified address",
		"https://hooks.example.com/x\r\nX:": "not a valid URL",
	} {
		_, err := f.a.Create(ctx, f.user, in(u))
		if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "notify_url") || !strings.Contains(err.Error(), want) {
			t.Errorf("notify_url %q: err = %v, want invalid notify_url: %s", u, err, want)
		}
	}
	// A name is checked when sending, since what it resolves to may change.
	sc, err := f.a.Create(ctx, f.user, in("https://hooks.example.com/services/T0/B0/tok?x=1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Create(ctx, f.user, in("http://localhost:9/hook")); err != nil {
		t.Errorf("a name: %v", err)
	}
	if _, err := f.a.Update(ctx, f.user, sc.ID, Input{NotifyURL: str("http://169.254.169.254/")}); !fault.Is(err, fault.Invalid) {
		t.Errorf("update to the metadata address: err = %v", err)
	}
	// An allow-listed address is accepted.
	f.b.Guard = guard(t, "127.0.0.1")
	if _, err := f.b.Create(ctx, f.user, in("http://127.0.0.1:9/hook")); err != nil {
		t.Errorf("an allowed address: %v", err)
	}
}

// Webhooks to loopback, link-local (cloud metadata) and a name resolving to
// loopback are refused when sending, as is a redirect from an allowed
// receiver to loopback; the receiver never hears of them, the refusal is
// logged once with the address, and the URL's token is never logged. An
// allow-listed receiver is sent the firing.
func TestNotifyGuarded(t *testing.T) {
	ctx := context.Background()
	hook, received := receiver(t)
	hu, _ := url.Parse(hook.URL)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, hook.URL+"/internal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	ru, _ := url.Parse(redirector.URL)
	const secret = "tok-SECRET-1234"

	for _, tc := range []struct {
		name  string
		url   string
		allow []string // what the sending process allows
		want  string   // the refusal, "" for a webhook that arrives
	}{
		{"loopback", hook.URL + "/hook/" + secret + "?token=" + secret, nil, "127.0.0.1 is a loopback address"},
		{"ipv6 loopback", "http://[::1]:" + hu.Port() + "/hook?token=" + secret, nil, "::1 is a loopback address"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/?token=" + secret, nil, "169.254.169.254 is a link-local address"},
		{"name resolving to loopback", "http://localhost:" + hu.Port() + "/hook?token=" + secret, nil, "localhost resolves to"},
		{"redirect to loopback", redirector.URL + "/hook?token=" + secret, []string{ru.Host}, "127.0.0.1 is a loopback address"},
		{"allowed", hook.URL + "/hook/" + secret + "?token=" + secret, []string{"127.0.0.1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
			// The schedule was saved while its address was allowed (a
			// config since changed); the sending process checks again.
			f.a.Guard = guard(t, "127.0.0.0/8", "::1", "169.254.169.254")
			logs := newLogLines()
			f.b.Guard, f.b.Log = guard(t, tc.allow...), slog.New(slog.NewTextHandler(logs, nil))
			sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("x"), Prompt: str("p"), Cron: str("0 7 * * *"), NotifyURL: str(tc.url)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.b.RunNow(ctx, f.user, sc.ID); err != nil {
				t.Fatal(err)
			}
			f.waitFinished(t, sc.ID, 1)
			if tc.want == "" {
				select {
				case body := <-received:
					if body["schedule_id"] != sc.ID || body["path"] != "/hook/"+secret {
						t.Errorf("webhook body %v", body)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("no webhook; log:\n%s", logs)
				}
				return
			}
			line := logs.wait(t, "schedule webhook refused")
			if !strings.Contains(line, tc.want) || !strings.Contains(line, "notify_url=") {
				t.Errorf("log line %q lacks %q or the redacted URL", line, tc.want)
			}
			select {
			case body := <-received:
				t.Errorf("the receiver was sent %v", body)
			default:
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log holds the webhook's token:\n%s", logs)
			}
		})
	}
}

// A webhook that fails is logged with its URL redacted, the token in its path,
// query and user info left out.
func TestNotifyFailureLogRedacted(t *testing.T) {
	ctx := context.Background()
	const secret = "tok-SECRET-5678"
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "no "+r.URL.Path, http.StatusBadGateway)
	}))
	t.Cleanup(failing.Close)
	// A closed port: the request fails with an error quoting the URL.
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	for _, base := range []string{failing.URL, closedURL} {
		f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
		logs := newLogLines()
		f.a.Guard, f.a.Log = guard(t, "127.0.0.1"), slog.New(slog.NewJSONHandler(logs, nil))
		u := strings.Replace(base, "http://", "http://user:"+secret+"@", 1) + "/services/" + secret + "?token=" + secret
		sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("x"), Prompt: str("p"), Cron: str("0 7 * * *"), NotifyURL: str(u)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.a.RunNow(ctx, f.user, sc.ID); err != nil {
			t.Fatal(err)
		}
		line := logs.wait(t, "schedule webhook failed")
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds the webhook's token:\n%s", logs)
		}
		host := strings.TrimPrefix(base, "http://")
		if want := `"notify_url":"http://[redacted]@` + host + `/[redacted]?[redacted]"`; !strings.Contains(line, want) {
			t.Errorf("log line %s lacks %s", line, want)
		}
	}
}

// A firing the scheduler records as skipped (missed while Relay was down) is
// one of the schedule's firings too: its webhook is told, as after any other
// (docs/api.md "Schedules", notify_url).
func TestNotifySkippedFiring(t *testing.T) {
	ctx := context.Background()
	hook, received := receiver(t)
	f := setup(t, time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC))
	f.a.Guard = guard(t, "127.0.0.1")
	sc, err := f.a.Create(ctx, f.user, Input{AgentID: str("digest"), Name: str("Daily"), Prompt: str("p"), Cron: str("0 7 * * *"), NotifyURL: str(hook.URL + "/hook")})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)) // 07:00 missed by more than the hour of grace
	if err := f.a.Tick(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.waitFinished(t, sc.ID, 1)
	select {
	case body := <-received:
		firing, _ := body["firing"].(map[string]any)
		if body["schedule_id"] != sc.ID || firing["status"] != string(FiringSkipped) || !strings.Contains(firing["error"].(string), "grace window") {
			t.Errorf("webhook body %v", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook for the skipped firing")
	}
}
