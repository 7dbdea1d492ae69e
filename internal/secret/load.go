package secret

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/relay-ai/relay/internal/fault"
)

// ErrNoKeyConfigured is what Load returns when no key is configured and there
// is no key file to fall back on (Postgres, whose replicas must share one
// key): per-user secrets are then unavailable, and every use of them fails
// with this same error.
var ErrNoKeyConfigured = fault.New(fault.Unavailable,
	"per-user secrets are unavailable: set secrets.key or RELAY_SECRETS_KEY (the same on every replica)")

// Load returns the keyring of the configuration (docs/config.md "secrets"):
// key (secrets.key, or RELAY_SECRETS_KEY) is the current key and previous
// (secrets.previousKeys) open what older keys sealed. Without a key, the
// current key is the one in keyFile, which is made (mode 0600) on first need;
// keyFile "" means there is no such fallback and Load returns
// ErrNoKeyConfigured. Errors never quote a key.
func Load(key string, previous []string, keyFile string) (*Keyring, error) {
	var current []byte
	switch {
	case strings.TrimSpace(key) != "":
		k, err := ParseKey(key)
		if err != nil {
			return nil, fmt.Errorf("secrets.key: %w", err)
		}
		current = k
	case keyFile != "":
		k, err := readOrCreateKeyFile(keyFile)
		if err != nil {
			return nil, err
		}
		current = k
	default:
		return nil, ErrNoKeyConfigured
	}
	prev := make([][]byte, len(previous))
	for i, p := range previous {
		k, err := ParseKey(p)
		if err != nil {
			return nil, fmt.Errorf("secrets.previousKeys[%d]: %w", i, err)
		}
		prev[i] = k
	}
	return NewKeyring(current, prev...)
}

// readOrCreateKeyFile returns the key in path, first writing a new one there
// when the file does not exist. The new file appears whole or not at all (it
// is written aside and linked into place), so that processes starting
// together on one data directory agree on one key.
func readOrCreateKeyFile(path string) ([]byte, error) {
	k, err := readKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the directory of the secrets key file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".secret.key-*")
	if err != nil {
		return nil, fmt.Errorf("writing the secrets key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(GenerateKey() + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing the secrets key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("writing the secrets key file %s: %w", path, err)
	}
	return readKeyFile(path) // ours, or the one another process linked first
}

func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("reading the secrets key file: %w", err)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secrets key file %s: %w", path, err)
	}
	return k, nil
}
