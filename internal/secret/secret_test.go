package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/relay-ai/relay/internal/fault"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func ring(t *testing.T, current []byte, previous ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(current, previous...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return k
}

func seal(t *testing.T, k *Keyring, plain, aad string) string {
	t.Helper()
	s, err := k.Seal([]byte(plain), aad)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	k := ring(t, key(1))
	const aad = "mcp_var\x00user_a\x00github\x00TOKEN"
	for _, plain := range []string{"", "ghp_secret", strings.Repeat("x", 10000)} {
		s := seal(t, k, plain, aad)
		if !strings.HasPrefix(s, "v1."+KeyID(key(1))+".") {
			t.Errorf("sealed %q does not start with v1.<key id>.", s)
		}
		if plain != "" && strings.Contains(s, plain) {
			t.Errorf("sealed value holds the plaintext")
		}
		got, err := k.Open(s, aad)
		if err != nil || string(got) != plain {
			t.Errorf("Open = %q, %v; want %q", got, err, plain)
		}
		if !k.Current(s) {
			t.Errorf("Current(%q) = false for a value just sealed", s)
		}
	}
	if a, b := seal(t, k, "same", aad), seal(t, k, "same", aad); a == b {
		t.Errorf("sealing twice gave the same value: the nonce is not random")
	}
}

func TestWrongAAD(t *testing.T) {
	k := ring(t, key(1))
	s := seal(t, k, "token", "mcp_var\x00ann\x00github\x00TOKEN")
	for _, aad := range []string{"mcp_var\x00bob\x00github\x00TOKEN", "mcp_var\x00ann\x00gitlab\x00TOKEN", ""} {
		if _, err := k.Open(s, aad); err == nil {
			t.Errorf("Open with aad %q succeeded", aad)
		}
	}
}

func TestRotation(t *testing.T) {
	old, cur := key(1), key(2)
	before := ring(t, old)
	s := seal(t, before, "refresh-token", "grant")

	after := ring(t, cur, old)
	if after.Current(s) {
		t.Errorf("a value sealed with the previous key counts as current")
	}
	got, err := after.Open(s, "grant")
	if err != nil || string(got) != "refresh-token" {
		t.Fatalf("Open with the previous key = %q, %v", got, err)
	}
	resealed := seal(t, after, string(got), "grant")
	if !after.Current(resealed) || !strings.Contains(resealed, "."+KeyID(cur)+".") {
		t.Errorf("re-sealed value %q is not sealed with the current key", resealed)
	}
	// Once the old key is gone, what it sealed no longer opens; the error
	// names the key, never shows it.
	_, err = ring(t, cur).Open(s, "grant")
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), KeyID(old)) {
		t.Errorf("Open without the key = %v, want ErrNoKey naming %s", err, KeyID(old))
	}
	for _, enc := range []string{base64.StdEncoding.EncodeToString(old), hex.EncodeToString(old)} {
		if strings.Contains(err.Error(), enc) {
			t.Errorf("error %q shows the key", err)
		}
	}
	// The previous key listed twice, or equal to the current one, is harmless.
	if _, err := NewKeyring(cur, cur, old, old); err != nil {
		t.Errorf("NewKeyring with repeated keys: %v", err)
	}
}

