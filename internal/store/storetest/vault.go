package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/vault"
)

func secretVars(t *testing.T, s store.Store, userID, kind, name string) map[string]string {
	t.Helper()
	vs, err := s.SecretVars(t.Context(), userID, kind, name)
	must(t, err, "SecretVars")
	out := map[string]string{}
	for _, v := range vs {
		wantUTC(t, "SecretVars", v.UpdatedAt)
		out[v.Var] = v.Sealed
	}
	return out
}

func putGrant(t *testing.T, s store.Store, userID, server, sealed string, expiry time.Time) *vault.StoredGrant {
	t.Helper()
	g := &vault.StoredGrant{UserID: userID, Server: server, Sealed: sealed, Expiry: expiry, Issued: at(0), UpdatedAt: at(0)}
	must(t, s.PutGrant(t.Context(), g), "PutGrant")
	return g
}

func getGrant(t *testing.T, s store.Store, userID, server string) *vault.StoredGrant {
	t.Helper()
	g, err := s.GetGrant(t.Context(), userID, server)
	must(t, err, "GetGrant")
	return g
}

var vaultTests = []test{
	{"Vars", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		must(t, s.PutSecretVars(ctx, ann.ID, "mcp", "github", map[string]string{"TOKEN": "v1.a", "ORG": "v1.b"}, nil, at(1)), "PutSecretVars")
		must(t, s.PutSecretVars(ctx, ann.ID, "endpoint", "github", map[string]string{"apiKey": "v1.c"}, nil, at(1)), "PutSecretVars")
		must(t, s.PutSecretVars(ctx, bob.ID, "mcp", "github", map[string]string{"TOKEN": "v1.d"}, nil, at(1)), "PutSecretVars")
		if got, want := secretVars(t, s, ann.ID, "mcp", "github"), map[string]string{"TOKEN": "v1.a", "ORG": "v1.b"}; !cmp.Equal(got, want) {
			t.Errorf("ann's mcp vars = %v, want %v", got, want)
		}
		must(t, s.PutSecretVars(ctx, ann.ID, "mcp", "github", map[string]string{"TOKEN": "v1.e"}, []string{"ORG", "MISSING"}, at(2)), "PutSecretVars replacing")
		vs, err := s.SecretVars(ctx, ann.ID, "mcp", "github")
		must(t, err, "SecretVars")
		if len(vs) != 1 || vs[0].Var != "TOKEN" || vs[0].Sealed != "v1.e" || vs[0].UpdatedAt != stored(at(2)) {
			t.Errorf("after replacing TOKEN and deleting ORG: %+v", vs)
		}
		if got := secretVars(t, s, bob.ID, "mcp", "github"); got["TOKEN"] != "v1.d" || len(got) != 1 {
			t.Errorf("bob's vars = %v", got)
		}
		n, err := s.DeleteSecretVars(ctx, ann.ID, "mcp", "github")
		must(t, err, "DeleteSecretVars")
		if n != 1 {
			t.Errorf("DeleteSecretVars deleted %d, want 1", n)
		}
		if got := secretVars(t, s, ann.ID, "mcp", "github"); len(got) != 0 {
			t.Errorf("vars left after DeleteSecretVars: %v", got)
		}
		if got := secretVars(t, s, ann.ID, "endpoint", "github"); len(got) != 1 {
			t.Errorf("DeleteSecretVars of mcp deleted the endpoint's vars: %v", got)
		}
		err = s.PutSecretVars(ctx, "user_missing", "mcp", "github", map[string]string{"TOKEN": "v1.x"}, nil, at(1))
		wantKind(t, err, fault.NotFound, "PutSecretVars for a missing user")
	}},
	{"Grants", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		_, err := s.GetGrant(ctx, ann.ID, "github")
		wantKind(t, err, fault.NotFound, "GetGrant of no grant")
		g := putGrant(t, s, ann.ID, "github", "v1.first", at(10))
		if g.Version != 1 {
			t.Errorf("a new grant has version %d, want 1", g.Version)
		}
		got := getGrant(t, s, ann.ID, "github")
		want := &vault.StoredGrant{UserID: ann.ID, Server: "github", Sealed: "v1.first", Expiry: stored(at(10)), Issued: stored(at(0)), Version: 1, UpdatedAt: stored(at(0))}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GetGrant (-want +got):\n%s", d)
		}
		wantUTC(t, "GetGrant", got.Expiry, got.Issued, got.UpdatedAt)
		noExpiry := putGrant(t, s, bob.ID, "github", "v1.bob", time.Time{})
		if got := getGrant(t, s, bob.ID, "github"); !got.Expiry.IsZero() || got.Sealed != "v1.bob" || noExpiry.Version != 1 {
			t.Errorf("bob's grant without expiry: %+v", got)
		}
		// A claim holds others off until it lapses.
		ok, err := s.ClaimGrant(ctx, ann.ID, "github", 1, "node-a", at(5), at(6))
		must(t, err, "ClaimGrant")
		if !ok {
			t.Fatal("ClaimGrant of an unclaimed grant failed")
		}
		if g := getGrant(t, s, ann.ID, "github"); g.ClaimOwner != "node-a" || g.ClaimUntil != stored(at(6)) {
			t.Errorf("after a claim: owner %q until %v", g.ClaimOwner, g.ClaimUntil)
		}
		if ok, _ := s.ClaimGrant(ctx, ann.ID, "github", 1, "node-b", at(5), at(6)); ok {
			t.Error("a second claim of a claimed grant succeeded")
		}
		if ok, _ := s.ClaimGrant(ctx, ann.ID, "github", 2, "node-b", at(7), at(8)); ok {
			t.Error("a claim of a version the grant is not at succeeded")
		}
		ok, err = s.ClaimGrant(ctx, ann.ID, "github", 1, "node-b", at(6), at(7))
		must(t, err, "ClaimGrant")
		if !ok {
			t.Fatal("a claim of a grant whose claim lapsed failed")
		}
		// Only the claim's owner, at the claimed version, stores a refresh.
		r := &vault.StoredGrant{UserID: ann.ID, Server: "github", Sealed: "v1.second", Expiry: at(20), Issued: at(6), Version: 1, UpdatedAt: at(6)}
		if ok, _ := s.RefreshGrant(ctx, r, "node-a"); ok {
			t.Error("RefreshGrant by a replica whose claim lapsed succeeded")
		}
		ok, err = s.RefreshGrant(ctx, r, "node-b")
		must(t, err, "RefreshGrant")
		if !ok || r.Version != 2 {
			t.Fatalf("RefreshGrant by the claim's owner: %v, version %d; want true, 2", ok, r.Version)
		}
		got = getGrant(t, s, ann.ID, "github")
		if got.Sealed != "v1.second" || got.Version != 2 || got.ClaimOwner != "" || !got.ClaimUntil.IsZero() || got.Expiry != stored(at(20)) {
			t.Errorf("after a refresh: %+v", got)
		}
		if ok, _ := s.RefreshGrant(ctx, &vault.StoredGrant{UserID: ann.ID, Server: "github", Sealed: "v1.x", Issued: at(7), Version: 1}, "node-b"); ok {
			t.Error("a second refresh from version 1 succeeded")
		}
		// A release drops only its owner's claim.
		ok, err = s.ClaimGrant(ctx, ann.ID, "github", 2, "node-a", at(7), at(8))
		must(t, err, "ClaimGrant")
		if !ok {
			t.Error("a claim of the refreshed grant failed")
		}
		must(t, s.ReleaseGrant(ctx, ann.ID, "github", "node-b"), "ReleaseGrant by another")
		if g := getGrant(t, s, ann.ID, "github"); g.ClaimOwner != "node-a" {
			t.Errorf("a release by another dropped the claim")
		}
		must(t, s.ReleaseGrant(ctx, ann.ID, "github", "node-a"), "ReleaseGrant")
		if g := getGrant(t, s, ann.ID, "github"); g.ClaimOwner != "" || !g.ClaimUntil.IsZero() {
			t.Errorf("the claim is still there after its release: %+v", g)
		}
		// A new authorization replaces the grant and drops a claim.
		ok, _ = s.ClaimGrant(ctx, ann.ID, "github", 2, "node-a", at(7), at(8))
		again := putGrant(t, s, ann.ID, "github", "v1.third", at(30))
		if !ok || again.Version != 3 {
			t.Errorf("replacing a grant: version %d, want 3", again.Version)
		}
		if g := getGrant(t, s, ann.ID, "github"); g.ClaimOwner != "" || g.Sealed != "v1.third" {
			t.Errorf("after replacing a claimed grant: %+v", g)
		}
		if g := getGrant(t, s, bob.ID, "github"); g.Sealed != "v1.bob" {
			t.Errorf("bob's grant changed with ann's: %+v", g)
		}
		wantKind(t, s.PutGrant(ctx, &vault.StoredGrant{UserID: "user_missing", Server: "x", Sealed: "v1.x", Issued: at(0)}), fault.NotFound, "PutGrant for a missing user")
	}},
	{"ClaimRace", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "ann@example.com")
		putGrant(t, s, u.ID, "github", "v1.x", at(10))
		const n = 8
		won := make([]bool, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				ok, err := s.ClaimGrant(ctx, u.ID, "github", 1, fmt.Sprintf("node-%d", i), at(9), at(10))
				if err != nil {
					t.Errorf("ClaimGrant %d: %v", i, err)
				}
				won[i] = ok
			})
		}
		close(start)
		wg.Wait()
		count := 0
		for _, w := range won {
			if w {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d of %d concurrent claims won, want exactly 1", count, n)
		}
	}},
	{"DeleteGrants", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		putGrant(t, s, ann.ID, "b-server", "v1.b", at(10))
		putGrant(t, s, ann.ID, "a-server", "v1.a", time.Time{})
		putGrant(t, s, bob.ID, "a-server", "v1.bob", at(10))
		wantKind(t, s.DeleteGrant(ctx, ann.ID, "missing"), fault.NotFound, "DeleteGrant of no grant")
		gs, err := s.DeleteUserGrants(ctx, ann.ID)
		must(t, err, "DeleteUserGrants")
		if len(gs) != 2 || gs[0].Server != "a-server" || gs[0].Sealed != "v1.a" || gs[1].Server != "b-server" || gs[1].Expiry != stored(at(10)) {
			t.Errorf("DeleteUserGrants returned %+v", gs)
		}
		_, err = s.GetGrant(ctx, ann.ID, "a-server")
		wantKind(t, err, fault.NotFound, "GetGrant of a deleted grant")
		must(t, s.DeleteGrant(ctx, bob.ID, "a-server"), "DeleteGrant")
		_, err = s.GetGrant(ctx, bob.ID, "a-server")
		wantKind(t, err, fault.NotFound, "GetGrant of a deleted grant")
	}},
	{"Flows", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "ann@example.com")
		f := &vault.Flow{StateHash: "hash-1", UserID: u.ID, Server: "github", Sealed: "v1.f", ExpiresAt: at(10)}
		must(t, s.CreateFlow(ctx, f), "CreateFlow")
		wantKind(t, s.CreateFlow(ctx, &vault.Flow{StateHash: "hash-1", UserID: u.ID, Server: "x", Sealed: "v1.g", ExpiresAt: at(10)}), fault.Conflict, "CreateFlow with a taken state")
		wantKind(t, s.CreateFlow(ctx, &vault.Flow{StateHash: "hash-2", UserID: "user_missing", Server: "x", Sealed: "v1.g", ExpiresAt: at(10)}), fault.NotFound, "CreateFlow for a missing user")
		got, err := s.TakeFlow(ctx, "hash-1", at(9))
		must(t, err, "TakeFlow")
		if d := cmp.Diff(&vault.Flow{StateHash: "hash-1", UserID: u.ID, Server: "github", Sealed: "v1.f", ExpiresAt: stored(at(10))}, got); d != "" {
			t.Errorf("TakeFlow (-want +got):\n%s", d)
		}
		_, err = s.TakeFlow(ctx, "hash-1", at(9))
		wantKind(t, err, fault.NotFound, "TakeFlow a second time")
		must(t, s.CreateFlow(ctx, &vault.Flow{StateHash: "hash-3", UserID: u.ID, Server: "github", Sealed: "v1.h", ExpiresAt: at(10)}), "CreateFlow")
		_, err = s.TakeFlow(ctx, "hash-3", at(10))
		wantKind(t, err, fault.NotFound, "TakeFlow of an expired flow")
		_, err = s.TakeFlow(ctx, "hash-3", at(9))
		wantKind(t, err, fault.NotFound, "TakeFlow of a flow taken when expired")
		must(t, s.CreateFlow(ctx, &vault.Flow{StateHash: "hash-4", UserID: u.ID, Server: "github", Sealed: "v1.i", ExpiresAt: at(10)}), "CreateFlow")
		must(t, s.CreateFlow(ctx, &vault.Flow{StateHash: "hash-5", UserID: u.ID, Server: "github", Sealed: "v1.j", ExpiresAt: at(20)}), "CreateFlow")
		n, err := s.DeleteExpiredFlows(ctx, at(10))
		must(t, err, "DeleteExpiredFlows")
		if n != 1 {
			t.Errorf("DeleteExpiredFlows deleted %d, want 1", n)
		}
		if _, err := s.TakeFlow(ctx, "hash-5", at(11)); err != nil {
			t.Errorf("TakeFlow of a live flow after DeleteExpiredFlows: %v", err)
		}
	}},
	{"Reseal", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "ann@example.com")
		must(t, s.PutSecretVars(ctx, u.ID, "mcp", "github", map[string]string{"A": "v1.old.a", "B": "v1.new.b"}, nil, at(1)), "PutSecretVars")
		putGrant(t, s, u.ID, "github", "v1.old.g", at(10))
		must(t, s.CreateFlow(ctx, &vault.Flow{StateHash: "h", UserID: u.ID, Server: "github", Sealed: "v1.old.f", ExpiresAt: at(10)}), "CreateFlow")
		stale, err := s.StaleSealed(ctx, "v1.new.", 100)
		must(t, err, "StaleSealed")
		want := []vault.Sealed{
			{Table: vault.TableVars, Key: []string{u.ID, "mcp", "github", "A"}, Sealed: "v1.old.a"},
			{Table: vault.TableGrants, Key: []string{u.ID, "github"}, Sealed: "v1.old.g"},
			{Table: vault.TableFlows, Key: []string{"h", u.ID, "github"}, Sealed: "v1.old.f"},
		}
		if d := cmp.Diff(want, stale); d != "" {
			t.Fatalf("StaleSealed (-want +got):\n%s", d)
		}
		if few, _ := s.StaleSealed(ctx, "v1.new.", 2); len(few) != 2 {
			t.Errorf("StaleSealed with limit 2 returned %d", len(few))
		}
		for _, x := range stale {
			ok, err := s.Reseal(ctx, x, "v1.new."+x.Sealed[len("v1.old."):])
			must(t, err, "Reseal")
			if !ok {
				t.Errorf("Reseal of %s failed", x.Table)
			}
			if ok, _ := s.Reseal(ctx, x, "v1.new.again"); ok {
				t.Errorf("Reseal of a value that changed succeeded")
			}
		}
		if stale, _ := s.StaleSealed(ctx, "v1.new.", 100); len(stale) != 0 {
			t.Errorf("values left to re-seal: %+v", stale)
		}
		if got := getGrant(t, s, u.ID, "github"); got.Sealed != "v1.new.g" || got.Version != 1 {
			t.Errorf("re-sealed grant: %+v (a re-seal keeps the version)", got)
		}
		if got := secretVars(t, s, u.ID, "mcp", "github"); got["A"] != "v1.new.a" || got["B"] != "v1.new.b" {
			t.Errorf("re-sealed vars: %v", got)
		}
		_, err = s.Reseal(ctx, vault.Sealed{Table: "users", Key: []string{u.ID}, Sealed: "x"}, "y")
		wantKind(t, err, fault.Invalid, "Reseal of another table")
	}},
}
