package app

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/relay-ai/relay/internal/account"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/secret"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/vault"
)

// newVault opens the vault of per-user secrets on st. Without a key (Postgres
// with no secrets.key) the vault refuses every use, saying what to set; a
// key that cannot be read is an error.
func newVault(cfg *config.Config, st store.Store, log *slog.Logger, owner string) (*vault.Vault, error) {
	keys, err := keyring(cfg)
	if err != nil && !errors.Is(err, secret.ErrNoKeyConfigured) {
		return nil, err
	}
	return &vault.Vault{Store: st, Keys: keys, Owner: owner, Logger: log}, nil
}

// needsUsers reports whether any MCP server needs something of each user.
func needsUsers(cfg *config.Config) bool {
	for _, s := range cfg.MCPServers {
		if s.UsesOAuth() || len(s.CustomUserVars) > 0 {
			return true
		}
	}
	return false
}

// accountService builds the service of users' MCP accounts. Its MCP manager is
// set once the manager exists (the manager asks it for each user's values).
func accountService(cfg *config.Config, v *vault.Vault, log *slog.Logger) *account.Service {
	// The MCP servers are the operator's (often on the private network, with
	// their authorization server beside them), so discovery may reach any
	// address the server's metadata names, as connecting to it does.
	client := &http.Client{Timeout: 30 * time.Second}
	return &account.Service{
		Vault:     v,
		Auth:      &mcp.Authorizer{HTTP: client, ClientName: "Relay"},
		PublicURL: cfg.Server.PublicURL,
		Getenv:    cfg.Getenv,
		Log:       log,
	}
}

// owner names this process in the claims it makes in the database: unique
// among the processes sharing it.
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:8])
}

// keyring returns the keyring of the config's secrets section
// (docs/config.md "secrets"): its key, else RELAY_SECRETS_KEY (applied by
// config.Load), else for SQLite the key file beside the database;
// secret.ErrNoKeyConfigured for Postgres without a key.
func keyring(cfg *config.Config) (*secret.Keyring, error) {
	return secret.Load(cfg.SecretKeys.Key, cfg.SecretKeys.PreviousKeys, cfg.SecretKeyFile())
}