func TestTamper(t *testing.T) {
	k := ring(t, key(1))
	s := seal(t, k, "secret value", "aad")
	i := strings.LastIndexByte(s, '.')
	body, _ := base64.RawURLEncoding.DecodeString(s[i+1:])
	for n := range body {
		b := bytes.Clone(body)
		b[n] ^= 0x01
		if _, err := k.Open(s[:i+1]+base64.RawURLEncoding.EncodeToString(b), "aad"); err == nil {
			t.Fatalf("Open succeeded with byte %d changed", n)
		}
	}
	for _, bad := range []string{"", "v1", "v2." + KeyID(key(1)) + "." + s[i+1:], "v1.zz." + s[i+1:], s[:i+1] + "!!!", s[:i+5]} {
		if _, err := k.Open(bad, "aad"); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	for _, bad := range []string{"", "v1", "v2." + KeyID(key(1)) + "." + s[i+1:], "v1.zz." + s[i+1:]} {
		if k.Current(bad) {
			t.Errorf("Current(%q) = true", bad)
		}
	}
}

func TestParseKey(t *testing.T) {
	k := key(7)
	k[0], k[1] = 0xfb, 0xff // differs between the standard and URL alphabets
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(k),
		base64.RawStdEncoding.EncodeToString(k),
		base64.URLEncoding.EncodeToString(k),
		base64.RawURLEncoding.EncodeToString(k),
		hex.EncodeToString(k),
		strings.ToUpper(hex.EncodeToString(k)),
		" " + base64.StdEncoding.EncodeToString(k) + "\n",
	} {
		got, err := ParseKey(s)
		if err != nil || !bytes.Equal(got, k) {
			t.Errorf("ParseKey(%q) = %x, %v; want %x", s, got, err, k)
		}
	}
	for _, s := range []string{"", "short", base64.StdEncoding.EncodeToString(key(1)[:16]), "not base64 at all!!", strings.Repeat("g", 64)} {
		_, err := ParseKey(s)
		if err == nil {
			t.Errorf("ParseKey(%q) succeeded", s)
			continue
		}
		if len(s) > 4 && strings.Contains(err.Error(), s) {
			t.Errorf("ParseKey error %q quotes the key", err)
		}
	}
	g := GenerateKey()
	if b, err := ParseKey(g); err != nil || len(b) != KeySize {
		t.Errorf("ParseKey(GenerateKey()) = %d bytes, %v", len(b), err)
	}
	if GenerateKey() == g {
		t.Errorf("GenerateKey returned the same key twice")
	}
}

func TestNewKeyringRefusesBadKeys(t *testing.T) {
	if _, err := NewKeyring(key(1)[:16]); err == nil {
		t.Error("NewKeyring with a 16-byte key succeeded")
	}
	if _, err := NewKeyring(key(1), nil); err == nil {
		t.Error("NewKeyring with an empty previous key succeeded")
	}
}

func TestLoad(t *testing.T) {
	cur, old := GenerateKey(), GenerateKey()
	t.Run("ConfiguredKey", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "secret.key")
		k, err := Load(cur, []string{old}, file)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ParseKey(cur)
		if k.CurrentID() != KeyID(want) {
			t.Errorf("current key %s, want the configured %s", k.CurrentID(), KeyID(want))
		}
		if _, err := os.Stat(file); err == nil {
			t.Errorf("Load wrote a key file although a key is configured")
		}
		prev, _ := ParseKey(old)
		s := seal(t, ring(t, prev), "x", "a")
		if _, err := k.Open(s, "a"); err != nil {
			t.Errorf("a value sealed with the previous key: %v", err)
		}
	})
	t.Run("KeyFile", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "data", "secret.key")
		var wg sync.WaitGroup
		ids := make([]string, 8)
		for i := range ids {
			wg.Go(func() {
				k, err := Load("", nil, file)
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = k.CurrentID()
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("processes starting together made different keys: %v", ids)
			}
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
		}
		k, err := Load("", nil, file)
		if err != nil || k.CurrentID() != ids[0] {
			t.Errorf("loading again: %v, %v; want the same key %s", k, err, ids[0])
		}
		entries, _ := os.ReadDir(filepath.Dir(file))
		if len(entries) != 1 {
			t.Errorf("the directory holds %d files, want only the key file", len(entries))
		}
	})
	t.Run("NoKey", func(t *testing.T) {
		_, err := Load("", nil, "")
		if !errors.Is(err, ErrNoKeyConfigured) || !fault.Is(err, fault.Unavailable) {
			t.Errorf("Load without a key = %v, want ErrNoKeyConfigured", err)
		}
		if !strings.Contains(err.Error(), "set secrets.key or RELAY_SECRETS_KEY (the same on every replica)") {
			t.Errorf("error %q does not say what to set", err)
		}
	})
	t.Run("BadKeys", func(t *testing.T) {
		_, err := Load("sekrit-not-a-key", nil, "")
		if err == nil || !strings.Contains(err.Error(), "secrets.key") || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("Load with a bad key = %v, want an error naming secrets.key and not the key", err)
		}
		_, err = Load(cur, []string{old, "sekrit-not-a-key"}, "")
		if err == nil || !strings.Contains(err.Error(), "secrets.previousKeys[1]") || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("Load with a bad previous key = %v, want an error naming secrets.previousKeys[1]", err)
		}
		file := filepath.Join(t.TempDir(), "secret.key")
		os.WriteFile(file, []byte("garbage\n"), 0o600)
		if _, err := Load("", nil, file); err == nil || strings.Contains(err.Error(), "garbage") {
			t.Errorf("Load with a bad key file = %v", err)
		}
	})
}
