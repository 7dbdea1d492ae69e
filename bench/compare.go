package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// `bench compare` measures Relay against LibreChat's agent engine,
// @librechat/agents, on the same scenarios in one run on one machine: one
// fake OpenAI-compatible model (the aimock peer, answering at once) and one
// MCP server serve both, and each side runs in a process of its own whose CPU
// time and memory are read from /proc. docs/performance.md explains the
// method and holds the latest table.

// What the scenarios' agents are: their instructions carry the markers the
// fake model's fixtures match, so that it answers every side alike.
const (
	compareQuestion        = "What is 2+3?"
	calcInstructions       = "ROLE-CALC. Add numbers with the get-sum tool."
	frontDeskInstructions  = "ROLE-FRONT-DESK. Route questions."
	specialistInstructions = "ROLE-SPECIALIST. Add numbers with the get-sum tool."
	compareProvider        = "aimock"
	compareModel           = "bench-model"
	compareMCPServer       = "bench"
	// compareTool is the MCP tool get-sum as Relay names it (and the
	// LibreChat side, bench/compare/node/agents.cjs, names it alike).
	compareTool = "get-sum__mcp__" + compareMCPServer
)

// compareAgent is an agent of the scenarios.
type compareAgent struct {
	id, name, instructions string
	tools                  []string
	handoffTo              string // an agent it may hand off to
}

var compareAgents = []compareAgent{
	{id: "calc", name: "Calculator", instructions: calcInstructions, tools: []string{compareTool}},
	{id: "specialist", name: "Specialist", instructions: specialistInstructions, tools: []string{compareTool}},
	{id: "front-desk", name: "Front Desk", instructions: frontDeskInstructions, handoffTo: "specialist"},
}

// compareEntry is the agent a run of graph starts with.
func compareEntry(graph string) string {
	if graph == "handoff" {
		return "front-desk"
	}
	return "calc"
}

// compareFixtures is the fake model's script, matched on the agent's
// instructions (the system message) and on the tool result that ends the
// request: the calculator and the specialist call get-sum, then answer from
// its result; the front desk hands off to the specialist.
const compareFixtures = `{"fixtures":[
 {"match":{"systemMessage":"ROLE-CALC","toolResultContains":"The sum of 2 and 3 is 5."},"response":{"content":"The sum is 5."}},
 {"match":{"systemMessage":"ROLE-CALC"},"response":{"toolCalls":[{"name":"get-sum__mcp__bench","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"systemMessage":"ROLE-SPECIALIST","toolResultContains":"The sum of 2 and 3 is 5."},"response":{"content":"The specialist says: 5."}},
 {"match":{"systemMessage":"ROLE-SPECIALIST"},"response":{"toolCalls":[{"name":"get-sum__mcp__bench","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"systemMessage":"ROLE-FRONT-DESK"},"response":{"toolCalls":[{"name":"lc_transfer_to_specialist","arguments":"{}"}]}}
]}`

// scenario is one workload of the comparison.
type scenario struct {
	name, what string
	graph      string
	want       string // every run's answer
	calls      int    // model calls per run
	atOnce     int
	runs, warm int // measured, and warm-up before them
	// rounds split the measured runs: each side makes runs/rounds of them in
	// turn, round after round, so that every side meets the same changes of
	// the machine's load.
	rounds int
	// lasts, when set (-for, S3 alone), replaces runs and rounds: round
	// after round, each side makes a batch of atOnce runs in turn, until its
	// turns together have lasted this long; a side that has had its time
	// sits out the rounds left to the others.
	lasts time.Duration
}

// compareSide is one row of a scenario: a way of running it, started afresh
// for each scenario so that its memory is that scenario's.
type compareSide struct {
	short     string // its name in -sides
	name      string
	relay     bool // a Relay row, read against LibreChat's
	librechat bool
	in        func(sc scenario) bool
	start     func(e compareEnv) (side, error)
	// profile names the CPU profiles that -cpuprofile writes, for the sides
	// that can write one: %s is the scenario, in lower case.
	profile string
}

// compareEnv is what the sides are started with: the relay binary built
// from the tree, the run's temporary directory, this binary, the fake
// model's and the MCP server's URLs, and the LibreChat side if it runs.
type compareEnv struct {
	bin, tmp, self   string
	modelURL, mcpURL string
	node             *nodeSide
}

