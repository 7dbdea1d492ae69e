package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
)

func ptr(t time.Time) *time.Time { return &t }

// newSchedule is an enabled recurring schedule of the user, created at minute
// and next due ten minutes later.
func newSchedule(userID string, minute int) *schedule.Schedule {
	return &schedule.Schedule{
		ID: newID("sched_"), UserID: userID, AgentID: "agent_helper", Name: "Morning «digest» 🚀",
		Prompt: "Summarize what happened overnight.\nBe brief.", Type: schedule.Recurring, Cron: "*/5 * * * *",
		Timezone: "Europe/Amsterdam", Enabled: true, NextRunAt: ptr(at(minute + 10)),
		CreatedAt: at(minute), UpdatedAt: at(minute + 1),
	}
}

func createSchedule(t *testing.T, s store.Store, sc *schedule.Schedule) *schedule.Schedule {
	t.Helper()
	must(t, s.CreateSchedule(t.Context(), sc), "CreateSchedule "+sc.Name)
	return sc
}

func getSchedule(t *testing.T, s store.Store, id string) *schedule.Schedule {
	t.Helper()
	sc, err := s.GetSchedule(t.Context(), id)
	must(t, err, "GetSchedule "+id)
	return sc
}

func newFiring(scheduleID string, fireAt time.Time) *schedule.Firing {
	return &schedule.Firing{
		ID: newID("fire_"), ScheduleID: scheduleID, FireAt: fireAt, Prompt: "Summarize what happened overnight.",
		ClaimedBy: "host-a:4242",
	}
}

func getFiring(t *testing.T, s store.Store, id string) *schedule.Firing {
	t.Helper()
	f, err := s.GetFiring(t.Context(), id)
	must(t, err, "GetFiring "+id)
	return f
}

func listFirings(t *testing.T, s store.Store, scheduleID string, limit int) []*schedule.Firing {
	t.Helper()
	fs, err := s.ListFirings(t.Context(), scheduleID, limit)
	must(t, err, "ListFirings")
	if fs == nil {
		t.Fatalf("ListFirings returned nil, want a list")
	}
	return fs
}

func scheduleIDs(ss []*schedule.Schedule) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func firingIDs(fs []*schedule.Firing) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func due(t *testing.T, s store.Store, now time.Time, limit int) []*schedule.Schedule {
	t.Helper()
	ss, err := s.DueSchedules(t.Context(), now, limit)
	must(t, err, "DueSchedules")
	if ss == nil {
		t.Fatalf("DueSchedules returned nil, want a list")
	}
	return ss
}

func nextDue(t *testing.T, s store.Store) *time.Time {
	t.Helper()
	next, err := s.NextDue(t.Context())
	must(t, err, "NextDue")
	return next
}

func claim(t *testing.T, s store.Store, f *schedule.Firing, next *time.Time) bool {
	t.Helper()
	ok, err := s.ClaimFiring(t.Context(), f, next)
	must(t, err, "ClaimFiring")
	return ok
}

