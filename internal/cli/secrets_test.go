package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/secret"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/vault"
)

func TestSecretsKeygen(t *testing.T) {
	code, out, errOut := runCLI(t, nil, "", "secrets", "keygen")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if k, err := secret.ParseKey(strings.TrimSpace(out)); err != nil || len(k) != secret.KeySize {
		t.Errorf("secrets keygen printed %q: %v", out, err)
	}
}

// secrets rotate re-seals what the key file's key sealed with the configured
// key, after which the old key is no longer needed.
func TestSecretsRotate(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, fmt.Sprintf("server:\n  data_dir: %s\n  log_level: warn\n", data))
	run := func(wantOut string) {
		t.Helper()
		code, out, errOut := runCLI(t, nil, "", "secrets", "rotate", "--config", cfg)
		if code != 0 || !strings.Contains(out, wantOut) {
			t.Fatalf("secrets rotate: exit %d, %q%s; want %q", code, out, errOut, wantOut)
		}
	}
	run("re-sealed 0 stored secrets")
	keyFile := filepath.Join(data, "secret.key")
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", fi, err)
	}
	old, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}

	db, err := sqlite.Open(t.Context(), filepath.Join(data, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	u := &auth.User{ID: auth.NewUserID(), Email: "ann@example.com", DisplayName: "Ann", Role: auth.RoleUser, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := db.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	fileKeys, err := secret.Load("", nil, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	v := &vault.Vault{Store: db, Keys: fileKeys}
	if err := v.SetVars(t.Context(), u.ID, vault.KindMCP, "github", map[string]string{"TOKEN": "ghp_rotated"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	newKey := secret.GenerateKey()
	cfg = writeConfig(t, dir, fmt.Sprintf("server:\n  data_dir: %s\n  log_level: warn\nsecrets:\n  key: %s\n  previousKeys: [%q]\n",
		data, newKey, strings.TrimSpace(string(old))))
	run("re-sealed 1 stored secrets")
	run("re-sealed 0 stored secrets")

	db, err = sqlite.Open(t.Context(), filepath.Join(data, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	newKeys, err := secret.Load(newKey, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&vault.Vault{Store: db, Keys: newKeys}).Vars(t.Context(), u.ID, vault.KindMCP, "github")
	if err != nil || got["TOKEN"] != "ghp_rotated" {
		t.Errorf("after rotation, with the new key only: %v, %v", got, err)
	}
}
