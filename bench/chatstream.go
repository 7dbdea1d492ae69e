package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/llm/sse"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// The concurrent streaming measurement runs Relay in a process of its own (this
// binary, as `bench chat-relay`), so that its memory is its own and the load
// (the fake upstream and the clients, in the parent) is not counted as Relay's.
// The latency Relay adds to a token is taken inside the Relay process: the time
// the token's SSE event is flushed to the client's connection minus the time the
// upstream wrote it (both processes read the same wall clock). The clients also
// note when each token reaches them; that number includes their own scheduling
// on the same cores and is printed beside it.

// relayReady is what the Relay process prints once it listens.
type relayReady struct {
	URL string `json:"url"`
	Key string `json:"key"`
}

// relayReport is what the Relay process prints when told to stop.
type relayReport struct {
	// Added are the latencies Relay added, sorted, in microseconds.
	Added []int32 `json:"added_us"`
	// Parsed are the parts of them until the model client handed the token
	// on (reading and parsing the upstream's stream), sorted, in microseconds.
	Parsed []int32 `json:"parsed_us"`
	// PeakRSS is the process's peak resident set size in KiB (VmHWM).
	PeakRSS int `json:"peak_rss_kib"`
	// Chats counts the /api/chat requests served.
	Chats int `json:"chats"`
	// The largest Go heap in use, goroutine stacks and goroutines seen (sampled
	// every 100 ms), to say where the memory goes.
	HeapInuse uint64 `json:"heap_inuse"`
	// BySecond is, for each second of the measurement with tokens, how many
	// were sent in it and their added latency's p50 and p99 in microseconds.
	BySecond [][3]int32 `json:"by_second"`
	// CPU is the user and system time the process spent serving the chats.
	CPU        time.Duration `json:"cpu"`
	StackInuse uint64        `json:"stack_inuse"`
	Goroutines int           `json:"goroutines"`
}

// child is a process of this binary serving the streaming measurement: its
// stdin, closed to tell it to report, and its stdout, where the report comes.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startChild starts this binary with args as the process serving the
// measurement (what names it in errors) and returns it with the first line it
// printed once it listens.
func startChild(what string, args ...string) (*child, []byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting the %s process: %w", what, err)
	}
	p := &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		p.stop()
		return nil, nil, fmt.Errorf("the %s process did not start: %w", what, err)
	}
	return p, line, nil
}

// stop ends the process, if it has not ended, and waits for it.
func (p *child) stop() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

// streamRow is one line of the sweep table.
type streamRow struct {
	chats, complete int
	p50, p99        time.Duration
	relayPerToken   time.Duration // Relay's CPU per token
	loadPerToken    time.Duration // the upstream's and the clients' CPU per token
	rssMB           float64
	cpu             time.Duration   // the server's CPU
	added           []time.Duration // the latency it added to each token, sorted
}

// printStreamRounds prints what the rounds of streaming chats measured
// together: each server's CPU per token over all its rounds, the ratio of
// Relay's to the bare pass-through's, and the p99 of the latency each added
// over all the tokens of its rounds.
func printStreamRounds(relay, bare []streamRow) {
	sum := func(rows []streamRow) (cpu time.Duration, added []time.Duration, each []string, rss float64) {
		for _, r := range rows {
			cpu += r.cpu
			added = append(added, r.added...)
			each = append(each, fmt.Sprintf("%.1f", µs(r.relayPerToken)))
			rss = max(rss, r.rssMB)
		}
		slices.Sort(added)
		return cpu, added, each, rss
	}
	rCPU, rAdded, rEach, rRSS := sum(relay)
	bCPU, bAdded, bEach, _ := sum(bare)
	if len(rAdded) == 0 || len(bAdded) == 0 {
		return
	}
	rTok, bTok := µs(rCPU)/float64(len(rAdded)), µs(bCPU)/float64(len(bAdded))
	rP99, bP99 := pct(rAdded, 99), pct(bAdded, 99)
	fmt.Printf("%d rounds, Relay and the bare pass-through taking turns:\n", len(relay))
	fmt.Printf("  CPU per token: Relay %.1f µs (rounds: %s), bare pass-through %.1f µs (rounds: %s): %.2f× (target ≤ 1.2×)\n",
		rTok, strings.Join(rEach, ", "), bTok, strings.Join(bEach, ", "), rTok/bTok)
	fmt.Printf("  p99 added latency over all tokens: Relay %s, bare pass-through %s: %+.1f ms (target ≤ +5 ms)\n",
		ms(rP99), ms(bP99), float64(rP99-bP99)/float64(time.Millisecond))
	fmt.Printf("  peak RSS of the Relay process %.0f MB (target < 300 MB)\n", rRSS)
}

