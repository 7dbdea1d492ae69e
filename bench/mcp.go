package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
)

// benchMCP measures tools/call through Relay's manager against the go-sdk's bare
// client on the same server, per transport; 200 concurrent calls on one streamable
// HTTP connection; and the memory an idle user-scoped HTTP connection holds.
func benchMCP() error {
	calls := flag.Int("calls", 1000, "sequential calls per transport and client")
	users := flag.Int("users", 200, "idle user-scoped connections for the memory measurement")
	flag.Parse()
	everything, gateway := os.Getenv("PEER_EVERYTHING"), os.Getenv("PEER_SUPERGATEWAY")
	if everything == "" || gateway == "" {
		return fmt.Errorf("PEER_EVERYTHING and PEER_SUPERGATEWAY must be set: eval \"$(../shared/peers/install.sh)\"")
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			_ = p.Wait()
		}
	}()
	start := func(env []string, port int, argv ...string) error {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		for range 400 {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				return nil
			}
			time.Sleep(25 * time.Millisecond)
		}
		return fmt.Errorf("%v: nothing listens on %d", argv, port)
	}
	ports := make([]int, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	if err := start([]string{fmt.Sprintf("PORT=%d", ports[0])}, ports[0], "node", everything, "sse"); err != nil {
		return err
	}
	if err := start([]string{fmt.Sprintf("PORT=%d", ports[1])}, ports[1], "node", everything, "streamableHttp"); err != nil {
		return err
	}
	if err := start(nil, ports[2], "node", gateway, "--stdio", "node "+everything+" stdio", "--outputTransport", "ws", "--port", fmt.Sprint(ports[2]), "--logLevel", "none"); err != nil {
		return err
	}
	servers := []mcp.ServerConfig{
		{Name: "stdio", Transport: mcp.TransportStdio, Command: "node", Args: []string{everything, "stdio"}},
		{Name: "sse", Transport: mcp.TransportSSE, URL: fmt.Sprintf("http://127.0.0.1:%d/sse", ports[0])},
		{Name: "http", Transport: mcp.TransportStreamableHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", ports[1])},
		{Name: "websocket", Transport: mcp.TransportWebSocket, URL: fmt.Sprintf("ws://127.0.0.1:%d/message", ports[2])},
	}
	for i := range servers {
		servers[i].Timeout, servers[i].InitTimeout, servers[i].Scope, servers[i].Startup = 30*time.Second, 30*time.Second, mcp.ScopeApp, true
	}
	ctx := context.Background()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tools/call echo\tclient\tn\tp50\tp99\tmean\tRelay/bare (mean)\ttarget\t")
	for _, s := range servers {
		fmt.Fprintf(os.Stderr, "%s…\n", s.Name)
		bare, relay, err := pairedCalls(ctx, s, *calls)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		fmt.Fprintf(tw, "%s\tgo-sdk bare\t%d\t%s\t%s\t%s\t\t\t\n", s.Name, len(bare), ms(pct(bare, 50)), ms(pct(bare, 99)), ms(mean(bare)))
		fmt.Fprintf(tw, "%s\tRelay manager\t%d\t%s\t%s\t%s\t%.2f×\t≤ 1.10×\t\n", s.Name, len(relay), ms(pct(relay, 50)), ms(pct(relay, 99)), ms(mean(relay)), float64(mean(relay))/float64(mean(bare)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(os.Stderr, "200 concurrent calls on one streamable HTTP connection…")
	ok, took, err := concurrentCalls(ctx, servers[2], 200)
	if err != nil {
		return err
	}
	fmt.Printf("\n200 concurrent calls over one streamable HTTP connection: %d/200 correct in %s\n", ok, took.Round(time.Millisecond))

	fmt.Fprintf(os.Stderr, "%d idle user-scoped connections…\n", *users)
	perConn, err := idleMemory(ctx, servers[2], *users)
	if err != nil {
		return err
	}
	fmt.Printf("memory per idle user-scoped streamable HTTP connection (%d users, Go heap and goroutine stacks after GC): %.1f KB (target < 100 KB)\n", *users, perConn/1024)
	return nil
}

func mean(s []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}

// pairedCalls makes n sequential echo calls with the go-sdk's own client and n
// through Relay's manager (key resolution, schema validation, progress tracking and
// the timeout included), alternating between the two so that both see the same
// server and machine conditions.
func pairedCalls(ctx context.Context, s mcp.ServerConfig, n int) (bare, relay []time.Duration, err error) {
	sess, err := mcp.Connect(ctx, s, mcp.ConnectOptions{Version: "bench"})
	if err != nil {
		return nil, nil, err
	}
	defer sess.Close()
	m := mcp.NewManager([]mcp.ServerConfig{s}, mcp.Options{})
	defer m.Close()
	key := mcp.Key("echo", s.Name)
	viaSDK := func(i int) (time.Duration, error) {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
		d := time.Since(t0)
		if err == nil && res.IsError {
			err = fmt.Errorf("echo failed")
		}
		return d, err
	}
	viaRelay := func(i int) (time.Duration, error) {
		args, _ := json.Marshal(map[string]any{"message": fmt.Sprint(i)})
		t0 := time.Now()
		res, err := m.Call(ctx, nil, key, args)
		d := time.Since(t0)
		if err == nil && res.IsError {
			err = fmt.Errorf("echo failed")
		}
		return d, err
	}
	for i := range n + 50 {
		first, second := viaSDK, viaRelay
		if i%2 == 1 {
			first, second = viaRelay, viaSDK
		}
		d1, err := first(i)
		if err != nil {
			return nil, nil, err
		}
		d2, err := second(i)
		if err != nil {
			return nil, nil, err
		}
		if i < 50 {
			continue // warm-up
		}
		if i%2 == 1 {
			d1, d2 = d2, d1
		}
		bare, relay = append(bare, d1), append(relay, d2)
	}
	slices.Sort(bare)
	slices.Sort(relay)
	return bare, relay, nil
}

func concurrentCalls(ctx context.Context, s mcp.ServerConfig, n int) (int, time.Duration, error) {
	m := mcp.NewManager([]mcp.ServerConfig{s}, mcp.Options{})
	defer m.Close()
	key := mcp.Key("echo", s.Name)
	if _, err := m.Call(ctx, nil, key, json.RawMessage(`{"message":"warm"}`)); err != nil {
		return 0, 0, err
	}
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("message-%03d", i)
			args, _ := json.Marshal(map[string]any{"message": msg})
			res, err := m.Call(ctx, nil, key, args)
			if err == nil && mcp.Format(res, mcp.FamilyText).Text == "Echo: "+msg {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if st := m.Status(nil)[0]; st.Connections != 1 {
		return ok, 0, fmt.Errorf("%d connections, want 1", st.Connections)
	}
	return ok, time.Since(t0), nil
}

// idleMemory opens n user-scoped connections and returns the Go heap they hold, per connection.
func idleMemory(ctx context.Context, s mcp.ServerConfig, n int) (float64, error) {
	s.Scope = mcp.ScopeUser
	m := mcp.NewManager([]mcp.ServerConfig{s}, mcp.Options{})
	defer m.Close()
	key := mcp.Key("echo", s.Name)
	heap := func() uint64 { // live heap plus goroutine stacks
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc + ms.StackInuse
	}
	// One connection first, so that code and caches loaded once are not counted.
	if _, err := m.Call(ctx, &mcp.User{ID: "warm"}, key, json.RawMessage(`{"message":"x"}`)); err != nil {
		return 0, err
	}
	before := heap()
	for i := range n {
		if _, err := m.Call(ctx, &mcp.User{ID: fmt.Sprintf("user%04d", i)}, key, json.RawMessage(`{"message":"x"}`)); err != nil {
			return 0, err
		}
	}
	time.Sleep(time.Second) // let every connection settle into idle
	after := heap()
	if f := os.Getenv("RELAY_BENCH_HEAPPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil {
			_ = pprof.WriteHeapProfile(out)
			out.Close()
		}
	}
	if st := m.Status(nil)[0]; st.Connections != n+1 {
		return 0, fmt.Errorf("%d connections, want %d", st.Connections, n+1)
	}
	return float64(after-before) / float64(n), nil
}
