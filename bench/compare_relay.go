package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The Relay side of `bench compare`: `relay serve`, built from the tree, in a
// process of its own with its normal SQLite persistence, configured with the
// scenarios' agents (relayConfig), and driven over HTTP by bench compare.

// relayAPI is how bench compare asks Relay for a run.
type relayAPI string

const (
	// apiV1 is POST /v1/chat/completions, without streaming: the answer
	// comes as one JSON object when the run has finished.
	apiV1 relayAPI = "/v1/chat/completions"
	// apiChat is POST /api/chat: the run's events as server-sent events,
	// read to run.finished.
	apiChat relayAPI = "/api/chat"
)

// relayConfig is the configuration of the Relay process: the fake model as
// a custom OpenAI-compatible endpoint, the MCP server, no quotas or rate
// limits (the load comes from one key), the scenarios' agents, and a metrics
// listener on metricsAddr serving Go's profiles (idle but when -cpuprofile
// asks for one).
func relayConfig(addr, metricsAddr, dataDir, modelURL, mcpURL string, writeBehind time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  addr: %s\n  data_dir: %q\n  log_level: warn\n", addr, dataDir)
	if x := os.Getenv("XPROCS"); x != "" && writeBehind > 0 {
		fmt.Fprintf(&b, "  procs: %s\n", x)
	}
	if writeBehind > 0 {
		fmt.Fprintf(&b, "database:\n  write_behind: %s\n", writeBehind)
	}
	fmt.Fprintf(&b, "metrics:\n  addr: %s\n  pprof: true\n", metricsAddr)
	fmt.Fprintf(&b, "endpoints:\n  custom:\n    - name: %s\n      baseURL: %q\n      apiKey: sk-bench\n", compareProvider, modelURL)
	fmt.Fprintf(&b, "mcpServers:\n  %s:\n    type: streamable-http\n    url: %q\n", compareMCPServer, mcpURL)
	b.WriteString("limits:\n  user:\n    runs_per_minute: 0\n    concurrent_runs: 0\n  api:\n    key_per_minute: 0\n    ip_per_minute: 0\n")
	b.WriteString("agents:\n")
	for _, a := range compareAgents {
		fmt.Fprintf(&b, "  - id: %s\n    name: %q\n    provider: %s\n    model: %s\n    instructions: %q\n", a.id, a.name, compareProvider, compareModel, a.instructions)
		if len(a.tools) > 0 {
			fmt.Fprintf(&b, "    tools: [%s]\n", strings.Join(a.tools, ", "))
		}
		if a.handoffTo != "" {
			fmt.Fprintf(&b, "    edges:\n      - {from: %s, to: %s, edgeType: handoff}\n", a.id, a.handoffTo)
		}
	}
	return b.String()
}

// relaySide is a running `relay serve` and the API bench compare drives it
// through.
type relaySide struct {
	srv    *server
	pprof  string // the base URL of its /debug/pprof/
	api    relayAPI
	hc     *http.Client
	dir    string
	stderr *tailBuffer
}

