package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
)

// Node is one serving Relay process, as the other processes on the same
// database see it: it registers when it starts and heartbeats until it stops.
// The runs it starts and the firings it claims name it, so that when it dies
// the others can fail them.
type Node struct {
	ID string `json:"id"`
	// Host and PID say where the process runs, so that a process starting on
	// the same host (and in the same PID namespace) can tell at once that an
	// earlier one is gone.
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// Reaped counts what failing a dead node's work touched.
type Reaped struct {
	Runs    int `json:"runs"`
	Firings int `json:"firings"`
	// Files counts the files it was ingesting, given back to be ingested again.
	Files int `json:"files"`
	// FiringIDs are the firings failed, for their schedules' webhooks.
	FiringIDs []string `json:"-"`
}

// NodeStore is what process liveness needs from storage. Missing rows are
// fault.NotFound.
type NodeStore interface {
	// RegisterNode inserts n; zero times are the current time.
	RegisterNode(ctx context.Context, n *Node) error
	// HeartbeatNode sets the node's HeartbeatAt; fault.NotFound when the node
	// is gone, because another process took it for dead.
	HeartbeatNode(ctx context.Context, id string, at time.Time) error
	GetNode(ctx context.Context, id string) (*Node, error)
	// ListNodes lists every registered node, oldest first.
	ListNodes(ctx context.Context) ([]*Node, error)
	// ReapNode deletes the node if its HeartbeatAt is at or before seen and, in
	// the same transaction, fails the runs it started and the firings it claimed
	// that are still queued or running, with reason as their error. It reports
	// false, changing nothing, when the node is gone already (another process
	// reaped it) or heartbeated after seen.
	ReapNode(ctx context.Context, id string, seen time.Time, reason string) (Reaped, bool, error)
}

// ReasonDead is the error of the runs and firings of a process that died.
const ReasonDead = "the process running it stopped"

// ReasonStopped is the error of the runs and firings a process still had when
// it stopped on purpose.
const ReasonStopped = "Relay stopped while the run was in progress"

// Liveness keeps this process's node alive and fails the work of dead ones.
// Every serving process has one: Register it before starting runs, Run it in
// the background, and let the scheduler call Reap on its ticks.
type Liveness struct {
	Store NodeStore
	Log   *slog.Logger
	// Interval is how often the node heartbeats (5 s); a node whose last
	// heartbeat is older than DeadAfter (20 s) is dead.
	Interval  time.Duration
	DeadAfter time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Host and PID name this process (zero: the host name, with the PID
	// namespace on Linux, and os.Getpid).
	Host string
	PID  int
	// Alive reports whether a process of this host is running (nil: asks the
	// operating system). A node of this host whose process is gone is reaped
	// without waiting for DeadAfter.
	Alive func(pid int) bool
	// Abandon, when set, gives up the work this process has in progress
	// when it learns that it was taken for dead, since the process that
	// took it for dead failed that work already (run.Service.Abandon): it
	// returns how many runs it gave up, once nothing of them can be stored
	// any more. Only then does the node register again.
	Abandon func() int
	// Failed, when set, is told the firings Reap failed, so that their
	// schedules' webhooks hear of them (Service.NotifyFailed).
	Failed func(ctx context.Context, firingIDs []string)

	once sync.Once
	self Node          // ID, Host and PID, fixed once set
	lost chan struct{} // Lost's: look at the node now

	mu          sync.Mutex
	steadySince time.Time // the first heartbeat that reached the database after one that failed
	unsteady    bool      // the last heartbeat failed: the database could not be reached
}

// steady returns since when this process's heartbeats have reached the
// database again after one failed: its first heartbeat after the failure,
// or the zero time when none has failed.
func (l *Liveness) steady() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.steadySince
}

// beat records how a heartbeat went, at now.
func (l *Liveness) beat(ok bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !ok:
		l.unsteady = true
	case l.unsteady:
		l.unsteady, l.steadySince = false, now
	}
}

func (l *Liveness) init() {
	l.once.Do(func() {
		if l.Interval <= 0 {
			l.Interval = 5 * time.Second
		}
		if l.DeadAfter <= 0 {
			l.DeadAfter = 20 * time.Second
		}
		if l.Now == nil {
			l.Now = time.Now
		}
		if l.Log == nil {
			l.Log = slog.New(slog.DiscardHandler)
		}
		if l.Alive == nil {
			l.Alive = processAlive
		}
		if l.Host == "" {
			l.Host = hostName()
		}
		if l.PID == 0 {
			l.PID = os.Getpid()
		}
		l.self = Node{ID: ident.New("node_"), Host: l.Host, PID: l.PID}
		l.lost = make(chan struct{}, 1)
	})
}

// ID is this process's node id: runs and firings it owns carry it.
func (l *Liveness) ID() string {
	l.init()
	return l.self.ID
}

// Register records this process as a live node.
func (l *Liveness) Register(ctx context.Context) error {
	l.init()
	now := l.Now().UTC()
	n := l.self
	n.StartedAt, n.HeartbeatAt = now, now
	if err := l.Store.RegisterNode(ctx, &n); err != nil {
		return fmt.Errorf("registering this process: %w", err)
	}
	return nil
}