// compareWriteBehind is database.write_behind on the side that sets it
// (docs/config.md, "Writing behind").
const compareWriteBehind = 100 * time.Millisecond

// compareSides are the sides, in the table's order.
var compareSides = []compareSide{
	{short: "floor", name: "floor: Go HTTP client, no engine", in: everyScenario,
		start: func(e compareEnv) (side, error) {
			return startChildSide("the floor", nil, e.self, "compare-floor", "-model", e.modelURL, "-mcp", e.mcpURL)
		}},
	{short: "v1", name: "Relay, POST /v1/chat/completions", relay: true, in: everyScenario,
		start: func(e compareEnv) (side, error) {
			return startRelaySide(e.bin, e.tmp, apiV1, e.modelURL, e.mcpURL, 0)
		}, profile: "relay-%s-v1.pprof"},
	{short: "behind", name: "Relay, POST /v1/chat/completions, write_behind " + compareWriteBehind.String(), relay: true, in: everyScenario,
		start: func(e compareEnv) (side, error) {
			return startRelaySide(e.bin, e.tmp, apiV1, e.modelURL, e.mcpURL, compareWriteBehind)
		}, profile: "relay-%s-behind.pprof"},
	{short: "sse", name: "Relay, POST /api/chat (SSE)", relay: true, in: func(sc scenario) bool { return sc.name == "S1" },
		start: func(e compareEnv) (side, error) {
			return startRelaySide(e.bin, e.tmp, apiChat, e.modelURL, e.mcpURL, 0)
		}},
	{short: "inprocess", name: "Relay, run service in-process", relay: true, in: everyScenario,
		start: func(e compareEnv) (side, error) {
			return startChildSide("Relay in-process", nil, e.self, "compare-relay", "-model", e.modelURL, "-mcp", e.mcpURL)
		}, profile: "relay-%s-inprocess.pprof"},
	{short: "librechat", name: "LibreChat, @librechat/agents " + librechatAgents, librechat: true, in: everyScenario,
		start: func(e compareEnv) (side, error) {
			return startChildSide("the LibreChat side", nil, e.node.node, e.node.script, e.modelURL, e.mcpURL)
		}, profile: "librechat-%s.cpuprofile"},
}

// compareRow is a line of the table.
type compareRow struct {
	scenario, side     string
	runs               int
	cpu                time.Duration // the process's CPU per run
	p50, p99           time.Duration
	perSecond          float64
	rssStart, rssPeak  int64 // KiB
	cpuRatio, rssRatio float64
	relay, librechat   bool
	wal                bool  // a side whose SQLite write-ahead log was watched
	walPeak            int64 // its peak size over the measured runs, in bytes
}

