package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// benchUI measures the web UI as a person meets it: the JavaScript the first
// page loads (gzipped, as Relay serves it), the time to the first contentful
// paint on localhost in headless Chromium, and the memory the server adds
// with many signed-in sessions streaming answers at once.
func benchUI() error {
	sessions := flag.Int("sessions", 50, "signed-in sessions streaming at once")
	tokens := flag.Int("tokens", 300, "tokens in each streamed answer")
	gap := flag.Duration("gap", 20*time.Millisecond, "time between two tokens of the fake upstream")
	paints := flag.Int("paints", 10, "page loads measured for the first paint")
	dist := flag.String("dist", "web/dist", "the UI's build")
	flag.Parse()

	if err := jsSizes(*dist); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "relay-bench-ui")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "relay")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/relay").CombinedOutput(); err != nil {
		return fmt.Errorf("building relay: %v\n%s", err, out)
	}

	// A fake OpenAI-compatible upstream streaming the answer token by token.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range *tokens {
			time.Sleep(*gap)
			if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"}}]}\n\n", i); err != nil {
				return
			}
			_ = rc.Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		_ = rc.Flush()
	}))
	defer upstream.Close()

	port, err := freePort()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`server:
  addr: 127.0.0.1:%d
  data_dir: %s
  log_level: warn
limits:
  include_admins: false
  user: {runs_per_minute: 100000, concurrent_runs: 1000}
  api: {key_per_minute: 1000000, ip_per_minute: 1000000}
auth:
  login_limit: {per_email: 1000, per_address: 100000}
endpoints:
  custom:
    - name: up
      baseURL: %s/v1
      apiKey: sk-bench
      models: {default: [m]}
agents:
  - {id: bench, name: Bench, provider: up, model: m, instructions: Answer., shared: true}
`, port, filepath.Join(dir, "data"), upstream.URL)
	cfgPath := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "RELAY_BOOTSTRAP_API_KEY="+benchKey)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	s := &server{cmd: cmd, base: base}
	if err := s.waitReady(); err != nil {
		return err
	}

	if err := firstPaint(base, *paints); err != nil {
		return err
	}
	return sessionMemory(base, cmd.Process.Pid, *sessions, *tokens)
}

// manifestChunk is an entry of Vite's build manifest.
type manifestChunk struct {
	File           string   `json:"file"`
	Imports        []string `json:"imports"`
	DynamicImports []string `json:"dynamicImports"`
	CSS            []string `json:"css"`
	IsEntry        bool     `json:"isEntry"`
}

// jsSizes prints the JavaScript and CSS each first page loads: the entry
// with its static imports, and the page's own chunk with its imports and
// the chunks it may load lazily (the builder's graph), so that the figure is
// an upper bound.
func jsSizes(dist string) error {
	b, err := os.ReadFile(filepath.Join(dist, ".vite", "manifest.json"))
	if err != nil {
		return fmt.Errorf("reading the UI's build manifest (build the UI first: cd web && npm run build): %w", err)
	}
	var man map[string]manifestChunk
	if err := json.Unmarshal(b, &man); err != nil {
		return err
	}
	var closure func(key string, seen map[string]bool)
	closure = func(key string, seen map[string]bool) {
		c, ok := man[key]
		if !ok || seen[c.File] {
			return
		}
		seen[c.File] = true
		for _, css := range c.CSS {
			seen[css] = true
		}
		for _, imp := range c.Imports {
			closure(imp, seen)
		}
	}
	size := func(files map[string]bool, ext string) (raw, gz int, err error) {
		for f := range files {
			if filepath.Ext(f) != ext {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dist, f))
			if err != nil {
				return 0, 0, err
			}
			raw += len(b)
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(b)
			_ = zw.Close()
			gz += buf.Len()
		}
		return raw, gz, nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "first page\tJS\tJS gzipped\tCSS gzipped\tbudget\t")
	for _, page := range []struct{ name, chunk string }{
		{"sign-in", "src/routes/SignIn.svelte"},
		{"chat (after sign-in)", "src/routes/Chat.svelte"},
		{"agent builder", "src/routes/AgentBuilder.svelte"},
	} {
		files := map[string]bool{}
		closure("index.html", files)
		closure(page.chunk, files)
		for _, dyn := range man[page.chunk].DynamicImports {
			closure(dyn, files)
		}
		raw, gz, err := size(files, ".js")
		if err != nil {
			return err
		}
		_, cssGz, err := size(files, ".css")
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%.1f KB\t%.1f KB\t%.1f KB\t< 300 KB\t\n", page.name, kb(raw), kb(gz), kb(cssGz))
	}
	return tw.Flush()
}

func kb(n int) float64 { return float64(n) / 1000 }

