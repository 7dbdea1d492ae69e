// Package memory owns what Relay remembers about a user between conversations:
// short entries stored under a key, the rules that decide which keys and values
// are allowed, how many tokens a user's entries may take, and whether memory is
// on at all. The HTTP API and the set_memory and delete_memory tools both go
// through Service, so the model and the user meet the same limits and messages.
package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ttl"
)

// Entry is one thing remembered about a user.
type Entry struct {
	// Key names the entry, unique per user: lower-case letters and _ (see ValidKey).
	Key string `json:"key"`
	// Value is the remembered text, trimmed.
	Value string `json:"value"`
	// Tokens is the estimated size of Value (see EstimateTokens).
	Tokens int `json:"token_count"`
	// UpdatedAt is when the value was last written, in UTC.
	UpdatedAt time.Time `json:"updated_at"`
}

// Store is what memory needs from storage.
type Store interface {
	// ListMemories returns a user's entries, oldest update first (then by key);
	// an empty list for a user with none.
	ListMemories(ctx context.Context, userID string) ([]Entry, error)
	// PutMemory stores e under e.Key for the user, replacing any entry with that
	// key. A missing user is fault.NotFound.
	PutMemory(ctx context.Context, userID string, e Entry) error
	// DeleteMemory removes the user's entry under key; fault.NotFound if absent.
	DeleteMemory(ctx context.Context, userID, key string) error
}

// Config is the memory section of the config file.
type Config struct {
	// Disabled turns memory off: nothing is read into prompts and writes are refused.
	Disabled bool
	// ValidKeys, when not empty, are the only keys entries may be stored under.
	ValidKeys []string
	// TokenLimit caps the total tokens of one user's entries; 0 means no cap.
	TokenLimit int
	// Personalize lets each user turn memory off for themselves.
	Personalize bool
}

// MaxKeyLength is the longest key an entry may have.
const MaxKeyLength = 64

var keyPattern = regexp.MustCompile(`^[a-z_]+$`)

// ValidKey reports whether key has the form of a memory key: 1 to 64 lower-case
// ASCII letters or underscores. It does not look at Config.ValidKeys.
func ValidKey(key string) bool {
	return len(key) <= MaxKeyLength && keyPattern.MatchString(key)
}

// EstimateTokens is the size in tokens that Relay charges for a value: one token
// per four characters, rounded up. It is an estimate that is the same for every
// provider, not any provider's tokenizer; it only needs to be stable, so that a
// user's total can be compared with the configured limit.
func EstimateTokens(value string) int {
	return (utf8.RuneCountInString(value) + 3) / 4
}

// TotalTokens is the sum of the entries' Tokens.
func TotalTokens(entries []Entry) int {
	n := 0
	for _, e := range entries {
		n += e.Tokens
	}
	return n
}

// errDisabled is the answer to every write while memory is off.
var errDisabled = fault.New(fault.Conflict, "memory is disabled in the config")

// lockStripes is how many locks serialize writes; users share them by hash.
const lockStripes = 64

// Service applies the memory rules on top of a Store.
type Service struct {
	store Store
	cfg   Config
	now   func() time.Time
	// Writes of one user take the same lock, so that two entries written at
	// once cannot both fit under the token limit that only one of them fits
	// under. The lock is per process: Relay processes sharing a database can
	// still overshoot the limit by a racing write.
	seed  maphash.Seed
	locks [lockStripes]sync.Mutex

	// What ListCached read, by user.
	cache *ttl.Cache[string, []Entry]
}

// CacheTTL is how long ListCached answers with what it read. A write through
// this process's Service is seen by its next ListCached at once; one through
// another process (another replica) within CacheTTL (docs/api.md "Memory").
const CacheTTL = time.Second

// cacheMax bounds the users whose lists are kept.
const cacheMax = 4096

// NewService returns a Service over store with the given rules. now may be nil
// for time.Now. A Service whose config is Disabled never touches store, so store
// may then be nil.
func NewService(store Store, cfg Config, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	cfg.ValidKeys = slices.Clone(cfg.ValidKeys)
	return &Service{store: store, cfg: cfg, now: now, seed: maphash.MakeSeed(), cache: &ttl.Cache[string, []Entry]{TTL: CacheTTL, Max: cacheMax}}
}

// Disabled reports whether memory is off in the config.
func (s *Service) Disabled() bool { return s.cfg.Disabled }

// TokenLimit is the cap on one user's total tokens; 0 means none.
func (s *Service) TokenLimit() int { return s.cfg.TokenLimit }

// ValidKeys are the only keys entries may be stored under; empty means any
// valid key.
func (s *Service) ValidKeys() []string { return slices.Clone(s.cfg.ValidKeys) }

// Enabled reports whether memory is on for a user whose own memory setting is
// userPersonalize: never when the config disables it; otherwise always, unless
// the config lets users choose (Personalize) and this user turned it off.
func (s *Service) Enabled(userPersonalize bool) bool {
	if s.cfg.Disabled {
		return false
	}
	return !s.cfg.Personalize || userPersonalize
}