// sweepChats is the concurrency of each row of `bench chat -sweep`.
var sweepChats = []int{100, 300, 600, 1000}

// sweep measures the streaming chats at each concurrency of sweepChats, each
// against a Relay process of its own, and prints a table of them, so that the
// point where added latency starts to climb is visible.
func sweep(tokens int, gap time.Duration, warmup bool) error {
	var rows, bare []streamRow
	for _, n := range sweepChats {
		row, err := streamChats(n, tokens, gap, false, warmup)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		if row, err = streamChats(n, tokens, gap, true, warmup); err != nil {
			return err
		}
		bare = append(bare, row)
	}
	fmt.Printf("\nstreaming chats, %d tokens %s apart, by concurrency (each server in its own process):\n", tokens, gap)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chats\tcomplete\tadded p50\tadded p99\tRelay CPU/token\tload CPU/token\tpeak RSS\tbare p50\tbare p99\tbare CPU/token\t")
	for i, r := range rows {
		b := bare[i]
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.1f µs\t%.1f µs\t%.0f MB\t%s\t%s\t%.1f µs\t\n", r.chats, r.complete, ms(r.p50), ms(r.p99),
			µs(r.relayPerToken), µs(r.loadPerToken), r.rssMB, ms(b.p50), ms(b.p99), µs(b.relayPerToken))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println("(bare: the pass-through that streams each token on and does nothing else, under the same load)")
	return nil
}

