package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

// The sides of `bench compare` that run their scenarios themselves — the
// LibreChat engine (bench/compare/node/agents.cjs), the floor and Relay's run
// service in-process (this binary as `bench compare-floor` and `bench
// compare-relay`) — are processes that speak one protocol on their stdin and
// stdout, one JSON value a line. Once ready, a side prints a childReady. Each
// line the parent then writes is a batch; the side runs it and answers with a
// batchResult. It exits when its stdin closes.

// batch is a number of runs of one scenario for a side to make.
type batch struct {
	// Graph is "one" (one agent with the MCP tool) or "handoff" (an agent
	// that hands off to one with the MCP tool).
	Graph string `json:"graph"`
	// Runs are made AtOnce at a time: each group starts together, and the
	// next when the whole group has finished.
	Runs   int `json:"runs"`
	AtOnce int `json:"at_once"`
	// Want is the answer every run must end with.
	Want string `json:"want"`
	// Profile, when set, is where to write a CPU profile of the batch.
	Profile string `json:"profile,omitempty"`
	// ProfileSeconds, for a side profiled from outside (Relay over HTTP,
	// through its /debug/pprof/profile), is how long its profile lasts: the
	// side makes groups of AtOnce runs until it ends, however many that is.
	ProfileSeconds int `json:"profile_seconds,omitempty"`
}

// childReady is what a side prints once it can take batches.
type childReady struct {
	Ready   bool   `json:"ready"`
	Runtime string `json:"runtime"`
	Engine  string `json:"engine"`
}

// batchResult is what a side answers a batch with.
type batchResult struct {
	// WallsUS is each run's time from its start to its answer, in µs.
	WallsUS []int64 `json:"walls_us"`
	// CPUUS is the CPU time the side counted itself for the batch, in µs
	// (the table uses /proc's, which includes what happened between lines).
	CPUUS  int64 `json:"cpu_us"`
	RSSKiB int64 `json:"rss_kib"`
	// Failures counts runs that failed or answered something else than
	// Want; Failure is the first one's answer or error.
	Failures int    `json:"failures"`
	Failure  string `json:"failure"`
}

// side is one way of running the scenarios, in a process of its own, that
// bench compare measures.
type side interface {
	// pid is the process to measure.
	pid() int
	run(ctx context.Context, b batch) (batchResult, error)
	stop()
}

// childSide is a side in a child process speaking the protocol above.
type childSide struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	ready  childReady
	stderr *tailBuffer
}

// startChildSide starts argv as a side and waits until it is ready.
func startChildSide(what string, env []string, argv ...string) (*childSide, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	tail := &tailBuffer{}
	cmd.Stderr = tail
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", what, err)
	}
	c := &childSide{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20), stderr: tail}
	line, err := c.out.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &c.ready)
	}
	if err != nil || !c.ready.Ready {
		c.stop()
		return nil, fmt.Errorf("%s did not start (%v); its output:\n%s%s", what, err, line, tail)
	}
	return c, nil
}

func (c *childSide) pid() int { return c.cmd.Process.Pid }

func (c *childSide) run(ctx context.Context, b batch) (batchResult, error) {
	var res batchResult
	line, err := json.Marshal(b)
	if err != nil {
		return res, err
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return res, fmt.Errorf("sending a batch: %w; its output:\n%s", err, c.stderr)
	}
	if line, err = c.out.ReadBytes('\n'); err != nil {
		return res, fmt.Errorf("reading a batch's result: %w; its output:\n%s", err, c.stderr)
	}
	if err := json.Unmarshal(line, &res); err != nil {
		return res, fmt.Errorf("a batch's result %.200q: %w", line, err)
	}
	return res, nil
}

// stop closes the side's stdin, and kills it if it has not exited a few
// seconds later.
func (c *childSide) stop() {
	_ = c.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-exited
	}
}

// tailBuffer keeps the last 16 KiB written to it: a side's stderr, shown
// when it fails.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - 16<<10; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// serveBatches is the protocol's loop in a Go side: it prints ready, then
// runs each batch read from stdin with one, which makes one run of graph and
// returns its answer, until stdin closes.
func serveBatches(ready childReady, one func(ctx context.Context, graph string) (string, error)) error {
	ctx := context.Background()
	ready.Ready = true
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(ready); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		var b batch
		if err := json.Unmarshal(in.Bytes(), &b); err != nil {
			return fmt.Errorf("a batch %q: %w", in.Bytes(), err)
		}
		res, err := runBatch(ctx, b, one)
		if err != nil {
			return err
		}
		if err := out.Encode(res); err != nil {
			return err
		}
	}
	return in.Err()
}

// runGroup makes n runs with one at once, each timed from its start to its
// answer, and adds them to res, counting those that did not answer want.
func runGroup(res *batchResult, n int, want string, one func() (string, error)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			t0 := time.Now()
			answer, err := one()
			wall := time.Since(t0)
			if err != nil {
				answer = "error: " + err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			res.WallsUS = append(res.WallsUS, wall.Microseconds())
			if answer != want {
				res.Failures++
				if res.Failure == "" {
					res.Failure = answer
				}
			}
		})
	}
	wg.Wait()
}

// runBatch makes b's runs with one and checks their answers.
func runBatch(ctx context.Context, b batch, one func(ctx context.Context, graph string) (string, error)) (batchResult, error) {
	res := batchResult{WallsUS: make([]int64, 0, b.Runs)}
	if b.Profile != "" {
		f, err := os.Create(b.Profile)
		if err != nil {
			return res, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return res, err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cpu0 := cpuTime()
	for done := 0; done < b.Runs; done += b.AtOnce {
		runGroup(&res, min(b.AtOnce, b.Runs-done), b.Want, func() (string, error) { return one(ctx, b.Graph) })
	}
	res.CPUUS = (cpuTime() - cpu0).Microseconds()
	rss, _, err := procMem(os.Getpid())
	if err != nil {
		return res, err
	}
	res.RSSKiB = rss
	return res, nil
}

// errNoAnswer is a run that ended without an answer.
var errNoAnswer = errors.New("the run ended without an answer")
