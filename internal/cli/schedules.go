package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/schedule"
)

// withRuns opens what running agents from the command line needs (the
// application and its Runner) and runs f as the user named by ref (default:
// the bootstrap admin).
func withRuns(ctx context.Context, e *env, ref string, f func(*app.App, *app.Runner, *auth.User) error) error {
	a, err := e.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	u, err := cliUser(ctx, a, ref)
	if err != nil {
		return err
	}
	r, err := a.Runner(ctx)
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	return f(a, r, u)
}

// withSchedules runs f with the scheduler, as the user named by user.
func withSchedules(ctx context.Context, e *env, user string, f func(*schedule.Service, *auth.User) error) error {
	return withRuns(ctx, e, user, func(_ *app.App, r *app.Runner, u *auth.User) error {
		return f(r.Schedules(), u)
	})
}

// cliUser finds the user a command acts as: --user, else the bootstrap admin.
func cliUser(ctx context.Context, a *app.App, ref string) (*auth.User, error) {
	who := ref
	if who == "" {
		who = auth.BootstrapEmail
	}
	u, err := a.Auth.FindUser(ctx, who)
	if fault.Is(err, fault.NotFound) && ref == "" {
		return nil, usageErr("--user is required (no bootstrap admin %s exists)", auth.BootstrapEmail)
	}
	return u, err
}

// scheduleFlags registers the flags that set a schedule's fields and returns
// the function that reads them into an Input (only the flags given).
func scheduleFlags(fs *flag.FlagSet) func() (schedule.Input, error) {
	agentID := fs.String("agent", "", "the agent's `id`")
	name := fs.String("name", "", "the schedule's `name` (titles its conversations)")
	text := fs.String("prompt", "", "the `message` each run sends; placeholders such as {{current_date}} use the schedule's time zone")
	cron := fs.String("cron", "", "5-field cron `expression` (minute hour day-of-month month day-of-week), e.g. \"0 7 * * MON-FRI\"")
	runAt := fs.String("run-at", "", "for a one-off schedule: when, `RFC3339`")
	tz := fs.String("timezone", "", "IANA time `zone` (default UTC)")
	notify := fs.String("notify-url", "", "`URL` that receives each firing's result as JSON")
	enabled := fs.String("enabled", "", "`true` or false")
	return func() (schedule.Input, error) {
		var in schedule.Input
		seen := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { seen[f.Name] = true })
		str := func(flag string, v *string) *string {
			if seen[flag] {
				return v
			}
			return nil
		}
		in.AgentID, in.Name, in.Prompt, in.Cron, in.Timezone, in.NotifyURL = str("agent", agentID), str("name", name), str("prompt", text), str("cron", cron), str("timezone", tz), str("notify-url", notify)
		if seen["cron"] {
			t := schedule.Recurring
			in.Type = &t
		}
		if seen["run-at"] {
			t, err := time.Parse(time.RFC3339, *runAt)
			if err != nil {
				return in, usageErr("--run-at: %q is not an RFC 3339 time", *runAt)
			}
			in.RunAt = &t
			once := schedule.Once
			in.Type = &once
		}
		if seen["enabled"] {
			b := *enabled == "true"
			if !b && *enabled != "false" {
				return in, usageErr("--enabled must be true or false")
			}
			in.Enabled = &b
		}
		return in, nil
	}
}

