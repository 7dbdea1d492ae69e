// Package auth owns users and how they prove who they are: API keys for
// programs, passwords and server-side sessions for the web UI, the one-time
// setup link of a first start, and identities at an OpenID Connect provider
// (docs/api.md "Authentication"). Secrets (keys, session and setup tokens) are
// stored only as their SHA-256; passwords only as bcrypt hashes.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/relay-ai/relay/internal/fault"
)

// Role is what a user may do.
type Role string

// The roles of Relay.
const (
	RoleAdmin Role = "admin"
	RoleUser  Role = "user"
)

// User is a person or service that talks to Relay.
type User struct {
	ID          string    `json:"id"`
	Email       string    `json:"email"`
	DisplayName string    `json:"display_name"`
	Role        Role      `json:"role"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Disabled users are refused: their keys and sessions stop working at
	// once, and they cannot sign in.
	Disabled bool `json:"disabled"`
	// PasswordHash is a bcrypt hash, or empty when the user has no password.
	// It is never written out; the JSON form says has_password instead.
	PasswordHash string `json:"-"`
}

// IsAdmin reports whether the user holds the admin role.
func (u *User) IsAdmin() bool { return u != nil && u.Role == RoleAdmin }

// HasPassword reports whether the user may sign in with a password.
func (u *User) HasPassword() bool { return u.PasswordHash != "" }

// MarshalJSON writes the user with has_password, and never the hash.
func (u User) MarshalJSON() ([]byte, error) {
	type plain User // without this method
	return json.Marshal(struct {
		plain
		HasPassword bool `json:"has_password"`
	}{plain(u), u.HasPassword()})
}

// Key is a stored API key. The key itself is never stored, only its SHA-256.
type Key struct {
	ID         string     `json:"id"`
	UserID     string     `json:"user_id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"` // the first characters, to recognise a key in a list
	Hash       string     `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// Store is what auth needs from storage. Lookups of missing rows return fault.NotFound;
// a duplicate email is fault.Conflict.
type Store interface {
	CreateUser(ctx context.Context, u *User) error
	GetUser(ctx context.Context, id string) (*User, error)
	GetUserByEmail(ctx context.Context, email string) (*User, error)
	ListUsers(ctx context.Context) ([]*User, error)
	// UpdateUser stores the user's email, name, role, password hash and
	// disabled flag.
	UpdateUser(ctx context.Context, u *User) error
	CreateKey(ctx context.Context, k *Key) error
	// GetKey returns the key with that id, revoked or not.
	GetKey(ctx context.Context, id string) (*Key, error)
	// GetKeyByHash returns the key with that hash, revoked or not.
	GetKeyByHash(ctx context.Context, hash string) (*Key, error)
	ListKeys(ctx context.Context, userID string) ([]*Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error
	TouchKey(ctx context.Context, id string, at time.Time) error

	SessionStore
	SetupStore
	IdentityStore
}

const (
	keyPrefix   = "rk-"
	keyRandLen  = 40
	alnum       = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	touchPeriod = time.Minute
)

// randomString returns n characters drawn uniformly from alphabet.
func randomString(alphabet string, n int) string {
	out := make([]byte, n)
	buf := make([]byte, n*2)
	for i := 0; i < n; {
		_, _ = rand.Read(buf) // never fails (crypto/rand)
		for _, b := range buf {
			// Rejection sampling keeps the distribution uniform.
			if int(b) < 256-256%len(alphabet) && i < n {
				out[i] = alphabet[int(b)%len(alphabet)]
				i++
			}
		}
	}
	return string(out)
}

// NewUserID returns a fresh user id.
func NewUserID() string { return "user_" + randomString(alnum, 21) }

// NewKeyID returns a fresh key id (not the key itself).
func NewKeyID() string { return "key_" + randomString(alnum, 21) }

// NewSecret returns a fresh API key: `rk-` and 40 random letters and digits.
func NewSecret() string { return keyPrefix + randomString(alnum, keyRandLen) }

// ValidSecretFormat reports whether s looks like an API key.
func ValidSecretFormat(s string) bool {
	if len(s) != len(keyPrefix)+keyRandLen || !strings.HasPrefix(s, keyPrefix) {
		return false
	}
	for _, c := range s[len(keyPrefix):] {
		if !strings.ContainsRune(alnum, c) {
			return false
		}
	}
	return true
}

// HashSecret returns the stored form of an API key. Keys are long and random, so a
// plain SHA-256 is enough and keeps every request's check cheap.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Service creates users and keys and authenticates requests.
type Service struct {
	store      Store
	now        func() time.Time
	sessionTTL time.Duration
	keys       keyCache
	log        *slog.Logger
}

// SetLogger gives the service a log for what it notes without failing the
// request, such as a last-used time it could not write.
func (s *Service) SetLogger(l *slog.Logger) { s.log = l }

// warn logs a failure of bookkeeping that does not fail the request.
func (s *Service) warn(msg string, err error) {
	if s.log != nil {
		s.log.Warn(msg, slog.Any("err", err))
	}
}

// NewService returns a Service over store. now may be nil for time.Now.
// Sessions last DefaultSessionTTL unless SetSessionTTL says otherwise.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now, sessionTTL: DefaultSessionTTL}
}

// NewUser describes a user to create.
type NewUser struct {
	Email       string
	DisplayName string
	Role        Role
	Password    string // optional
}

// CreateUser validates and stores a new user.
func (s *Service) CreateUser(ctx context.Context, in NewUser) (*User, error) {
	var fs fault.Fields
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		fs.Add("email", "required")
	} else if !validEmail(email) {
		fs.Add("email", "%q is not an email address", in.Email)
	}
	role := in.Role
	if role == "" {
		role = RoleUser
	}
	if role != RoleAdmin && role != RoleUser {
		fs.Add("role", "must be admin or user")
	}
	if in.Password != "" {
		checkPassword(&fs, "password", in.Password)
	}
	if err := fs.Err("invalid user"); err != nil {
		return nil, err
	}
	u, err := s.newUser(email, in.DisplayName, role, in.Password)
	if err != nil {
		return nil, err
	}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// validEmail reports whether email, lower-cased and trimmed, is a bare address.
func validEmail(email string) bool {
	a, err := mail.ParseAddress(email)
	return err == nil && a.Address == email
}

// newUser makes the record of a validated new user, its password hashed.
func (s *Service) newUser(email, displayName string, role Role, password string) (*User, error) {
	name := strings.TrimSpace(displayName)
	if name == "" {
		name = email[:strings.IndexByte(email, '@')]
	}
	now := s.now().UTC()
	u := &User{ID: NewUserID(), Email: email, DisplayName: name, Role: role, CreatedAt: now, UpdatedAt: now}
	if password != "" {
		h, err := hashPassword(password)
		if err != nil {
			return nil, err
		}
		u.PasswordHash = h
	}
	return u, nil
}

// Password lengths: bcrypt reads only the first 72 bytes, so a longer
// password would be cut without a word.
const (
	MinPassword = 8
	MaxPassword = 72
)

// checkPassword adds field's problem when password is too short or too long.
func checkPassword(fs *fault.Fields, field, password string) {
	switch {
	case len(password) < MinPassword:
		fs.Add(field, "at least %d characters", MinPassword)
	case len(password) > MaxPassword:
		fs.Add(field, "at most %d bytes", MaxPassword)
	}
}

func hashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hashing password: %w", err)
	}
	return string(h), nil
}