// benchCompare is `bench compare`.
func benchCompare() error {
	quick := flag.Bool("quick", false, "fewer runs: done in under 2 minutes, numbers rougher")
	markdown := flag.Bool("markdown", false, "print the table as Markdown, as docs/performance.md holds it")
	profDir := flag.String("cpuprofile", "", "write CPU profiles of each scenario's measured runs into `DIR`: Relay over /v1 and its run service in-process (pprof) and LibreChat's engine (.cpuprofile, for Chrome's DevTools)")
	cache := flag.String("cache", defaultNodeCache(), "where the LibreChat side is installed (`DIR`), and found again")
	only := flag.String("scenarios", "S1,S2,S3", "the scenarios to run, comma-separated")
	runs := flag.Int("runs", 0, "measured runs of S1 and S2 (default 1000, -quick 60)")
	batches := flag.Int("batches", 0, "measured batches of 100 runs at once in S3 (default 10, -quick 2)")
	sidesList := flag.String("sides", "floor,v1,behind,sse,inprocess,librechat", "the sides to run, comma-separated: floor, v1 (Relay over /v1/chat/completions), behind (the same with database.write_behind), sse (Relay over /api/chat, S1 only), inprocess (Relay's run service in-process), librechat")
	lasts := flag.Duration("for", 0, "with -scenarios S3 alone: in place of -batches, S3's measured batches go on until each side's have lasted `DURATION` (e.g. 5m)")
	flag.Parse()
	aimockBin := os.Getenv("PEER_AIMOCK")
	if aimockBin == "" {
		return errors.New(`PEER_AIMOCK is not set: eval "$(bash ../shared/peers/install.sh)" first`)
	}
	n, warm, b, rounds := 1000, 50, 10, 10
	if *quick {
		n, warm, b, rounds = 60, 10, 2, 2
	}
	if *runs > 0 {
		n = *runs
	}
	if *batches > 0 {
		b = *batches
	}
	rounds = min(rounds, n)
	n -= n % rounds
	scenarios := []scenario{
		{name: "S1", what: "one agent, one MCP tool call, two model calls", graph: "one", want: "The sum is 5.", calls: 2, atOnce: 1, runs: n, warm: warm, rounds: rounds},
		{name: "S2", what: "handoff: two agents, one MCP tool call, three model calls", graph: "handoff", want: "The specialist says: 5.", calls: 3, atOnce: 1, runs: n, warm: warm, rounds: rounds},
		{name: "S3", what: "100 × S1 at once", graph: "one", want: "The sum is 5.", calls: 2, atOnce: 100, runs: 100 * b, warm: 100, rounds: b},
	}
	scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool { return !slices.Contains(strings.Split(*only, ","), sc.name) })
	if len(scenarios) == 0 {
		return fmt.Errorf("-scenarios %q names none of S1, S2, S3", *only)
	}
	sides, err := parseSides(*sidesList)
	if err != nil {
		return err
	}
	// The scenarios that none of the sides runs are left out.
	scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool {
		if !slices.ContainsFunc(sides, func(sd compareSide) bool { return sd.in(sc) }) {
			fmt.Fprintf(os.Stderr, "%s: none of -sides %s runs it; left out\n", sc.name, *sidesList)
			return true
		}
		return false
	})
	if len(scenarios) == 0 {
		return fmt.Errorf("-sides %s runs none of -scenarios %s", *sidesList, *only)
	}
	switch {
	case *lasts < 0:
		return fmt.Errorf("-for %s: want a positive duration", *lasts)
	case *lasts > 0 && *batches > 0:
		return errors.New("-for and -batches both say how long S3's measured part is: give one of them")
	case *lasts > 0:
		for i, sc := range scenarios {
			if sc.name != "S3" {
				return fmt.Errorf("-for applies to S3 alone, and -scenarios %q names %s: run it with -scenarios S3", *only, sc.name)
			}
			scenarios[i].runs, scenarios[i].rounds, scenarios[i].lasts = 0, 0, *lasts
		}
	}
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			return err
		}
	}

	var env compareEnv
	if slices.ContainsFunc(sides, func(sd compareSide) bool { return sd.librechat }) {
		// The LibreChat side, installed only when it runs.
		if env.node, err = installNode(*cache); err != nil {
			return err
		}
	}
	if env.tmp, err = os.MkdirTemp("", "relay-bench-compare-"); err != nil {
		return err
	}
	defer os.RemoveAll(env.tmp)
	env.bin = filepath.Join(env.tmp, "relay")
	fmt.Fprintln(os.Stderr, "building relay…")
	build := exec.Command("go", "build", "-o", env.bin, "./cmd/relay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building relay: %w", err)
	}
	if env.self, err = os.Executable(); err != nil {
		return err
	}

	// The MCP server, in this process: its CPU is no side's.
	stats := &mcptest.Stats{}
	srv := mcptest.NewServer(mcptest.Options{Name: compareMCPServer, Stats: stats})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mcptest.Handler(func() *sdk.Server { return srv }), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	if env.mcpURL, err = mcptest.Endpoint("http://"+ln.Addr().String(), mcptest.TransportStreamableHTTP); err != nil {
		return err
	}
	model, err := startAimock(aimockBin, env.tmp)
	if err != nil {
		return err
	}
	defer model.stop()
	env.modelURL = model.base + "/v1"

	var nodeVersion string
	if env.node != nil {
		if out, err := exec.Command(env.node.node, "--version").Output(); err == nil {
			nodeVersion = strings.TrimSpace(string(out))
		}
	}
	loadBefore := loadAverage()
	began := time.Now()
	var rows []compareRow
	var profiles []string // the CPU profiles written
	for _, sc := range scenarios {
		scSides := slices.DeleteFunc(slices.Clone(sides), func(sd compareSide) bool { return !sd.in(sc) })
		r, err := measureScenario(sc, scSides, env, model, stats, *profDir)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		rows = append(rows, r...)
		for _, sd := range scSides {
			if *profDir != "" && sd.profile != "" {
				profiles = append(profiles, filepath.Join(*profDir, sd.profileOf(sc)))
			}
		}
	}
	for i := range rows {
		if !rows[i].relay {
			continue
		}
		for _, lc := range rows {
			if lc.librechat && lc.scenario == rows[i].scenario {
				rows[i].cpuRatio = float64(lc.cpu) / float64(rows[i].cpu)
				rows[i].rssRatio = float64(lc.rssPeak) / float64(rows[i].rssPeak)
			}
		}
	}

	var args []string // the flags that change the measurement, to say how the table was made
	flag.Visit(func(f *flag.Flag) {
		switch v := f.Value.String(); {
		case f.Name == "markdown" || f.Name == "cpuprofile" || f.Name == "cache":
		case v == "true":
			args = append(args, " -"+f.Name)
		default:
			args = append(args, " -"+f.Name+"="+v)
		}
	})
	var how []string // how each scenario was run
	var oneByOne []string
	for _, sc := range scenarios {
		switch {
		case sc.atOnce == 1:
			oneByOne = append(oneByOne, sc.name)
		case sc.lasts > 0:
			how = append(how, fmt.Sprintf("%s batches of %d runs at once, after %d of warm-up, until each side's have lasted %s", sc.name, sc.atOnce, sc.warm, sc.lasts))
		default:
			how = append(how, fmt.Sprintf("%s %d × %d runs at once after %d of warm-up, in %d rounds", sc.name, sc.runs/sc.atOnce, sc.atOnce, sc.warm, sc.rounds))
		}
	}
	if len(oneByOne) > 0 {
		how = slices.Insert(how, 0, fmt.Sprintf("%s %d runs one after another after %d of warm-up, in %d rounds", strings.Join(oneByOne, " and "), n, warm, rounds))
	}
	engines := fmt.Sprintf("Relay %s built with %s", gitDescribe(), runtime.Version())
	if env.node != nil {
		engines += fmt.Sprintf("; LibreChat's engine @librechat/agents %s on Node.js %s", librechatAgents, nodeVersion)
	}
	header := []string{
		fmt.Sprintf("%s, `go run ./bench compare%s`: %s; %s in all.",
			began.UTC().Format("2006-01-02 15:04 MST"), strings.Join(args, ""), strings.Join(how, "; "), time.Since(began).Round(time.Second)),
		fmt.Sprintf("Machine: %s; load average before %s.", machine(), loadBefore),
		engines + "; aimock and the MCP server answer at once.",
	}
	if *markdown {
		printCompareMarkdown(os.Stdout, header, rows)
	} else if err := printCompareText(os.Stdout, header, rows); err != nil {
		return err
	}
	if len(profiles) > 0 {
		fmt.Fprintf(os.Stderr, "CPU profiles: %s (a .pprof: go tool pprof -top FILE; a .cpuprofile opens in Chrome's DevTools, Performance)\n", strings.Join(profiles, ", "))
	}
	return nil
}