func µs(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// streamChats runs chats concurrent streaming chats through a Relay process of
// its own against a fake upstream in this process.
//
// With warmup, the process first serves the same chats once, unmeasured, and is
// then told to start measuring ("measure" on its stdin, answered by a line): the
// round then measures a server whose memory is in place, not the page faults of
// a process growing from nothing (docs/performance.md, "Streaming chats").
func streamChats(chats, tokens int, gap time.Duration, bare, warmup bool) (streamRow, error) {
	var row streamRow
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		var buf []byte
		for range tokens {
			time.Sleep(gap)
			// Each token carries the time it was sent, to measure what Relay adds.
			buf = append(buf[:0], `data: {"choices":[{"index":0,"delta":{"content":"<`...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, ">\"}}]}\n\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			_ = rc.Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		_ = rc.Flush()
	}))
	defer upstream.Close()
	args := []string{"chat-relay", "-upstream", upstream.URL}
	if warmup {
		args = append(args, "-warmup")
	}
	what := "Relay"
	if bare {
		args, what = append(args, "-bare"), "bare pass-through"
	}
	p, line, err := startChild(what, args...)
	if err != nil {
		return row, err
	}
	defer p.stop()
	stdin, out := p.stdin, p.out
	var ready relayReady
	if err := json.Unmarshal(line, &ready); err != nil {
		return row, fmt.Errorf("the Relay process said %q: %w", line, err)
	}

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: chats}}
	if warmup {
		fmt.Fprintf(os.Stderr, "%d concurrent streaming chats through the %s, %d tokens %s apart, to warm it up…\n", chats, what, tokens, gap)
		if complete, _, _ := sendChats(hc, ready, chats, tokens); complete != chats {
			return row, fmt.Errorf("the %s completed %d of the %d chats of its warm-up", what, complete, chats)
		}
		if _, err := io.WriteString(stdin, "measure\n"); err != nil {
			return row, err
		}
		if _, err := out.ReadBytes('\n'); err != nil {
			return row, fmt.Errorf("the %s process did not start measuring: %w", what, err)
		}
	}
	fmt.Fprintf(os.Stderr, "%d concurrent streaming chats through the %s, %d tokens %s apart…\n", chats, what, tokens, gap)
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	driverCPU := cpuTime()
	complete, seen, took := sendChats(hc, ready, chats, tokens)
	loadCPU := cpuTime() - driverCPU
	if err := stdin.Close(); err != nil {
		return row, err
	}
	var rep relayReport
	if err := json.NewDecoder(out).Decode(&rep); err != nil {
		return row, fmt.Errorf("reading the Relay process's report: %w", err)
	}
	added := make([]time.Duration, len(rep.Added))
	for i, us := range rep.Added {
		added[i] = time.Duration(us) * time.Microsecond
	}
	slices.Sort(seen)
	fmt.Printf("%d concurrent streaming chats (%s in its own process): %d complete with all %d tokens in %s\n",
		chats, what, complete, tokens, took.Round(time.Millisecond))
	if len(added) == 0 {
		return row, fmt.Errorf("no token went through the %s", what)
	}
	fmt.Printf("  added latency per token, upstream write to SSE flush in the %s (%d tokens): p50 %s  p99 %s  max %s  (target p99 < 5 ms)\n",
		what, len(added), ms(pct(added, 50)), ms(pct(added, 99)), ms(added[len(added)-1]))
	parsed := make([]time.Duration, len(rep.Parsed))
	for i, us := range rep.Parsed {
		parsed[i] = time.Duration(us) * time.Microsecond
	}
	if len(parsed) > 0 {
		fmt.Printf("  of which until the model client handed the token on: p50 %s  p99 %s\n", ms(pct(parsed, 50)), ms(pct(parsed, 99)))
	}
	var secs []string
	for _, s := range rep.BySecond {
		secs = append(secs, fmt.Sprintf("%d: %.1f/%.1f", s[0], float64(s[1])/1000, float64(s[2])/1000))
	}
	fmt.Printf("  second by second (tokens: p50/p99 ms): %s\n", strings.Join(secs, ", "))
	fmt.Printf("  as the clients read it (adds their own scheduling on the same cores): p50 %s  p99 %s\n",
		ms(pct(seen, 50)), ms(pct(seen, 99)))
	fmt.Printf("  CPU: %s %s (%.1f µs per token), upstream and clients %s; load average before the run %s\n",
		what, rep.CPU.Round(time.Millisecond), float64(rep.CPU.Microseconds())/float64(max(1, len(added))), loadCPU.Round(time.Millisecond), load)
	fmt.Printf("  peak RSS of the %s process %.0f MB (target < 300 MB); at most %.0f MB Go heap in use, %.0f MB of goroutine stacks, %d goroutines\n", what,
		float64(rep.PeakRSS)/1024, float64(rep.HeapInuse)/(1<<20), float64(rep.StackInuse)/(1<<20), rep.Goroutines)
	row = streamRow{chats: chats, complete: complete, p50: pct(added, 50), p99: pct(added, 99),
		relayPerToken: rep.CPU / time.Duration(max(1, len(added))), loadPerToken: loadCPU / time.Duration(max(1, len(added))),
		rssMB: float64(rep.PeakRSS) / 1024, cpu: rep.CPU, added: added}
	return row, nil
}

