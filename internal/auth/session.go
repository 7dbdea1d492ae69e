package auth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/relay-ai/relay/internal/fault"
)

// DefaultSessionTTL is how long a session lasts without being used
// (auth.session_ttl): each use, at most once a minute, moves its end that far
// ahead again.
const DefaultSessionTTL = 7 * 24 * time.Hour

// SetupTokenTTL is how long a setup link works.
const SetupTokenTTL = 24 * time.Hour

// tokenLen is the length of session and setup tokens: 43 letters and digits
// hold more than 256 random bits.
const tokenLen = 43

// maxUserAgent bounds the user agent kept with a session.
const maxUserAgent = 256

// Session is a signed-in browser. Its token lives only in the browser's
// cookie; the store keeps its SHA-256 (Hash).
type Session struct {
	ID         string    `json:"id"`
	UserID     string    `json:"user_id"`
	Hash       string    `json:"-"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	UserAgent  string    `json:"user_agent"`
	// Renewed is set by AuthenticateSession when this use moved ExpiresAt,
	// so that the cookie's own expiry can follow.
	Renewed bool `json:"-"`
}

// SessionStore keeps sessions. Lookups of missing sessions are fault.NotFound.
type SessionStore interface {
	CreateSession(ctx context.Context, s *Session) error
	GetSessionByHash(ctx context.Context, hash string) (*Session, error)
	// TouchSession records a use: last seen at seen, and a new expiry.
	TouchSession(ctx context.Context, id string, seen, expires time.Time) error
	DeleteSession(ctx context.Context, id string) error
	// DeleteUserSessions deletes the sessions of a user but the one with id
	// keep ("" keeps none) and returns how many went.
	DeleteUserSessions(ctx context.Context, userID, keep string) (int, error)
	// DeleteExpiredSessions deletes the sessions that expired at or before now.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}

// SetupToken is a one-time token of the first start's setup link, stored as
// its SHA-256.
type SetupToken struct {
	Hash      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SetupStore keeps setup tokens and completes a setup.
type SetupStore interface {
	CreateSetupToken(ctx context.Context, t *SetupToken) error
	// DeleteExpiredSetupTokens deletes the tokens that expired at or before now.
	DeleteExpiredSetupTokens(ctx context.Context, now time.Time) (int, error)
	// SignInAdmins counts the admins who can sign in: not disabled, with a
	// password or an identity.
	SignInAdmins(ctx context.Context) (int, error)
	// CompleteSetup, in one transaction and one at a time, checks that no
	// admin can sign in (else fault.Conflict), uses the unexpired token with
	// that hash (else fault.Forbidden), creates u and deletes every setup
	// token.
	CompleteSetup(ctx context.Context, hash string, now time.Time, u *User) error
}

// Identity ties a user to a subject of an OpenID Connect issuer.
type Identity struct {
	Issuer    string
	Subject   string
	UserID    string
	Email     string // the email the provider gave when the identity was made
	CreatedAt time.Time
}

// IdentityStore keeps identities. A second identity with the same issuer and
// subject is fault.Conflict; a missing one fault.NotFound.
type IdentityStore interface {
	CreateIdentity(ctx context.Context, id *Identity) error
	GetIdentity(ctx context.Context, issuer, subject string) (*Identity, error)
}

// SetSessionTTL sets how long a session lasts unused; d <= 0 means DefaultSessionTTL.
func (s *Service) SetSessionTTL(d time.Duration) {
	if d <= 0 {
		d = DefaultSessionTTL
	}
	s.sessionTTL = d
}

// SessionTTL is how long a session lasts unused.
func (s *Service) SessionTTL() time.Duration { return s.sessionTTL }

// NewSessionID returns a fresh session id (not its token).
func NewSessionID() string { return "sess_" + randomString(alnum, 21) }

// newToken returns a fresh session or setup token.
func newToken() string { return randomString(alnum, tokenLen) }

// validToken reports whether s looks like a session or setup token, so that
// garbage is refused before it reaches the database.
func validToken(s string) bool {
	if len(s) != tokenLen {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune(alnum, c) {
			return false
		}
	}
	return true
}

// SignIn is a new session: its user, its record and the token for the cookie.
type SignIn struct {
	User    *User
	Session *Session
	Token   string
}

// errBadSession is the one answer to a cookie that does not sign anyone in.
var errBadSession = fault.New(fault.Unauthorized, "not signed in, or the session expired: sign in again")

// ErrWrongPassword is the answer to a wrong email or password, the same for
// both and for a disabled user, so that it tells nothing about who has an
// account.
var ErrWrongPassword = fault.New(fault.Unauthorized, "wrong email or password")

// ErrWrongCurrentPassword is the answer to a password change whose current
// password is wrong.
var ErrWrongCurrentPassword = &fault.Error{Kind: fault.Invalid, Message: "invalid password change",
	Fields: []fault.FieldError{{Field: "current", Message: "wrong password"}}}

// noSuchUserHash is compared against when the email is unknown, so that an
// unknown email takes as long to refuse as a wrong password.
var noSuchUserHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("no such user"), bcrypt.DefaultCost)
	return h
})

// Login checks an email and password and starts a session. Any failure
// (unknown email, wrong password, no password, disabled user) is
// ErrWrongPassword.
func (s *Service) Login(ctx context.Context, email, password, userAgent string) (*SignIn, error) {
	u, err := s.store.GetUserByEmail(ctx, strings.ToLower(strings.TrimSpace(email)))
	if fault.Is(err, fault.NotFound) {
		_ = bcrypt.CompareHashAndPassword(noSuchUserHash(), []byte(password))
		return nil, ErrWrongPassword
	}
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	if !u.HasPassword() {
		_ = bcrypt.CompareHashAndPassword(noSuchUserHash(), []byte(password))
		return nil, ErrWrongPassword
	}
	if !CheckPassword(u, password) || u.Disabled {
		return nil, ErrWrongPassword
	}
	return s.StartSession(ctx, u, userAgent)
}

// StartSession starts a session of u.
func (s *Service) StartSession(ctx context.Context, u *User, userAgent string) (*SignIn, error) {
	if u.Disabled {
		return nil, ErrDisabled
	}
	if len(userAgent) > maxUserAgent {
		userAgent = strings.ToValidUTF8(userAgent[:maxUserAgent], "")
	}
	now := s.now().UTC()
	token := newToken()
	sess := &Session{
		ID: NewSessionID(), UserID: u.ID, Hash: HashSecret(token),
		CreatedAt: now, ExpiresAt: now.Add(s.sessionTTL), LastSeenAt: now, UserAgent: userAgent,
	}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		return nil, fmt.Errorf("starting a session: %w", err)
	}
	return &SignIn{User: u, Session: sess, Token: token}, nil
}

// AuthenticateSession returns the user and session of a session token. A
// token that is unknown, expired (the session is then deleted) or of a
// disabled user is the same fault.Unauthorized error. A use at least a minute
// after the last one is recorded and moves the session's end a session TTL
// ahead (Session.Renewed).
func (s *Service) AuthenticateSession(ctx context.Context, token string) (*User, *Session, error) {
	if !validToken(token) {
		return nil, nil, errBadSession
	}
	sess, err := s.store.GetSessionByHash(ctx, HashSecret(token))
	if fault.Is(err, fault.NotFound) {
		return nil, nil, errBadSession
	}
	if err != nil {
		return nil, nil, fmt.Errorf("looking up session: %w", err)
	}
	now := s.now().UTC()
	if !now.Before(sess.ExpiresAt) {
		if err := s.store.DeleteSession(ctx, sess.ID); err != nil && !fault.Is(err, fault.NotFound) {
			return nil, nil, fmt.Errorf("deleting an expired session: %w", err)
		}
		return nil, nil, errBadSession
	}
	u, err := s.store.GetUser(ctx, sess.UserID)
	if err != nil {
		return nil, nil, fmt.Errorf("loading session owner: %w", err)
	}
	if u.Disabled {
		return nil, nil, errBadSession
	}
	if now.Sub(sess.LastSeenAt) >= touchPeriod {
		expires := now.Add(s.sessionTTL)
		// A database that takes no write now (locked, full) does not refuse
		// the request: the session is still valid, its end is moved at a
		// later use.
		switch err := s.store.TouchSession(ctx, sess.ID, now, expires); {
		case err == nil:
			sess.LastSeenAt, sess.ExpiresAt, sess.Renewed = now, expires, true
		case !fault.Is(err, fault.NotFound):
			s.warn("recording a session's use", err)
		}
	}
	return u, sess, nil
}

// Logout ends the session of token, if there is one.
func (s *Service) Logout(ctx context.Context, token string) error {
	if !validToken(token) {
		return nil
	}
	sess, err := s.store.GetSessionByHash(ctx, HashSecret(token))
	if fault.Is(err, fault.NotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up session: %w", err)
	}
	if err := s.store.DeleteSession(ctx, sess.ID); err != nil && !fault.Is(err, fault.NotFound) {
		return fmt.Errorf("ending session: %w", err)
	}
	return nil
}

// LogoutAll ends every session of a user but the one with id keep ("" for
// none) and returns how many ended.
func (s *Service) LogoutAll(ctx context.Context, userID, keep string) (int, error) {
	n, err := s.store.DeleteUserSessions(ctx, userID, keep)
	if err != nil {
		return 0, fmt.Errorf("ending the sessions of %q: %w", userID, err)
	}
	return n, nil
}

// Sweep deletes expired sessions and setup tokens and returns how many went.
func (s *Service) Sweep(ctx context.Context) (sessions, tokens int, err error) {
	now := s.now().UTC()
	if sessions, err = s.store.DeleteExpiredSessions(ctx, now); err != nil {
		return 0, 0, fmt.Errorf("deleting expired sessions: %w", err)
	}
	if tokens, err = s.store.DeleteExpiredSetupTokens(ctx, now); err != nil {
		return sessions, 0, fmt.Errorf("deleting expired setup tokens: %w", err)
	}
	return sessions, tokens, nil
}

// ChangePassword sets u's password to next after checking current, which is
// required when u has a password (ErrWrongCurrentPassword when it is wrong).
// Every other session of u ends, but the one with id keep.
func (s *Service) ChangePassword(ctx context.Context, u *User, current, next, keep string) error {
	var fs fault.Fields
	checkPassword(&fs, "new", next)
	if u.HasPassword() && current == "" {
		fs.Add("current", "required")
	}
	if err := fs.Err("invalid password change"); err != nil {
		return err
	}
	if u.HasPassword() && !CheckPassword(u, current) {
		return ErrWrongCurrentPassword
	}
	return s.setPassword(ctx, u, next, keep)
}

// SetPassword sets the password of the user id or email ref names, as an
// admin or the command line does, and ends every session of that user.
func (s *Service) SetPassword(ctx context.Context, ref, password string) (*User, error) {
	var fs fault.Fields
	checkPassword(&fs, "password", password)
	if err := fs.Err("invalid password"); err != nil {
		return nil, err
	}
	u, err := s.FindUser(ctx, ref)
	if err != nil {
		return nil, err
	}
	return u, s.setPassword(ctx, u, password, "")
}

func (s *Service) setPassword(ctx context.Context, u *User, password, keep string) error {
	h, err := hashPassword(password)
	if err != nil {
		return err
	}
	prev := *u
	u.PasswordHash, u.UpdatedAt = h, s.now().UTC()
	if err := s.updateUser(ctx, u); err != nil {
		*u = prev
		return err
	}
	_, err = s.LogoutAll(ctx, u.ID, keep)
	return err
}

// SetDisabled disables or enables the user id or email ref names. Disabling
// ends the user's sessions; their keys are refused while they are disabled.
func (s *Service) SetDisabled(ctx context.Context, ref string, disabled bool) (*User, error) {
	u, err := s.FindUser(ctx, ref)
	if err != nil {
		return nil, err
	}
	if u.Disabled == disabled {
		return u, nil
	}
	u.Disabled, u.UpdatedAt = disabled, s.now().UTC()
	if err := s.updateUser(ctx, u); err != nil {
		return nil, err
	}
	if disabled {
		if _, err := s.LogoutAll(ctx, u.ID, ""); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// UserPatch is a change to a user; nil fields stay as they are.
type UserPatch struct {
	Name     *string
	Role     *Role
	Disabled *bool
	Password *string
}

// UpdateUser applies p to the user id as actor (an admin) asks. Admins cannot
// disable or demote themselves (fault.Invalid), so that there is always an
// admin who can sign in. A new password or disabling ends the user's sessions,
// but the session with id keep (the actor's own).
func (s *Service) UpdateUser(ctx context.Context, actor *User, id string, p UserPatch, keep string) (*User, error) {
	u, err := s.store.GetUser(ctx, id)
	if err != nil {
		return nil, err
	}
	var fs fault.Fields
	if p.Name != nil {
		if name := strings.TrimSpace(*p.Name); name == "" {
			fs.Add("name", "must not be empty")
		} else {
			u.DisplayName = name
		}
	}
	if p.Role != nil {
		switch r := *p.Role; {
		case r != RoleAdmin && r != RoleUser:
			fs.Add("role", "must be admin or user")
		case actor.ID == u.ID && r != RoleAdmin:
			fs.Add("role", "you cannot remove your own admin role")
		default:
			u.Role = r
		}
	}
	wasDisabled := u.Disabled
	if p.Disabled != nil {
		if actor.ID == u.ID && *p.Disabled {
			fs.Add("disabled", "you cannot disable yourself")
		} else {
			u.Disabled = *p.Disabled
		}
	}
	if p.Password != nil {
		checkPassword(&fs, "password", *p.Password)
	}
	if err := fs.Err("invalid user"); err != nil {
		return nil, err
	}
	if p.Password != nil {
		if u.PasswordHash, err = hashPassword(*p.Password); err != nil {
			return nil, err
		}
	}
	u.UpdatedAt = s.now().UTC()
	if err := s.updateUser(ctx, u); err != nil {
		return nil, err
	}
	if p.Password != nil || (u.Disabled && !wasDisabled) {
		if u.ID != actor.ID {
			keep = ""
		}
		if _, err := s.LogoutAll(ctx, u.ID, keep); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// SetupRequired reports whether no admin can sign in (none with a password or
// an identity, or all of them disabled), so that the setup link is needed.
func (s *Service) SetupRequired(ctx context.Context) (bool, error) {
	n, err := s.store.SignInAdmins(ctx)
	if err != nil {
		return false, fmt.Errorf("counting the admins who can sign in: %w", err)
	}
	return n == 0, nil
}

// NewSetupToken stores a fresh setup token, valid for SetupTokenTTL, and
// returns it; expired ones are deleted first. Each start of a server that
// needs setup makes one, so several processes may each hold a working link.
func (s *Service) NewSetupToken(ctx context.Context) (string, time.Time, error) {
	now := s.now().UTC()
	if _, err := s.store.DeleteExpiredSetupTokens(ctx, now); err != nil {
		return "", time.Time{}, fmt.Errorf("deleting expired setup tokens: %w", err)
	}
	token := newToken()
	t := &SetupToken{Hash: HashSecret(token), CreatedAt: now, ExpiresAt: now.Add(SetupTokenTTL)}
	if err := s.store.CreateSetupToken(ctx, t); err != nil {
		return "", time.Time{}, fmt.Errorf("storing a setup token: %w", err)
	}
	return token, t.ExpiresAt, nil
}

// ErrBadSetupToken answers a setup with a token that is wrong, used or
// expired; ErrSetupDone a setup once an admin can sign in. The store's
// CompleteSetup returns them too.
var (
	ErrBadSetupToken = fault.New(fault.Forbidden, "this setup link is wrong, used or expired; restart relay serve for a new one")
	ErrSetupDone     = fault.New(fault.Conflict, "setup is done: an admin can already sign in")
)

// Setup creates the first admin, with a password, from the token of a setup
// link. The token works once; every setup token goes with it. Once an admin
// can sign in, setup is fault.Conflict.
func (s *Service) Setup(ctx context.Context, token string, in NewUser) (*User, error) {
	var fs fault.Fields
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		fs.Add("email", "required")
	} else if !validEmail(email) {
		fs.Add("email", "%q is not an email address", in.Email)
	}
	checkPassword(&fs, "password", in.Password)
	if err := fs.Err("invalid user"); err != nil {
		return nil, err
	}
	if !validToken(token) {
		if required, err := s.SetupRequired(ctx); err == nil && !required {
			return nil, ErrSetupDone
		}
		return nil, ErrBadSetupToken
	}
	u, err := s.newUser(email, in.DisplayName, RoleAdmin, in.Password)
	if err != nil {
		return nil, err
	}
	if err := s.store.CompleteSetup(ctx, HashSecret(token), s.now().UTC(), u); err != nil {
		return nil, err
	}
	return u, nil
}

// Claims are what an OpenID Connect provider says about the person signing in.
type Claims struct {
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// The refusals of SignInIdentity, each a fault.Forbidden with a message for
// the person signing in.
var (
	ErrDisabled        = fault.New(fault.Forbidden, "this account is disabled")
	ErrNoAccount       = fault.New(fault.Forbidden, "no account for this email; ask an admin")
	ErrEmailUnverified = fault.New(fault.Forbidden, "the provider has not verified this email address")
	ErrNoEmail         = fault.New(fault.Forbidden, "the provider gave no email address")
)

// SignInIdentity returns the user of an OpenID Connect sign-in: the one its
// identity (issuer and subject) belongs to; else the user with its email,
// when the provider verified that email, who then gets the identity; else,
// with autoCreate, a new user of role user. An email the provider has not
// verified is never linked nor used for a new user: whoever controls the
// provider's account could otherwise claim someone else's. A refusal is
// fault.Forbidden with a message for the person.
func (s *Service) SignInIdentity(ctx context.Context, c Claims, autoCreate bool) (*User, error) {
	if c.Issuer == "" || c.Subject == "" {
		return nil, fault.New(fault.Invalid, "the provider's answer has no issuer or subject")
	}
	id, err := s.store.GetIdentity(ctx, c.Issuer, c.Subject)
	switch {
	case err == nil:
		u, err := s.store.GetUser(ctx, id.UserID)
		if err != nil {
			return nil, fmt.Errorf("loading the user of an identity: %w", err)
		}
		return enabled(u)
	case !fault.Is(err, fault.NotFound):
		return nil, fmt.Errorf("looking up an identity: %w", err)
	}
	email := strings.ToLower(strings.TrimSpace(c.Email))
	if email == "" || !validEmail(email) {
		return nil, ErrNoEmail
	}
	if !c.EmailVerified {
		return nil, ErrEmailUnverified
	}
	u, err := s.store.GetUserByEmail(ctx, email)
	switch {
	case err == nil:
	case !fault.Is(err, fault.NotFound):
		return nil, fmt.Errorf("looking up a user by email: %w", err)
	case !autoCreate:
		return nil, ErrNoAccount
	default:
		if u, err = s.newUser(email, c.Name, RoleUser, ""); err != nil {
			return nil, err
		}
		if err := s.store.CreateUser(ctx, u); err != nil {
			if !fault.Is(err, fault.Conflict) {
				return nil, err
			}
			// Another sign-in created it meanwhile.
			if u, err = s.store.GetUserByEmail(ctx, email); err != nil {
				return nil, err
			}
		}
	}
	if u.Disabled {
		return enabled(u)
	}
	err = s.store.CreateIdentity(ctx, &Identity{Issuer: c.Issuer, Subject: c.Subject, UserID: u.ID, Email: email, CreatedAt: s.now().UTC()})
	if err != nil && !fault.Is(err, fault.Conflict) {
		return nil, fmt.Errorf("storing an identity: %w", err)
	}
	if err != nil { // a concurrent sign-in stored it: use whatever it says
		return s.SignInIdentity(ctx, c, false)
	}
	return u, nil
}

// enabled returns u, or ErrDisabled.
func enabled(u *User) (*User, error) {
	if u.Disabled {
		return nil, ErrDisabled
	}
	return u, nil
}
