package vault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// ErrRevoked is what a refresh returns (wrapped) when the authorization
// server refused the grant for good, e.g. OAuth's invalid_grant: Fresh then
// deletes the grant, and the user has to authorize again.
var ErrRevoked = errors.New("the grant was revoked")

// Grant is a user's OAuth grant of an MCP server. Data is opaque to the vault
// (the MCP package's tokens, as JSON) and sealed at rest; Expiry (zero: never)
// and Issued are kept in clear, so that refreshes can be decided on without
// the key.
type Grant struct {
	UserID, Server string
	Data           []byte
	Expiry, Issued time.Time
	// Version counts the writes of the grant; each refresh moves it on.
	Version int64
}

// RefreshFunc refreshes a grant's data: it returns the new data and its
// expiry, or an error (wrapping ErrRevoked when the grant is gone for good).
type RefreshFunc func(ctx context.Context, data []byte) (newData []byte, expiry time.Time, err error)

// Timings of refreshes.
const (
	// claimTTL is how long a replica's claim of a refresh lasts: a replica
	// that died while refreshing holds the grant no longer than this.
	claimTTL = 30 * time.Second
	// refreshTimeout bounds a refresh, within its claim, so that the claim
	// is still held when the result is stored.
	refreshTimeout = 25 * time.Second
	// maxWait is how long a replica waits for another's refresh.
	maxWait = 15 * time.Second
	// maxMargin is how long before its expiry a grant is refreshed at most;
	// a grant of a short life is refreshed in its last fifth.
	maxMargin = 30 * time.Second
	// storeTimeout bounds the writes that must happen even when the caller
	// has gone: the refreshed grant, the release of a claim.
	storeTimeout = 5 * time.Second
)

// due reports whether a grant is to be refreshed at now: within
// min(maxMargin, lifetime/5) of its expiry, or past it.
func due(expiry, issued, now time.Time) bool {
	if expiry.IsZero() {
		return false
	}
	margin := min(maxMargin, max(0, expiry.Sub(issued)/5))
	return !now.Before(expiry.Add(-margin))
}

func (v *Vault) openGrant(s *StoredGrant) (Grant, error) {
	data, err := v.Keys.Open(s.Sealed, aad(TableGrants, s.UserID, s.Server))
	if err != nil {
		return Grant{}, fmt.Errorf("opening the grant of %s: %w", s.Server, err)
	}
	return Grant{UserID: s.UserID, Server: s.Server, Data: data, Expiry: s.Expiry, Issued: s.Issued, Version: s.Version}, nil
}

func (v *Vault) sealGrant(g Grant) (string, error) {
	s, err := v.Keys.Seal(g.Data, aad(TableGrants, g.UserID, g.Server))
	if err != nil {
		return "", fmt.Errorf("sealing the grant of %s: %w", g.Server, err)
	}
	return s, nil
}

// PutGrant stores a user's grant of a server, replacing any: an
// authorization just completed. Issued zero means now.
func (v *Vault) PutGrant(ctx context.Context, g Grant) error {
	if err := v.ready(); err != nil {
		return err
	}
	if g.UserID == "" || g.Server == "" {
		return fault.New(fault.Invalid, "a grant needs a user and a server")
	}
	s, err := v.stored(g)
	if err != nil {
		return err
	}
	return v.Store.PutGrant(ctx, s)
}

// stored is g sealed as the store keeps it, written now; Issued zero means
// now.
func (v *Vault) stored(g Grant) (*StoredGrant, error) {
	now := v.now()
	if g.Issued.IsZero() {
		g.Issued = now
	}
	sealed, err := v.sealGrant(g)
	if err != nil {
		return nil, err
	}
	return &StoredGrant{UserID: g.UserID, Server: g.Server, Sealed: sealed, Expiry: g.Expiry, Issued: g.Issued,
		Version: g.Version, UpdatedAt: now}, nil
}