func everyScenario(scenario) bool { return true }

// profileOf is the name of the side's CPU profile of sc.
func (sd compareSide) profileOf(sc scenario) string {
	return fmt.Sprintf(sd.profile, strings.ToLower(sc.name))
}

// parseSides reads -sides, short names of compareSides, comma-separated,
// and returns those sides in the table's order.
func parseSides(list string) ([]compareSide, error) {
	var names []string
	for _, sd := range compareSides {
		names = append(names, sd.short)
	}
	var chosen []string
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("-sides: no side is called %q; the sides are %s", name, strings.Join(names, ", "))
		}
		chosen = append(chosen, name)
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("-sides %q names no side; the sides are %s", list, strings.Join(names, ", "))
	}
	return slices.DeleteFunc(slices.Clone(compareSides), func(sd compareSide) bool { return !slices.Contains(chosen, sd.short) }), nil
}

// measured is a side of a scenario being measured.
type measured struct {
	compareSide
	s     side
	row   compareRow
	runs  int           // measured
	cpu   time.Duration // over the measured runs
	own   time.Duration // the CPU time the side counted itself, if it does
	took  time.Duration // its measured turns together
	walls []time.Duration
	// first and last are when its first measured turn began and its last
	// ended.
	first, last time.Time
	// walWarm and walPeak are the peak sizes of its SQLite write-ahead log,
	// for the sides that have one to watch (row.wal), over the first run and
	// the warm-up, and over the measured turns.
	walWarm, walPeak int64
}

