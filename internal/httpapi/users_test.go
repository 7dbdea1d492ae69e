package httpapi_test

import (
	"strings"
	"testing"
)

func TestUsersRoutesAreForAdmins(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	annCookie := b.login(t, "ann@example.com", annPassword)
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/users", nil},
		{"POST", "/api/users", map[string]string{"email": "new@example.com"}},
		{"GET", "/api/users/" + b.admin.ID, nil},
		{"PATCH", "/api/users/" + b.admin.ID, map[string]any{"disabled": true}},
	} {
		for name, q := range map[string]req{"key": {key: b.annKey}, "cookie": {cookie: annCookie}} {
			if r := b.send(t, q, tc.method, tc.path, tc.body); r.code != 403 {
				t.Errorf("%s %s as a user with a %s: %d %s", tc.method, tc.path, name, r.code, r.body)
			}
		}
		if r := b.send(t, req{}, tc.method, tc.path, tc.body); r.code != 401 {
			t.Errorf("%s %s signed out: %d", tc.method, tc.path, r.code)
		}
	}
	if _, err := b.auth.FindUser(t.Context(), "new@example.com"); err == nil {
		t.Error("a refused request created a user")
	}
	if u, _ := b.auth.GetUser(t.Context(), b.admin.ID); u.Disabled {
		t.Error("a refused request disabled the admin")
	}
}

func TestUsersRoutes(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	admin := req{cookie: b.login(t, "root@example.com", adminPassword), header: map[string]string{"Sec-Fetch-Site": "same-origin"}}

	var list struct {
		Data []map[string]any `json:"data"`
	}
	b.send(t, admin, "GET", "/api/users", nil).decode(t, &list)
	if len(list.Data) != 2 || list.Data[0]["has_password"] != true || list.Data[1]["has_password"] != true {
		t.Fatalf("users: %v", list.Data)
	}

	r := b.send(t, admin, "POST", "/api/users", map[string]string{"email": "Bob@Example.com", "name": "Bob", "role": "user", "password": "bob's password"})
	var bob map[string]any
	r.decode(t, &bob)
	if r.code != 201 || bob["email"] != "bob@example.com" || bob["display_name"] != "Bob" || bob["has_password"] != true || bob["disabled"] != false {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if strings.Contains(string(r.body), "password_hash") || strings.Contains(string(r.body), "$2a$") {
		t.Errorf("a user's JSON holds the hash: %s", r.body)
	}
	bobID := bob["id"].(string)
	if r := b.send(t, admin, "POST", "/api/users", map[string]string{"email": "bob@example.com"}); r.code != 409 {
		t.Errorf("a taken email: %d %s", r.code, r.body)
	}
	if r := b.send(t, admin, "POST", "/api/users", map[string]string{"email": "carol", "role": "root", "password": "short"}); r.code != 400 || !strings.Contains(string(r.body), `"field":"role"`) {
		t.Errorf("an invalid user: %d %s", r.code, r.body)
	}
	r = b.send(t, admin, "POST", "/api/users", map[string]string{"email": "carol@example.com"})
	var carol map[string]any
	r.decode(t, &carol)
	if r.code != 201 || carol["has_password"] != false || carol["role"] != "user" {
		t.Errorf("a user without a password: %d %s", r.code, r.body)
	}
	if r := b.send(t, admin, "GET", "/api/users/"+bobID, nil); r.code != 200 || !strings.Contains(string(r.body), bobID) {
		t.Errorf("get: %d %s", r.code, r.body)
	}
	if r := b.send(t, admin, "GET", "/api/users/user_missing", nil); r.code != 404 {
		t.Errorf("a missing user: %d", r.code)
	}

	// An admin cannot disable or demote themselves.
	for _, body := range []map[string]any{{"disabled": true}, {"role": "user"}} {
		if r := b.send(t, admin, "PATCH", "/api/users/"+b.admin.ID, body); r.code != 400 {
			t.Errorf("PATCH self %v: %d %s", body, r.code, r.body)
		}
	}
	if r := b.send(t, admin, "PATCH", "/api/users/"+bobID, map[string]any{"email": "x@example.com"}); r.code != 400 {
		t.Errorf("an unknown field: %d %s", r.code, r.body)
	}

	// Disabling stops the user's keys and sessions at once; enabling brings
	// the keys back.
	bobCookie := b.login(t, "bob@example.com", "bob's password")
	created := b.send(t, req{cookie: bobCookie}, "POST", "/api/keys", map[string]string{"name": "cli"})
	var key struct {
		Secret string `json:"secret"`
	}
	created.decode(t, &key)
	r = b.send(t, admin, "PATCH", "/api/users/"+bobID, map[string]any{"disabled": true, "name": "Robert", "role": "admin"})
	var patched map[string]any
	r.decode(t, &patched)
	if r.code != 200 || patched["disabled"] != true || patched["display_name"] != "Robert" || patched["role"] != "admin" {
		t.Fatalf("patch: %d %s", r.code, r.body)
	}
	if r := b.send(t, req{cookie: bobCookie}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("a disabled user's session: %d", r.code)
	}
	if r := b.send(t, req{key: key.Secret}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("a disabled user's key: %d", r.code)
	}
	if r := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": "bob@example.com", "password": "bob's password"}); r.code != 401 || r.message() != "wrong email or password" {
		t.Errorf("a disabled user's login: %d %s", r.code, r.body)
	}
	b.send(t, admin, "PATCH", "/api/users/"+bobID, map[string]any{"disabled": false, "password": "bob's new password"})
	if r := b.send(t, req{key: key.Secret}, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("the key of a user enabled again: %d", r.code)
	}
	b.login(t, "bob@example.com", "bob's new password")
	if r := b.send(t, admin, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("the admin's own session after changing others: %d", r.code)
	}
}