// Run heartbeats every Interval until ctx is done, and then removes the node,
// failing the runs and firings it still had: nothing is left running when the
// process stops. Should the node have been taken for dead meanwhile (the
// process stalled past DeadAfter), the work it had was failed by the process
// that took it for dead and stays so: Run gives it up (Abandon), then
// registers the node again, under the same id, for the work to come. Until
// then the store refuses the runs' writes and starts of a node that is gone
// (docs/architecture.md, "liveness").
func (l *Liveness) Run(ctx context.Context) error {
	l.init()
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.stop(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
		case <-l.lost:
		}
		now := l.Now().UTC()
		err := l.Store.HeartbeatNode(ctx, l.self.ID, now)
		switch {
		case err == nil:
			l.beat(true, now)
		case fault.Is(err, fault.NotFound):
			l.rejoin(ctx)
		case ctx.Err() == nil:
			l.beat(false, now)
			l.Log.Warn("heartbeat", slog.Any("err", err))
		}
	}
}

// Lost tells Run that a write of this process found its node gone (taken for
// dead): Run looks at the node at once rather than at its next heartbeat, to
// give up the work and register again. It does not wait.
func (l *Liveness) Lost() {
	l.init()
	select {
	case l.lost <- struct{}{}:
	default:
	}
}

// rejoin gives up the work of this process, which was taken for dead, and
// registers its node again.
func (l *Liveness) rejoin(ctx context.Context) {
	runs := 0
	if l.Abandon != nil {
		runs = l.Abandon()
	}
	l.Log.Warn("this process was taken for dead by another one (it missed its heartbeats): its runs were failed and are given up; registering again",
		slog.String("node_id", l.self.ID), slog.Int("runs", runs))
	if err := l.Register(ctx); err != nil && ctx.Err() == nil {
		l.Log.Error("registering again", slog.Any("err", err))
	}
}

// stop removes this process's node as it stops.
func (l *Liveness) stop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	far := l.Now().UTC().Add(100 * 365 * 24 * time.Hour)
	r, _, err := l.Store.ReapNode(ctx, l.self.ID, far, ReasonStopped)
	switch {
	case err != nil:
		l.Log.Warn("removing this process's node", slog.Any("err", err))
	case r.Runs+r.Firings > 0:
		l.Log.Warn("runs still in progress at stop marked failed", slog.Int("runs", r.Runs), slog.Int("firings", r.Firings))
	}
	if r.Files > 0 {
		l.Log.Info("files being ingested at stop left for the next process", slog.Int("files", r.Files))
	}
}

// Dead reports whether n is dead, seen at now: it has not heartbeated for
// DeadAfter while this process's own heartbeats reached the database, or it
// was a process of this host that is gone. The time this process could not
// reach the database does not count: when the database itself was away, every
// process missed its heartbeats, and the first back must not take the others
// for dead (they heartbeat again within Interval).
func (l *Liveness) Dead(n *Node, now time.Time) bool {
	l.init()
	if n.ID == l.self.ID {
		return false
	}
	if now.Sub(later(n.HeartbeatAt, l.steady())) > l.DeadAfter {
		return true
	}
	if n.Host != l.self.Host {
		return false
	}
	// A restarted process often gets its predecessor's pid (pid 1 in a
	// container): a node of this host with this pid that is not this
	// process's, and that registered before this process began, is gone. One
	// registered since is another server of this very process (as tests run
	// them), alive.
	if n.PID == l.self.PID {
		return n.StartedAt.Before(processStart)
	}
	return !l.Alive(n.PID)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// processStart is when this process began, near enough: before any node it
// registers.
var processStart = time.Now()

// Suspect reports whether the node with that id has missed heartbeats (two
// intervals) and may be dead: a firing it holds is worth waiting for before
// the next one is skipped. An unknown node (a command-line process) is not.
func (l *Liveness) Suspect(ctx context.Context, id string) bool {
	l.init()
	if id == l.self.ID {
		return false
	}
	n, err := l.Store.GetNode(ctx, id)
	if err != nil {
		return false
	}
	now := l.Now().UTC()
	return l.Dead(n, now) || now.Sub(n.HeartbeatAt) > 2*l.Interval
}

// Reap fails the work of every dead node and removes them; of processes
// reaping at once, each dead node is handled by exactly one. It returns what
// was failed.
func (l *Liveness) Reap(ctx context.Context) (Reaped, error) {
	l.init()
	nodes, err := l.Store.ListNodes(ctx)
	if err != nil {
		return Reaped{}, err
	}
	now := l.Now().UTC()
	var total Reaped
	var errs []error
	for _, n := range nodes {
		if !l.Dead(n, now) {
			continue
		}
		r, ok, err := l.Store.ReapNode(ctx, n.ID, n.HeartbeatAt, ReasonDead)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue // another process got there first, or it came back
		}
		total.Runs += r.Runs
		total.Firings += r.Firings
		total.Files += r.Files
		total.FiringIDs = append(total.FiringIDs, r.FiringIDs...)
		if l.Failed != nil && len(r.FiringIDs) > 0 {
			l.Failed(ctx, r.FiringIDs)
		}
		l.Log.Warn("a Relay process stopped heartbeating: its runs and firings marked failed, its files to ingest again",
			slog.String("node_id", n.ID), slog.String("host", n.Host), slog.Int("pid", n.PID),
			slog.Time("last_heartbeat", n.HeartbeatAt), slog.Int("runs", r.Runs), slog.Int("firings", r.Firings), slog.Int("files", r.Files))
	}
	return total, errors.Join(errs...)
}