// watchWAL starts watching m's write-ahead log, if it has one to watch
// (nil otherwise: its end is 0).
func (m *measured) watchWAL() *walWatch {
	if ws, ok := m.s.(walSide); ok {
		return watchWAL(ws.walPath())
	}
	return nil
}

// measureScenario runs sc on a new process of each of sides, all started
// first: on each, a first run, then the warm-up; then the measured runs, in
// rounds, the sides taking turns within each, each side's process's CPU time
// read before and after its own turns (with sc.lasts, rounds go on until
// each side's turns have lasted that long). Each process's resident memory
// is read once it is ready (start) and after the last round (peak). The
// write-ahead log of a side that runs `relay serve` is watched (walWatch)
// during its first run and warm-up, and during each of its measured turns.
// With profDir set, the sides that can write a CPU profile then make the
// measured runs again with the profiler on; those runs are not in the table.
func measureScenario(sc scenario, sides []compareSide, env compareEnv, model *aimock, stats *mcptest.Stats, profDir string) ([]compareRow, error) {
	ctx := context.Background()
	var running []*measured
	defer func() {
		for _, m := range running {
			m.s.stop()
		}
	}()
	for _, sd := range sides {
		fmt.Fprintf(os.Stderr, "%s (%s): starting %s…\n", sc.name, sc.what, sd.name)
		s, err := sd.start(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sd.name, err)
		}
		m := &measured{compareSide: sd, s: s, row: compareRow{scenario: sc.name, side: sd.name, relay: sd.relay, librechat: sd.librechat}}
		_, m.row.wal = s.(walSide)
		running = append(running, m)
		if m.row.rssStart, _, err = procMem(s.pid()); err != nil {
			return nil, err
		}
	}
	// do runs b on m and checks that every run answered, called the model
	// sc.calls times and the tool once.
	do := func(m *measured, b batch) (batchResult, error) {
		if err := model.resetJournal(); err != nil {
			return batchResult{}, err
		}
		tools := stats.Calls("get-sum")
		res, err := m.s.run(ctx, b)
		if b.ProfileSeconds > 0 {
			b.Runs = len(res.WallsUS) // as many as the profile lasted
		}
		if err == nil {
			err = checkBatch(sc, b, res, model, stats.Calls("get-sum")-tools)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", m.name, err)
		}
		return res, nil
	}
	for _, m := range running {
		w := m.watchWAL()
		_, err := do(m, batch{Graph: sc.graph, Runs: 1, AtOnce: 1, Want: sc.want})
		if err == nil {
			if _, err = do(m, batch{Graph: sc.graph, Runs: sc.warm, AtOnce: sc.atOnce, Want: sc.want}); err != nil {
				err = fmt.Errorf("warming up: %w", err)
			}
		} else {
			err = fmt.Errorf("the first run: %w", err)
		}
		m.walWarm = w.end()
		if err != nil {
			return nil, err
		}
	}
	if sc.lasts > 0 {
		fmt.Fprintf(os.Stderr, "%s: batches of %d runs on each side until its batches have lasted %s…\n", sc.name, sc.atOnce, sc.lasts)
	} else {
		fmt.Fprintf(os.Stderr, "%s: %d runs on each side in %d rounds…\n", sc.name, sc.runs, sc.rounds)
	}
	began := time.Now()
	note := began.Add(time.Minute) // when to say how far a long run is
	for round := 0; sc.lasts > 0 || round < sc.rounds; round++ {
		turns := 0
		for _, m := range running {
			runs := sc.atOnce
			if sc.lasts == 0 {
				runs = sc.runs / sc.rounds
			} else if m.took >= sc.lasts {
				continue // it has had its time
			}
			turns++
			cpu0, err := procCPU(m.s.pid())
			if err != nil {
				return nil, err
			}
			w := m.watchWAL()
			t0 := time.Now()
			res, err := do(m, batch{Graph: sc.graph, Runs: runs, AtOnce: sc.atOnce, Want: sc.want})
			t1 := time.Now()
			m.walPeak = max(m.walPeak, w.end())
			if err != nil {
				return nil, err
			}
			if m.first.IsZero() {
				m.first = t0
			}
			m.last = t1
			m.took += t1.Sub(t0)
			m.runs += runs
			cpu1, err := procCPU(m.s.pid())
			if err != nil {
				return nil, err
			}
			m.cpu += cpu1 - cpu0
			m.own += time.Duration(res.CPUUS) * time.Microsecond
			for _, us := range res.WallsUS {
				m.walls = append(m.walls, time.Duration(us)*time.Microsecond)
			}
		}
		if turns == 0 {
			break
		}
		if sc.lasts > 0 && time.Now().After(note) {
			var sofar []string
			for _, m := range running {
				s := fmt.Sprintf("%s %d runs in %s", m.short, m.runs, m.took.Round(time.Second))
				if m.row.wal {
					s += fmt.Sprintf(", WAL peak %s MB", walMB(m.walPeak))
				}
				sofar = append(sofar, s)
			}
			fmt.Fprintf(os.Stderr, "  after %s: %s\n", time.Since(began).Round(time.Second), strings.Join(sofar, "; "))
			note = note.Add(time.Minute)
		}
	}
	rows := make([]compareRow, len(running))
	for i, m := range running {
		var err error
		if _, m.row.rssPeak, err = procMem(m.s.pid()); err != nil {
			return nil, err
		}
		slices.Sort(m.walls)
		m.row.runs = m.runs
		m.row.cpu = m.cpu / time.Duration(m.runs)
		m.row.p50, m.row.p99 = pct(m.walls, 50), pct(m.walls, 99)
		m.row.perSecond = float64(m.runs) / m.took.Seconds()
		m.row.walPeak = m.walPeak
		rows[i] = m.row
		own := "" // the two counts should agree
		if m.own > 0 {
			own = fmt.Sprintf(" (its own count %.2f)", float64(m.own)/float64(time.Millisecond)/float64(m.runs))
		}
		fmt.Fprintf(os.Stderr, "  %s: CPU %.2f ms per run%s, wall p50 %s, p99 %s, peak RSS %.0f MB\n", m.name,
			float64(m.row.cpu)/float64(time.Millisecond), own, ms(m.row.p50), ms(m.row.p99), float64(m.row.rssPeak)/1024)
		if m.row.wal {
			fmt.Fprintf(os.Stderr, "  %s: WAL peak %s MB over its measured part, %d runs whose turns lasted %s (%s from the first to the last); %s MB over its warm-up\n", m.name,
				walMB(m.walPeak), m.runs, m.took.Round(10*time.Millisecond), m.last.Sub(m.first).Round(10*time.Millisecond), walMB(m.walWarm))
		}
	}
	for _, m := range running {
		if profDir == "" || m.profile == "" {
			continue
		}
		b := batch{Graph: sc.graph, Runs: sc.runs, AtOnce: sc.atOnce, Want: sc.want, Profile: filepath.Join(profDir, m.profileOf(sc))}
		if _, ok := m.s.(*relaySide); ok {
			// Profiled through its /debug/pprof/profile, for about as long
			// as its measured runs took.
			b.ProfileSeconds = max(1, int(m.took.Round(time.Second)/time.Second))
			fmt.Fprintf(os.Stderr, "%s: runs on %s for %d s with its CPU profiled…\n", sc.name, m.name, b.ProfileSeconds)
		} else {
			fmt.Fprintf(os.Stderr, "%s: %d runs on %s with its CPU profiled…\n", sc.name, sc.runs, m.name)
		}
		res, err := do(m, b)
		if err != nil {
			return nil, err
		}
		if b.ProfileSeconds > 0 {
			fmt.Fprintf(os.Stderr, "  %d runs in the profile\n", len(res.WallsUS))
		} else {
			fmt.Fprintf(os.Stderr, "  its own count of its CPU: %.2f ms per run with the profiler on\n", float64(res.CPUUS)/1000/float64(sc.runs))
		}
	}
	return rows, nil
}

