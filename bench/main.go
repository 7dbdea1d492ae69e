// Command bench measures Relay and prints tables.
//
//	go run ./bench [-runs 20] [-agents 1000] [-postgres URL]   # start-up and the agents API
//	go run ./bench mcp [-calls 500]                            # MCP calls per transport (needs the peers)
//	go run ./bench chat [-chats 1000] [-sweep] [-floor]        # run overhead per turn; concurrent streaming chats
//	go run ./bench schedules [-schedules 10000]                # scheduler latency and idle CPU
//	go run ./bench files [-chunks 100000] [-dims 384]          # ingestion MB/s and RSS; search p50/p99
//	go run ./bench bombs                                       # RSS growth and outcome of ingesting hostile files
//	go run ./bench ui [-sessions 50]                           # first-page JS, first paint, RSS of signed-in sessions streaming
//	go run ./bench compare [-quick] [-markdown] [-cpuprofile DIR] # Relay against LibreChat's agent engine (docs/performance.md)
//
// The first measures start-up time of `relay serve` to the first /readyz 200, and
// create/get/list latency of the agents API on SQLite and (when TEST_POSTGRES_URL
// or -postgres is set) Postgres.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "compare") {
		cmd := os.Args[1]
		os.Args = append(os.Args[:1], os.Args[2:]...)
		run := map[string]func() error{
			"compare":       benchCompare,
			"compare-floor": compareFloor, // the floor of `bench compare`
			"compare-relay": compareRelay, // Relay's run service in-process, for `bench compare`
		}[cmd]
		if run == nil {
			fmt.Fprintf(os.Stderr, "bench: unknown command %q\n", cmd)
			os.Exit(2)
		}
		if err := run(); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", cmd, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "files-ingest" { // one ingestion of `bench files`
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchFilesIngest(); err != nil {
			fmt.Fprintln(os.Stderr, "bench files-ingest:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "bombs" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchBombs(); err != nil {
			fmt.Fprintln(os.Stderr, "bench bombs:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "files" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchFiles(); err != nil {
			fmt.Fprintln(os.Stderr, "bench files:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "schedules" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchSchedules(); err != nil {
			fmt.Fprintln(os.Stderr, "bench schedules:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "chat-floor-relay" { // the byte-copying relay of `bench chat -floor`
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := chatFloorRelay(); err != nil {
			fmt.Fprintln(os.Stderr, "bench chat-floor-relay:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "chat-relay" { // the Relay process of `bench chat`
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := chatRelay(); err != nil {
			fmt.Fprintln(os.Stderr, "bench chat-relay:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "chat" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchChat(); err != nil {
			fmt.Fprintln(os.Stderr, "bench chat:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "ui" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchUI(); err != nil {
			fmt.Fprintln(os.Stderr, "bench ui:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
		if err := benchMCP(); err != nil {
			fmt.Fprintln(os.Stderr, "bench mcp:", err)
			os.Exit(1)
		}
		return
	}
	runs := flag.Int("runs", 20, "start-up measurements per engine")
	agents := flag.Int("agents", 1000, "agents to create for the API latency measurements")
	pgURL := flag.String("postgres", os.Getenv("TEST_POSTGRES_URL"), "Postgres `URL` for the Postgres rows (default $TEST_POSTGRES_URL; empty skips them)")
	flag.Parse()
	if err := benchAgents(*runs, *agents, *pgURL); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type row struct {
	what, engine string
	samples      []time.Duration
	target       string
}

func benchAgents(runs, agents int, pgURL string) error {
	tmp, err := os.MkdirTemp("", "relay-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "relay")
	fmt.Fprintln(os.Stderr, "building relay…")
	build := exec.Command("go", "build", "-o", bin, "./cmd/relay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building relay: %w", err)
	}

	type engine struct{ name, url string }
	engines := []engine{{"sqlite", ""}}
	if pgURL != "" {
		schemaURL, drop, err := freshSchema(pgURL)
		if err != nil {
			return err
		}
		defer drop()
		engines = append(engines, engine{"postgres", schemaURL})
	} else {
		fmt.Fprintln(os.Stderr, "no Postgres URL: Postgres rows skipped")
	}

	var rows []row
	for _, eng := range engines {
		fmt.Fprintf(os.Stderr, "%s: start-up ×%d…\n", eng.name, runs)
		var fresh, warm []time.Duration
		for i := range runs {
			dir := filepath.Join(tmp, fmt.Sprintf("%s-start-%d", eng.name, i))
			dbURL := eng.url
			if eng.name == "postgres" {
				// A new schema each time, so that every start applies the migrations.
				u, drop, err := freshSchema(pgURL)
				if err != nil {
					return err
				}
				dbURL = u
				defer drop()
			}
			d, err := startOnce(bin, dir, dbURL)
			if err != nil {
				return err
			}
			fresh = append(fresh, d)
			if d, err = startOnce(bin, dir, dbURL); err != nil {
				return err
			}
			warm = append(warm, d)
		}
		target := ""
		if eng.name == "sqlite" {
			target = "< 150 ms"
		}
		rows = append(rows, row{"start-up to /readyz 200 (new database)", eng.name, fresh, target},
			row{"start-up to /readyz 200 (existing database)", eng.name, warm, target})

		fmt.Fprintf(os.Stderr, "%s: agents API with %d agents…\n", eng.name, agents)
		r, err := apiLatency(bin, filepath.Join(tmp, eng.name+"-api"), eng.url, agents)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tengine\tn\tp50\tp99\tmax\ttarget\t")
	for _, r := range rows {
		slices.Sort(r.samples)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", r.what, r.engine, len(r.samples), ms(pct(r.samples, 50)), ms(pct(r.samples, 99)), ms(r.samples[len(r.samples)-1]), r.target)
	}
	return tw.Flush()
}

func pct(s []time.Duration, p int) time.Duration {
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

const benchKey = "rk-BENCHbenchBENCHbenchBENCHbenchBENCHbench"

// server is a running relay serve.
type server struct {
	cmd  *exec.Cmd
	base string
}

func start(bin, dir, dbURL string) (*server, time.Time, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, time.Time{}, err
	}
	port, err := freePort()
	if err != nil {
		return nil, time.Time{}, err
	}
	cfg := fmt.Sprintf("server:\n  addr: 127.0.0.1:%d\n  data_dir: %s\n  log_level: warn\n", port, filepath.Join(dir, "data"))
	if dbURL != "" {
		cfg += fmt.Sprintf("database:\n  url: %q\n", dbURL)
	}
	cfgPath := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, time.Time{}, err
	}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "RELAY_BOOTSTRAP_API_KEY="+benchKey)
	cmd.Stderr = os.Stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, time.Time{}, err
	}
	return &server{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port)}, began, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

// waitReady polls /readyz every 500 µs and returns when it answers 200.
func (s *server) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(s.base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	return fmt.Errorf("relay at %s never became ready", s.base)
}

func startOnce(bin, dir, dbURL string) (time.Duration, error) {
	s, began, err := start(bin, dir, dbURL)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	if err := s.waitReady(); err != nil {
		return 0, err
	}
	return time.Since(began), nil
}

func apiLatency(bin, dir, dbURL string, n int) ([]row, error) {
	s, _, err := start(bin, dir, dbURL)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if err := s.waitReady(); err != nil {
		return nil, err
	}
	engine := "sqlite"
	if dbURL != "" {
		engine = "postgres"
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	call := func(method, path string, body any) (time.Duration, []byte, error) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, s.base+path, rd)
		req.Header.Set("Authorization", "Bearer "+benchKey)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode >= 300 {
			return 0, nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
		}
		return d, b, err
	}
	var creates, gets, lists []time.Duration
	ids := make([]string, 0, n)
	for i := range n {
		spec := map[string]any{
			"name": fmt.Sprintf("Agent %d", i), "provider": "openAI", "model": "gpt-4o",
			"instructions":     strings.Repeat("You are a careful assistant. ", 20),
			"tools":            []string{"file_search", "search__mcp__docs"},
			"model_parameters": map[string]any{"temperature": 0.2},
		}
		d, b, err := call("POST", "/api/agents", spec)
		if err != nil {
			return nil, err
		}
		var a struct{ ID string }
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, err
		}
		ids = append(ids, a.ID)
		creates = append(creates, d)
	}
	for i := range n {
		d, _, err := call("GET", "/api/agents/"+ids[(i*7919)%len(ids)], nil)
		if err != nil {
			return nil, err
		}
		gets = append(gets, d)
	}
	for range 50 {
		d, b, err := call("GET", fmt.Sprintf("/api/agents?limit=%d", n), nil)
		if err != nil {
			return nil, err
		}
		var page struct{ Data []json.RawMessage }
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, err
		}
		if len(page.Data) != n {
			return nil, fmt.Errorf("list returned %d agents, want %d", len(page.Data), n)
		}
		lists = append(lists, d)
	}
	return []row{
		{"POST /api/agents (create)", engine, creates, ""},
		{"GET /api/agents/{id}", engine, gets, ""},
		{fmt.Sprintf("GET /api/agents (list %d)", n), engine, lists, ""},
	}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freshSchema creates an empty schema and returns a URL whose connections use it.
func freshSchema(base string) (string, func(), error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connecting to Postgres: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	conn.Close(ctx)
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drop := func() {
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	}
	return u.String(), drop, nil
}
