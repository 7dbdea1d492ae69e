package app

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/netguard"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/vault"
)

// keyStore keeps each user's own values of the endpoint fields that say
// user_provided (docs/config.md, "Keys each user provides"), as secrets of
// kind endpointKind named by the endpoint's configured name. A value the
// user has not set is absent from a map; an empty value given to SetVars
// removes that one.
type keyStore interface {
	// Vars returns the user's values, by field name ("apiKey", "baseURL").
	Vars(ctx context.Context, userID, kind, name string) (map[string]string, error)
	// SetVars stores the user's values; "" deletes a field's.
	SetVars(ctx context.Context, userID, kind, name string, values map[string]string) error
	// VarsSet returns when each field the user has set was last changed.
	VarsSet(ctx context.Context, userID, kind, name string) (map[string]time.Time, error)
}

// endpointKind is the kind of the secrets keyStore keeps for endpoints.
const endpointKind = "endpoint"

// vaultKeys keeps endpoint keys in the vault.
type vaultKeys struct{ v *vault.Vault }

func (k vaultKeys) Vars(ctx context.Context, userID, kind, name string) (map[string]string, error) {
	return k.v.Vars(ctx, userID, vault.Kind(kind), name)
}

func (k vaultKeys) SetVars(ctx context.Context, userID, kind, name string, values map[string]string) error {
	return k.v.SetVars(ctx, userID, vault.Kind(kind), name, values)
}

func (k vaultKeys) VarsSet(ctx context.Context, userID, kind, name string) (map[string]time.Time, error) {
	return k.v.VarsSet(ctx, userID, vault.Kind(kind), name)
}

// userFields returns the name of the endpoint that serves provider's model
// and the fields of it that say user_provided, none when the config sets
// them all. For azureOpenAI they are those of the group that lists model.
func userFields(cfg *config.Config, provider, model string) (string, []string) {
	ue, ok := cfg.Endpoints.UserEndpoint(provider)
	if !ok {
		return "", nil
	}
	if !strings.EqualFold(ue.Name, config.ProviderAzureOpenAI) {
		return ue.Name, ue.Fields
	}
	d, ok := cfg.Endpoints.Azure(model)
	if !ok {
		return ue.Name, nil // azureOptions says the model is unlisted
	}
	var fields []string
	if d.Group.APIKey == userProvided {
		fields = append(fields, config.FieldAPIKey)
	}
	if d.Group.BaseURL == userProvided {
		fields = append(fields, config.FieldBaseURL)
	}
	return ue.Name, fields
}

// userValues returns the user's values of an endpoint's fields, or a
// *run.KeyRequiredError naming those they have not set.
func userValues(ctx context.Context, keys keyStore, userID, endpoint string, fields []string) (map[string]string, error) {
	vals := map[string]string{}
	if userID != "" {
		if keys == nil {
			return nil, fault.New(fault.Unavailable, "keys and base URLs of users cannot be stored or read here")
		}
		got, err := keys.Vars(ctx, userID, endpointKind, endpoint)
		if err != nil {
			return nil, fmt.Errorf("reading your values for endpoint %q: %w", endpoint, err)
		}
		for _, f := range fields {
			if v := got[f]; v != "" {
				vals[f] = v
			}
		}
	}
	var missing []string
	for _, f := range fields {
		if vals[f] == "" {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return nil, &run.KeyRequiredError{Endpoint: endpoint, Missing: missing}
	}
	return vals, nil
}

// fingerprint identifies the values a user's client is built from (their
// own endpoint values, their details in its headers) without holding them: a
// client built from other values is never taken for theirs.
func fingerprint(values ...string) string {
	h := sha256.New()
	for _, v := range values {
		fmt.Fprintf(h, "%d:%s;", len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxUserClients bounds the clients kept for users' own values: past it, the
// least recently used is dropped (and built again when next needed).
const maxUserClients = 4096

// userClients keeps the clients built with users' own values, by user and
// endpoint (and Azure deployment), each with the fingerprint of the values
// it was built from, the most recently used first.
type userClients struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *userClient
	byKey map[string]*list.Element
}

type userClient struct {
	key, print string
	m          llm.Model
}

func newUserClients(max int) *userClients {
	return &userClients{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the client kept for key if it was built from values of
// fingerprint print.
func (c *userClients) get(key, print string) (llm.Model, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok || el.Value.(*userClient).print != print {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*userClient).m, true
}

// put keeps m for key, replacing a client built from other values.
func (c *userClients) put(key, print string, m llm.Model) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value = &userClient{key: key, print: print, m: m}
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&userClient{key: key, print: print, m: m})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*userClient).key)
	}
}

// userHTTPClient is the HTTP client of requests to users' own base URLs: each
// connection goes through guard, as those to other addresses users choose
// do. The provider clients bound the wait for an answer themselves.
func userHTTPClient(guard *netguard.Guard) *http.Client {
	c := guard.Client(netguard.ClientOptions{StepTimeout: 10 * time.Second})
	if t, ok := c.Transport.(*http.Transport); ok {
		t.ResponseHeaderTimeout = 0
	}
	return c
}

