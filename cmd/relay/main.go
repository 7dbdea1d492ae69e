// Command relay is Relay's single binary: the server and its command line.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/relay-ai/relay/internal/cli"
)

func main() {
	ctx, stop := signalContext()
	code := cli.Main(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// signalContext is cancelled, with the signal as its cause, on SIGINT or SIGTERM.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if s, ok := <-ch; ok {
			cancel(errors.New("received " + s.String()))
			// A second signal means: stop now.
			<-ch
			os.Exit(130)
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}