// Grant returns a user's grant of a server as stored, expired or not;
// fault.NotFound when there is none.
func (v *Vault) Grant(ctx context.Context, userID, server string) (Grant, error) {
	if err := v.ready(); err != nil {
		return Grant{}, err
	}
	s, err := v.Store.GetGrant(ctx, userID, server)
	if err != nil {
		return Grant{}, err
	}
	return v.openGrant(s)
}

// DeleteGrant deletes a user's grant of a server; fault.NotFound when there
// is none.
func (v *Vault) DeleteGrant(ctx context.Context, userID, server string) error {
	if err := v.ready(); err != nil {
		return err
	}
	return v.Store.DeleteGrant(ctx, userID, server)
}

// DeleteGrantAt deletes a user's grant of a server while it is at version,
// as Grant returned it; it reports whether it did: a grant refreshed or
// authorized again since is kept.
func (v *Vault) DeleteGrantAt(ctx context.Context, userID, server string, version int64) (bool, error) {
	if err := v.ready(); err != nil {
		return false, err
	}
	return v.Store.DeleteGrantAt(ctx, userID, server, version)
}

// ReplaceGrant replaces a user's grant of a server with g while the stored
// grant is at g.Version, as Grant returned it; it reports whether it did. Its
// version moves on, and any claim of a refresh is dropped. Issued zero means
// now.
func (v *Vault) ReplaceGrant(ctx context.Context, g Grant) (bool, error) {
	if err := v.ready(); err != nil {
		return false, err
	}
	s, err := v.stored(g)
	if err != nil {
		return false, err
	}
	return v.Store.ReplaceGrant(ctx, s)
}

// DeleteUserGrants deletes every grant of a user (signing out everywhere)
// and returns them opened, so that the caller can revoke them at their
// authorization servers. A grant that does not open is deleted all the same,
// and logged.
func (v *Vault) DeleteUserGrants(ctx context.Context, userID string) ([]Grant, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	stored, err := v.Store.DeleteUserGrants(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]Grant, 0, len(stored))
	for i := range stored {
		g, err := v.openGrant(&stored[i])
		if err != nil {
			v.log().Warn("deleted a grant that could not be opened, so it is not revoked", slog.String("user_id", userID),
				slog.String("mcp_server", stored[i].Server), slog.Any("error", err))
			continue
		}
		out = append(out, g)
	}
	return out, nil
}

// Fresh returns a user's grant of a server that is not about to expire. A
// grant within min(30s, lifetime/5) of its expiry is refreshed first, once
// across every replica sharing the database: the replica whose claim of the
// grant's version wins calls refresh and stores the result; the others read
// the grant again every PollInterval, for up to 15s, until its version moves,
// and use the new grant. A claim lapses after 30s, so that one a dead replica
// left does not hold the grant for longer. When refresh fails its claim is
// released and the error returned; an error wrapping ErrRevoked deletes the
// grant too. No grant is fault.NotFound.
func (v *Vault) Fresh(ctx context.Context, userID, server string, refresh RefreshFunc) (Grant, error) {
	return v.fresh(ctx, userID, server, refresh, func(s *StoredGrant, now time.Time) bool { return due(s.Expiry, s.Issued, now) })
}

// Renew refreshes a user's grant of a server whose access token the server
// refused before its time, whatever its expiry says: while refused says the
// grant's data holds that token. It does so as Fresh does, once across every
// replica, with the same faults. A grant that has moved on already (renewed
// meanwhile, or authorized again) is returned as it is.
func (v *Vault) Renew(ctx context.Context, userID, server string, refused func(data []byte) bool, refresh RefreshFunc) (Grant, error) {
	return v.fresh(ctx, userID, server, refresh, func(s *StoredGrant, _ time.Time) bool {
		g, err := v.openGrant(s)
		return err == nil && refused(g.Data)
	})
}