// sendChats sends chats chats at once and reads their streams: how many
// completed with all their tokens, each token's latency as read here, sorted
// by the caller, and how long they took together.
func sendChats(hc *http.Client, ready relayReady, chats, tokens int) (int, []time.Duration, time.Duration) {
	var mu sync.Mutex
	var seen []time.Duration
	complete := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	for range chats {
		wg.Go(func() {
			got, done, mine := readChat(hc, ready)
			mu.Lock()
			seen = append(seen, mine...)
			if done && got == tokens {
				complete++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return complete, seen, time.Since(t0)
}

// readChat sends one chat and reads its stream, returning how many tokens
// arrived, whether the run finished, and each token's latency as read here.
func readChat(hc *http.Client, ready relayReady) (int, bool, []time.Duration) {
	req, _ := http.NewRequest("POST", ready.URL+"/api/chat", strings.NewReader(`{"agent_id":"bench","text":"stream please"}`))
	req.Header.Set("Authorization", "Bearer "+ready.Key)
	resp, err := hc.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		return 0, false, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(os.Stderr, "chat: %s: %s\n", resp.Status, b)
		return 0, false, nil
	}
	var mine []time.Duration
	got, done, delta := 0, false, false
	br := bufio.NewReaderSize(resp.Body, 4<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			break
		}
		if t, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
			delta = string(t) == "message.delta\n"
			done = done || string(t) == "run.finished\n"
			continue
		}
		if !delta || !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		if sent, ok := tokenTime(line); ok {
			mine = append(mine, time.Duration(time.Now().UnixNano()-sent))
			got++
		}
	}
	return got, done, mine
}

// tokenMark starts a token's send time in an event's JSON.
var tokenMark = []byte(`"text":"<`)

// tokenTime reads the send time of the first token in b.
func tokenTime(b []byte) (int64, bool) {
	i := bytes.Index(b, tokenMark)
	if i < 0 {
		return 0, false
	}
	b = b[i+len(tokenMark):]
	j := bytes.IndexByte(b, '>')
	if j < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[:j]), 10, 64)
	return n, err == nil
}