var scheduleTests = []test{
	{"CreateAndGet", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "sched@example.com")
		sc := newSchedule(u.ID, 10)
		sc.RunAt, sc.LastRunAt, sc.LastStatus = ptr(at(50)), ptr(at(5)), string(schedule.FiringSucceeded)
		sc.NotifyURL = "https://hooks.example.com/relay?token=«x»"
		nonZeroFields(t, "the schedule", *sc, "AgentName") // not stored: the service looks it up
		must(t, s.CreateSchedule(t.Context(), sc), "CreateSchedule")
		want := &schedule.Schedule{
			ID: sc.ID, UserID: u.ID, AgentID: "agent_helper", Name: "Morning «digest» 🚀",
			Prompt: "Summarize what happened overnight.\nBe brief.", Type: schedule.Recurring, Cron: "*/5 * * * *",
			RunAt: ptr(stored(at(50))), Timezone: "Europe/Amsterdam", Enabled: true,
			NotifyURL: "https://hooks.example.com/relay?token=«x»", NextRunAt: ptr(stored(at(20))),
			LastRunAt: ptr(stored(at(5))), LastStatus: "succeeded", CreatedAt: stored(at(10)), UpdatedAt: stored(at(11)),
		}
		if d := cmp.Diff(want, sc); d != "" {
			t.Errorf("CreateSchedule left (-want +got):\n%s", d)
		}
		wantUTC(t, "CreateSchedule", sc.CreatedAt, sc.UpdatedAt, *sc.RunAt, *sc.NextRunAt, *sc.LastRunAt)
		got := getSchedule(t, s, sc.ID)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GetSchedule (-want +got):\n%s", d)
		}
		wantUTC(t, "GetSchedule", got.CreatedAt, got.UpdatedAt, *got.RunAt, *got.NextRunAt, *got.LastRunAt)
	}},
	{"ZeroTimesAndEmptyFields", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "sched@example.com")
		before := time.Now().Add(-time.Second)
		sc := &schedule.Schedule{
			ID: newID("sched_"), UserID: u.ID, AgentID: "a", Name: "once", Prompt: "p", Type: schedule.Once,
			RunAt: ptr(at(30)), Timezone: "UTC",
		}
		must(t, s.CreateSchedule(t.Context(), sc), "CreateSchedule")
		aboutNow(t, "CreatedAt", sc.CreatedAt, before)
		if sc.UpdatedAt != sc.CreatedAt {
			t.Errorf("UpdatedAt = %v, want CreatedAt %v", sc.UpdatedAt, sc.CreatedAt)
		}
		got := getSchedule(t, s, sc.ID)
		if d := cmp.Diff(sc, got); d != "" {
			t.Errorf("GetSchedule (-want +got):\n%s", d)
		}
		if got.NextRunAt != nil || got.LastRunAt != nil || got.Enabled || got.Cron != "" || got.NotifyURL != "" {
			t.Errorf("GetSchedule filled in what was left empty: %+v", got)
		}
	}},
	{"Refused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "sched@example.com")
		taken := createSchedule(t, s, newSchedule(u.ID, 1))
		for _, tc := range []struct {
			name string
			edit func(sc *schedule.Schedule)
			kind fault.Kind
		}{
			{"no id", func(sc *schedule.Schedule) { sc.ID = "" }, fault.Invalid},
			{"an unknown type", func(sc *schedule.Schedule) { sc.Type = "hourly" }, fault.Invalid},
			{"no type", func(sc *schedule.Schedule) { sc.Type = "" }, fault.Invalid},
			{"a missing user", func(sc *schedule.Schedule) { sc.UserID = "user_missing" }, fault.NotFound},
			{"a taken id", func(sc *schedule.Schedule) { sc.ID = taken.ID }, fault.Conflict},
		} {
			sc := newSchedule(u.ID, 2)
			tc.edit(sc)
			wantKind(t, s.CreateSchedule(ctx, sc), tc.kind, "CreateSchedule with "+tc.name)
		}
		if n, err := s.CountSchedules(ctx, ""); err != nil || n != 1 {
			t.Errorf("CountSchedules after refused creates = %d, %v; want 1", n, err)
		}
		bad := *taken
		bad.Type = "hourly"
		wantKind(t, s.UpdateSchedule(ctx, &bad), fault.Invalid, "UpdateSchedule to an unknown type")
		if d := cmp.Diff(taken, getSchedule(t, s, taken.ID)); d != "" {
			t.Errorf("a refused update changed the schedule (-want +got):\n%s", d)
		}
	}},
	{"NotFound", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		got, err := s.GetSchedule(ctx, "sched_missing")
		wantKind(t, err, fault.NotFound, "GetSchedule of a missing schedule")
		if got != nil {
			t.Errorf("GetSchedule returned %+v with its error", got)
		}
		missing := newSchedule("user_missing", 1)
		wantKind(t, s.UpdateSchedule(ctx, missing), fault.NotFound, "UpdateSchedule of a missing schedule")
		wantKind(t, s.DeleteSchedule(ctx, "sched_missing"), fault.NotFound, "DeleteSchedule of a missing schedule")
	}},
	{"Update", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "sched@example.com")
		other := createUser(t, s, "other@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 1))
		edit := *sc
		edit.UserID, edit.CreatedAt = other.ID, at(40) // never change
		edit.AgentID, edit.Name, edit.Prompt, edit.Type, edit.Cron = "agent_other", "renamed", "new prompt", schedule.Once, ""
		edit.RunAt, edit.Timezone, edit.Enabled, edit.NotifyURL = ptr(at(45)), "Asia/Tokyo", false, "https://n.example.com"
		edit.NextRunAt, edit.LastRunAt, edit.LastStatus, edit.UpdatedAt = ptr(at(45)), ptr(at(12)), "failed", at(30)
		must(t, s.UpdateSchedule(ctx, &edit), "UpdateSchedule")
		want := edit
		want.UserID, want.CreatedAt = u.ID, sc.CreatedAt
		want.RunAt, want.NextRunAt, want.LastRunAt, want.UpdatedAt = ptr(stored(at(45))), ptr(stored(at(45))), ptr(stored(at(12))), stored(at(30))
		got := getSchedule(t, s, sc.ID)
		if d := cmp.Diff(&want, got); d != "" {
			t.Errorf("GetSchedule after UpdateSchedule (-want +got):\n%s", d)
		}
		if *edit.RunAt != *want.RunAt || edit.UpdatedAt != want.UpdatedAt {
			t.Errorf("UpdateSchedule did not write the stored times back: RunAt %v, UpdatedAt %v", edit.RunAt, edit.UpdatedAt)
		}

		// Clearing the times, with a zero UpdatedAt meaning now.
		before := time.Now().Add(-time.Second)
		edit.RunAt, edit.NextRunAt, edit.LastRunAt, edit.UpdatedAt = nil, nil, nil, time.Time{}
		must(t, s.UpdateSchedule(ctx, &edit), "UpdateSchedule clearing times")
		aboutNow(t, "UpdatedAt", edit.UpdatedAt, before)
		got = getSchedule(t, s, sc.ID)
		if got.RunAt != nil || got.NextRunAt != nil || got.LastRunAt != nil || got.UpdatedAt != edit.UpdatedAt {
			t.Errorf("GetSchedule after clearing times: %+v", got)
		}
	}},
	{"ListAndCount", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ada, bob := createUser(t, s, "ada@example.com"), createUser(t, s, "bob@example.com")
		mk := func(user string, id string, minute int) *schedule.Schedule {
			sc := newSchedule(user, minute)
			sc.ID = id
			return createSchedule(t, s, sc)
		}
		mk(ada.ID, "sched_c", 20)
		mk(bob.ID, "sched_z", 5)
		mk(ada.ID, "sched_b", 10)
		mk(ada.ID, "sched_a", 10) // the same CreatedAt: ordered by id
		for _, tc := range []struct {
			user string
			want []string
		}{
			{ada.ID, []string{"sched_a", "sched_b", "sched_c"}},
			{bob.ID, []string{"sched_z"}},
			{"", []string{"sched_z", "sched_a", "sched_b", "sched_c"}},
			{"user_missing", []string{}},
		} {
			got, err := s.ListSchedules(ctx, tc.user)
			must(t, err, "ListSchedules")
			if got == nil {
				t.Fatalf("ListSchedules(%q) returned nil, want a list", tc.user)
			}
			if d := cmp.Diff(tc.want, scheduleIDs(got)); d != "" {
				t.Errorf("ListSchedules(%q) (-want +got):\n%s", tc.user, d)
			}
			n, err := s.CountSchedules(ctx, tc.user)
			must(t, err, "CountSchedules")
			if n != len(tc.want) {
				t.Errorf("CountSchedules(%q) = %d, want %d", tc.user, n, len(tc.want))
			}
		}
		all, err := s.ListSchedules(ctx, ada.ID)
		must(t, err, "ListSchedules")
		if d := cmp.Diff(getSchedule(t, s, "sched_a"), all[0]); d != "" {
			t.Errorf("listed schedule differs from GetSchedule (-want +got):\n%s", d)
		}
	}},
	{"CreateWithin", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		createSchedule(t, s, newSchedule(bob.ID, 0)) // another user's do not count
		createSchedule(t, s, newSchedule(alice.ID, 1))
		// Requests of one user at once: of 24, two more are stored within 3.
		stored, errs := atOnce(24, func(i int) error {
			return s.CreateScheduleWithin(ctx, newSchedule(alice.ID, 2+i), 3)
		}, func(err error) bool { return errors.Is(err, schedule.ErrTooMany) })
		if stored != 2 || len(errs) != 0 {
			t.Errorf("of 24 schedules within 3 (one there): %d stored, unexpected errors %v; want 2, none", stored, errs)
		}
		n, err := s.CountSchedules(ctx, alice.ID)
		must(t, err, "CountSchedules")
		if n != 3 {
			t.Errorf("alice has %d schedules; want 3", n)
		}
		// What is stored is what CreateSchedule stores.
		sc := newSchedule(bob.ID, 40)
		must(t, s.CreateScheduleWithin(ctx, sc, 3), "CreateScheduleWithin")
		if got := getSchedule(t, s, sc.ID); got.Name != sc.Name || !got.CreatedAt.Equal(sc.CreatedAt) || got.NextRunAt == nil || !got.NextRunAt.Equal(*sc.NextRunAt) {
			t.Errorf("stored %+v; want %+v", got, sc)
		}
	}},
	{"DeleteTakesFirings", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "sched@example.com")
		gone := createSchedule(t, s, newSchedule(u.ID, 1))
		kept := createSchedule(t, s, newSchedule(u.ID, 2))
		f := newFiring(gone.ID, at(3))
		must(t, s.CreateFiring(ctx, f), "CreateFiring")
		keptFiring := newFiring(kept.ID, at(3))
		must(t, s.CreateFiring(ctx, keptFiring), "CreateFiring")

		must(t, s.DeleteSchedule(ctx, gone.ID), "DeleteSchedule")
		_, err := s.GetSchedule(ctx, gone.ID)
		wantKind(t, err, fault.NotFound, "GetSchedule of a deleted schedule")
		_, err = s.GetFiring(ctx, f.ID)
		wantKind(t, err, fault.NotFound, "GetFiring of a deleted schedule's firing")
		getFiring(t, s, keptFiring.ID)
		wantKind(t, s.DeleteSchedule(ctx, gone.ID), fault.NotFound, "DeleteSchedule twice")
	}},
	{"DueAndNextDue", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "due@example.com")
		if next := nextDue(t, s); next != nil {
			t.Errorf("NextDue of no schedules = %v, want nil", next)
		}
		mk := func(id string, next *time.Time, enabled bool) {
			sc := newSchedule(u.ID, 0)
			sc.ID, sc.NextRunAt, sc.Enabled = id, next, enabled
			createSchedule(t, s, sc)
		}
		mk("sched_never", nil, true)
		mk("sched_disabled_early", ptr(at(1)), false)
		if next := nextDue(t, s); next != nil {
			t.Errorf("NextDue of disabled or unplanned schedules = %v, want nil", next)
		}
		now := at(30)
		mk("sched_late", ptr(at(40)), true)
		mk("sched_b", ptr(at(20)), true)
		mk("sched_a", ptr(at(20)), true) // the same time: ordered by id
		mk("sched_first", ptr(at(10)), true)
		mk("sched_now", ptr(now), true) // at now is due
		mk("sched_just_after", ptr(now.Add(time.Microsecond)), true)
		mk("sched_disabled", ptr(at(15)), false)

		if d := cmp.Diff([]string{"sched_first", "sched_a", "sched_b", "sched_now"}, scheduleIDs(due(t, s, now, 0))); d != "" {
			t.Errorf("DueSchedules (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"sched_first", "sched_a"}, scheduleIDs(due(t, s, now, 2))); d != "" {
			t.Errorf("DueSchedules with limit 2 (-want +got):\n%s", d)
		}
		if got := due(t, s, at(5), 10); len(got) != 0 {
			t.Errorf("DueSchedules before any is due = %v, want none", scheduleIDs(got))
		}
		got := due(t, s, now, 1)
		if d := cmp.Diff(getSchedule(t, s, "sched_first"), got[0]); d != "" {
			t.Errorf("due schedule differs from GetSchedule (-want +got):\n%s", d)
		}
		if next := nextDue(t, s); next == nil || *next != stored(at(10)) {
			t.Errorf("NextDue = %v, want %v", next, stored(at(10)))
		} else {
			wantUTC(t, "NextDue", *next)
		}
	}},
	{"DueAmongMany", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "many@example.com")
		const n = 10_000
		base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
		// Schedule i is next due i seconds after base, in an order unrelated to
		// its id; every third one is disabled and every seventh has no next run.
		// They are created by a few writers at once, as a busy server would.
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := w; i < n && errs[w] == nil; i += writers {
					sc := newSchedule(u.ID, 0)
					sc.ID = fmt.Sprintf("sched_%05d", (i*7919)%n)
					sc.NextRunAt = ptr(base.Add(time.Duration(i) * time.Second))
					sc.Enabled = i%3 != 0
					if i%7 == 0 {
						sc.NextRunAt = nil
					}
					if err := s.CreateSchedule(ctx, sc); err != nil {
						errs[w] = fmt.Errorf("schedule %d: %w", i, err)
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			must(t, err, "CreateSchedule")
		}
		// wantDue lists the ids of the enabled schedules due at base+upTo seconds,
		// soonest first, at most limit.
		wantDue := func(upTo, limit int) []string {
			var ids []string
			for i := 0; i <= upTo && i < n && len(ids) < limit; i++ {
				if i%3 != 0 && i%7 != 0 {
					ids = append(ids, fmt.Sprintf("sched_%05d", (i*7919)%n))
				}
			}
			return ids
		}
		for _, tc := range []struct {
			name        string
			upTo, limit int
			want        []string
		}{
			{"default limit", n, 0, wantDue(n, store.DefaultDueLimit)},
			{"limit 1000", n, 1000, wantDue(n, 1000)},
			{"limit above the cap", n, 1_000_000, wantDue(n, store.MaxListLimit)},
			{"a few due", 20, 100, wantDue(20, 100)},
			{"none due", -1, 100, []string{}},
		} {
			got := due(t, s, base.Add(time.Duration(tc.upTo)*time.Second), tc.limit)
			if d := cmp.Diff(tc.want, scheduleIDs(got)); d != "" {
				t.Errorf("DueSchedules, %s (-want +got):\n%s", tc.name, d)
			}
		}
		if next := nextDue(t, s); next == nil || !next.Equal(base.Add(time.Second)) {
			t.Errorf("NextDue = %v, want %v", next, base.Add(time.Second))
		}
		if c, err := s.CountSchedules(ctx, u.ID); err != nil || c != n {
			t.Errorf("CountSchedules = %d, %v; want %d", c, err, n)
		}
	}},
	{"Claim", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "claim@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		fireAt, next := *sc.NextRunAt, at(15)

		f := newFiring(sc.ID, at(10))
		f.StartedAt = ptr(at(11))
		if !claim(t, s, f, &next) {
			t.Fatalf("ClaimFiring of the due firing = false, want true")
		}
		want := &schedule.Firing{
			ID: f.ID, ScheduleID: sc.ID, FireAt: stored(at(10)), Prompt: "Summarize what happened overnight.",
			Status: schedule.FiringQueued, ClaimedBy: "host-a:4242", StartedAt: ptr(stored(at(11))),
		}
		if d := cmp.Diff(want, f); d != "" {
			t.Errorf("ClaimFiring left (-want +got):\n%s", d)
		}
		wantUTC(t, "ClaimFiring", f.FireAt, *f.StartedAt)
		if d := cmp.Diff(want, getFiring(t, s, f.ID)); d != "" {
			t.Errorf("GetFiring of the claimed firing (-want +got):\n%s", d)
		}
		moved := *sc
		moved.NextRunAt, moved.LastRunAt = ptr(stored(next)), ptr(fireAt)
		if d := cmp.Diff(&moved, getSchedule(t, s, sc.ID)); d != "" {
			t.Errorf("the schedule after ClaimFiring (-want +got):\n%s", d)
		}

		// The same firing again, as a process that read the schedule before the
		// claim would try: nothing changes.
		again := newFiring(sc.ID, at(10))
		later := at(20)
		if claim(t, s, again, &later) {
			t.Errorf("ClaimFiring of a claimed firing = true, want false")
		}
		_, err := s.GetFiring(ctx, again.ID)
		wantKind(t, err, fault.NotFound, "GetFiring of the firing that lost")
		if d := cmp.Diff(&moved, getSchedule(t, s, sc.ID)); d != "" {
			t.Errorf("the schedule after a lost claim (-want +got):\n%s", d)
		}
		// A firing the schedule is not at yet is not claimed either.
		if claim(t, s, newFiring(sc.ID, at(20)), &later) {
			t.Errorf("ClaimFiring of a firing other than NextRunAt = true, want false")
		}
		// The next one is, with a status of its own.
		skipped := newFiring(sc.ID, at(15))
		skipped.Status, skipped.FinishedAt = schedule.FiringSkipped, ptr(at(16))
		if !claim(t, s, skipped, &later) {
			t.Errorf("ClaimFiring of the next firing = false, want true")
		}
		if d := cmp.Diff([]string{skipped.ID, f.ID}, firingIDs(listFirings(t, s, sc.ID, 0))); d != "" {
			t.Errorf("ListFirings after the claims (-want +got):\n%s", d)
		}
		if got := getFiring(t, s, skipped.ID); got.Status != schedule.FiringSkipped || got.FinishedAt == nil {
			t.Errorf("the skipped firing = %+v", got)
		}
	}},
	{"ClaimOnceDisables", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "once@example.com")
		sc := newSchedule(u.ID, 0)
		sc.Type, sc.Cron, sc.RunAt = schedule.Once, "", ptr(at(10))
		createSchedule(t, s, sc)
		if !claim(t, s, newFiring(sc.ID, at(10)), nil) {
			t.Fatalf("ClaimFiring of a one-off schedule = false, want true")
		}
		got := getSchedule(t, s, sc.ID)
		if got.Enabled || got.NextRunAt != nil || got.LastRunAt == nil || *got.LastRunAt != stored(at(10)) {
			t.Errorf("one-off schedule after its firing: Enabled %v, NextRunAt %v, LastRunAt %v; want false, nil, %v",
				got.Enabled, got.NextRunAt, got.LastRunAt, stored(at(10)))
		}
		if got := due(t, s, at(59), 0); len(got) != 0 {
			t.Errorf("DueSchedules after the one-off fired = %v, want none", scheduleIDs(got))
		}
		if next := nextDue(t, s); next != nil {
			t.Errorf("NextDue after the one-off fired = %v, want nil", next)
		}
	}},
	{"ClaimTakenFiringMovesOn", func(t *testing.T, s store.Store) {
		// A firing run by hand at the very time the schedule is next due, or
		// an edit that wrote back the time of a firing claimed meanwhile: the
		// claim finds the firing made, claims nothing, and moves the schedule
		// on, which would otherwise stay due, and refused, for ever.
		ctx := t.Context()
		u := createUser(t, s, "taken@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		byHand := newFiring(sc.ID, *sc.NextRunAt)
		must(t, s.CreateFiring(ctx, byHand), "CreateFiring")
		next := at(30)
		if claim(t, s, newFiring(sc.ID, *sc.NextRunAt), &next) {
			t.Errorf("ClaimFiring of an existing firing = true, want false")
		}
		want := *sc
		fired, moved := stored(*sc.NextRunAt), stored(next)
		want.NextRunAt, want.LastRunAt = &moved, &fired
		if d := cmp.Diff(&want, getSchedule(t, s, sc.ID)); d != "" {
			t.Errorf("the schedule after a claim that found its firing made (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{byHand.ID}, firingIDs(listFirings(t, s, sc.ID, 0))); d != "" {
			t.Errorf("ListFirings (-want +got):\n%s", d)
		}
	}},
	{"ClaimRefused", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "refused@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		next := at(30)
		for _, tc := range []struct {
			name string
			edit func(f *schedule.Firing)
			kind fault.Kind
		}{
			{"no id", func(f *schedule.Firing) { f.ID = "" }, fault.Invalid},
			{"no schedule id", func(f *schedule.Firing) { f.ScheduleID = "" }, fault.Invalid},
			{"no fire time", func(f *schedule.Firing) { f.FireAt = time.Time{} }, fault.Invalid},
			{"an unknown status", func(f *schedule.Firing) { f.Status = "paused" }, fault.Invalid},
			{"a missing schedule", func(f *schedule.Firing) { f.ScheduleID = "sched_missing" }, fault.NotFound},
		} {
			f := newFiring(sc.ID, *sc.NextRunAt)
			tc.edit(f)
			ok, err := s.ClaimFiring(ctx, f, &next)
			wantKind(t, err, tc.kind, "ClaimFiring with "+tc.name)
			if ok {
				t.Errorf("ClaimFiring with %s reported true", tc.name)
			}
		}
		// A disabled schedule is not claimed, though its NextRunAt matches.
		off := *sc
		off.Enabled = false
		must(t, s.UpdateSchedule(ctx, &off), "UpdateSchedule disabling")
		if claim(t, s, newFiring(sc.ID, *sc.NextRunAt), &next) {
			t.Errorf("ClaimFiring of a disabled schedule = true, want false")
		}
		if d := cmp.Diff(&off, getSchedule(t, s, sc.ID)); d != "" {
			t.Errorf("refused claims changed the schedule (-want +got):\n%s", d)
		}
		if fs := listFirings(t, s, sc.ID, 0); len(fs) != 0 {
			t.Errorf("refused claims stored firings %v", firingIDs(fs))
		}
	}},
	{"ClaimConcurrent", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "race@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		ClaimRace(t, []store.Store{s}, sc.ID, 8, 10)
	}},
	{"CreateFiring", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "runnow@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		before := time.Now().Add(-time.Second)
		f := &schedule.Firing{ID: newID("fire_"), ScheduleID: sc.ID, Prompt: "now", ClaimedBy: "api"}
		must(t, s.CreateFiring(ctx, f), "CreateFiring")
		aboutNow(t, "FireAt", f.FireAt, before)
		if f.Status != schedule.FiringQueued {
			t.Errorf("CreateFiring set status %q, want queued", f.Status)
		}
		if d := cmp.Diff(f, getFiring(t, s, f.ID)); d != "" {
			t.Errorf("GetFiring (-want +got):\n%s", d)
		}
		if d := cmp.Diff(sc, getSchedule(t, s, sc.ID)); d != "" {
			t.Errorf("CreateFiring moved the schedule (-want +got):\n%s", d)
		}

		full := newFiring(sc.ID, at(40))
		full.RunID, full.ConversationID, full.Status, full.Error = "run_1", "conv_1", schedule.FiringFailed, "boom «x»"
		full.StartedAt, full.FinishedAt = ptr(at(41)), ptr(at(42))
		nonZeroFields(t, "the firing", *full)
		must(t, s.CreateFiring(ctx, full), "CreateFiring")
		if full.FireAt != stored(at(40)) || *full.StartedAt != stored(at(41)) || *full.FinishedAt != stored(at(42)) {
			t.Errorf("CreateFiring did not write the stored times back: %+v", full)
		}
		got := getFiring(t, s, full.ID)
		if d := cmp.Diff(full, got); d != "" {
			t.Errorf("GetFiring (-want +got):\n%s", d)
		}
		wantUTC(t, "GetFiring", got.FireAt, *got.StartedAt, *got.FinishedAt)

		for _, tc := range []struct {
			name string
			f    *schedule.Firing
			kind fault.Kind
		}{
			{"a taken fire time", newFiring(sc.ID, at(40)), fault.Conflict},
			{"a taken id", &schedule.Firing{ID: full.ID, ScheduleID: sc.ID, FireAt: at(50)}, fault.Conflict},
			{"a missing schedule", newFiring("sched_missing", at(40)), fault.NotFound},
			{"no id", &schedule.Firing{ScheduleID: sc.ID, FireAt: at(50)}, fault.Invalid},
			{"no schedule id", &schedule.Firing{ID: newID("fire_"), FireAt: at(50)}, fault.Invalid},
			{"an unknown status", &schedule.Firing{ID: newID("fire_"), ScheduleID: sc.ID, Status: "paused"}, fault.Invalid},
		} {
			wantKind(t, s.CreateFiring(ctx, tc.f), tc.kind, "CreateFiring with "+tc.name)
		}
		if n := len(listFirings(t, s, sc.ID, 0)); n != 2 {
			t.Errorf("%d firings after refused creates, want 2", n)
		}
	}},
	{"UpdateFiring", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "upd@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		f := newFiring(sc.ID, at(10))
		must(t, s.CreateFiring(ctx, f), "CreateFiring")

		edit := *f
		edit.ScheduleID, edit.FireAt, edit.ClaimedBy = "sched_other", at(50), "host-b" // never change
		edit.Prompt = "Summarize what happened overnight, 2026-01-01."                 // the prompt as sent
		edit.RunID, edit.ConversationID, edit.Status, edit.Error = "run_x", "conv_x", schedule.FiringFailed, "model «down»"
		edit.StartedAt, edit.FinishedAt = ptr(at(11)), ptr(at(12))
		must(t, s.UpdateFiring(ctx, &edit), "UpdateFiring")
		if *edit.StartedAt != stored(at(11)) || *edit.FinishedAt != stored(at(12)) {
			t.Errorf("UpdateFiring did not write the stored times back: %v, %v", edit.StartedAt, edit.FinishedAt)
		}
		want := *f
		want.RunID, want.ConversationID, want.Status, want.Error = "run_x", "conv_x", schedule.FiringFailed, "model «down»"
		want.Prompt = edit.Prompt
		want.StartedAt, want.FinishedAt = ptr(stored(at(11))), ptr(stored(at(12)))
		if d := cmp.Diff(&want, getFiring(t, s, f.ID)); d != "" {
			t.Errorf("GetFiring after UpdateFiring (-want +got):\n%s", d)
		}

		// Clearing what may be cleared.
		edit.RunID, edit.ConversationID, edit.Error, edit.StartedAt, edit.FinishedAt = "", "", "", nil, nil
		edit.Status, edit.Prompt = schedule.FiringQueued, f.Prompt
		must(t, s.UpdateFiring(ctx, &edit), "UpdateFiring clearing")
		if d := cmp.Diff(f, getFiring(t, s, f.ID)); d != "" {
			t.Errorf("GetFiring after clearing (-want +got):\n%s", d)
		}

		bad := *f
		bad.Status = "paused"
		wantKind(t, s.UpdateFiring(ctx, &bad), fault.Invalid, "UpdateFiring to an unknown status")
		bad.Status = ""
		wantKind(t, s.UpdateFiring(ctx, &bad), fault.Invalid, "UpdateFiring to no status")
		missing := newFiring(sc.ID, at(1))
		missing.Status = schedule.FiringRunning
		wantKind(t, s.UpdateFiring(ctx, missing), fault.NotFound, "UpdateFiring of a missing firing")
		got, err := s.GetFiring(ctx, "fire_missing")
		wantKind(t, err, fault.NotFound, "GetFiring of a missing firing")
		if got != nil {
			t.Errorf("GetFiring returned %+v with its error", got)
		}
	}},
	{"AdvanceFiring", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "advance@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		f := newFiring(sc.ID, at(10))
		must(t, s.CreateFiring(ctx, f), "CreateFiring")
		f.Status, f.RunID, f.StartedAt = schedule.FiringRunning, "run_x", ptr(at(11))
		must(t, s.AdvanceFiring(ctx, f), "AdvanceFiring to running")
		failed := *f
		failed.Status, failed.Error, failed.FinishedAt = schedule.FiringFailed, schedule.ReasonDead, ptr(at(12))
		must(t, s.AdvanceFiring(ctx, &failed), "AdvanceFiring to failed")
		// An ended firing keeps its end.
		late := *f
		late.Status, late.FinishedAt = schedule.FiringSucceeded, ptr(at(13))
		wantKind(t, s.AdvanceFiring(ctx, &late), fault.Conflict, "AdvanceFiring of an ended firing")
		if got := getFiring(t, s, f.ID); got.Status != schedule.FiringFailed || got.Error != schedule.ReasonDead || !got.FinishedAt.Equal(stored(at(12))) {
			t.Errorf("the failed firing after a refused end: %+v", got)
		}
		missing := newFiring(sc.ID, at(1))
		missing.Status = schedule.FiringRunning
		wantKind(t, s.AdvanceFiring(ctx, missing), fault.NotFound, "AdvanceFiring of a missing firing")
	}},
	{"ListFirings", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "list@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		other := createSchedule(t, s, newSchedule(u.ID, 0))
		for _, x := range []struct {
			id     string
			minute int
		}{{"fire_mid", 20}, {"fire_old", 10}, {"fire_new", 30}} {
			f := newFiring(sc.ID, at(x.minute))
			f.ID, f.Status = x.id, schedule.FiringSucceeded // one at a time is queued or running
			must(t, s.CreateFiring(t.Context(), f), "CreateFiring")
		}
		must(t, s.CreateFiring(t.Context(), newFiring(other.ID, at(25))), "CreateFiring")
		if d := cmp.Diff([]string{"fire_new", "fire_mid", "fire_old"}, firingIDs(listFirings(t, s, sc.ID, 0))); d != "" {
			t.Errorf("ListFirings (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"fire_new", "fire_mid"}, firingIDs(listFirings(t, s, sc.ID, 2))); d != "" {
			t.Errorf("ListFirings with limit 2 (-want +got):\n%s", d)
		}
		got := listFirings(t, s, sc.ID, 1)
		if d := cmp.Diff(getFiring(t, s, "fire_new"), got[0]); d != "" {
			t.Errorf("listed firing differs from GetFiring (-want +got):\n%s", d)
		}
		if got := listFirings(t, s, "sched_missing", 0); len(got) != 0 {
			t.Errorf("ListFirings of a missing schedule = %v, want none", firingIDs(got))
		}
	}},
	{"FiringPage", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "pages@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		other := createSchedule(t, s, newSchedule(u.ID, 0))
		add := func(scheduleID, id string, minute int) {
			t.Helper()
			f := newFiring(scheduleID, at(minute))
			f.Status = schedule.FiringSucceeded // one at a time is queued or running
			if id != "" {
				f.ID = id
			}
			must(t, s.CreateFiring(ctx, f), "CreateFiring "+f.ID)
		}
		// Seven firings whose ids run against their times: the order is by
		// time, the id only breaks ties. The other schedule's are in between.
		var want []string
		for i := range 7 {
			id := fmt.Sprintf("fire_%c", 'a'+i)
			add(sc.ID, id, 70-10*i)
			add(other.ID, "", 65-10*i)
			want = append(want, id)
		}
		pageAll := func(limit int) []string {
			t.Helper()
			var got []string
			q := schedule.FiringQuery{ScheduleID: sc.ID, Limit: limit}
			for n := 0; ; n++ {
				p, err := s.FiringPage(ctx, q)
				must(t, err, fmt.Sprintf("FiringPage of %d, page %d", limit, n))
				if limit > 0 && len(p.Firings) > limit {
					t.Fatalf("page %d has %d firings, limit %d", n, len(p.Firings), limit)
				}
				got = append(got, firingIDs(p.Firings)...)
				if p.NextCursor == "" {
					return got
				}
				if n > 10 {
					t.Fatal("FiringPage never ended")
				}
				q.Cursor = p.NextCursor
			}
		}
		for _, limit := range []int{1, 2, 3, 6, 7, 0} {
			if d := cmp.Diff(want, pageAll(limit)); d != "" {
				t.Errorf("pages of %d (-want +got):\n%s", limit, d)
			}
		}
		p, err := s.FiringPage(ctx, schedule.FiringQuery{ScheduleID: sc.ID, Limit: 7})
		must(t, err, "FiringPage of all seven")
		if len(p.Firings) != 7 || p.NextCursor != "" {
			t.Errorf("a page holding every firing: %v, next cursor %q; want no next cursor", firingIDs(p.Firings), p.NextCursor)
		}
		if d := cmp.Diff(getFiring(t, s, "fire_a"), p.Firings[0]); d != "" {
			t.Errorf("paged firing differs from GetFiring (-want +got):\n%s", d)
		}

		// A firing that comes after the first page was read moves nothing:
		// the next page starts after the last firing read, not at an offset.
		first, err := s.FiringPage(ctx, schedule.FiringQuery{ScheduleID: sc.ID, Limit: 3})
		must(t, err, "FiringPage first")
		add(sc.ID, "fire_newest", 80)
		second, err := s.FiringPage(ctx, schedule.FiringQuery{ScheduleID: sc.ID, Limit: 3, Cursor: first.NextCursor})
		must(t, err, "FiringPage second")
		if d := cmp.Diff([]string{"fire_d", "fire_e", "fire_f"}, firingIDs(second.Firings)); d != "" {
			t.Errorf("the second page after a new firing (-want +got):\n%s", d)
		}
		if d := cmp.Diff(append([]string{"fire_newest"}, want...), pageAll(2)); d != "" {
			t.Errorf("pages of 2 with the new firing (-want +got):\n%s", d)
		}

		// A cursor lists only its own schedule's firings.
		p, err = s.FiringPage(ctx, schedule.FiringQuery{ScheduleID: other.ID, Limit: 100, Cursor: first.NextCursor})
		must(t, err, "FiringPage of the other schedule")
		if len(p.Firings) != 5 || p.NextCursor != "" {
			t.Errorf("the other schedule's firings before fire_c: %v (next cursor %q), want 5", firingIDs(p.Firings), p.NextCursor)
		}
		for _, f := range p.Firings {
			if f.ScheduleID != other.ID || !f.FireAt.Before(stored(at(50))) {
				t.Errorf("the other schedule's page holds %+v", f)
			}
		}
		if p, err := s.FiringPage(ctx, schedule.FiringQuery{ScheduleID: "sched_missing"}); err != nil || p.Firings == nil || len(p.Firings) != 0 || p.NextCursor != "" {
			t.Errorf("FiringPage of a missing schedule = %+v, %v; want an empty page", p, err)
		}
		for _, c := range []string{"not a cursor!", "bm9zcGFjZQ", "MjAyNS0wMy0wNCBmaXJl"} {
			_, err := s.FiringPage(ctx, schedule.FiringQuery{ScheduleID: sc.ID, Cursor: c})
			wantKind(t, err, fault.Invalid, fmt.Sprintf("FiringPage with cursor %q", c))
		}
	}},
	{"RunningFiring", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "running@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		running := func() *schedule.Firing {
			t.Helper()
			f, err := s.RunningFiring(ctx, sc.ID)
			must(t, err, "RunningFiring")
			return f
		}
		if f := running(); f != nil {
			t.Errorf("RunningFiring of a schedule without firings = %+v, want nil", f)
		}
		for i, st := range []schedule.FiringStatus{schedule.FiringSucceeded, schedule.FiringFailed,
			schedule.FiringCancelled, schedule.FiringSkipped} {
			f := newFiring(sc.ID, at(i))
			f.Status = st
			must(t, s.CreateFiring(ctx, f), "CreateFiring")
		}
		if f := running(); f != nil {
			t.Errorf("RunningFiring with only finished firings = %+v, want nil", f)
		}
		f := newFiring(sc.ID, at(10))
		must(t, s.CreateFiring(ctx, f), "CreateFiring")
		if d := cmp.Diff(f, running()); d != "" {
			t.Errorf("RunningFiring of a queued firing (-want +got):\n%s", d)
		}
		f.Status, f.StartedAt = schedule.FiringRunning, ptr(at(11))
		must(t, s.UpdateFiring(ctx, f), "UpdateFiring")
		if d := cmp.Diff(f, running()); d != "" {
			t.Errorf("RunningFiring of a running firing (-want +got):\n%s", d)
		}
		other := createSchedule(t, s, newSchedule(u.ID, 0))
		if got, err := s.RunningFiring(ctx, other.ID); err != nil || got != nil {
			t.Errorf("RunningFiring of another schedule = %+v, %v; want nil", got, err)
		}
		f.Status, f.FinishedAt = schedule.FiringSucceeded, ptr(at(12))
		must(t, s.UpdateFiring(ctx, f), "UpdateFiring")
		if got := running(); got != nil {
			t.Errorf("RunningFiring after it finished = %+v, want nil", got)
		}
	}},
	{"FailStale", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "stale@example.com")
		mk := func(status schedule.FiringStatus, fire int, started, finished *int) *schedule.Firing {
			// A schedule each: one at a time is queued or running.
			sc := createSchedule(t, s, newSchedule(u.ID, 0))
			f := newFiring(sc.ID, at(fire))
			f.Status = status
			if started != nil {
				f.StartedAt = ptr(at(*started))
			}
			if finished != nil {
				f.FinishedAt = ptr(at(*finished))
			}
			must(t, s.CreateFiring(ctx, f), "CreateFiring")
			return f
		}
		p := func(i int) *int { return &i }
		stale := []*schedule.Firing{
			mk(schedule.FiringQueued, 10, nil, nil),   // queued, never started
			mk(schedule.FiringRunning, 5, p(20), nil), // started before the cutoff
			mk(schedule.FiringQueued, 6, p(29), nil),  // queued, started just before
			mk(schedule.FiringRunning, 7, nil, nil),   // running without a start time
		}
		fresh := []*schedule.Firing{
			mk(schedule.FiringRunning, 11, p(40), nil), // fired before the cutoff, started after
			mk(schedule.FiringQueued, 40, nil, nil),    // fired after the cutoff
			mk(schedule.FiringRunning, 30, nil, nil),   // fired at the cutoff
			mk(schedule.FiringSucceeded, 12, p(13), p(14)),
			mk(schedule.FiringFailed, 13, p(14), p(15)),
			mk(schedule.FiringCancelled, 14, p(15), p(16)),
			mk(schedule.FiringSkipped, 15, nil, p(16)),
		}
		before := time.Now().Add(-time.Second)
		n, err := s.FailStaleFirings(ctx, at(30), "relay restarted «mid-run»")
		must(t, err, "FailStaleFirings")
		if n != len(stale) {
			t.Errorf("FailStaleFirings marked %d firings, want %d", n, len(stale))
		}
		for _, f := range stale {
			got := getFiring(t, s, f.ID)
			if got.Status != schedule.FiringFailed || got.Error != "relay restarted «mid-run»" || got.FinishedAt == nil {
				t.Errorf("stale firing %s = %+v; want failed, with the reason and a finish time", f.ID, got)
				continue
			}
			aboutNow(t, "FinishedAt of a stale firing", *got.FinishedAt, before)
			if d := cmp.Diff(f.StartedAt, got.StartedAt); d != "" {
				t.Errorf("FailStaleFirings changed StartedAt of %s (-want +got):\n%s", f.ID, d)
			}
		}
		for _, f := range fresh {
			if d := cmp.Diff(f, getFiring(t, s, f.ID)); d != "" {
				t.Errorf("FailStaleFirings changed firing %s (-want +got):\n%s", f.ID, d)
			}
		}
		n, err = s.FailStaleFirings(ctx, at(30), "again")
		must(t, err, "FailStaleFirings again")
		if n != 0 {
			t.Errorf("FailStaleFirings again marked %d firings, want 0", n)
		}
	}},
	{"OneRunningFiring", func(t *testing.T, s store.Store) {
		// A schedule runs one firing at a time, run by hand or due: while one
		// is queued or running, neither CreateFiring nor ClaimFiring queues
		// another, and the refusal names it.
		ctx := t.Context()
		u := createUser(t, s, "one@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		byHand := newFiring(sc.ID, at(1))
		must(t, s.CreateFiring(ctx, byHand), "CreateFiring")
		wantRunning := func(err error, doing string) {
			t.Helper()
			wantKind(t, err, fault.Conflict, doing)
			var running *schedule.RunningError
			if !errors.As(err, &running) || running.Firing.ID != byHand.ID {
				t.Errorf("%s: error %v names no running firing %s", doing, err, byHand.ID)
			}
		}
		wantRunning(s.CreateFiring(ctx, newFiring(sc.ID, at(2))), "CreateFiring while one is queued")
		next := at(30)
		due := newFiring(sc.ID, *sc.NextRunAt)
		ok, err := s.ClaimFiring(ctx, due, &next)
		wantRunning(err, "ClaimFiring while one is queued")
		if ok {
			t.Errorf("ClaimFiring while one is queued reported true")
		}
		if d := cmp.Diff(sc, getSchedule(t, s, sc.ID)); d != "" {
			t.Errorf("a refused claim moved the schedule (-want +got):\n%s", d)
		}
		byHand.Status, byHand.StartedAt = schedule.FiringRunning, ptr(at(2))
		must(t, s.UpdateFiring(ctx, byHand), "UpdateFiring to running")
		wantRunning(s.CreateFiring(ctx, newFiring(sc.ID, at(3))), "CreateFiring while one is running")

		// A firing that does not run is stored all the same: the due one,
		// claimed again as skipped, moves the schedule on.
		due.Status, due.Error = schedule.FiringSkipped, "the previous firing was still running"
		if !claim(t, s, due, &next) {
			t.Errorf("ClaimFiring of the due firing as skipped = false, want true")
		}
		if got := getSchedule(t, s, sc.ID); got.NextRunAt == nil || !got.NextRunAt.Equal(stored(next)) {
			t.Errorf("NextRunAt after the skipped claim = %v, want %v", got.NextRunAt, stored(next))
		}
		done := newFiring(sc.ID, at(4))
		done.Status = schedule.FiringFailed
		must(t, s.CreateFiring(ctx, done), "CreateFiring of a finished firing")

		// Once it finished, the next is queued; the first can no longer be
		// made running again beside it.
		byHand.Status, byHand.FinishedAt = schedule.FiringSucceeded, ptr(at(5))
		must(t, s.UpdateFiring(ctx, byHand), "UpdateFiring to succeeded")
		again := newFiring(sc.ID, at(6))
		must(t, s.CreateFiring(ctx, again), "CreateFiring after the running one finished")
		byHand.Status = schedule.FiringRunning
		wantKind(t, s.UpdateFiring(ctx, byHand), fault.Conflict, "UpdateFiring back to running beside another")
		if f, err := s.RunningFiring(ctx, sc.ID); err != nil || f == nil || f.ID != again.ID {
			t.Errorf("RunningFiring = %v, %v; want %s", f, err, again.ID)
		}
		// Another schedule's firings are its own.
		other := createSchedule(t, s, newSchedule(u.ID, 0))
		must(t, s.CreateFiring(ctx, newFiring(other.ID, at(7))), "CreateFiring of another schedule")
		wantKind(t, s.CreateFiring(ctx, newFiring("sched_missing", at(8))), fault.NotFound, "CreateFiring of a missing schedule")
	}},
	{"RunNowConcurrent", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "runnow@example.com")
		sc := createSchedule(t, s, newSchedule(u.ID, 0))
		RunNowRace(t, []store.Store{s}, sc.ID, 8)
	}},
}