func TestKeysRoutes(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	ann := req{cookie: b.login(t, "ann@example.com", annPassword)}
	admin := req{key: b.adminKey}

	r := b.send(t, ann, "POST", "/api/keys", map[string]string{"name": "laptop"})
	var created struct {
		ID        string  `json:"id"`
		UserID    string  `json:"user_id"`
		Name      string  `json:"name"`
		Prefix    string  `json:"prefix"`
		Secret    string  `json:"secret"`
		RevokedAt *string `json:"revoked_at"`
	}
	r.decode(t, &created)
	if r.code != 201 || created.UserID != b.ann.ID || created.Name != "laptop" || !strings.HasPrefix(created.Secret, created.Prefix) || len(created.Secret) != 43 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if r := b.send(t, req{key: created.Secret}, "GET", "/api/me", nil); r.code != 200 || !strings.Contains(string(r.body), b.ann.ID) {
		t.Fatalf("the new key: %d %s", r.code, r.body)
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	r = b.send(t, ann, "GET", "/api/keys", nil)
	r.decode(t, &list)
	if len(list.Data) != 2 || strings.Contains(string(r.body), created.Secret) || strings.Contains(string(r.body), "hash") {
		t.Errorf("list: %s", r.body)
	}

	// Others' keys: admins only.
	if r := b.send(t, ann, "GET", "/api/keys?user="+b.admin.ID, nil); r.code != 403 {
		t.Errorf("a user listing another's keys: %d", r.code)
	}
	if r := b.send(t, ann, "POST", "/api/keys", map[string]string{"name": "x", "user_id": b.admin.ID}); r.code != 403 {
		t.Errorf("a user creating a key for another: %d", r.code)
	}
	if r := b.send(t, ann, "GET", "/api/keys?user="+b.ann.ID, nil); r.code != 200 {
		t.Errorf("a user naming themselves: %d", r.code)
	}
	r = b.send(t, admin, "POST", "/api/keys", map[string]string{"name": "for ann", "user_id": b.ann.ID})
	var forAnn struct {
		ID     string `json:"id"`
		UserID string `json:"user_id"`
		Secret string `json:"secret"`
	}
	r.decode(t, &forAnn)
	if r.code != 201 || forAnn.UserID != b.ann.ID {
		t.Fatalf("an admin creating a key for ann: %d %s", r.code, r.body)
	}
	b.send(t, admin, "GET", "/api/keys?user="+b.ann.ID, nil).decode(t, &list)
	if len(list.Data) != 3 {
		t.Errorf("an admin listing ann's keys: %v", list.Data)
	}
	if r := b.send(t, admin, "GET", "/api/keys?user=user_missing", nil); r.code != 404 {
		t.Errorf("keys of a missing user: %d", r.code)
	}
	if r := b.send(t, admin, "POST", "/api/keys", map[string]string{"name": strings.Repeat("x", 101)}); r.code != 400 {
		t.Errorf("a long name: %d", r.code)
	}

	// Revoking: one's own, or any for an admin; another's is not found.
	adminKeys := struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}{}
	b.send(t, admin, "GET", "/api/keys", nil).decode(t, &adminKeys)
	if r := b.send(t, ann, "DELETE", "/api/keys/"+adminKeys.Data[0].ID, nil); r.code != 404 {
		t.Errorf("a user revoking an admin's key: %d", r.code)
	}
	if r := b.send(t, admin, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("the admin's key after a refused revocation: %d", r.code)
	}
	if r := b.send(t, ann, "DELETE", "/api/keys/"+created.ID, nil); r.code != 204 {
		t.Fatalf("revoking one's own key: %d %s", r.code, r.body)
	}
	if r := b.send(t, req{key: created.Secret}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("a revoked key: %d", r.code)
	}
	if r := b.send(t, admin, "DELETE", "/api/keys/"+forAnn.ID, nil); r.code != 204 {
		t.Fatalf("an admin revoking ann's key: %d", r.code)
	}
	if r := b.send(t, req{key: forAnn.Secret}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("a key an admin revoked: %d", r.code)
	}
	if r := b.send(t, ann, "DELETE", "/api/keys/key_missing", nil); r.code != 404 {
		t.Errorf("a missing key: %d", r.code)
	}
	b.send(t, ann, "GET", "/api/keys", nil).decode(t, &list)
	revoked := 0
	for _, k := range list.Data {
		if k["revoked_at"] != nil {
			revoked++
		}
	}
	if revoked != 2 {
		t.Errorf("%d revoked keys listed, want 2: %v", revoked, list.Data)
	}
}