// chatRelay is the Relay process of the streaming measurement: Relay's API on
// SQLite with an agent whose model is the upstream, as `relay serve` builds it.
// It prints a relayReady line, serves until its stdin closes, then prints a
// relayReport.
func chatRelay() error {
	upstreamURL := flag.String("upstream", "", "the fake upstream's `URL`")
	bare := flag.Bool("bare", false, "serve the bare pass-through instead of Relay")
	warmup := flag.Bool("warmup", false, "measure from the line \"measure\" on stdin, not from the start")
	flag.Parse()
	dir, err := os.MkdirTemp("", "relay-bench-stream-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "relay.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	level := slog.LevelWarn
	_ = level.UnmarshalText([]byte(os.Getenv("RELAY_BENCH_LOG_LEVEL")))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	app.TuneMemory(config.Default().Server, os.LookupEnv, log) // as `relay serve` with the default config
	// Relay's threads follow its load; the pass-through keeps Go's default.
	if !*bare {
		defer followLoad(ctx, config.Default().Server, log)()
	}
	authSvc := auth.NewService(st, nil)
	u, err := authSvc.CreateUser(ctx, auth.NewUser{Email: "bench@example.com", Role: auth.RoleAdmin})
	if err != nil {
		return err
	}
	_, key, err := authSvc.CreateKey(ctx, u.ID, "bench")
	if err != nil {
		return err
	}
	agents := agent.NewService(st, agent.Rules{})
	if _, err := agents.Create(ctx, u, "bench", agent.Spec{Provider: "openAI", Model: "m", Instructions: "Be brief."}); err != nil {
		return err
	}
	m := mcp.NewManager(nil, mcp.Options{Logger: log})
	defer m.Close()
	var (
		mu     sync.Mutex
		added  []int32
		served int
	)
	client := &parseClock{Model: openai.New(openai.Options{BaseURL: *upstreamURL, APIKey: "sk-bench", Logger: log})}
	svc := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents.Cached(), MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return client, mcp.FamilyOpenAI, nil
		}}
	api := httpapi.New(httpapi.Options{Auth: authSvc, Agents: agents, Runs: svc, MCP: m, Logger: log,
		Ready: func(ctx context.Context) error { return nil }})

	stopProfile := func() {} // written whole before the report: the parent then ends this process
	suffix := ""             // the profiles of the bare pass-through are written beside Relay's
	if *bare {
		suffix = ".bare"
	}
	startProfile := func() {
		if f := os.Getenv("RELAY_BENCH_CPUPROFILE"); f != "" {
			f += suffix
			if out, err := os.Create(f); err == nil {
				_ = pprof.StartCPUProfile(out)
				stopProfile = func() { pprof.StopCPUProfile(); out.Close() }
			}
		}
	}
	if !*warmup {
		startProfile()
	}
	var handlers sync.WaitGroup                   // chats still being answered
	var bySecond [60][]int32                      // added latencies by the second the token was sent in
	cpu0At := time.Now()                          // guarded by mu, as cpu0
	heapAt := os.Getenv("RELAY_BENCH_MEMPROFILE") // written as the heap grows
	if heapAt != "" {
		heapAt += suffix
	}
	var serveChat http.Handler = api
	if *bare {
		serveChat = passThrough(*upstreamURL)
	}
	clocked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			api.ServeHTTP(w, r)
			return
		}
		handlers.Add(1)
		defer handlers.Done()
		tc := &tokenClock{ResponseWriter: w}
		serveChat.ServeHTTP(tc, r)
		mu.Lock()
		defer mu.Unlock()
		added = append(added, tc.added...)
		for i, at := range tc.sent {
			sec := int(time.Duration(at - cpu0At.UnixNano()).Seconds())
			if sec >= 0 && sec < len(bySecond) {
				bySecond[sec] = append(bySecond[sec], tc.added[i])
			}
		}
		served++
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: clocked, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	cpu0 := cpuTime()
	ready, _ := json.Marshal(relayReady{URL: "http://" + ln.Addr().String(), Key: key})
	fmt.Printf("%s\n", ready)

	var rep relayReport
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-t.C:
			case <-stopSampling:
				return
			}
			runtime.ReadMemStats(&ms)
			if heapAt != "" && ms.HeapInuse > rep.HeapInuse*6/5 {
				writeHeap(heapAt) // near the peak
			}
			rep.HeapInuse, rep.StackInuse = max(rep.HeapInuse, ms.HeapInuse), max(rep.StackInuse, ms.StackInuse)
			rep.Goroutines = max(rep.Goroutines, runtime.NumGoroutine())
		}
	}()
	// A client may have read its last event before its handler returned.
	waitAnswered := func() {
		answered := make(chan struct{})
		go func() { handlers.Wait(); close(answered) }()
		select {
		case <-answered:
		case <-time.After(10 * time.Second):
			fmt.Fprintln(os.Stderr, "bench chat-relay: chats still being answered after 10 s; going on without them")
		}
	}
	in := bufio.NewScanner(os.Stdin) // until the parent is done
	for in.Scan() {
		if in.Text() != "measure" {
			continue
		}
		// The warm-up is over: what it served is forgotten.
		waitAnswered()
		mu.Lock()
		added, bySecond, served = nil, [60][]int32{}, 0
		client.mu.Lock()
		client.parsed = nil
		client.mu.Unlock()
		cpu0, cpu0At = cpuTime(), time.Now()
		mu.Unlock()
		startProfile()
		fmt.Println("measuring")
	}
	waitAnswered()
	close(stopSampling)
	<-sampled
	if heapAt != "" {
		writeHeap(heapAt + ".end") // for the allocations over the whole run
	}
	_ = srv.Close()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(added)
	client.mu.Lock()
	slices.Sort(client.parsed)
	rep.Parsed = client.parsed
	client.mu.Unlock()
	for _, l := range bySecond {
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		rep.BySecond = append(rep.BySecond, [3]int32{int32(len(l)), l[len(l)/2], l[(len(l)*99+99)/100-1]})
	}
	rep.Added, rep.PeakRSS, rep.Chats, rep.CPU = added, peakRSSKiB(), served, cpuTime()-cpu0
	stopProfile()
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// passThrough is the control of the streaming measurement: the least an HTTP
// server can do to stream a model's answer to a client, written with the same
// standard library and HTTP client as Relay. For each chat it sends one request
// to the upstream and forwards each streamed text as a message.delta event,
// flushed at once; it keeps no conversation, stores nothing and runs no agent.
// What it adds to a token's latency on a machine is what any Go server would add
// there, so Relay's numbers are read against it.
func passThrough(upstream string) http.Handler {
	hc := sse.NewHTTPClient(0)
	body := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"stream please"}]}`)
	content := []byte(`"content":"`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), "POST", upstream+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		br := bufio.NewReaderSize(resp.Body, 4<<10)
		var out []byte
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			i := bytes.Index(line, content)
			if i < 0 {
				if bytes.HasPrefix(line, []byte("data: [DONE]")) {
					_, _ = io.WriteString(w, "event: run.finished\ndata: {}\n\n")
					_ = rc.Flush()
				}
				continue
			}
			text := line[i+len(content):]
			text = text[:max(0, bytes.IndexByte(text, '"'))]
			out = append(out[:0], "event: message.delta\ndata: {\"agent_id\":\"bench\",\"text\":\""...)
			out = append(append(out, text...), "\"}\n\n"...)
			if _, err := w.Write(out); err != nil {
				return
			}
			_ = rc.Flush()
		}
	})
}

