package web_test

// The browser tests drive the web UI the way a person does: a real
// `relay serve` (the embedded build of this package), a real Chromium through
// chromedp, the aimock peer as the model provider and server-everything as an
// MCP server. They skip, saying why, when no browser or peer is found; .ci/run
// installs Debian's chromium and the peers.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/relay-ai/relay/internal/cli"
	"github.com/relay-ai/relay/internal/poll"
)

// shotsDir, when set, is where the tests write their screenshots
// (docs/screenshots is the committed set: go test ./web -screenshots ../docs/screenshots).
var shotsDir = flag.String("screenshots", "", "write the browser tests' screenshots to this directory")

// syncBuffer collects a server's log while tests read it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// relay is a `relay serve` started by a test.
type relay struct {
	Base   string
	Dir    string
	Log    *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

// adminKey is the bootstrap admin key of the servers that tests start with one.
const adminKey = "rk-BrowserTestAdminKey000000000000000000000"

// startRelay runs `relay serve` with the config (YAML, where %DATA% is replaced
// by a data directory of the test and %BASE% by the server's own address,
// http://127.0.0.1:PORT, for server.public_url) and the environment vars, and
// waits until it is ready. It is stopped when the test ends.
func startRelay(t *testing.T, config string, vars map[string]string) *relay {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	config = strings.ReplaceAll(config, "%DATA%", filepath.Join(dir, "data"))
	config = strings.ReplaceAll(config, "%BASE%", "http://"+addr)
	cfgPath := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{Base: "http://" + addr, Dir: dir, Log: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	getenv := func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, true
		}
		if k == "PATH" || k == "HOME" {
			return os.LookupEnv(k)
		}
		return "", false
	}
	go func() {
		r.done <- cli.Main(ctx, []string{"serve", "--config", cfgPath, "--addr", addr},
			cli.IO{Stdin: strings.NewReader(""), Stdout: r.Log, Stderr: r.Log, Getenv: getenv})
	}()
	poll.Until(t, 30*time.Second, "relay serve ready", func() bool {
		select {
		case code := <-r.done:
			t.Fatalf("relay serve exited with %d before it was ready:\n%s", code, r.Log)
		default:
		}
		resp, err := http.Get(r.Base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Errorf("relay serve did not stop")
		}
		if t.Failed() {
			t.Logf("relay serve log:\n%s", r.Log)
		}
	})
	return r
}

var setupLinkRE = regexp.MustCompile(`https?://[^\s"]+/setup#[A-Za-z0-9_-]+`)

// setupLink waits for the one-time setup link that serve prints on a first start.
func (r *relay) setupLink(t *testing.T) string {
	t.Helper()
	var link string
	poll.Until(t, 10*time.Second, "setup link printed by relay serve", func() bool {
		link = setupLinkRE.FindString(r.Log.String())
		return link != ""
	})
	return link
}

// call sends an API request with an API key and decodes the JSON answer into
// out (when not nil); it returns the status code.
func (r *relay) call(t *testing.T, key, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, r.Base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// addUser creates a user with a password through the API, as an admin.
func (r *relay) addUser(t *testing.T, email, name, password, role string) string {
	t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	if code := r.call(t, adminKey, "POST", "/api/users", map[string]any{"email": email, "name": name, "password": password, "role": role}, &u); code != http.StatusCreated {
		t.Fatalf("creating user %s: %d", email, code)
	}
	return u.ID
}

// browserPath finds Chromium: $RELAY_CHROMIUM, else the usual names on PATH.
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RELAY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium found (set RELAY_CHROMIUM, or apt-get install chromium); the browser tests need one")
	return ""
}

// newBrowser returns the settings of a headless Chromium for the test;
// newPerson opens a browser context of its own for each person of a test, so
// that each has cookies of their own.
func newBrowser(t *testing.T) []chromedp.ExecAllocatorOption {
	t.Helper()
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath(t)),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
	)
}

// shared is the one Chromium that the tests of this package share: starting
// one takes seconds, many on a busy machine, and a browser context per person
// keeps cookies and storage apart as separate browsers would. TestMain closes
// it.
var shared struct {
	once  sync.Once
	ctx   context.Context
	close context.CancelFunc
	err   error
}

