// Package vault owns Relay's per-user secrets, sealed at rest with the
// keyring of package secret (docs/config.md "secrets"): the variables a user
// gives for MCP servers and user_provided endpoints, MCP OAuth grants and
// their refresh (once per expiry across replicas, by a claim in the
// database), and pending OAuth flows. Values are sealed with an aad naming
// their row, so that a value copied to another user's or server's row does
// not open.
package vault

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/secret"
)

// Limits of what a user may store.
const (
	maxVarName  = 128
	maxVarValue = 64 << 10
	maxVars     = 64
)

// FlowTTL is how long a pending OAuth flow may be completed.
const FlowTTL = 10 * time.Minute

// Vault seals and opens per-user secrets. Store and Keys are required; a nil
// Keys makes every method fail with secret.ErrNoKeyConfigured. A Vault must
// not be copied after first use.
type Vault struct {
	Store Store
	Keys  *secret.Keyring
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Owner names this replica in the claims of grant refreshes; it must
	// differ between the processes sharing a database.
	Owner string
	// Logger is where refreshes and revocations are logged; nil discards.
	Logger *slog.Logger
	// PollInterval is how often a replica waiting for another's refresh
	// reads the grant again; 0 means 100ms.
	PollInterval time.Duration

	mu   sync.Mutex
	wake map[string]chan struct{} // per grant, closed when this process's refresh ends
}

func (v *Vault) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Vault) log() *slog.Logger {
	if v.Logger != nil {
		return v.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (v *Vault) ready() error {
	if v.Keys == nil {
		return secret.ErrNoKeyConfigured
	}
	return nil
}

// aad binds a sealed value to its row: the table and the row's key.
func aad(t Table, key ...string) string {
	return string(t) + "\x00" + strings.Join(key, "\x00")
}

func checkKind(kind Kind, name string) error {
	if kind != KindMCP && kind != KindEndpoint {
		return fault.New(fault.Invalid, "unknown kind of variables %q (want mcp or endpoint)", kind)
	}
	if name == "" {
		return fault.New(fault.Invalid, "the %s name is required", kind)
	}
	return nil
}

// SetVars stores a user's values for the variables of an MCP server or
// endpoint (kind and name), replacing those of the same var names; an empty
// value deletes its variable. The values are never shown back (VarsSet).
func (v *Vault) SetVars(ctx context.Context, userID string, kind Kind, name string, values map[string]string) error {
	if err := v.ready(); err != nil {
		return err
	}
	if err := checkKind(kind, name); err != nil {
		return err
	}
	if len(values) > maxVars {
		return fault.New(fault.Invalid, "at most %d variables at once, got %d", maxVars, len(values))
	}
	set, del := map[string]string{}, []string(nil)
	var bad []fault.FieldError
	for k, val := range values {
		switch {
		case k == "" || len(k) > maxVarName:
			bad = append(bad, fault.FieldError{Field: k, Message: fmt.Sprintf("a variable name has 1 to %d characters", maxVarName)})
		case len(val) > maxVarValue:
			bad = append(bad, fault.FieldError{Field: k, Message: fmt.Sprintf("longer than %d bytes", maxVarValue)})
		case val == "":
			del = append(del, k)
		default:
			s, err := v.Keys.Seal([]byte(val), aad(TableVars, userID, string(kind), name, k))
			if err != nil {
				return fmt.Errorf("sealing %s: %w", k, err)
			}
			set[k] = s
		}
	}
	if bad != nil {
		return &fault.Error{Kind: fault.Invalid, Message: "invalid variables", Fields: bad}
	}
	return v.Store.PutSecretVars(ctx, userID, string(kind), name, set, del, v.now())
}

// Vars returns a user's values for the variables of an MCP server or
// endpoint, opened, for making a connection; none set is an empty map.
func (v *Vault) Vars(ctx context.Context, userID string, kind Kind, name string) (map[string]string, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	if err := checkKind(kind, name); err != nil {
		return nil, err
	}
	vars, err := v.Store.SecretVars(ctx, userID, string(kind), name)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vars))
	for _, x := range vars {
		plain, err := v.Keys.Open(x.Sealed, aad(TableVars, userID, string(kind), name, x.Var))
		if err != nil {
			return nil, fmt.Errorf("opening %s of %s %s: %w", x.Var, kind, name, err)
		}
		out[x.Var] = string(plain)
	}
	return out, nil
}

