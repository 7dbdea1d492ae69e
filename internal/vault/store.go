package vault

import (
	"context"
	"time"
)

// Kind says what a user's variables are for.
type Kind string

// The kinds of variables.
const (
	// KindMCP are an MCP server's customUserVars; the name is the server's.
	KindMCP Kind = "mcp"
	// KindEndpoint are the apiKey and baseURL of an endpoint configured
	// user_provided; the name is the endpoint's.
	KindEndpoint Kind = "endpoint"
)

// Var is one stored variable of a user, sealed.
type Var struct {
	Var       string
	Sealed    string
	UpdatedAt time.Time
}

// StoredGrant is a grant as the store keeps it: its data sealed, its times in
// clear for refresh decisions, and the claim of the replica refreshing it.
type StoredGrant struct {
	UserID, Server string
	Sealed         string
	Expiry         time.Time // zero: the grant does not expire
	Issued         time.Time
	// Version counts the grant's writes; a refresh is a compare-and-set on it.
	Version    int64
	ClaimOwner string    // "" when no refresh is claimed
	ClaimUntil time.Time // when the claim lapses, zero without one
	UpdatedAt  time.Time
}

// Flow is a pending OAuth flow as the store keeps it: found by the SHA-256 of
// its state (hex), its data sealed.
type Flow struct {
	StateHash      string
	UserID, Server string
	Sealed         string
	ExpiresAt      time.Time
}

// Table names a table of sealed values, for rotation.
type Table string

// The tables of sealed values.
const (
	TableVars   Table = "secret_vars"
	TableGrants Table = "oauth_grants"
	TableFlows  Table = "oauth_flows"
)

// Sealed is one stored sealed value and the row it belongs to, for rotation:
// Key holds the row's identity, in the order of aad (the table's columns
// user_id, kind, name, var; user_id, server; state_hash, user_id, server).
type Sealed struct {
	Table  Table
	Key    []string
	Sealed string
}

// Store keeps the sealed values. Rows of a user who does not exist are
// fault.NotFound; so are missing grants and flows.
type Store interface {
	// PutSecretVars, in one transaction, upserts the vars of set (var name →
	// sealed value) and deletes those named in del, at now.
	PutSecretVars(ctx context.Context, userID, kind, name string, set map[string]string, del []string, now time.Time) error
	// SecretVars returns the vars of a user's kind and name, by var name.
	SecretVars(ctx context.Context, userID, kind, name string) ([]Var, error)
	// DeleteSecretVars deletes them and returns how many went.
	DeleteSecretVars(ctx context.Context, userID, kind, name string) (int, error)

	// PutGrant inserts or replaces g's grant, moving its version on (written
	// back to g) and dropping any claim.
	PutGrant(ctx context.Context, g *StoredGrant) error
	// GetGrant returns a user's grant of a server.
	GetGrant(ctx context.Context, userID, server string) (*StoredGrant, error)
	// ClaimGrant claims the refresh of the grant at version for owner until
	// until, when no one else holds a claim that lasts past now; it reports
	// whether it did.
	ClaimGrant(ctx context.Context, userID, server string, version int64, owner string, now, until time.Time) (bool, error)
	// RefreshGrant replaces the grant at g.Version whose claim owner holds
	// with g, moving its version on (written back to g) and dropping the
	// claim; it reports whether it did.
	RefreshGrant(ctx context.Context, g *StoredGrant, owner string) (bool, error)
	// ReleaseGrant drops owner's claim of a grant, if it still holds it.
	ReleaseGrant(ctx context.Context, userID, server, owner string) error
	// DeleteGrant deletes a user's grant of a server.
	DeleteGrant(ctx context.Context, userID, server string) error
	// DeleteGrantAt deletes a user's grant of a server while it is at
	// version; it reports whether it did.
	DeleteGrantAt(ctx context.Context, userID, server string, version int64) (bool, error)
	// ReplaceGrant replaces the grant at g.Version with g, moving its version
	// on (written back to g) and dropping any claim; it reports whether it did.
	ReplaceGrant(ctx context.Context, g *StoredGrant) (bool, error)
	// DeleteUserGrants deletes every grant of a user and returns them.
	DeleteUserGrants(ctx context.Context, userID string) ([]StoredGrant, error)

	// CreateFlow inserts a pending flow; a taken state hash is fault.Conflict.
	CreateFlow(ctx context.Context, f *Flow) error
	// TakeFlow deletes the flow with that state hash and returns it, when it
	// expires after now.
	TakeFlow(ctx context.Context, stateHash string, now time.Time) (*Flow, error)
	// DeleteExpiredFlows deletes the flows that expired at or before now.
	DeleteExpiredFlows(ctx context.Context, now time.Time) (int, error)

	// StaleSealed returns up to limit sealed values, of every table, that do
	// not start with prefix (those sealed with another key than the current).
	StaleSealed(ctx context.Context, prefix string, limit int) ([]Sealed, error)
	// Reseal replaces s's value with sealed, if it is still s.Sealed; it
	// reports whether it did.
	Reseal(ctx context.Context, s Sealed, sealed string) (bool, error)
}
