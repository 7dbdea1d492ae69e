// Package secret owns the keyring that seals Relay's per-user secrets at rest
// (docs/config.md "secrets"): AES-256-GCM under the current key, opened with
// any key of the ring, so that a key can be rotated while the stored values
// are re-sealed. It knows nothing of where sealed values are kept.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// version is the prefix of every sealed value, so that a later format can be
// told apart from this one.
const version = "v1"

// ErrNoKey is what Open returns when no key of the ring sealed a value; its
// message names the key id the value was sealed with.
var ErrNoKey = errors.New("no key of the keyring sealed this value")

// ParseKey reads a key as written in config or environment: 32 bytes as
// base64 (standard or URL alphabet, padded or not) or as 64 hex digits. Its
// errors never quote the key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("the key is empty")
	}
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != KeySize {
			return nil, fmt.Errorf("the key is %d bytes, want %d (generate one with `relay secrets keygen`)", len(b), KeySize)
		}
		return b, nil
	}
	return nil, fmt.Errorf("the key is neither base64 nor %d hex digits (generate one with `relay secrets keygen`)", 2*KeySize)
}

// GenerateKey returns a new random key, as standard base64.
func GenerateKey() string {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails: crypto/rand crashes the program instead
	return base64.StdEncoding.EncodeToString(k)
}

// KeyID names a key without revealing it: the first 8 hex digits of its
// SHA-256. Sealed values carry it, so that Open picks the key at once and an
// error can say which key is missing.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// Keyring seals with its current key and opens with any of its keys. It is
// safe for concurrent use.
type Keyring struct {
	current string // the id of the current key
	aeads   map[string]cipher.AEAD
}

// NewKeyring returns a keyring that seals with current and also opens what
// the previous keys sealed. Every key must be KeySize bytes.
func NewKeyring(current []byte, previous ...[]byte) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, key := range append([][]byte{current}, previous...) {
		what := "the current key"
		if i > 0 {
			what = fmt.Sprintf("previous key %d", i)
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("%s is %d bytes, want %d", what, len(key), KeySize)
		}
		id := KeyID(key)
		if i == 0 {
			k.current = id
		}
		if _, ok := k.aeads[id]; ok {
			continue // the same key twice, e.g. not yet removed from previousKeys
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// CurrentID is the id of the key Seal uses.
func (k *Keyring) CurrentID() string { return k.current }

// CurrentPrefix is how every value sealed with the current key starts, so
// that a store can find the values a rotation has left to re-seal.
func (k *Keyring) CurrentPrefix() string { return version + "." + k.current + "." }

// Seal encrypts plain with the current key. aad binds the result to where it
// is stored (e.g. "mcp_var\x00user\x00server\x00NAME"): opened with another
// aad, as when a stored value is copied to another row, it fails. The result
// is "v1.<key id>.<base64url(nonce|ciphertext)>".
func (k *Keyring) Seal(plain []byte, aad string) (string, error) {
	aead := k.aeads[k.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	rand.Read(nonce)
	out := aead.Seal(nonce, nonce, plain, []byte(aad))
	return version + "." + k.current + "." + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts what Seal made with the same aad, with whichever key of the
// ring sealed it. A value sealed with a key the ring lacks is ErrNoKey, with
// the key's id; a changed value or another aad fails too.
func (k *Keyring) Open(sealed, aad string) ([]byte, error) {
	id, body, err := split(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("sealed with key %s, which is neither secrets.key nor in secrets.previousKeys: %w", id, ErrNoKey)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("opening a sealed value: it is malformed")
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, raw[:n], raw[n:], []byte(aad))
	if err != nil {
		return nil, fmt.Errorf("opening a sealed value with key %s: it was changed, or belongs elsewhere", id)
	}
	return plain, nil
}

// Current reports whether sealed was sealed with the current key; a rotation
// is done when every stored value is.
func (k *Keyring) Current(sealed string) bool {
	return strings.HasPrefix(sealed, k.CurrentPrefix())
}

// split returns the key id and body of a sealed value.
func split(sealed string) (id, body string, err error) {
	v, rest, ok := strings.Cut(sealed, ".")
	if ok {
		id, body, ok = strings.Cut(rest, ".")
	}
	if !ok || v != version || len(id) != 8 {
		return "", "", errors.New("opening a sealed value: it is not in the v1.<key id>.<data> form")
	}
	return id, body, nil
}