// sharedBrowser starts the shared Chromium with the settings of the first
// caller (newBrowser's, the same for every test) and returns its context.
func sharedBrowser(t *testing.T, browser []chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	shared.once.Do(func() {
		alloc, cancelA := chromedp.NewExecAllocator(context.Background(), browser...)
		// chromedp's complaints about browser events it does not know (newer
		// Chromium sends some) are left out; its other errors are printed.
		ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(func(format string, args ...any) {
			if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled node event") {
				log.Print(msg)
			}
		}))
		shared.ctx, shared.close = ctx, func() { cancel(); cancelA() }
		shared.err = chromedp.Run(ctx)
	})
	if shared.err != nil {
		t.Fatalf("starting the browser: %v", shared.err)
	}
	return shared.ctx
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.close != nil {
		shared.close()
	}
	os.Exit(code)
}

// newPerson opens a browser context of its own (cookies, storage, downloads)
// in the shared browser and returns the context of its tab, closed when the
// test ends. Every action on it gives up after two minutes.
func newPerson(t *testing.T, browser []chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	b := sharedBrowser(t, browser)
	var bc cdp.BrowserContextID
	var tab target.ID
	if err := chromedp.Run(b, chromedp.ActionFunc(func(ctx context.Context) error {
		browser := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser)
		var err error
		if bc, err = target.CreateBrowserContext().Do(browser); err != nil {
			return err
		}
		// In a window of its own: headless Chromium opens no tab in a browser
		// context that has no window yet.
		tab, err = target.CreateTarget("about:blank").WithBrowserContextID(bc).WithNewWindow(true).Do(browser)
		return err
	})); err != nil {
		t.Fatalf("opening a browser context: %v", err)
	}
	ctx, cancel := chromedp.NewContext(b, chromedp.WithTargetID(tab))
	// Known to the context, as WithNewBrowserContext would have it, for
	// actions that name it and for tabs opened from this one.
	chromedp.FromContext(ctx).BrowserContextID = bc
	t.Cleanup(func() {
		cancel() // closes the tab
		_ = chromedp.Run(b, chromedp.ActionFunc(func(ctx context.Context) error {
			return target.DisposeBrowserContext(bc).Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
		}))
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	return ctx
}

// run runs browser actions and fails the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var body string
		_ = chromedp.Run(ctx, chromedp.Text("body", &body, chromedp.ByQuery, chromedp.AtLeast(0)))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
	}
}

// waitText waits until the element of sel contains text.
func waitText(t *testing.T, ctx context.Context, sel, text string) {
	t.Helper()
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.innerText.includes(%q))`, sel, text)
	run(t, ctx, fmt.Sprintf("waiting for %q in %s", text, sel), chromedp.Poll(js, nil, chromedp.WithPollingTimeout(45*time.Second)))
}

// signIn signs in on the sign-in page and waits for the app.
func signIn(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	run(t, ctx, "signing in as "+email,
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(`input[name=email]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=email]`, email, chromedp.ByQuery),
		chromedp.SendKeys(`input[name=password]`, password, chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`nav#nav`, chromedp.ByQuery),
	)
}

// screenshot takes the page at 1280 px and at 375 px wide (a phone) and
// writes both to -screenshots when it is set (name-desktop.png,
// name-phone.png), else into the test's temporary directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := *shotsDir
	if dir == "" {
		dir = t.TempDir()
	}
	for _, size := range []struct {
		suffix string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 900, false}, {"phone", 375, 812, true}} {
		var png []byte
		run(t, ctx, "screenshot "+name+"-"+size.suffix,
			chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateScale(1)),
			settle(),
			chromedp.CaptureScreenshot(&png),
		)
		if err := os.WriteFile(filepath.Join(dir, name+"-"+size.suffix+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, ctx, "restoring the viewport", chromedp.EmulateViewport(1280, 900))
}

// settle waits for two animation frames, so that a resize or an update has
// been laid out and painted, for the CSS transitions it started (the side
// menu sliding away at phone width) to end, and for any smooth scroll (a
// form scrolled into view) to come to rest: a click aimed while the page
// still moves lands beside its target.
func settle() chromedp.Action {
	return chromedp.Evaluate(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))
		.then(() => Promise.all(document.getAnimations().filter(a => a instanceof CSSTransition).map(a => a.finished.catch(() => {}))))
		.then(() => new Promise(r => {
			const at = () => [...document.querySelectorAll('*')].filter(e => e.scrollTop || e.scrollLeft).map(e => e.scrollTop + ',' + e.scrollLeft).join(';') + '|' + scrollX + ',' + scrollY;
			let last = at(), still = 0, frames = 0;
			const step = () => {
				const now = at();
				still = now === last ? still + 1 : 0;
				last = now;
				if (still >= 3 || ++frames > 300) r(true); else requestAnimationFrame(step);
			};
			requestAnimationFrame(step);
		}))`, nil,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })
}
