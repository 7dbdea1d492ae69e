package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ServeMetrics answers GET /metrics on ln, without authentication, until ctx
// ends; every other path is a 404. It is the listener of metrics.addr
// (docs/observability.md): an address only Prometheus reaches. ln is closed
// when it returns.
func (t *Telemetry) ServeMetrics(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