// startRelaySide starts bin as `relay serve` on a new data directory under
// tmp and waits until it is ready.
func startRelaySide(bin, tmp string, api relayAPI, modelURL, mcpURL string, writeBehind time.Duration) (*relaySide, error) {
	dir, err := os.MkdirTemp(tmp, "relay-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "relay.yaml")
	cfg := relayConfig(fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", metricsPort), filepath.Join(dir, "data"), modelURL, mcpURL, writeBehind)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	// The database is SQLite at <data_dir>/relay.db, whatever the
	// environment says, so that its write-ahead log is where walPath looks.
	env := withoutEnv(withoutEnv(os.Environ(), "RELAY_DATA_DIR"), "RELAY_DATABASE_URL")
	cmd.Env = append(env, "RELAY_BOOTSTRAP_API_KEY="+benchKey)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	tail := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = tail, tail
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &relaySide{srv: &server{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port)}, api: api, dir: dir, stderr: tail,
		pprof: fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", metricsPort),
		hc:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	if err := r.srv.waitReady(); err != nil {
		r.stop()
		return nil, fmt.Errorf("%w; its output:\n%s", err, tail)
	}
	if _, err := os.Stat(r.dbPath()); err != nil {
		r.stop()
		return nil, fmt.Errorf("relay serve is ready but its database is not where bench compare looks: %w", err)
	}
	return r, nil
}

func (r *relaySide) pid() int { return r.srv.cmd.Process.Pid }

// dbPath is the side's SQLite database: relay.db in its data_dir
// (config.Config.DB), relayConfig's data_dir being dir/data.
func (r *relaySide) dbPath() string { return filepath.Join(r.dir, "data", "relay.db") }

// walPath is the database's write-ahead log, which SQLite names after it.
func (r *relaySide) walPath() string { return r.dbPath() + "-wal" }

func (r *relaySide) stop() {
	r.srv.stop()
	_ = os.RemoveAll(r.dir)
}

// run makes b's runs over HTTP, each run's time being that of its request,
// from sending it to reading the end of its answer. With b.ProfileSeconds,
// it takes a CPU profile of that many seconds from the process's
// /debug/pprof/profile into b.Profile, making groups of b.AtOnce runs until
// the profile is written.
func (r *relaySide) run(ctx context.Context, b batch) (batchResult, error) {
	res := batchResult{WallsUS: make([]int64, 0, b.Runs)}
	var profiled chan error
	if b.ProfileSeconds > 0 {
		profiled = make(chan error, 1)
		go func() { profiled <- r.profile(ctx, b.Profile, b.ProfileSeconds) }()
	}
	for done := 0; profiled != nil || done < b.Runs; done += b.AtOnce {
		if profiled != nil {
			select {
			case err := <-profiled:
				return res, err
			default:
			}
		}
		runGroup(&res, min(b.AtOnce, b.Runs-done), b.Want, func() (string, error) { return r.one(ctx, compareEntry(b.Graph)) })
	}
	return res, nil
}

// profile writes a CPU profile of the process of the given length to path.
func (r *relaySide) profile(ctx context.Context, path string, seconds int) error {
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%sprofile?seconds=%d", r.pprof, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profiling: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling: %s %v %.200s", resp.Status, err, body)
	}
	return os.WriteFile(path, body, 0o644)
}

// one asks Relay for one run of agent and returns its answer.
func (r *relaySide) one(ctx context.Context, agentID string) (string, error) {
	var body []byte
	if r.api == apiV1 {
		body, _ = json.Marshal(map[string]any{"model": agentID, "messages": []map[string]string{{"role": "user", "content": compareQuestion}}})
	} else {
		body, _ = json.Marshal(map[string]string{"agent_id": agentID, "text": compareQuestion})
	}
	req, err := http.NewRequestWithContext(ctx, "POST", r.srv.base+string(r.api), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	if r.api == apiV1 {
		var c struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			return "", err
		}
		if len(c.Choices) != 1 {
			return "", fmt.Errorf("%d choices", len(c.Choices))
		}
		return c.Choices[0].Message.Content, nil
	}
	// The events, to run.finished, whose data holds the saved answer.
	br := bufio.NewReader(resp.Body)
	finished := false
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return "", fmt.Errorf("the stream ended before run.finished: %w", err)
		}
		if bytes.Equal(line, []byte("event: run.finished\n")) {
			finished = true
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !finished || !ok {
			continue
		}
		var f struct {
			Status  string `json:"status"`
			Error   string `json:"error"`
			Message struct {
				Text string `json:"text"`
			} `json:"message"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			return "", err
		}
		_, _ = io.Copy(io.Discard, br)
		if f.Status != "succeeded" {
			return "", fmt.Errorf("the run %s: %s", f.Status, f.Error)
		}
		return f.Message.Text, nil
	}
}