// VarsSet returns which of a user's variables of an MCP server or endpoint
// are set, and when each was: what the API shows, never the values.
func (v *Vault) VarsSet(ctx context.Context, userID string, kind Kind, name string) (map[string]time.Time, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	if err := checkKind(kind, name); err != nil {
		return nil, err
	}
	vars, err := v.Store.SecretVars(ctx, userID, string(kind), name)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(vars))
	for _, x := range vars {
		out[x.Var] = x.UpdatedAt
	}
	return out, nil
}

// DeleteVars deletes every variable a user set for an MCP server or endpoint.
func (v *Vault) DeleteVars(ctx context.Context, userID string, kind Kind, name string) error {
	if err := v.ready(); err != nil {
		return err
	}
	if err := checkKind(kind, name); err != nil {
		return err
	}
	_, err := v.Store.DeleteSecretVars(ctx, userID, string(kind), name)
	return err
}

// hashState is how a flow's state is stored: its SHA-256, like session
// tokens, so that the database never holds a usable state.
func hashState(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// PutFlow records a pending OAuth flow that userID started for server: data
// (e.g. the PKCE verifier) is sealed, and the flow can be taken once within
// FlowTTL. Expired flows are deleted on the way.
func (v *Vault) PutFlow(ctx context.Context, state, userID, server string, data []byte) error {
	if err := v.ready(); err != nil {
		return err
	}
	if state == "" || server == "" {
		return fault.New(fault.Invalid, "an OAuth flow needs a state and a server")
	}
	now := v.now()
	if _, err := v.Store.DeleteExpiredFlows(ctx, now); err != nil {
		return err
	}
	h := hashState(state)
	s, err := v.Keys.Seal(data, aad(TableFlows, h, userID, server))
	if err != nil {
		return fmt.Errorf("sealing an OAuth flow: %w", err)
	}
	return v.Store.CreateFlow(ctx, &Flow{StateHash: h, UserID: userID, Server: server, Sealed: s, ExpiresAt: now.Add(FlowTTL)})
}

// TakeFlow returns who started the flow with that state, for which server,
// and its data, and deletes it: a state works once. An unknown or expired
// state is fault.NotFound.
func (v *Vault) TakeFlow(ctx context.Context, state string) (userID, server string, data []byte, err error) {
	if err := v.ready(); err != nil {
		return "", "", nil, err
	}
	f, err := v.Store.TakeFlow(ctx, hashState(state), v.now())
	if err != nil {
		return "", "", nil, err
	}
	data, err = v.Keys.Open(f.Sealed, aad(TableFlows, f.StateHash, f.UserID, f.Server))
	if err != nil {
		return "", "", nil, fmt.Errorf("opening an OAuth flow: %w", err)
	}
	return f.UserID, f.Server, data, nil
}

// resealBatch is how many values Rotate reads at a time.
const resealBatch = 100

// Rotate re-seals with the current key every stored value sealed with
// another, and returns how many it re-sealed. A value no key of the ring
// opens stops it, with an error naming that value's key id: add the key to
// secrets.previousKeys and run it again.
func (v *Vault) Rotate(ctx context.Context) (int, error) {
	if err := v.ready(); err != nil {
		return 0, err
	}
	n := 0
	for {
		stale, err := v.Store.StaleSealed(ctx, v.Keys.CurrentPrefix(), resealBatch)
		if err != nil {
			return n, err
		}
		if len(stale) == 0 {
			return n, nil
		}
		for _, s := range stale {
			a := aad(s.Table, s.Key...)
			plain, err := v.Keys.Open(s.Sealed, a)
			if err != nil {
				return n, fmt.Errorf("re-sealing a value of %s: %w", s.Table, err)
			}
			sealed, err := v.Keys.Seal(plain, a)
			if err != nil {
				return n, fmt.Errorf("re-sealing a value of %s: %w", s.Table, err)
			}
			ok, err := v.Store.Reseal(ctx, s, sealed)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
	}
}
