package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/relay-ai/relay/internal/secret"
)

func secretsCommands() []*command {
	return []*command{
		{
			name:    "secrets keygen",
			summary: "print a new key for secrets.key (32 random bytes, base64)",
			detail:  "Nothing is stored: put the key in secrets.key or RELAY_SECRETS_KEY, the same on every replica.",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				return func(_ context.Context, e *env, args []string) error {
					if len(args) > 0 {
						return usageErr("unexpected argument %q", args[0])
					}
					fmt.Fprintln(e.Stdout, secret.GenerateKey())
					return nil
				}
			},
		},
		{
			name:    "secrets rotate",
			summary: "re-seal every stored per-user secret with secrets.key; prints how many",
			detail: "Values sealed with a key of secrets.previousKeys are re-sealed with secrets.key. Once it has\n" +
				"printed 0 re-sealed, the previous keys can be removed (docs/config.md \"secrets\").",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) > 0 {
						return usageErr("unexpected argument %q", args[0])
					}
					a, err := e.open(ctx)
					if err != nil {
						return err
					}
					defer a.Close()
					n, err := a.Vault.Rotate(ctx)
					if errors.Is(err, secret.ErrNoKeyConfigured) {
						return err
					}
					if err != nil {
						return fmt.Errorf("re-sealed %d before failing: %w", n, err)
					}
					fmt.Fprintf(e.Stdout, "re-sealed %d stored secrets with key %s\n", n, a.Vault.Keys.CurrentID())
					return nil
				}
			},
		},
	}
}