// checkBatch checks that every run of b answered, and that together they
// called the model sc.calls times each (all answered 200) and the MCP tool
// once each (tools is the server's count).
func checkBatch(sc scenario, b batch, res batchResult, model *aimock, tools int) error {
	if res.Failures > 0 {
		return fmt.Errorf("%d of %d runs failed; the first answered %q", res.Failures, b.Runs, res.Failure)
	}
	if len(res.WallsUS) != b.Runs {
		return fmt.Errorf("%d runs timed, want %d", len(res.WallsUS), b.Runs)
	}
	calls, ok, err := model.calls()
	if err != nil {
		return err
	}
	if calls != ok || calls != b.Runs*sc.calls {
		return fmt.Errorf("%d runs made %d model calls (%d answered 200), want %d", b.Runs, calls, ok, b.Runs*sc.calls)
	}
	if tools != b.Runs {
		return fmt.Errorf("%d runs made %d MCP tool calls, want %d", b.Runs, tools, b.Runs)
	}
	return nil
}

// printCompareText prints the table for a terminal.
func printCompareText(w io.Writer, header []string, rows []compareRow) error {
	for _, h := range header {
		fmt.Fprintln(w, strings.ReplaceAll(h, "`", ""))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tside\truns\tCPU ms/run\twall p50\twall p99\truns/s\tRSS start MB\tRSS peak MB\tWAL peak MB\tLibreChat/this CPU\tLibreChat/this peak RSS\t")
	for _, r := range rows {
		c := r.cells()
		fmt.Fprintln(tw, strings.Join(c, "\t")+"\t")
	}
	return tw.Flush()
}

// printCompareMarkdown prints the table as docs/performance.md holds it.
func printCompareMarkdown(w io.Writer, header []string, rows []compareRow) {
	for _, h := range header {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | side | runs | CPU ms/run | wall p50 | wall p99 | runs/s | RSS start MB | RSS peak MB | WAL peak MB | LibreChat/this CPU | LibreChat/this peak RSS |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		c := r.cells()
		fmt.Fprintln(w, "| "+strings.Join(c, " | ")+" |")
	}
}

// cells are the row's columns, as printed.
func (r compareRow) cells() []string {
	ratio := func(f float64) string {
		if f == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f×", f)
	}
	wal := ""
	if r.wal {
		wal = walMB(r.walPeak)
	}
	return []string{r.scenario, r.side, strconv.Itoa(r.runs),
		fmt.Sprintf("%.2f", float64(r.cpu)/float64(time.Millisecond)),
		ms(r.p50), ms(r.p99), fmt.Sprintf("%.0f", r.perSecond),
		fmt.Sprintf("%.0f", float64(r.rssStart)/1024), fmt.Sprintf("%.0f", float64(r.rssPeak)/1024),
		wal, ratio(r.cpuRatio), ratio(r.rssRatio)}
}

// machine describes this machine: CPU model, cores, memory, kernel.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.Join(strings.Fields(v), " ")
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						mem = fmt.Sprintf(", %.0f GB of memory", float64(kb)/(1<<20))
					}
				}
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores%s%s", cpu, runtime.NumCPU(), mem, kernel)
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// gitDescribe names the tree Relay was built from: its commit, and whether
// it had changes.
func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "(commit unknown)"
	}
	return "at " + strings.TrimSpace(string(out))
}