func schedulesCommands() []*command {
	userFlag := func(fs *flag.FlagSet) *string {
		return fs.String("user", "", "act as this user (`id or email`; default: the bootstrap admin)")
	}
	return []*command{
		{name: "schedules list", summary: "list your schedules", setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := userFlag(fs)
			asJSON := fs.Bool("json", false, "print JSON instead of a table")
			return func(ctx context.Context, e *env, _ []string) error {
				return withSchedules(ctx, e, *user, func(s *schedule.Service, u *auth.User) error {
					list, err := s.List(ctx, u)
					if err != nil {
						return err
					}
					if *asJSON {
						return printJSON(e.Stdout, list)
					}
					tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tNAME\tAGENT\tWHEN\tTIMEZONE\tENABLED\tNEXT RUN")
					for _, sc := range list {
						when := sc.Cron
						if sc.Type == schedule.Once && sc.RunAt != nil {
							when = "once " + sc.RunAt.Format(time.RFC3339)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\n", sc.ID, sc.Name, sc.AgentID, when, sc.Timezone, sc.Enabled, fmtTime(sc.NextRunAt))
					}
					return tw.Flush()
				})
			}
		}},
		{name: "schedules add", summary: "create a schedule (--cron or --run-at)", setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := userFlag(fs)
			read := scheduleFlags(fs)
			return func(ctx context.Context, e *env, _ []string) error {
				in, err := read()
				if err != nil {
					return err
				}
				return withSchedules(ctx, e, *user, func(s *schedule.Service, u *auth.User) error {
					sc, err := s.Create(ctx, u, in)
					if err != nil {
						return err
					}
					return printJSON(e.Stdout, sc)
				})
			}
		}},
		{name: "schedules edit", args: "ID", summary: "change a schedule (only the flags given)", setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := userFlag(fs)
			read := scheduleFlags(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one schedule id")
				}
				in, err := read()
				if err != nil {
					return err
				}
				return withSchedules(ctx, e, *user, func(s *schedule.Service, u *auth.User) error {
					sc, err := s.Update(ctx, u, args[0], in)
					if err != nil {
						return err
					}
					return printJSON(e.Stdout, sc)
				})
			}
		}},
		{name: "schedules rm", args: "ID", summary: "delete a schedule and its history", setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := userFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one schedule id")
				}
				return withSchedules(ctx, e, *user, func(s *schedule.Service, u *auth.User) error {
					return s.Delete(ctx, u, args[0])
				})
			}
		}},
		{name: "schedules run", args: "ID", summary: "fire a schedule now and wait for its run", setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := userFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one schedule id")
				}
				return withSchedules(ctx, e, *user, func(s *schedule.Service, u *auth.User) error {
					f, err := s.RunNow(ctx, u, args[0])
					if err != nil {
						return err
					}
					for {
						// Looked up by its id: firings skipped while it runs
						// (every minute, say) come after it in the history.
						x, err := s.Store.GetFiring(ctx, f.ID)
						if err != nil && ctx.Err() == nil {
							return err
						}
						if err == nil && x.FinishedAt != nil {
							if err := printJSON(e.Stdout, x); err != nil {
								return err
							}
							if x.Status != schedule.FiringSucceeded {
								return exitCode(1)
							}
							return nil
						}
						select {
						case <-ctx.Done():
							// The firing's run stops with this process, and is
							// failed as a stopped process's work is.
							return fmt.Errorf("interrupted: firing %s stops with this command, its run failed", f.ID)
						case <-time.After(200 * time.Millisecond):
						}
					}
				})
			}
		}},
		{name: "schedules runs", args: "ID", summary: "list a schedule's firings, newest first",
			detail: "Prints the firings as a JSON array. When older ones remain, standard error ends with\n" +
				"the --cursor that lists them (older firings: --cursor C).",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				limit := fs.Int("limit", 20, "at most this `many` firings (1 to 1000)")
				cursor := fs.String("cursor", "", "list the older firings that follow a page (the `cursor` printed after it)")
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) != 1 {
						return usageErr("expected one schedule id")
					}
					if *limit < 1 || *limit > 1000 {
						return usageErr("--limit must be 1 to 1000")
					}
					return withSchedules(ctx, e, *user, func(s *schedule.Service, u *auth.User) error {
						page, err := s.Firings(ctx, u, schedule.FiringQuery{ScheduleID: args[0], Limit: *limit, Cursor: *cursor})
						if err != nil {
							return err
						}
						if err := printJSON(e.Stdout, page.Firings); err != nil {
							return err
						}
						if page.NextCursor != "" {
							fmt.Fprintf(e.Stderr, "older firings: --cursor %s\n", page.NextCursor)
						}
						return nil
					})
				}
			}},
	}
}
