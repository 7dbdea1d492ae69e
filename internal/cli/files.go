package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
)

// withFiles opens the application and runs f with it, as the user named by
// ref (default: the bootstrap admin).
func withFiles(ctx context.Context, e *env, ref string, f func(*app.App, *auth.User) error) error {
	a, err := e.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	u, err := cliUser(ctx, a, ref)
	if err != nil {
		return err
	}
	return f(a, u)
}

func filesCommands() []*command {
	userFlag := func(fs *flag.FlagSet) *string {
		return fs.String("user", "", "act as this user (`id or email`; default: the bootstrap admin)")
	}
	return []*command{
		{name: "files add", args: "PATH...", summary: "upload files for retrieval",
			detail: "Stores each file in the database, pending ingestion, and prints its id and status. A\n" +
				"running relay serve ingests it; with --wait this command ingests it itself if no server\n" +
				"does and shows the progress. A file refused (unreadable, too large, binary named as text)\n" +
				"is said on stderr and the others are added all the same; the command exits 1 if any file\n" +
				"was refused or failed.",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				wait := fs.Bool("wait", false, "wait until every file is ready or failed, showing progress")
				return func(ctx context.Context, e *env, paths []string) error {
					if len(paths) == 0 {
						return usageErr("name at least one file to add")
					}
					return withFiles(ctx, e, *user, func(a *app.App, u *auth.User) error {
						return addFiles(ctx, e, a.Files, u, paths, a.Config.FileConfig.UploadLimit(), *wait)
					})
				}
			}},
		{name: "files list", summary: "list your files and their ingestion status",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				asJSON := fs.Bool("json", false, "print JSON instead of a table")
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) > 0 {
						return usageErr("unexpected argument %q", args[0])
					}
					return withFiles(ctx, e, *user, func(a *app.App, u *auth.User) error {
						list, err := a.Files.List(ctx, u.ID)
						if err != nil {
							return err
						}
						if *asJSON {
							return printJSON(e.Stdout, list)
						}
						tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "ID\tNAME\tTYPE\tSIZE\tSTATUS\tCHUNKS\tCREATED")
						for _, f := range list {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", f.ID, f.Name, f.MIMEType, f.Size, statusText(f), f.Chunks,
								f.CreatedAt.Format(time.RFC3339))
						}
						return tw.Flush()
					})
				}
			}},
		{name: "files rm", args: "ID...", summary: "delete files with their contents and passages",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				return func(ctx context.Context, e *env, ids []string) error {
					if len(ids) == 0 {
						return usageErr("name at least one file id to delete")
					}
					return withFiles(ctx, e, *user, func(a *app.App, u *auth.User) error {
						for _, id := range ids {
							if err := a.Files.Delete(ctx, u.ID, u.Role == auth.RoleAdmin, id); err != nil {
								return err
							}
							fmt.Fprintf(e.Stdout, "deleted %s\n", id)
						}
						return nil
					})
				}
			}},
	}
}

// statusText is a file's status as a person reads it: with the progress while
// processing, the reason when failed, the note when ready with one.
func statusText(f *file.File) string {
	switch {
	case f.Status == file.Processing:
		return fmt.Sprintf("processing %d%%", f.Progress)
	case f.Status == file.Failed:
		return "failed: " + f.Error
	case f.Note != "":
		return string(f.Status) + " (" + f.Note + ")"
	}
	return string(f.Status)
}

// addFiles uploads paths, each at most limit bytes, and, with wait, ingests
// until each is done.
func addFiles(ctx context.Context, e *env, svc *file.Service, u *auth.User, paths []string, limit int64, wait bool) error {
	var added []*file.File
	refused := 0 // each said on stderr; the others are uploaded all the same
	for _, p := range paths {
		f, err := uploadPath(ctx, svc, u, p, limit)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(e.Stderr, "%s: %s\n", p, e.redact.String(describe(err)))
			refused++
			continue
		}
		fmt.Fprintf(e.Stdout, "%s\t%s\t%s\n", f.ID, f.Name, statusText(f))
		added = append(added, f)
	}
	notAdded := func() error {
		if refused > 0 {
			return fmt.Errorf("%d of %d files were not added", refused, len(paths))
		}
		return nil
	}
	if !wait {
		return notAdded()
	}
	// Ingest here too: with a server running, whichever claims a file first
	// ingests it.
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(rctx) }()
	defer func() { stop(); <-done }()
	failed := 0
	for _, f := range added {
		last := ""
		for {
			got, err := svc.Get(ctx, u.ID, f.ID)
			if err != nil {
				return err
			}
			if s := statusText(got); s != last {
				fmt.Fprintf(e.Stderr, "%s\t%s\t%s\n", got.ID, got.Name, s)
				last = s
			}
			if got.Status == file.Ready || got.Status == file.Failed {
				if got.Status == file.Failed {
					failed++
				}
				break
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files were refused or failed", failed+refused, len(paths))
	}
	return notAdded()
}

func uploadPath(ctx context.Context, svc *file.Service, u *auth.User, path string, limit int64) (*file.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return svc.Upload(ctx, u.ID, filepath.Base(path), fh, limit)
}
