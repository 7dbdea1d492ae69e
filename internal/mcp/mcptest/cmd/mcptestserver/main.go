// Command mcptestserver serves Relay's MCP test server (package mcptest) on its
// own, for tests that need it as a separate program: over stdio by default, as
// a stdio child of the process under test, or over HTTP, printing the URL to
// connect to on stdout.
//
//	mcptestserver [-instructions TEXT] [-name NAME] [-transport stdio|websocket|streamable-http|sse] [-addr HOST:PORT]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

func main() {
	instructions := flag.String("instructions", "", "the server's initialize instructions")
	name := flag.String("name", "", "the server's name (default mcptest)")
	transport := flag.String("transport", "stdio", "stdio, websocket, streamable-http or sse")
	addr := flag.String("addr", "127.0.0.1:0", "where to listen, for the HTTP transports")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := mcptest.NewServer(mcptest.Options{Name: *name, Instructions: *instructions})
	if err := run(ctx, srv, *transport, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "mcptestserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, srv *sdk.Server, transport, addr string) error {
	if transport == "stdio" {
		return srv.Run(ctx, mcptest.CaptureUserID(&sdk.StdioTransport{}))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url, err := mcptest.Endpoint("http://"+ln.Addr().String(), transport)
	if err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: mcptest.Handler(func() *sdk.Server { return srv })}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Println(url)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
	if err := hs.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
