package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
	"github.com/relay-ai/relay/internal/netguard"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

// Runner starts runs exactly as chat messages do.
type Runner interface {
	Start(ctx context.Context, u *auth.User, req run.ChatRequest) (*run.Run, error)
	Wait(ctx context.Context, runID string) error
	Abort(ctx context.Context, u *auth.User, runID string) (*run.Run, error)
	Get(ctx context.Context, u *auth.User, runID string) (*run.Detail, error)
}

// Options are the scheduler's limits; zero values take the defaults of docs/agents.md "Schedules".
type Options struct {
	MaxPerUser  int           // schedules per user (50)
	MinInterval time.Duration // between firings of one schedule (1 minute)
	Grace       time.Duration // a firing missed by less runs at start-up (1 hour)
	RunTimeout  time.Duration // a firing running longer fails (30 minutes)
	// Poll is the longest the scheduler sleeps without looking (30 s).
	Poll time.Duration
	// AdminsLimited applies MaxPerUser to admins too (limits.include_admins);
	// by default they are exempt.
	AdminsLimited bool
}

func (o *Options) defaults() {
	if o.MaxPerUser <= 0 {
		o.MaxPerUser = 50
	}
	if o.MinInterval <= 0 {
		o.MinInterval = time.Minute
	}
	if o.Grace <= 0 {
		o.Grace = time.Hour
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 30 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
}

// Service manages schedules and fires them. Every Relay process runs one; the
// store makes each firing happen once.
type Service struct {
	Store  Store
	Agents interface {
		Get(ctx context.Context, u *auth.User, id string) (*agent.Agent, error)
	}
	Users interface {
		GetUser(ctx context.Context, id string) (*auth.User, error)
	}
	Runner Runner
	Log    *slog.Logger
	Opts   Options
	// Now is the clock (nil: time.Now); Process names this process in claims.
	Now     func() time.Time
	Process string
	// Guard decides which addresses notify_url webhooks may reach (nil: no
	// non-public one); HTTP, when nil, is a client of Guard's. See
	// docs/config.md (server.allowed_addresses).
	Guard *netguard.Guard
	HTTP  *http.Client
	// Live, when set, is this process's liveness: Process is its node, the
	// scheduler fails the work of dead processes on each tick, and a firing
	// that finds the previous one held by a process that missed its heartbeats
	// waits to see whether that process is dead rather than being skipped.
	Live *Liveness
	// Lag, when set, is told how late each scheduled firing's run started:
	// from the firing's due time to the run's start (the scheduler lag of
	// docs/observability.md). Firings of RunNow are not scheduled and do not
	// count.
	Lag func(time.Duration)

	once     sync.Once
	wake     chan struct{}
	closing  atomic.Bool    // Close was called: no more firings are claimed or started
	inflight sync.WaitGroup // the firings this process runs (execute), until their end is recorded
	running  atomic.Int64   // how many of them
}

// goExecute runs execute for a claimed firing in the background, counted in
// inflight.
func (s *Service) goExecute(ctx context.Context, sc *Schedule, f *Firing, scheduled bool) {
	s.running.Add(1)
	s.inflight.Go(func() {
		defer s.running.Add(-1)
		s.execute(context.WithoutCancel(ctx), sc, f, scheduled)
	})
}

// closeWait bounds how long Run, once stopped, waits for the firings this
// process runs to record their end.
const closeWait = 10 * time.Second

// Close stops the service from claiming firings and starting runs, at the
// start of a shutdown: a process about to stop would only have them cut off.
// The firings it runs already go on, and Run, when stopped, waits for them
// to record their end (at most closeWait).
func (s *Service) Close() {
	s.closing.Store(true)
}

func (s *Service) init() {
	s.once.Do(func() {
		s.Opts.defaults()
		if s.Now == nil {
			s.Now = time.Now
		}
		if s.Log == nil {
			s.Log = slog.New(slog.DiscardHandler)
		}
		if s.HTTP == nil {
			s.HTTP = s.Guard.Client(netguard.ClientOptions{Timeout: 10 * time.Second})
		}
		if s.Process == "" && s.Live != nil {
			s.Process = s.Live.ID()
		}
		if s.Process == "" {
			s.Process = ident.New("proc_")
		}
		s.wake = make(chan struct{}, 1)
	})
}

// Input is what a user writes to create or change a schedule.
type Input struct {
	AgentID   *string    `json:"agent_id"`
	Name      *string    `json:"name"`
	Prompt    *string    `json:"prompt"`
	Type      *Type      `json:"type"`
	Cron      *string    `json:"cron"`
	RunAt     *time.Time `json:"run_at"`
	Timezone  *string    `json:"timezone"`
	Enabled   *bool      `json:"enabled"`
	NotifyURL *string    `json:"notify_url"`

	// badRunAt says what is wrong with a run_at that is no time, named with
	// the other problems of the input.
	badRunAt string
}

// UnmarshalJSON reads an Input as the JSON decoder would, refusing unknown
// fields. A run_at that is not an RFC 3339 time is a problem of run_at, said
// plainly rather than as the time package words it, and named when the input
// is applied, with the problems of the other fields.
func (in *Input) UnmarshalJSON(b []byte) error {
	type plain Input
	var v struct {
		plain
		RunAt *string `json:"run_at"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		// A field of the embedded struct is named through it: "plain.enabled".
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			te.Field = strings.TrimPrefix(te.Field, "plain.")
		}
		return err
	}
	*in = Input(v.plain)
	if v.RunAt != nil {
		t, err := time.Parse(time.RFC3339, *v.RunAt)
		if err != nil {
			in.badRunAt = fmt.Sprintf("%q is not an RFC 3339 time, such as 2026-03-29T07:00:00+02:00 (with its offset)", *v.RunAt)
			return nil
		}
		in.RunAt = &t
	}
	return nil
}

// apply writes in onto sc and validates the result, computing NextRunAt
// when the timing (type, cron, run_at, time zone) or enabled changed; an edit
// of anything else leaves NextRunAt as it is.
func (s *Service) apply(ctx context.Context, u *auth.User, sc *Schedule, in Input) error {
	was := *sc
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	var fs fault.Fields
	if in.badRunAt != "" {
		fs.Add("run_at", "%s", in.badRunAt)
	}
	set(&sc.AgentID, in.AgentID)
	set(&sc.Name, in.Name)
	if in.Prompt != nil {
		sc.Prompt = *in.Prompt
	}
	// The type goes with the field given, cron or run_at, which replaces the
	// other; a type given too must agree with it.
	cronGiven := in.Cron != nil && strings.TrimSpace(*in.Cron) != ""
	runAtGiven := in.RunAt != nil || in.badRunAt != ""
	switch {
	case cronGiven && runAtGiven:
		fs.Add("run_at", "give cron or run_at, not both")
	case in.Type != nil && *in.Type == Once && cronGiven:
		fs.Add("type", "once does not go with cron: a one-off schedule has run_at")
	case in.Type != nil && *in.Type == Recurring && runAtGiven:
		fs.Add("type", "recurring does not go with run_at: a recurring schedule has cron")
	case in.Type != nil:
		sc.Type = *in.Type
	case cronGiven:
		sc.Type = Recurring
	case runAtGiven:
		sc.Type = Once
	}
	set(&sc.Cron, in.Cron)
	// A run_at sent again as it is stored (a form sends every field) is no
	// new time, and need not be in the future.
	newRunAt := in.RunAt != nil && (sc.RunAt == nil || !in.RunAt.Equal(*sc.RunAt))
	if in.RunAt != nil {
		t := in.RunAt.UTC()
		sc.RunAt = &t
	}
	set(&sc.Timezone, in.Timezone)
	if in.Enabled != nil {
		sc.Enabled = *in.Enabled
	}
	set(&sc.NotifyURL, in.NotifyURL)
	if sc.Timezone == "" {
		sc.Timezone = "UTC"
	}
	if sc.Type == "" {
		sc.Type = Recurring
		if sc.Cron == "" && sc.RunAt != nil {
			sc.Type = Once
		}
	}
	switch sc.Type {
	case Recurring:
		sc.RunAt = nil
	case Once:
		sc.Cron = ""
	}

	if sc.Name == "" {
		fs.Add("name", "required")
	}
	if strings.TrimSpace(sc.Prompt) == "" {
		fs.Add("prompt", "required: it is the user message of every run")
	}
	loc, err := loadZone(sc.Timezone)
	if err != nil {
		fs.Add("timezone", "unknown time zone %q (use an IANA name such as Europe/Amsterdam)", sc.Timezone)
	}
	// A paused schedule's agent is not checked unless it changes, so that a
	// schedule whose agent is no longer shared with its owner can be paused.
	if sc.AgentID == "" {
		fs.Add("agent_id", "required")
	} else if sc.Enabled || in.AgentID != nil {
		// The schedule runs as its owner, who must be able to use the agent,
		// also when an admin makes the change.
		owner, err := s.ownerOf(ctx, u, sc)
		if err != nil {
			return err
		}
		a, err := s.Agents.Get(ctx, owner, sc.AgentID)
		switch {
		case fault.Is(err, fault.NotFound):
			who := "you"
			if owner != u {
				who = "the schedule's owner"
			}
			fs.Add("agent_id", "no agent %q that %s may use", sc.AgentID, who)
		case err != nil:
			return err
		default:
			sc.AgentName = a.Name
		}
	}
	if sc.NotifyURL != "" {
		// The address a name resolves to is checked when sending (it may
		// change); an address given as such is refused here already.
		if err := netguard.CheckURL(sc.NotifyURL); err != nil {
			fs.Add("notify_url", "%v", err)
		} else if u, _ := url.Parse(sc.NotifyURL); u != nil {
			if err := s.Guard.CheckHost(u); err != nil {
				fs.Add("notify_url", "%v (server.allowed_addresses lists the ones allowed)", err)
			}
		}
	}
	// An edit that leaves when the schedule fires as it was leaves its next
	// firing where it is: one due already and waiting (for a process that
	// missed heartbeats to be found alive or dead, docs/api.md "Schedules")
	// still runs, or is recorded as skipped, rather than being passed over.
	keepNext := sc.Type == was.Type && sc.Cron == was.Cron && sc.Timezone == was.Timezone &&
		sameTime(sc.RunAt, was.RunAt) && sc.Enabled == was.Enabled && (sc.NextRunAt != nil || !sc.Enabled)
	now := s.Now().UTC()
	var next *time.Time
	switch sc.Type {
	case Recurring:
		if c := s.checkCron(&fs, sc.Cron, loc, now); c != nil && !keepNext {
			// Never at or before the last firing: on a clock a little behind
			// that of the process which claimed it, now can be.
			after := now
			if sc.LastRunAt != nil && sc.LastRunAt.After(after) {
				after = *sc.LastRunAt
			}
			if t, ok := c.Next(after, loc); ok {
				next = &t
			}
		}
	case Once:
		switch {
		case sc.RunAt == nil:
			if in.badRunAt == "" {
				fs.Add("run_at", "required for a one-off schedule (RFC 3339)")
			}
		case keepNext:
			// Due and waiting, or still to come: its time is no new one.
		case sc.RunAt.After(now):
			t := *sc.RunAt
			next = &t
		case newRunAt:
			fs.Add("run_at", "must be in the future")
		case sc.Enabled:
			// A one-off schedule that fired (or whose time passed while it
			// was paused) may be changed while paused; it fires again only
			// at a new time.
			fs.Add("run_at", "passed at %s: give a new run_at to enable the schedule again", sc.RunAt.Format(time.RFC3339))
		default:
			t := *sc.RunAt
			next = &t
		}
	default:
		fs.Add("type", "must be recurring or once")
	}
	if err := fs.Err("invalid schedule"); err != nil {
		return err
	}
	if keepNext {
		return nil
	}
	sc.NextRunAt = nil
	if sc.Enabled {
		sc.NextRunAt = next
	}
	return nil
}

// sameTime reports whether a and b are both nil or the same instant.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// loadZone loads an IANA time zone. Go's "Local", the zone of the machine
// Relay happens to run on, is none: a schedule would fire at other times on
// another machine.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return time.LoadLocation(name)
}

// checkCron parses expr and checks that it fires, and not more often than
// Opts.MinInterval, in loc after now, adding what is wrong to fs under
// "cron". It returns the expression when loc is known and nothing is wrong.
func (s *Service) checkCron(fs *fault.Fields, expr string, loc *time.Location, now time.Time) *Cron {
	if expr == "" {
		fs.Add("cron", "required for a recurring schedule (5 fields: minute hour day-of-month month day-of-week)")
		return nil
	}
	c, err := ParseCron(expr)
	if err != nil {
		fs.Add("cron", "%s", err.Error())
		return nil
	}
	if loc == nil {
		return nil
	}
	// From now, and from the eve of each change of the zone's offset in the
	// year ahead: a daylight saving night can bring two firings closer than
	// any other night does.
	gap := MinInterval(c, now, loc, 50)
	for _, change := range offsetChanges(loc, now, now.AddDate(1, 0, 0)) {
		gap = min(gap, shortestGap(c, change.Add(-3*time.Hour), loc, maxGapFirings, change.Add(3*time.Hour)))
	}
	if gap > 0 && gap < s.Opts.MinInterval {
		fs.Add("cron", "fires every %s; the minimum interval is %s", gap, s.Opts.MinInterval)
		return nil
	}
	if _, ok := c.Next(now, loc); !ok {
		fs.Add("cron", "never fires")
		return nil
	}
	return c
}

// offsetChanges returns when loc's offset from UTC changes between from and
// until, to the minute.
func offsetChanges(loc *time.Location, from, until time.Time) []time.Time {
	var changes []time.Time
	offset := func(t time.Time) int { _, o := t.In(loc).Zone(); return o }
	off := offset(from)
	for t := from; t.Before(until); t = t.Add(6 * time.Hour) {
		end := t.Add(6 * time.Hour)
		if o := offset(end); o != off {
			lo, hi := t, end // the offset changes after lo, by hi
			for hi.Sub(lo) > time.Minute {
				mid := lo.Add(hi.Sub(lo) / 2)
				if offset(mid) == off {
					lo = mid
				} else {
					hi = mid
				}
			}
			changes = append(changes, hi)
			off = o
		}
	}
	return changes
}

// maxGapFirings bounds the firings checked around an offset change.
const maxGapFirings = 10_000

// MaxPreview is the most firing times Preview gives.
const MaxPreview = 20

// PreviewInput asks when a schedule would fire: a cron expression or a
// one-off time, in a time zone (UTC when empty), Count times (5 when 0).
type PreviewInput struct {
	Cron     string
	RunAt    *time.Time
	Timezone string
	Count    int
}

// Preview returns the next firing times of a schedule written as in says,
// from now, computed exactly as the scheduler computes them (Cron.Next: on a
// DST change a skipped time fires once at the next valid minute and a
// repeated one once, at its first occurrence), each in the time zone. Input
// that a schedule would be refused for is fault.Invalid naming its fields.
func (s *Service) Preview(in PreviewInput) ([]time.Time, error) {
	s.init()
	var fs fault.Fields
	tz := strings.TrimSpace(in.Timezone)
	if tz == "" {
		tz = "UTC"
	}
	loc, err := loadZone(tz)
	if err != nil {
		fs.Add("timezone", "unknown time zone %q (use an IANA name such as Europe/Amsterdam)", tz)
		loc = nil
	}
	if in.Count == 0 {
		in.Count = 5
	}
	if in.Count < 1 || in.Count > MaxPreview {
		fs.Add("count", "must be 1 to %d", MaxPreview)
	}
	now := s.Now().UTC()
	cronExpr := strings.TrimSpace(in.Cron)
	var c *Cron
	switch {
	case cronExpr != "" && in.RunAt != nil:
		fs.Add("run_at", "give cron or run_at, not both")
	case in.RunAt != nil:
		if !in.RunAt.After(now) {
			fs.Add("run_at", "must be in the future")
		}
	default:
		c = s.checkCron(&fs, cronExpr, loc, now)
	}
	if err := fs.Err("invalid schedule"); err != nil {
		return nil, err
	}
	if in.RunAt != nil {
		return []time.Time{in.RunAt.In(loc)}, nil
	}
	var out []time.Time
	for t := now; len(out) < in.Count; {
		next, ok := c.Next(t, loc)
		if !ok {
			break
		}
		out = append(out, next.In(loc))
		t = next
	}
	return out, nil
}

// Create validates and stores a new schedule of u's.
func (s *Service) Create(ctx context.Context, u *auth.User, in Input) (*Schedule, error) {
	s.init()
	limited := !u.IsAdmin() || s.Opts.AdminsLimited
	// Schedules only go when their owner deletes them: waiting alone will not help.
	tooMany := func() error {
		return fault.Limited(fault.QuotaExceeded, 24*time.Hour, "quota exceeded: schedules (%d); delete one of your schedules first", s.Opts.MaxPerUser)
	}
	if limited {
		// Checked first, so that a user at the quota hears of it whatever
		// the request holds; and again as the schedule is stored, for
		// requests at once.
		n, err := s.Store.CountSchedules(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		if n >= s.Opts.MaxPerUser {
			return nil, tooMany()
		}
	}
	sc := &Schedule{ID: ident.New("sched_"), UserID: u.ID, Enabled: true}
	if err := s.apply(ctx, u, sc, in); err != nil {
		return nil, err
	}
	var err error
	if limited {
		err = s.Store.CreateScheduleWithin(ctx, sc, s.Opts.MaxPerUser)
	} else {
		err = s.Store.CreateSchedule(ctx, sc)
	}
	if errors.Is(err, ErrTooMany) {
		return nil, tooMany()
	}
	if err != nil {
		return nil, err
	}
	s.poke()
	return sc, nil
}

// Get returns one of u's schedules (any, for admins) with its last status.
func (s *Service) Get(ctx context.Context, u *auth.User, id string) (*Schedule, error) {
	sc, err := s.Store.GetSchedule(ctx, id)
	if err != nil {
		return nil, err
	}
	if sc.UserID != u.ID && !u.IsAdmin() {
		return nil, fault.New(fault.NotFound, "schedule %q not found", id)
	}
	s.lastStatus(ctx, sc)
	// agent_name says whether the owner may use the agent (docs/api.md
	// "Schedules"), also to an admin looking at another user's schedule.
	owner, err := s.ownerOf(ctx, u, sc)
	if err != nil {
		return nil, err
	}
	s.nameAgents(ctx, owner, sc)
	return sc, nil
}

// lastStatus sets sc.LastStatus to the status of its latest firing, which
// the stored schedule does not hold for a firing run by hand (RunNow).
func (s *Service) lastStatus(ctx context.Context, sc *Schedule) {
	if fs, err := s.Store.ListFirings(ctx, sc.ID, 1); err == nil && len(fs) > 0 {
		sc.LastStatus = string(fs[0].Status)
	}
}

// List returns u's schedules, each with its last status, as Get does.
func (s *Service) List(ctx context.Context, u *auth.User) ([]*Schedule, error) {
	scs, err := s.Store.ListSchedules(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, sc := range scs {
		s.lastStatus(ctx, sc)
	}
	s.nameAgents(ctx, u, scs...)
	return scs, nil
}

// nameAgents sets the AgentName of each schedule whose agent u may use.
func (s *Service) nameAgents(ctx context.Context, u *auth.User, scs ...*Schedule) {
	names := map[string]string{}
	for _, sc := range scs {
		name, ok := names[sc.AgentID]
		if !ok {
			if a, err := s.Agents.Get(ctx, u, sc.AgentID); err == nil {
				name = a.Name
			}
			names[sc.AgentID] = name
		}
		sc.AgentName = name
	}
}

// Update changes a schedule of u's.
func (s *Service) Update(ctx context.Context, u *auth.User, id string, in Input) (*Schedule, error) {
	s.init()
	sc, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := s.apply(ctx, u, sc, in); err != nil {
		return nil, err
	}
	sc.UpdatedAt = s.Now().UTC()
	if err := s.Store.UpdateSchedule(ctx, sc); err != nil {
		return nil, err
	}
	s.poke()
	return sc, nil
}

// Delete removes a schedule of u's with its history.
func (s *Service) Delete(ctx context.Context, u *auth.User, id string) error {
	if _, err := s.Get(ctx, u, id); err != nil {
		return err
	}
	return s.Store.DeleteSchedule(ctx, id)
}

// Firings lists one page of the firings of a schedule of u's, newest first.
func (s *Service) Firings(ctx context.Context, u *auth.User, q FiringQuery) (*FiringPage, error) {
	if _, err := s.Get(ctx, u, q.ScheduleID); err != nil {
		return nil, err
	}
	return s.Store.FiringPage(ctx, q)
}

// RunNow fires a schedule of u's at once, in the background, and returns
// the new firing as it was queued. While another firing of the schedule is
// queued or running, due or run by hand, on any process, it is refused with
// fault.Conflict: the store queues one firing of a schedule at a time.
func (s *Service) RunNow(ctx context.Context, u *auth.User, id string) (*Firing, error) {
	s.init()
	if s.closing.Load() {
		return nil, fault.New(fault.Unavailable, "Relay is shutting down: run the schedule again once it is back")
	}
	sc, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	f := &Firing{ID: ident.New("fire_"), ScheduleID: sc.ID, FireAt: s.Now().UTC().Truncate(time.Microsecond), Prompt: sc.Prompt, Status: FiringQueued, ClaimedBy: s.Process}
	// The prompt as it will be sent, as execute makes it: for the schedule's
	// owner, whose run it is, also when an admin runs it.
	owner, err := s.ownerOf(ctx, u, sc)
	if loc, lerr := time.LoadLocation(sc.Timezone); lerr == nil && err == nil {
		f.Prompt = prompt.ReplacePlaceholders(sc.Prompt, f.FireAt, loc, owner.DisplayName)
	}
	err = s.Store.CreateFiring(ctx, f)
	if running := (*RunningError)(nil); errors.As(err, &running) && s.Live != nil && s.Live.Suspect(ctx, running.Firing.ClaimedBy) {
		// The process holding the running firing missed its heartbeats: if
		// it is dead, its firing fails and this one is queued after all.
		if _, err = s.Live.Reap(ctx); err == nil {
			err = s.Store.CreateFiring(ctx, f)
		}
	}
	if err != nil {
		return nil, err
	}
	// The caller gets the firing as queued: execute changes its own while
	// the caller reads (answers) this one.
	queued := *f
	s.goExecute(ctx, sc, f, false)
	return &queued, nil
}

// poke wakes the scheduler to look at the schedules again.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run fires due schedules until ctx is done. It sleeps until the next due time
// (at most Poll, and at most Live's heartbeat interval so that dead processes
// are found in time), and is woken when schedules change. With Live, each
// round first fails the runs and firings of dead processes.
func (s *Service) Run(ctx context.Context) error {
	s.init()
	lastStale := time.Time{}
	for {
		if s.Live != nil {
			if _, err := s.Live.Reap(ctx); err != nil && ctx.Err() == nil {
				s.Log.Warn("failing the work of stopped processes", slog.Any("err", err))
			}
		}
		now := s.Now()
		if now.Sub(lastStale) > time.Minute {
			lastStale = now
			if n, err := s.Store.FailStaleFirings(ctx, now.Add(-s.Opts.RunTimeout-time.Minute), "the Relay process running it stopped"); err != nil {
				s.Log.Warn("failing stale firings", slog.Any("err", err))
			} else if n > 0 {
				s.Log.Warn("firings left running by a stopped process marked failed", slog.Int("firings", n))
			}
		}
		waiting, err := s.tick(ctx, now)
		if err != nil && ctx.Err() == nil {
			s.Log.Error("scheduler", slog.Any("err", err))
		}
		wait := s.Opts.Poll
		if s.Live != nil {
			wait = min(wait, s.Live.Interval)
		}
		if next, err := s.Store.NextDue(ctx); err == nil && next != nil {
			if d := next.Sub(s.Now()); d < wait {
				wait = max(d, 0)
			}
		}
		if waiting > 0 && wait == 0 {
			// Firings waiting on a process that may be dead stay due: look
			// again shortly rather than at once.
			wait = min(time.Second, s.Opts.Poll)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			s.awaitFirings()
			return nil
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// awaitFirings waits, at most closeWait, for the firings this process runs
// to record their end, so that the end is theirs (their run's outcome) and
// written before the database closes.
func (s *Service) awaitFirings() {
	if n := s.running.Load(); n > 0 {
		s.Log.Info("waiting for the firings this process runs to record their end", slog.Int64("firings", n))
	}
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.Log.Warn("firings still recording their end at shutdown", slog.Duration("waited", closeWait))
	}
}

// Tick claims and starts every firing due at now; Run calls it as schedules
// come due.
func (s *Service) Tick(ctx context.Context, now time.Time) error {
	_, err := s.tick(ctx, now)
	return err
}

// tick is Tick, also counting the due firings left waiting for the process
// holding their schedule's previous firing to be found alive or dead.
func (s *Service) tick(ctx context.Context, now time.Time) (waiting int, err error) {
	s.init()
	for !s.closing.Load() {
		due, err := s.Store.DueSchedules(ctx, now, 100)
		if err != nil {
			return waiting, err
		}
		if len(due) == 0 {
			return waiting, nil
		}
		claimed := 0
		for _, sc := range due {
			switch s.fire(ctx, sc, now) {
			case fired:
				claimed++
			case waited:
				waiting++
			}
		}
		if len(due) < 100 || claimed == 0 {
			return waiting, nil
		}
	}
	return waiting, nil
}

// outcome is what fire did with a due schedule.
type outcome int

const (
	lost   outcome = iota // another process claimed it, or it failed
	fired                 // claimed: started or recorded as skipped
	waited                // left due: the previous firing's process may be dead
)

// fire claims a schedule's due firing and starts it (or records it skipped).
func (s *Service) fire(ctx context.Context, sc *Schedule, now time.Time) outcome {
	fireAt := *sc.NextRunAt
	log := s.Log.With(slog.String("schedule_id", sc.ID))
	var next *time.Time
	skippedToo := 0          // missed firings between this one and next, not recorded one by one
	var lastMissed time.Time // the latest of them, when none is within the grace window
	laterDue := false        // a later firing, within the grace window, is due too: it runs instead
	if sc.Type == Recurring {
		c, err := ParseCron(sc.Cron)
		loc, lerr := time.LoadLocation(sc.Timezone)
		if err == nil && lerr == nil {
			after := fireAt
			if now.After(after) {
				after = now // missed firings are not replayed one by one
			}
			if t, ok := c.Next(after, loc); ok {
				next = &t
			}
			switch t, missed := latestWithin(c, loc, fireAt, now, s.Opts.Grace); {
			case now.Sub(fireAt) > s.Opts.Grace && !t.IsZero():
				// Missed by more than the grace window (Relay was down): this
				// firing is skipped, and the latest one since that is still
				// within the window runs next, at once.
				next, skippedToo = &t, missed
			case now.Sub(fireAt) > s.Opts.Grace:
				// Missed by more than the window, and so was every firing
				// since (a daily schedule after days down): they are counted
				// in this one's error all the same.
				skippedToo, lastMissed = missedUpTo(c, loc, fireAt, now)
			case t.After(fireAt):
				// Missed within the window, but later firings are due too: as
				// after a longer outage, the latest runs, once, and the others
				// are recorded with this one.
				next, skippedToo, laterDue = &t, missed, true
			}
		}
	}
	f := &Firing{ID: ident.New("fire_"), ScheduleID: sc.ID, FireAt: fireAt, Prompt: sc.Prompt, Status: FiringQueued, ClaimedBy: s.Process}
	behind := func(running *Firing) { // skipped: the previous firing still runs
		f.Status, f.Error = FiringSkipped, "the previous firing ("+running.ID+") was still running"
	}
	switch running, err := s.Store.RunningFiring(ctx, sc.ID); {
	case err != nil:
		log.Error("checking the running firing", slog.Any("err", err))
		return lost
	case now.Sub(fireAt) > s.Opts.Grace:
		f.Status, f.Error = FiringSkipped, fmt.Sprintf("missed by %s, more than the grace window of %s", now.Sub(fireAt).Round(time.Second), s.Opts.Grace)
		switch {
		case skippedToo > 0 && !lastMissed.IsZero():
			f.Error += fmt.Sprintf("; so were the %d firings after it, the last at %s", skippedToo, lastMissed.Format(time.RFC3339))
		case skippedToo > 0:
			f.Error += fmt.Sprintf("; so were the %d firings after it, up to %s", skippedToo, next.In(time.UTC).Format(time.RFC3339))
		}
	case laterDue:
		f.Status, f.Error = FiringSkipped, fmt.Sprintf("missed by %s; the latest firing due since, at %s, runs in its place",
			now.Sub(fireAt).Round(time.Second), next.In(time.UTC).Format(time.RFC3339))
		if skippedToo > 0 {
			f.Error += fmt.Sprintf(", and so were the %d firings between them missed", skippedToo)
		}
	case running != nil && s.Live != nil && s.Live.Suspect(ctx, running.ClaimedBy):
		// The process holding the previous firing missed its heartbeats: once
		// it counts as dead its firing fails and this one runs (late); if it
		// heartbeats again, this one is skipped.
		return waited
	case running != nil:
		behind(running)
	}
	ok, err := s.Store.ClaimFiring(ctx, f, next)
	if running := (*RunningError)(nil); errors.As(err, &running) {
		// A firing was queued since RunningFiring looked (run by hand, on
		// any process): this one is skipped, as above.
		behind(running.Firing)
		ok, err = s.Store.ClaimFiring(ctx, f, next)
	}
	if err != nil {
		log.Error("claiming a firing", slog.Any("err", err))
		return lost
	}
	if !ok {
		return lost // another process has it
	}
	if f.Status == FiringSkipped {
		log.Warn("firing skipped", slog.String("reason", f.Error))
		// A skipped firing is one of the schedule's firings: its webhook
		// hears of it as of any other (docs/api.md "Schedules").
		s.notify(ctx, sc, f, log)
		return fired
	}
	s.goExecute(ctx, sc, f, true)
	return fired
}

// maxMissed bounds the missed firings latestWithin counts.
const maxMissed = 100_000

// latestWithin is the latest firing of c after from that is at most grace
// before now, if there is one (else the zero time), and how many firings
// after from come before it (at most maxMissed): those missed with from and
// not run.
func latestWithin(c *Cron, loc *time.Location, from, now time.Time, grace time.Duration) (time.Time, int) {
	var latest time.Time
	start := now.Add(-grace).Add(-time.Nanosecond) // a firing missed by grace exactly is within it
	if from.After(start) {
		start = from
	}
	for t, ok := c.Next(start, loc); ok && !t.After(now); t, ok = c.Next(t, loc) {
		latest = t
	}
	if latest.IsZero() {
		return latest, 0
	}
	missed := 0
	for t, ok := c.Next(from, loc); ok && t.Before(latest) && missed < maxMissed; t, ok = c.Next(t, loc) {
		missed++
	}
	return latest, missed
}

// ownerOf returns the user sc belongs to: u, or the owner u (an admin) acts for.
func (s *Service) ownerOf(ctx context.Context, u *auth.User, sc *Schedule) (*auth.User, error) {
	if sc.UserID == "" || sc.UserID == u.ID {
		return u, nil
	}
	return s.Users.GetUser(ctx, sc.UserID)
}

// missedUpTo counts the firings of c after from and at or before now (at most
// maxMissed), and returns the latest of them.
func missedUpTo(c *Cron, loc *time.Location, from, now time.Time) (int, time.Time) {
	missed, last := 0, time.Time{}
	for t, ok := c.Next(from, loc); ok && !t.After(now) && missed < maxMissed; t, ok = c.Next(t, loc) {
		missed, last = missed+1, t
	}
	return missed, last
}

// execute runs a claimed firing through the chat path and records the
// outcome; the start of a scheduled firing's run is reported to Lag. A firing
// that has ended meanwhile (failed by another process, which took this one
// for dead) keeps that end: its progress is not stored (AdvanceFiring), and
// its run, if one started, is stopped.
func (s *Service) execute(ctx context.Context, sc *Schedule, f *Firing, scheduled bool) {
	log := s.Log.With(slog.String("schedule_id", sc.ID), slog.String("firing_id", f.ID))
	finish := func(status FiringStatus, msg string) {
		t := s.Now().UTC()
		f.Status, f.Error, f.FinishedAt = status, msg, &t
		switch err := s.Store.AdvanceFiring(context.WithoutCancel(ctx), f); {
		case fault.Is(err, fault.Conflict):
			log.Warn("the firing's outcome not saved: it was failed already, this process taken for dead", slog.Any("err", err))
			return
		case err != nil:
			log.Error("saving the firing", slog.Any("err", err))
		}
		s.notify(ctx, sc, f, log)
	}
	u, err := s.Users.GetUser(ctx, sc.UserID)
	if err != nil {
		finish(FiringFailed, "the schedule's user: "+err.Error())
		return
	}
	if u.Disabled {
		// A disabled user's keys and sessions stop at once (docs/api.md
		// "Users"); the runs made in their name stop with them.
		finish(FiringFailed, "the schedule's user is disabled: its firings run again once the user is enabled")
		return
	}
	loc, err := time.LoadLocation(sc.Timezone)
	if err != nil {
		finish(FiringFailed, err.Error())
		return
	}
	// The prompt's placeholders are those of agent instructions, in the
	// schedule's time zone; ${VAR} is never expanded.
	f.Prompt = prompt.ReplacePlaceholders(sc.Prompt, f.FireAt, loc, u.DisplayName)
	title := fmt.Sprintf("%s — %s", sc.Name, f.FireAt.In(loc).Format("2006-01-02 15:04 MST"))
	r, err := s.Runner.Start(ctx, u, run.ChatRequest{AgentID: sc.AgentID, Text: f.Prompt, Timezone: sc.Timezone, Title: title, Now: f.FireAt})
	if fault.Is(err, fault.NotFound) {
		// The agent is gone, or no longer shared with the schedule's user:
		// every firing would fail the same way until the schedule names
		// another, so it is paused rather than failing on and on.
		msg := err.Error()
		if s.pause(context.WithoutCancel(ctx), sc.ID) {
			msg += "; the schedule is paused: give it an agent and resume it"
		}
		finish(FiringFailed, msg)
		return
	}
	if err != nil {
		finish(FiringFailed, err.Error())
		return
	}
	started := s.Now().UTC()
	if scheduled && s.Lag != nil {
		s.Lag(started.Sub(f.FireAt))
	}
	f.RunID, f.ConversationID, f.Status, f.StartedAt = r.ID, r.ConversationID, FiringRunning, &started
	switch err := s.Store.AdvanceFiring(ctx, f); {
	case fault.Is(err, fault.Conflict):
		// Failed while this process was taken for dead: the firing is over,
		// and so is its run.
		log.Warn("the firing was failed already, this process taken for dead; its run is stopped", slog.String("run_id", r.ID))
		_, _ = s.Runner.Abort(context.WithoutCancel(ctx), u, r.ID)
		return
	case err != nil:
		log.Error("saving the firing", slog.Any("err", err))
	}
	wctx, cancel := context.WithTimeout(ctx, s.Opts.RunTimeout)
	err = s.Runner.Wait(wctx, r.ID)
	cancel()
	if err != nil {
		_, _ = s.Runner.Abort(context.WithoutCancel(ctx), u, r.ID)
		finish(FiringFailed, fmt.Sprintf("the run took longer than %s and was stopped", s.Opts.RunTimeout))
		return
	}
	d, err := s.Runner.Get(ctx, u, r.ID)
	if err != nil {
		finish(FiringFailed, err.Error())
		return
	}
	switch d.Status {
	case run.StatusSucceeded:
		finish(FiringSucceeded, "")
	case run.StatusCancelled:
		finish(FiringCancelled, d.Error)
	default:
		finish(FiringFailed, d.Error)
	}
}

// pause disables the schedule with that id, as it is stored now, and
// reports whether it did.
func (s *Service) pause(ctx context.Context, id string) bool {
	sc, err := s.Store.GetSchedule(ctx, id)
	if err != nil || !sc.Enabled {
		return false
	}
	sc.Enabled, sc.NextRunAt, sc.UpdatedAt = false, nil, s.Now().UTC()
	if err := s.Store.UpdateSchedule(ctx, sc); err != nil {
		s.Log.Warn("pausing a schedule whose agent is gone", slog.String("schedule_id", id), slog.Any("err", err))
		return false
	}
	return true
}

// NotifyFailed posts the firings with those ids, failed by another process
// (theirs stopped heartbeating), to their schedules' webhooks, as the end of
// any other firing is (docs/api.md "Schedules"). Liveness.Failed calls it.
func (s *Service) NotifyFailed(ctx context.Context, firingIDs []string) {
	s.init()
	for _, id := range firingIDs {
		f, err := s.Store.GetFiring(ctx, id)
		if err != nil {
			continue
		}
		sc, err := s.Store.GetSchedule(ctx, f.ScheduleID)
		if err != nil {
			continue
		}
		s.notify(ctx, sc, f, s.Log.With(slog.String("schedule_id", sc.ID), slog.String("firing_id", f.ID)))
	}
}

// notify posts a firing's outcome to the schedule's webhook, retrying a few
// times in the background; it never holds up the run. The URL is logged only
// redacted (its path, query and user info may hold a token), and an address
// the guard refuses is not tried again.
func (s *Service) notify(ctx context.Context, sc *Schedule, f *Firing, log *slog.Logger) {
	if sc.NotifyURL == "" {
		return
	}
	body, _ := json.Marshal(map[string]any{"schedule_id": sc.ID, "schedule_name": sc.Name, "firing": f})
	log = log.With(slog.String("notify_url", netguard.RedactURL(sc.NotifyURL)))
	go func() {
		for attempt := range 4 {
			if attempt > 0 {
				time.Sleep(time.Duration(1<<attempt) * time.Second)
			}
			req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), "POST", sc.NotifyURL, bytes.NewReader(body))
			if err != nil {
				log.Warn("schedule webhook not sent", slog.String("err", netguard.RedactError(err, sc.NotifyURL)))
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := s.HTTP.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode < 300 {
					return
				}
				err = errors.New(resp.Status)
			}
			if refused := (*netguard.RefusedError)(nil); errors.As(err, &refused) {
				log.Warn("schedule webhook refused", slog.String("err", refused.Error()))
				return
			}
			log.Warn("schedule webhook failed", slog.Int("attempt", attempt+1), slog.String("err", netguard.RedactError(err, sc.NotifyURL)))
		}
	}()
}
