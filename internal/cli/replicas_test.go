package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/secret"
)

// TestKeyRevokedOnOtherReplica: two `relay serve` on one Postgres database,
// as replicas behind a load balancer. A key used on both, so that both keep it
// in their key cache, is revoked through the first: the first refuses it at
// once, the second within auth.KeyCacheTTL (docs/api.md "Authentication").
// The same holds for a user disabled through the first; enabled again, their
// key works at once on both, since refusals are not cached.
func TestKeyRevokedOnOtherReplica(t *testing.T) {
	pg := os.Getenv("TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("TEST_POSTGRES_URL is not set: skipping the key revocation test on two replicas")
	}
	sealKey := secret.GenerateKey()
	noteSecret(t.Name()+" secrets.key", sealKey)
	db := schemaURL(t, pg)
	var replicas []*server
	for range 2 {
		dir := t.TempDir()
		// Replicas share the database and the secrets key (docs/config.md
		// "secrets"); the request limits are off, since the test polls.
		cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
database:
  url: %q
secrets:
  key: %q
limits:
  api: {key_per_minute: 0, ip_per_minute: 0}
`, filepath.Join(dir, "data"), db, sealKey))
		replicas = append(replicas, startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}))
	}
	a, b := replicas[0], replicas[1]

	t.Run("revoked key", func(t *testing.T) {
		userID, keyID, key := createUserKey(t, a, "ann@example.com")
		signsIn(t, a, key, userID)
		signsIn(t, b, key, userID)
		if code := a.call(t, testKey, "DELETE", "/api/keys/"+keyID, "", nil); code != http.StatusNoContent {
			t.Fatalf("revoking the key on A: %d", code)
		}
		refusedOnBoth(t, a, b, key, userID, time.Now())
	})

	t.Run("disabled user", func(t *testing.T) {
		userID, _, key := createUserKey(t, a, "bob@example.com")
		signsIn(t, a, key, userID)
		signsIn(t, b, key, userID)
		if code := a.call(t, testKey, "PATCH", "/api/users/"+userID, `{"disabled":true}`, nil); code != http.StatusOK {
			t.Fatalf("disabling the user on A: %d", code)
		}
		refusedOnBoth(t, a, b, key, userID, time.Now())

		if code := a.call(t, testKey, "PATCH", "/api/users/"+userID, `{"disabled":false}`, nil); code != http.StatusOK {
			t.Fatalf("enabling the user on A: %d", code)
		}
		signsIn(t, b, key, userID)
		signsIn(t, a, key, userID)
	})
}

// createUserKey creates a user through the API of s and a key of theirs, and
// returns the user's id, the key's id and its secret.
func createUserKey(t *testing.T, s *server, email string) (userID, keyID, key string) {
	t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	if code := s.call(t, testKey, "POST", "/api/users", fmt.Sprintf(`{"email":%q}`, email), &u); code != http.StatusCreated || u.ID == "" {
		t.Fatalf("creating %s: %d %+v", email, code, u)
	}
	var k struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if code := s.call(t, testKey, "POST", "/api/keys", fmt.Sprintf(`{"name":"replicas","user_id":%q}`, u.ID), &k); code != http.StatusCreated || k.ID == "" || k.Secret == "" {
		t.Fatalf("creating a key for %s: %d", email, code)
	}
	noteSecret(t.Name()+" API key of "+email, k.Secret)
	return u.ID, k.ID, k.Secret
}

// keyWorks reports whether s takes key (200 from GET /api/me, as userID) or
// refuses it (401); any other answer fails the test.
func keyWorks(t *testing.T, s *server, key, userID string) bool {
	t.Helper()
	var me struct {
		ID string `json:"id"`
	}
	switch code := s.call(t, key, "GET", "/api/me", "", &me); code {
	case http.StatusOK:
		if me.ID != userID {
			t.Fatalf("%s: the key signs in as %q, not %q", s.base, me.ID, userID)
		}
		return true
	case http.StatusUnauthorized:
		return false
	default:
		t.Fatalf("%s: GET /api/me answered %d", s.base, code)
		return false
	}
}

// signsIn fails the test unless s takes key, as userID.
func signsIn(t *testing.T, s *server, key, userID string) {
	t.Helper()
	if !keyWorks(t, s, key, userID) {
		t.Fatalf("%s refuses the key of %s", s.base, userID)
	}
}

// refusedOnBoth checks what follows a change, made through a and
// acknowledged at changed, that stops key (of userID): a refuses it at once.
// Nothing tells b of the change: b may still take the key while its cache
// holds it, but not in a request sent KeyCacheTTL or more after changed (b
// last read the key before the change, so its cache entry expired by then),
// and it refuses the key from then on.
func refusedOnBoth(t *testing.T, a, b *server, key, userID string, changed time.Time) {
	t.Helper()
	if keyWorks(t, a, key, userID) {
		t.Fatalf("the replica that made the change still takes the key")
	}
	// roundTrip bounds the time a poll of b takes to come back.
	const roundTrip = 250 * time.Millisecond
	var lastTaken, refused time.Duration = -1, -1
	poll.Until(t, auth.KeyCacheTTL+roundTrip, "refusal on the other replica", func() bool {
		sent := time.Since(changed)
		if keyWorks(t, b, key, userID) {
			if sent >= auth.KeyCacheTTL {
				t.Fatalf("the other replica took the key %s after the change, not before KeyCacheTTL (%s) had passed", sent, auth.KeyCacheTTL)
			}
			lastTaken = sent
			return false
		}
		refused = sent
		return true
	})
	if lastTaken < 0 {
		t.Logf("the other replica refused the key at once (%s after the change)", refused)
	} else {
		t.Logf("the other replica took the key until %s after the change and refused it from %s (KeyCacheTTL %s)", lastTaken, refused, auth.KeyCacheTTL)
	}
	for _, s := range []*server{b, a} {
		if keyWorks(t, s, key, userID) {
			t.Fatalf("%s takes the key again after refusing it", s.base)
		}
	}
}
