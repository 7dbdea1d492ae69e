package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/secret"
)

func loadBody(t *testing.T, body string, env map[string]string) (*Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func TestSecretKeys(t *testing.T) {
	cur, old, fromEnv := secret.GenerateKey(), secret.GenerateKey(), secret.GenerateKey()

	t.Run("FromFile", func(t *testing.T) {
		c, err := loadBody(t, "secrets:\n  key: ${MY_KEY}\n  previousKeys: ["+old+"]\n", map[string]string{"MY_KEY": cur, "RELAY_SECRETS_KEY": fromEnv})
		if err != nil {
			t.Fatal(err)
		}
		if c.SecretKeys.Key != cur || !slices.Equal(c.SecretKeys.PreviousKeys, []string{old}) {
			t.Errorf("secrets = %+v; the file's key wins over RELAY_SECRETS_KEY", c.SecretKeys)
		}
		got := c.Secrets(c.Getenv)
		if !slices.Contains(got, cur) || !slices.Contains(got, old) {
			t.Errorf("Secrets() lacks the keys of secrets")
		}
		var b strings.Builder
		if err := c.WriteMasked(&b); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); strings.Contains(out, cur) || strings.Contains(out, old) || !strings.Contains(out, "key: '****'") {
			t.Errorf("dump shows a key:\n%s", out)
		}
	})
	t.Run("FromEnv", func(t *testing.T) {
		c, err := loadBody(t, "server:\n  addr: :3080\n", map[string]string{"RELAY_SECRETS_KEY": fromEnv})
		if err != nil {
			t.Fatal(err)
		}
		if c.SecretKeys.Key != fromEnv || !slices.Contains(c.Secrets(c.Getenv), fromEnv) {
			t.Errorf("RELAY_SECRETS_KEY was not used as secrets.key, or is not a known secret")
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		_, err := loadBody(t, "secrets:\n  key: not-a-real-key-value\n  previousKeys: [\""+old+"\", also-not-a-key-value]\n", nil)
		if !fault.Is(err, fault.Invalid) {
			t.Fatalf("Load = %v, want invalid", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "secrets.key") || !strings.Contains(msg, "secrets.previousKeys[1]") {
			t.Errorf("error %q does not name both fields", msg)
		}
		if strings.Contains(msg, "not-a-real-key-value") || strings.Contains(msg, "also-not-a-key-value") || strings.Contains(msg, old) {
			t.Errorf("error %q shows a key", msg)
		}
		_, err = loadBody(t, "secrets:\n  key: not-a-real-key-value\n", map[string]string{"RELAY_SECRETS_KEY": "x"})
		if err == nil || !strings.Contains(err.Error(), "secrets.key") {
			t.Errorf("a bad key: %v", err)
		}
		_, err = loadBody(t, "secrets:\n  previousKeys: [\""+old+"\"]\n", nil)
		if err == nil || !strings.Contains(err.Error(), "secrets.key: required with previousKeys") {
			t.Errorf("previous keys without a key: %v", err)
		}
	})
	t.Run("KeyFile", func(t *testing.T) {
		c := Default()
		c.Server.DataDir = "/var/lib/relay"
		if got, want := c.SecretKeyFile(), filepath.Join("/var/lib/relay", "secret.key"); got != want {
			t.Errorf("SecretKeyFile() = %q, want %q", got, want)
		}
		c.Database.URL = "sqlite:///srv/db/relay.db"
		if got := c.SecretKeyFile(); got != "/srv/db/secret.key" {
			t.Errorf("SecretKeyFile() with a database URL = %q", got)
		}
		c.Database.URL = "postgres://relay@db/relay"
		if got := c.SecretKeyFile(); got != "" {
			t.Errorf("SecretKeyFile() for Postgres = %q, want none", got)
		}
	})
}