// CheckPassword reports whether password is the user's password.
func CheckPassword(u *User, password string) bool {
	return u.PasswordHash != "" && bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) == nil
}

// FindUser looks a user up by id or, when ref contains '@', by email.
func (s *Service) FindUser(ctx context.Context, ref string) (*User, error) {
	if strings.Contains(ref, "@") {
		return s.store.GetUserByEmail(ctx, strings.ToLower(strings.TrimSpace(ref)))
	}
	return s.store.GetUser(ctx, ref)
}

// CreateKey makes a new API key for a user and returns its record and the secret,
// which is shown once and never stored.
func (s *Service) CreateKey(ctx context.Context, userID, name string) (*Key, string, error) {
	return s.storeKey(ctx, userID, name, NewSecret())
}

func (s *Service) storeKey(ctx context.Context, userID, name, secret string) (*Key, string, error) {
	if _, err := s.store.GetUser(ctx, userID); err != nil {
		return nil, "", err
	}
	k := &Key{ID: NewKeyID(), UserID: userID, Name: strings.TrimSpace(name), Prefix: secret[:len(keyPrefix)+6], Hash: HashSecret(secret), CreatedAt: s.now().UTC()}
	if err := s.store.CreateKey(ctx, k); err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// RevokeKey revokes a key; the key stops working at once in this process,
// and within KeyCacheTTL in every other.
func (s *Service) RevokeKey(ctx context.Context, id string) error {
	err := s.store.RevokeKey(ctx, id, s.now().UTC())
	s.keys.forgetKey(id)
	return err
}

// updateUser stores u and forgets what the key cache holds of the user.
func (s *Service) updateUser(ctx context.Context, u *User) error {
	err := s.store.UpdateUser(ctx, u)
	s.keys.forgetUser(u.ID)
	return err
}

// ListKeys lists a user's keys.
func (s *Service) ListKeys(ctx context.Context, userID string) ([]*Key, error) {
	return s.store.ListKeys(ctx, userID)
}

// ListUsers lists every user.
func (s *Service) ListUsers(ctx context.Context) ([]*User, error) { return s.store.ListUsers(ctx) }

// GetUser returns the user with that id.
func (s *Service) GetUser(ctx context.Context, id string) (*User, error) {
	return s.store.GetUser(ctx, id)
}

// GetKey returns the key with that id (its record, never the secret).
func (s *Service) GetKey(ctx context.Context, id string) (*Key, error) {
	return s.store.GetKey(ctx, id)
}

// errBadKey is the one answer to every failed authentication, so that a caller
// learns nothing about which keys exist.
var errBadKey = fault.New(fault.Unauthorized, "invalid or revoked API key")

// Authenticate returns the user holding secret. Any failure is the same
// fault.Unauthorized error. Last-used times are written at most once a minute per key.
func (s *Service) Authenticate(ctx context.Context, secret string) (*User, error) {
	if !ValidSecretFormat(secret) {
		return nil, errBadKey
	}
	hash := HashSecret(secret)
	now := s.now().UTC()
	if e, ok := s.keys.get(hash, now); ok {
		if now.Sub(e.lastUsed) >= touchPeriod {
			// Bookkeeping: a database that takes no write now (locked, full)
			// does not refuse the request, and is tried again a minute later.
			if err := s.store.TouchKey(ctx, e.keyID, now); err != nil {
				s.warn("recording an API key's use", err)
			}
			s.keys.used(hash, now)
		}
		u := e.user
		return &u, nil
	}
	k, err := s.store.GetKeyByHash(ctx, hash)
	if fault.Is(err, fault.NotFound) {
		return nil, errBadKey
	}
	if err != nil {
		return nil, fmt.Errorf("looking up API key: %w", err)
	}
	if k.RevokedAt != nil {
		return nil, errBadKey
	}
	u, err := s.store.GetUser(ctx, k.UserID)
	if err != nil {
		return nil, fmt.Errorf("loading key owner: %w", err)
	}
	if u.Disabled {
		return nil, errBadKey
	}
	e := keyEntry{keyID: k.ID, user: *u, expires: now.Add(KeyCacheTTL)}
	if k.LastUsedAt != nil {
		e.lastUsed = *k.LastUsedAt
	}
	if now.Sub(e.lastUsed) >= touchPeriod {
		if err := s.store.TouchKey(ctx, k.ID, now); err != nil {
			s.warn("recording an API key's use", err)
		}
		e.lastUsed = now
	}
	s.keys.put(hash, e, now)
	return u, nil
}

// BootstrapEmail is the email of the admin user created for RELAY_BOOTSTRAP_API_KEY.
const BootstrapEmail = "admin@relay.local"

// Bootstrap ensures an admin user holding secret exists. It is idempotent and safe
// when several processes run it at once. A key that was revoked stays revoked.
func (s *Service) Bootstrap(ctx context.Context, secret string) (*User, error) {
	if !ValidSecretFormat(secret) {
		return nil, fault.New(fault.Invalid, "RELAY_BOOTSTRAP_API_KEY must be %q followed by %d letters or digits", keyPrefix, keyRandLen)
	}
	k, err := s.store.GetKeyByHash(ctx, HashSecret(secret))
	switch {
	case err == nil:
		if k.RevokedAt != nil {
			return nil, fault.New(fault.Conflict, "RELAY_BOOTSTRAP_API_KEY was revoked; set a new key")
		}
		u, err := s.store.GetUser(ctx, k.UserID)
		if err != nil {
			return nil, err
		}
		if u.Role != RoleAdmin {
			u.Role, u.UpdatedAt = RoleAdmin, s.now().UTC()
			if err := s.updateUser(ctx, u); err != nil {
				return nil, err
			}
		}
		return u, nil
	case !fault.Is(err, fault.NotFound):
		return nil, err
	}
	u, err := s.store.GetUserByEmail(ctx, BootstrapEmail)
	if fault.Is(err, fault.NotFound) {
		u, err = s.CreateUser(ctx, NewUser{Email: BootstrapEmail, DisplayName: "Relay admin", Role: RoleAdmin})
		if fault.Is(err, fault.Conflict) { // another process created it first
			u, err = s.store.GetUserByEmail(ctx, BootstrapEmail)
		}
	}
	if err != nil {
		return nil, err
	}
	if _, _, err := s.storeKey(ctx, u.ID, "bootstrap", secret); err != nil && !fault.Is(err, fault.Conflict) {
		return nil, err
	}
	return u, nil
}