// parseClock notes, for each token, the time from the upstream writing it to
// the model client handing it on.
type parseClock struct {
	llm.Model
	mu     sync.Mutex
	parsed []int32
}

func (c *parseClock) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	var mine []int32
	defer func() {
		c.mu.Lock()
		c.parsed = append(c.parsed, mine...)
		c.mu.Unlock()
	}()
	return c.Model.Stream(ctx, req, func(e llm.Event) {
		if e.Kind == llm.EventText && strings.HasPrefix(e.Text, "<") {
			if sent, err := strconv.ParseInt(strings.Trim(e.Text, "<>"), 10, 64); err == nil {
				mine = append(mine, int32((time.Now().UnixNano()-sent)/1000))
			}
		}
		emit(e)
	})
}

// writeHeap writes a heap profile to path.
func writeHeap(path string) {
	out, err := os.Create(path)
	if err != nil {
		return
	}
	defer out.Close()
	_ = pprof.Lookup("heap").WriteTo(out, 0)
}

// tokenClock notes, for each token that goes through it, the time from the
// upstream writing the token to Relay flushing its event to the client.
type tokenClock struct {
	http.ResponseWriter
	buf   []byte // written since the last flush
	added []int32
	sent  []int64 // when each token was sent, for the latency over time
}

func (w *tokenClock) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return w.ResponseWriter.Write(p)
}

// FlushError flushes, then notes the tokens it sent.
func (w *tokenClock) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	now := time.Now().UnixNano()
	for b := w.buf; len(b) > 0; {
		ev, rest, _ := bytes.Cut(b, []byte("\n\n"))
		b = rest
		if !bytes.Contains(ev, []byte("event: message.delta\n")) {
			continue
		}
		if sent, ok := tokenTime(ev); ok {
			w.added = append(w.added, int32((now-sent)/1000))
			w.sent = append(w.sent, sent)
		}
	}
	w.buf = w.buf[:0]
	return err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *tokenClock) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// peakRSSKiB reads the process's peak resident set size from /proc.
func peakRSSKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.Atoi(f[0])
				return kb
			}
		}
	}
	return 0
}
