package mcp_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// memNet is an in-memory network for tests in a synctest bubble. A goroutine
// waiting on a real socket is not durably blocked, so synctest.Wait could not
// tell that it waits for its peer; one waiting on a net.Pipe is.
type memNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (n *memNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.done:
		return nil, net.ErrClosed
	}
}

func (n *memNet) Close() error {
	n.once.Do(func() { close(n.done) })
	return nil
}

func (n *memNet) Addr() net.Addr { return memAddr{} }

// dial connects to the network's server, whatever the address.
func (n *memNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// serveMem serves h on a new in-memory network until the test ends and
// returns a client whose every request reaches it.
func serveMem(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	n := &memNet{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		_ = srv.Serve(n)
		close(served)
	}()
	tr := &http.Transport{DialContext: n.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return &http.Client{Transport: tr}
}