// DueSchedule creates, in s, a user and an enabled every-minute schedule of
// theirs that is due to fire and has no firings, as ClaimRace needs, and
// returns the schedule's id.
func DueSchedule(t *testing.T, s store.Store) string {
	t.Helper()
	ctx := t.Context()
	u := &auth.User{ID: auth.NewUserID(), Email: "procs@example.com", DisplayName: "Procs", Role: auth.RoleUser}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	next := time.Date(2025, 3, 4, 5, 0, 0, 0, time.UTC)
	sc := &schedule.Schedule{ID: "sched_procs", UserID: u.ID, AgentID: "a", Name: "n", Prompt: "p",
		Type: schedule.Recurring, Cron: "* * * * *", Timezone: "UTC", Enabled: true, NextRunAt: &next}
	if err := s.CreateSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	return sc.ID
}

// ClaimRace checks that claiming a due firing happens exactly once. The stores
// must share one database, as separate Relay processes would; the schedule
// with that id must be enabled, have a NextRunAt and no firings yet. For each of rounds firings
// in turn, claimers goroutines per store claim the schedule's NextRunAt at once,
// each with a firing of its own; exactly one must win, the schedule must move
// exactly once, and one firing must be stored.
func ClaimRace(t *testing.T, stores []store.Store, scheduleID string, claimers, rounds int) {
	t.Helper()
	ctx := t.Context()
	s := stores[0]
	for round := range rounds {
		sc := getSchedule(t, s, scheduleID)
		if !sc.Enabled || sc.NextRunAt == nil {
			t.Fatalf("round %d: schedule %s is not due to fire: %+v", round, scheduleID, sc)
		}
		fireAt := *sc.NextRunAt
		next := fireAt.Add(time.Minute)
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			n      = len(stores) * claimers
			won    = make([]bool, n)
			errs   = make([]error, n)
			firing = make([]*schedule.Firing, n)
		)
		for i := range n {
			firing[i] = newFiring(scheduleID, fireAt)
			firing[i].ClaimedBy = fmt.Sprintf("store %d, claimer %d", i/claimers, i%claimers)
			wg.Go(func() {
				<-start
				won[i], errs[i] = stores[i/claimers].ClaimFiring(ctx, firing[i], &next)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range n {
			switch {
			case errs[i] != nil:
				t.Errorf("round %d, %s: ClaimFiring: %v", round, firing[i].ClaimedBy, errs[i])
			case won[i] && winner >= 0:
				t.Errorf("round %d: both %s and %s claimed the firing at %v",
					round, firing[winner].ClaimedBy, firing[i].ClaimedBy, fireAt)
			case won[i]:
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no claimer won the firing at %v", round, fireAt)
		}
		got := getSchedule(t, s, scheduleID)
		if got.NextRunAt == nil || !got.NextRunAt.Equal(next) || got.LastRunAt == nil || !got.LastRunAt.Equal(fireAt) {
			t.Errorf("round %d: schedule after the race: NextRunAt %v, LastRunAt %v; want %v, %v",
				round, got.NextRunAt, got.LastRunAt, next, fireAt)
		}
		fs := listFirings(t, s, scheduleID, 1)
		if len(fs) != 1 || fs[0].ID != firing[winner].ID || !fs[0].FireAt.Equal(fireAt) {
			t.Errorf("round %d: latest firing %v, want the winner's %s at %v", round, firingIDs(fs), firing[winner].ID, fireAt)
		}
		// The winner's run ends before the next firing, as a schedule runs
		// one firing at a time.
		firing[winner].Status, firing[winner].FinishedAt = schedule.FiringSucceeded, &next
		must(t, s.UpdateFiring(ctx, firing[winner]), "UpdateFiring")
	}
	if fs := listFirings(t, s, scheduleID, store.MaxListLimit); len(fs) != rounds {
		t.Errorf("%d firings stored after %d rounds, want one per round", len(fs), rounds)
	}
}

// RunNowRace checks that a schedule runs one firing at a time, however many
// are asked for at once. The stores must share one database, as separate Relay
// processes would; the schedule with that id must be enabled and due (a
// NextRunAt) and have no firing queued or running. From each store, runners
// goroutines queue a firing run by hand (CreateFiring) and as many claim the
// due one (ClaimFiring), all at once: exactly one firing must be queued, and
// every other refused with fault.Conflict naming it, or have lost the claim.
func RunNowRace(t *testing.T, stores []store.Store, scheduleID string, runners int) {
	t.Helper()
	ctx := t.Context()
	sc := getSchedule(t, stores[0], scheduleID)
	if !sc.Enabled || sc.NextRunAt == nil {
		t.Fatalf("schedule %s is not due to fire: %+v", scheduleID, sc)
	}
	next := sc.NextRunAt.Add(time.Minute)
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		n      = len(stores) * runners * 2
		queued = make([]bool, n)
		errs   = make([]error, n)
		firing = make([]*schedule.Firing, n)
	)
	for i := range n {
		st, byHand := stores[i/(2*runners)], i%2 == 0
		firing[i] = newFiring(scheduleID, time.Date(2025, 3, 4, 6, 0, 0, i*1000, time.UTC))
		if !byHand {
			firing[i].FireAt = *sc.NextRunAt
		}
		firing[i].ClaimedBy = fmt.Sprintf("store %d, %s %d", i/(2*runners), map[bool]string{true: "run now", false: "claim"}[byHand], i)
		wg.Go(func() {
			<-start
			if byHand {
				errs[i] = st.CreateFiring(ctx, firing[i])
				queued[i] = errs[i] == nil
			} else {
				queued[i], errs[i] = st.ClaimFiring(ctx, firing[i], &next)
			}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		if queued[i] {
			if winner >= 0 {
				t.Errorf("both %s and %s were queued", firing[winner].ClaimedBy, firing[i].ClaimedBy)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no firing was queued: %v", errs)
	}
	for i, err := range errs {
		var running *schedule.RunningError
		switch {
		case err == nil:
		case !fault.Is(err, fault.Conflict) || !errors.As(err, &running):
			t.Errorf("%s: %v, want a conflict naming the running firing", firing[i].ClaimedBy, err)
		case running.Firing.ID != firing[winner].ID:
			t.Errorf("%s: refused for firing %s, want %s", firing[i].ClaimedBy, running.Firing.ID, firing[winner].ID)
		}
	}
	var unfinished []string
	for _, f := range listFirings(t, stores[0], scheduleID, store.MaxListLimit) {
		if f.Status == schedule.FiringQueued || f.Status == schedule.FiringRunning {
			unfinished = append(unfinished, f.ID)
		}
	}
	if d := cmp.Diff([]string{firing[winner].ID}, unfinished); d != "" {
		t.Errorf("firings queued or running (-want +got):\n%s", d)
	}
}
