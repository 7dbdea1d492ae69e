package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServeMetrics answers GET /metrics on ln, without authentication, until ctx
// ends; every other path is a 404. It is the listener of metrics.addr
// (docs/observability.md): an address only Prometheus reaches. With profiles
// (metrics.pprof) it also serves Go's runtime profiles under /debug/pprof/.
// ln is closed when it returns.
func (t *Telemetry) ServeMetrics(ctx context.Context, ln net.Listener, profiles bool) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.Handler())
	if profiles {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
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