// maxKeyLen and maxBaseURLLen bound a user's values.
const (
	maxKeyLen     = 4096
	maxBaseURLLen = 2048
)

// userKeys serves a user's own endpoint values to the API and the command
// line (httpapi.EndpointKeys): it checks them against the config and stores
// them in keys.
type userKeys struct {
	cfg   *config.Config
	keys  keyStore
	guard *netguard.Guard
}

var _ httpapi.EndpointKeys = (*userKeys)(nil)

// endpoint returns the endpoint named name that takes values from users.
func (k *userKeys) endpoint(name string) (config.UserEndpoint, error) {
	ue, ok := k.cfg.Endpoints.UserEndpoint(name)
	if !ok {
		for _, p := range k.cfg.Providers() {
			if strings.EqualFold(p, name) {
				return ue, fault.New(fault.Invalid, "endpoint %q takes no key or base URL from its users: the config sets them", p)
			}
		}
		return ue, fault.New(fault.NotFound, "no endpoint %q", name)
	}
	return ue, nil
}

func (k *userKeys) status(ctx context.Context, userID string, ue config.UserEndpoint) (httpapi.EndpointKey, error) {
	set, err := k.keys.VarsSet(ctx, userID, endpointKind, ue.Name)
	if err != nil {
		return httpapi.EndpointKey{}, fmt.Errorf("reading which values of endpoint %q are set: %w", ue.Name, err)
	}
	out := httpapi.EndpointKey{Endpoint: ue.Name, Fields: []httpapi.EndpointKeyField{}}
	for _, f := range ue.Fields {
		fs := httpapi.EndpointKeyField{Name: f}
		if at, ok := set[f]; ok {
			at = at.UTC()
			fs.Set, fs.UpdatedAt = true, &at
		}
		out.Fields = append(out.Fields, fs)
	}
	return out, nil
}

// List returns the user's status for every endpoint that takes values from users.
func (k *userKeys) List(ctx context.Context, userID string) ([]httpapi.EndpointKey, error) {
	out := []httpapi.EndpointKey{}
	for _, ue := range k.cfg.Endpoints.UserProvided() {
		s, err := k.status(ctx, userID, ue)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Set checks and stores the user's values for an endpoint.
func (k *userKeys) Set(ctx context.Context, userID, endpoint string, values map[string]string) (httpapi.EndpointKey, error) {
	ue, err := k.endpoint(endpoint)
	if err != nil {
		return httpapi.EndpointKey{}, err
	}
	if len(values) == 0 {
		return httpapi.EndpointKey{}, fault.New(fault.Invalid, "nothing to set: give %s", strings.Join(ue.Fields, " or "))
	}
	var bad fault.Fields
	for _, f := range []string{config.FieldAPIKey, config.FieldBaseURL} {
		v, given := values[f]
		switch {
		case !given:
		case !ue.Takes(f):
			bad.Add(f, "endpoint %q does not take a %s from its users: the config sets it", ue.Name, f)
		case v == "":
		case f == config.FieldAPIKey:
			if len(v) > maxKeyLen || strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
				bad.Add(f, "must be at most %d characters, without spaces or control characters", maxKeyLen)
			}
		case f == config.FieldBaseURL:
			if err := k.checkBaseURL(v); err != nil {
				bad.Add(f, "%s", err)
			}
		}
	}
	for f := range values {
		if f != config.FieldAPIKey && f != config.FieldBaseURL {
			bad.Add(f, "unknown field (the fields are apiKey and baseURL)")
		}
	}
	if err := bad.Err(fmt.Sprintf("invalid values for endpoint %q", ue.Name)); err != nil {
		return httpapi.EndpointKey{}, err
	}
	if err := k.keys.SetVars(ctx, userID, endpointKind, ue.Name, values); err != nil {
		return httpapi.EndpointKey{}, fmt.Errorf("storing your values for endpoint %q: %w", ue.Name, err)
	}
	return k.status(ctx, userID, ue)
}

// checkBaseURL says what is wrong with a user's base URL: it must be an
// http(s) URL, and not an address the outbound guard refuses (which is
// checked again at each connection, for names).
func (k *userKeys) checkBaseURL(raw string) error {
	if len(raw) > maxBaseURLLen {
		return fmt.Errorf("must be at most %d characters", maxBaseURLLen)
	}
	if err := netguard.CheckURL(raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if u.User != nil || u.Fragment != "" {
		return errors.New("must not hold user info or a fragment")
	}
	if err := k.guard.CheckHost(u); err != nil {
		return fmt.Errorf("%w (server.allowed_addresses may let it through)", err)
	}
	return nil
}

// Clear removes the user's values for an endpoint.
func (k *userKeys) Clear(ctx context.Context, userID, endpoint string) error {
	ue, err := k.endpoint(endpoint)
	if err != nil {
		return err
	}
	values := map[string]string{config.FieldAPIKey: "", config.FieldBaseURL: ""}
	if err := k.keys.SetVars(ctx, userID, endpointKind, ue.Name, values); err != nil {
		return fmt.Errorf("removing your values for endpoint %q: %w", ue.Name, err)
	}
	return nil
}