// firstPaint loads the sign-in page, and the chat page signed in, n times
// each in headless Chromium with its cache off, and prints the first
// contentful paint and the time until the page's heading shows.
func firstPaint(base string, n int) error {
	exe := ""
	for _, name := range []string{os.Getenv("RELAY_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		fmt.Println("\nno Chromium found (RELAY_CHROMIUM or chromium on PATH): first paint not measured")
		return nil
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancelB := chromedp.NewContext(alloc)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelT()
	if err := chromedp.Run(ctx, network.Enable(), network.SetCacheDisabled(true)); err != nil {
		return fmt.Errorf("starting %s: %w", exe, err)
	}
	// Time of the first contentful paint and of the first <h1> or the
	// navigation, in ms since the navigation started.
	const probe = `new Promise(done => {
	  const ready = () => document.querySelector('h1, nav#nav');
	  const finish = () => {
	    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
	    if (!fcp || !ready()) return false;
	    done([fcp.startTime, window.__ready]);
	    return true;
	  };
	  const tick = () => { if (ready() && window.__ready === undefined) window.__ready = performance.now(); if (!finish()) requestAnimationFrame(tick); };
	  tick();
	})`
	measure := func(path string) (fcp, ready []time.Duration, err error) {
		for range n {
			var got []float64
			err := chromedp.Run(ctx,
				chromedp.Navigate(base+path),
				chromedp.Evaluate(probe, &got, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
			)
			if err != nil {
				return nil, nil, fmt.Errorf("loading %s: %w", path, err)
			}
			fcp = append(fcp, time.Duration(got[0]*float64(time.Millisecond)))
			ready = append(ready, time.Duration(got[1]*float64(time.Millisecond)))
		}
		slices.Sort(fcp)
		slices.Sort(ready)
		return fcp, ready, nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\npage (localhost, cache off)\tfirst contentful paint p50\tp90\tpage ready p50\tp90\t")
	fcp, ready, err := measure("/signin")
	if err != nil {
		return err
	}
	fmt.Fprintf(tw, "sign-in\t%s\t%s\t%s\t%s\t\n", ms(pct(fcp, 50)), ms(pct(fcp, 90)), ms(pct(ready, 50)), ms(pct(ready, 90)))
	// Sign in inside the page, as the sign-in form does, then load the chat.
	const email, password = "paint@example.com", "paint-password-1"
	if _, err := adminCall(base, "POST", "/api/users", map[string]any{"email": email, "name": "Paint", "password": password, "role": "user"}); err != nil {
		return err
	}
	var status int
	login := fmt.Sprintf(`fetch('/api/auth/login', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({email: %q, password: %q})}).then(r => r.status)`, email, password)
	if err := chromedp.Run(ctx, chromedp.Evaluate(login, &status, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil || status != 200 {
		return fmt.Errorf("signing in the browser: %d %v", status, err)
	}
	fcp, ready, err = measure("/")
	if err != nil {
		return err
	}
	fmt.Fprintf(tw, "chat, signed in\t%s\t%s\t%s\t%s\t\n", ms(pct(fcp, 50)), ms(pct(fcp, 90)), ms(pct(ready, 50)), ms(pct(ready, 90)))
	return tw.Flush()
}

// adminCall sends a request with the bench's admin key and returns the body.
func adminCall(base, method, path string, body any) ([]byte, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out, nil
}

// vmRSS is a process's resident set size in KiB, from /proc.
func vmRSS(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// sessionMemory signs in n users (each a session cookie of its own), has
// them all stream an answer at once through POST /api/chat, and prints the
// server's resident memory: idle, with the sessions signed in, and its peak
// while they stream.
func sessionMemory(base string, pid, n, tokens int) error {
	// One chat first, so that what every first chat loads (the tokenizer,
	// prepared statements) is in the idle figure and not counted as the
	// sessions' cost.
	warm, err := signedIn(base, "warm@example.com")
	if err != nil {
		return err
	}
	if got, err := streamChat(warm, base); err != nil || got < tokens {
		return fmt.Errorf("warm-up chat: %d tokens, %v", got, err)
	}
	idle := vmRSS(pid)
	clients := make([]*http.Client, n)
	for i := range n {
		if clients[i], err = signedIn(base, fmt.Sprintf("user%d@example.com", i)); err != nil {
			return err
		}
	}
	signed := vmRSS(pid)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v := int64(vmRSS(pid)); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	var wg sync.WaitGroup
	var complete atomic.Int32
	t0 := time.Now()
	for _, c := range clients {
		wg.Go(func() {
			if got, err := streamChat(c, base); err == nil && got == tokens {
				complete.Add(1)
			} else if err != nil {
				fmt.Fprintln(os.Stderr, "chat:", err)
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	close(stop)
	<-sampled
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\nrelay serve RSS\t%d sessions, %d tokens each, %s\t\n", n, tokens, took.Round(time.Millisecond))
	fmt.Fprintf(tw, "idle (after one chat)\t%.1f MB\t\n", float64(idle)/1024)
	fmt.Fprintf(tw, "%d sessions signed in\t%.1f MB\t\n", n, float64(signed)/1024)
	fmt.Fprintf(tw, "peak while all stream\t%.1f MB\t\n", float64(peak.Load())/1024)
	fmt.Fprintf(tw, "added by the sessions streaming\t%.1f MB\t\n", float64(peak.Load()-int64(idle))/1024)
	fmt.Fprintf(tw, "answers complete\t%d/%d\t\n", complete.Load(), n)
	return tw.Flush()
}

// signedIn creates a user with a password and returns an HTTP client holding
// its session cookie, as a browser would after signing in.
func signedIn(base, email string) (*http.Client, error) {
	const password = "bench-password-1"
	if _, err := adminCall(base, "POST", "/api/users", map[string]any{"email": email, "name": email, "password": password, "role": "user"}); err != nil {
		return nil, err
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	b, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := c.Post(base+"/api/auth/login", "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("signing in %s: %d", email, resp.StatusCode)
	}
	return c, nil
}

// streamChat sends one chat message with the client's session and reads the
// answer's events to the end; it returns the number of text deltas.
func streamChat(c *http.Client, base string) (int, error) {
	req, _ := http.NewRequest("POST", base+"/api/chat", strings.NewReader(`{"agent_id":"bench","text":"hello"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base) // as the browser sends it
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("chat: %d %s", resp.StatusCode, b)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: message.delta" {
			n++
		}
	}
	return n, sc.Err()
}