// aimock is the fake model: the aimock peer answering the fixtures at once.
type aimock struct {
	cmd  *exec.Cmd
	base string
	hc   *http.Client
}

// startAimock starts aimock (its entry point bin) with compareFixtures on a
// free port, keeping every request in its journal, which bench compare
// counts and empties around each batch.
func startAimock(bin, tmp string) (*aimock, error) {
	dir := filepath.Join(tmp, "fixtures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "compare.json"), []byte(compareFixtures), 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", bin, "--port", strconv.Itoa(port), "--host", "127.0.0.1", "--fixtures", dir, "--log-level", "warn", "--journal-max", "0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tail := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = tail, tail
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting aimock: %w", err)
	}
	a := &aimock{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), hc: &http.Client{Timeout: 30 * time.Second}}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := a.hc.Get(a.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, fmt.Errorf("aimock did not start: %v\n%s", err, tail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (a *aimock) stop() {
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	_ = a.cmd.Wait()
}

// resetJournal empties aimock's journal of requests.
func (a *aimock) resetJournal() error {
	resp, err := a.hc.Post(a.base+"/__aimock/reset/journal", "application/json", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("emptying aimock's journal: %s", resp.Status)
	}
	return nil
}

// calls counts the chat completion requests in aimock's journal, and those
// answered 200.
func (a *aimock) calls() (all, ok int, err error) {
	count := func(query string) (int, error) {
		resp, err := a.hc.Get(a.base + "/__aimock/journal?path=/chat/completions&limit=0" + query)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("reading aimock's journal: %s", resp.Status)
		}
		return strconv.Atoi(resp.Header.Get("X-Total-Count"))
	}
	if all, err = count(""); err != nil {
		return 0, 0, err
	}
	ok, err = count("&status=200")
	return all, ok, err
}