// List returns the user's entries, oldest update first. With memory disabled it
// returns an empty list.
func (s *Service) List(ctx context.Context, userID string) ([]Entry, error) {
	if s.cfg.Disabled {
		return []Entry{}, nil
	}
	es, err := s.store.ListMemories(ctx, userID)
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = []Entry{}
	}
	return es, nil
}

// ListCached is List for the prompts of runs, from a cache of CacheTTL: a
// busy server then does not read a user's memory for every run.
func (s *Service) ListCached(ctx context.Context, userID string) ([]Entry, error) {
	if s.cfg.Disabled {
		return []Entry{}, nil
	}
	now := s.now()
	if es, ok := s.cache.Get(userID, now); ok {
		return slices.Clone(es), nil
	}
	gen := s.cache.Generation()
	es, err := s.List(ctx, userID)
	if err != nil {
		return nil, err
	}
	s.cache.Put(userID, slices.Clone(es), gen, now)
	return es, nil
}

// Get returns the user's entry under key, or fault.NotFound.
func (s *Service) Get(ctx context.Context, userID, key string) (Entry, error) {
	es, err := s.List(ctx, userID)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range es {
		if e.Key == key {
			return e, nil
		}
	}
	return Entry{}, notFound(key)
}

func notFound(key string) error { return fault.New(fault.NotFound, "memory %q not found", key) }

// Put stores value under key for the user, replacing what the key held. The key
// must be a valid key (and one of the config's valid keys when it lists any) and
// the value must not be blank; it is stored trimmed. With a token limit, the
// user's entries with this one must fit under it: a replaced entry counts only
// at its new size. Failures are fault.Invalid (naming the field) or
// fault.Conflict (memory disabled, or full), with messages meant to be read by
// a person or a model deciding what to do next.
func (s *Service) Put(ctx context.Context, userID, key, value string) (Entry, error) {
	if s.cfg.Disabled {
		return Entry{}, errDisabled
	}
	value = strings.TrimSpace(value)
	var fs fault.Fields
	s.checkKey(&fs, key)
	if value == "" {
		fs.Add("value", "required: the text to remember must not be empty")
	}
	if err := fs.Err("invalid memory"); err != nil {
		return Entry{}, err
	}
	e := Entry{Key: key, Value: value, Tokens: EstimateTokens(value), UpdatedAt: s.now().UTC().Truncate(time.Microsecond)}

	mu := s.lock(userID)
	mu.Lock()
	defer mu.Unlock()
	if limit := s.cfg.TokenLimit; limit > 0 {
		if e.Tokens > limit {
			return Entry{}, fault.New(fault.Conflict, "memory is full: this value needs %s tokens, more than the limit of %s for all entries. Shorten it.",
				thousands(e.Tokens), thousands(limit))
		}
		es, err := s.store.ListMemories(ctx, userID)
		if err != nil {
			return Entry{}, fmt.Errorf("reading memories to check the token limit: %w", err)
		}
		used, replacing := 0, false
		for _, old := range es {
			if old.Key == key {
				replacing = true
				continue
			}
			used += old.Tokens
		}
		if used+e.Tokens > limit {
			if replacing {
				return Entry{}, fault.New(fault.Conflict, "memory is full: %s of %s tokens used by other entries; this value needs %s. Shorten it or delete an entry first.",
					thousands(used), thousands(limit), thousands(e.Tokens))
			}
			return Entry{}, fault.New(fault.Conflict, "memory is full: %s of %s tokens used; this value needs %s. Delete or shorten an entry first.",
				thousands(used), thousands(limit), thousands(e.Tokens))
		}
	}
	defer s.cache.Drop(userID)
	if err := s.store.PutMemory(ctx, userID, e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// checkKey adds what is wrong with key, if anything, to fs.
func (s *Service) checkKey(fs *fault.Fields, key string) {
	switch {
	case key == "":
		fs.Add("key", "required")
	case !ValidKey(key):
		fs.Add("key", "%q is not a valid key: use 1 to %d lower-case letters a-z or _", key, MaxKeyLength)
	case len(s.cfg.ValidKeys) > 0 && !slices.Contains(s.cfg.ValidKeys, key):
		fs.Add("key", "%q is not one of the allowed keys: %s", key, strings.Join(s.cfg.ValidKeys, ", "))
	}
}

// Delete removes the user's entry under key. A key with no entry is
// fault.NotFound; with memory disabled, fault.Conflict.
func (s *Service) Delete(ctx context.Context, userID, key string) error {
	if s.cfg.Disabled {
		return errDisabled
	}
	if key == "" {
		return fault.Fields{{Field: "key", Message: "required"}}.Err("invalid memory")
	}
	mu := s.lock(userID)
	mu.Lock()
	defer mu.Unlock()
	defer s.cache.Drop(userID)
	return s.store.DeleteMemory(ctx, userID, key)
}

func (s *Service) lock(userID string) *sync.Mutex {
	return &s.locks[maphash.String(s.seed, userID)%lockStripes]
}

// thousands formats n with commas between groups of three digits: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