// fresh is Fresh and Renew: it refreshes the grant while stale says it is
// to be refreshed, and returns it once it is not.
func (v *Vault) fresh(ctx context.Context, userID, server string, refresh RefreshFunc, stale func(*StoredGrant, time.Time) bool) (Grant, error) {
	if err := v.ready(); err != nil {
		return Grant{}, err
	}
	poll := v.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	polls := 0
	for {
		s, err := v.Store.GetGrant(ctx, userID, server)
		if err != nil {
			return Grant{}, err
		}
		now := v.now()
		if !stale(s, now) {
			return v.openGrant(s)
		}
		if s.ClaimOwner == "" || !s.ClaimUntil.After(now) {
			won, err := v.Store.ClaimGrant(ctx, userID, server, s.Version, v.Owner, now, now.Add(claimTTL))
			if err != nil {
				return Grant{}, err
			}
			if won {
				g, stored, err := v.refresh(ctx, s, refresh)
				if err != nil || stored {
					return g, err
				}
				continue // the grant changed under the refresh: read it again
			}
		}
		if polls >= int(maxWait/poll) {
			return Grant{}, fault.New(fault.Unavailable, "the grant of %s is being refreshed elsewhere and did not change within %s", server, maxWait)
		}
		polls++
		if err := v.wait(ctx, userID, server, poll); err != nil {
			return Grant{}, err
		}
	}
}

// refresh refreshes the grant s whose claim this replica holds. stored is
// false when the grant changed meanwhile (a new authorization), so that the
// caller reads it again.
func (v *Vault) refresh(ctx context.Context, s *StoredGrant, refresh RefreshFunc) (g Grant, stored bool, err error) {
	defer v.wakeWaiters(s.UserID, s.Server)
	log := v.log().With(slog.String("user_id", s.UserID), slog.String("mcp_server", s.Server))
	// What happens after refresh must happen even if the caller has gone: a
	// refreshed grant whose old refresh token is spent must be kept.
	after, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	old, err := v.openGrant(s)
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		old.Data, old.Expiry, err = refresh(rctx, old.Data)
		cancel()
	}
	if err != nil {
		if errors.Is(err, ErrRevoked) {
			log.Info("grant revoked; deleted", slog.Any("error", err))
			if derr := v.Store.DeleteGrant(after, s.UserID, s.Server); derr != nil && !fault.Is(derr, fault.NotFound) {
				return Grant{}, false, errors.Join(err, derr)
			}
			return Grant{}, false, fmt.Errorf("refreshing the grant of %s: %w", s.Server, err)
		}
		if rerr := v.Store.ReleaseGrant(after, s.UserID, s.Server, v.Owner); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return Grant{}, false, fmt.Errorf("refreshing the grant of %s: %w", s.Server, err)
	}
	now := v.now()
	old.Issued = now
	sealed, err := v.sealGrant(old)
	if err != nil {
		return Grant{}, false, err
	}
	ns := &StoredGrant{UserID: s.UserID, Server: s.Server, Sealed: sealed, Expiry: old.Expiry, Issued: now, Version: s.Version, UpdatedAt: now}
	ok, err := v.Store.RefreshGrant(after, ns, v.Owner)
	if err != nil {
		return Grant{}, false, err
	}
	if !ok {
		log.Warn("the grant changed while it was refreshed; the refresh is dropped")
		return Grant{}, false, nil
	}
	log.Debug("grant refreshed", slog.Time("expiry", ns.Expiry))
	return Grant{UserID: s.UserID, Server: s.Server, Data: old.Data, Expiry: ns.Expiry, Issued: ns.Issued, Version: ns.Version}, true, nil
}

// wait returns after d, or earlier when a refresh of the grant by this
// process ends.
func (v *Vault) wait(ctx context.Context, userID, server string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	case <-v.waker(userID, server):
	}
	return nil
}

func grantKey(userID, server string) string { return userID + "\x00" + server }

// waker returns the channel closed when this process's current or next
// refresh of a grant ends.
func (v *Vault) waker(userID, server string) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wake == nil {
		v.wake = map[string]chan struct{}{}
	}
	k := grantKey(userID, server)
	c, ok := v.wake[k]
	if !ok {
		c = make(chan struct{})
		v.wake[k] = c
	}
	return c
}

func (v *Vault) wakeWaiters(userID, server string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := grantKey(userID, server)
	if c, ok := v.wake[k]; ok {
		close(c)
		delete(v.wake, k)
	}
}
