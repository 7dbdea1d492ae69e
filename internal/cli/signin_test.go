package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// setupLinks finds the setup link in what serve printed.
var setupLinks = regexp.MustCompile(`http://127\.0\.0\.1:\d+/setup#([A-Za-z0-9]{43})`)

// waitSetupLink waits for the setup link that serve prints once it is ready,
// and returns its token. It is on a plain line of its own; the log record
// only says that setup is required.
func waitSetupLink(t *testing.T, s *server) string {
	t.Helper()
	waitFor(t, 10*time.Second, "the setup link in the log", func() bool { return strings.Contains(s.stderr.String(), "No admin can sign in yet") })
	out := s.stderr.String()
	found := setupLinks.FindAllStringSubmatch(out, -1)
	if len(found) != 1 || !strings.HasPrefix(found[0][0], s.base+"/setup#") {
		t.Fatalf("want the setup link on %s once, on a plain line of its own, never in a log record:\n%s", s.base, out)
	}
	if !strings.Contains(out, "msg=\"setup required") || !strings.Contains(out, "\n    "+found[0][0]+"\n") {
		t.Fatalf("want a log record saying setup is required and the link shown plainly:\n%s", out)
	}
	return found[0][1]
}

// post sends a JSON body without a key and returns the status, the body and
// the session cookie set, if any.
func post(t *testing.T, url, cookie string, body any) (int, map[string]any, string) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "relay_session", Value: cookie})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	set := ""
	for _, c := range resp.Cookies() {
		if c.Name == "relay_session" {
			set = c.Value
		}
	}
	return resp.StatusCode, out, set
}

// me returns the status of GET /api/me with a session cookie, and the user.
func me(t *testing.T, base, cookie string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/me", nil)
	req.AddCookie(&http.Cookie{Name: "relay_session", Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var u map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&u)
	return resp.StatusCode, u
}

// A first start on an empty database prints a one-time setup link whose
// token creates the first admin; every start prints one while no admin can
// sign in (the bootstrap admin has no password), and none once one can.
func TestServePrintsTheSetupLink(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n")
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	const password = "first admin password"
	noteSecret(t.Name()+" password", password)

	s := startServer(t, cfgPath, nil)
	first := waitSetupLink(t, s)
	s.stop(t)
	s = startServer(t, cfgPath, vars)
	second := waitSetupLink(t, s)
	if first == second {
		t.Fatal("two starts printed the same setup token")
	}
	var st map[string]any
	if code := s.call(t, "", "GET", "/api/auth/status", "", &st); code != 200 || st["setup_required"] != true {
		t.Fatalf("status before setup: %d %v", code, st)
	}
	if code, body, _ := post(t, s.base+"/api/auth/setup", "", map[string]string{"token": strings.Repeat("A", 43), "email": "me@example.com", "password": password}); code != 403 {
		t.Errorf("setup with a made-up token: %d %v", code, body)
	}
	// The first start's link still works: each start adds a token.
	code, body, cookie := post(t, s.base+"/api/auth/setup", "", map[string]string{"token": first, "email": "me@example.com", "name": "Me", "password": password})
	if code != 201 || cookie == "" {
		t.Fatalf("setup: %d %v", code, body)
	}
	if code, u := me(t, s.base, cookie); code != 200 || u["role"] != "admin" || u["email"] != "me@example.com" {
		t.Fatalf("the setup's session: %d %v", code, u)
	}
	if code, body, _ := post(t, s.base+"/api/auth/setup", "", map[string]string{"token": second, "email": "you@example.com", "password": password}); code != 409 {
		t.Errorf("the other link after setup: %d %v", code, body)
	}
	// The bootstrap key still works beside the new admin.
	if code := s.call(t, testKey, "GET", "/api/me", "", nil); code != 200 {
		t.Errorf("the bootstrap key after setup: %d", code)
	}
	s.stop(t)

	s = startServer(t, cfgPath, vars)
	code, _, cookie = post(t, s.base+"/api/auth/login", "", map[string]string{"email": "me@example.com", "password": password})
	if code != 200 || cookie == "" {
		t.Fatalf("login after a restart: %d", code)
	}
	s.stop(t)
	if out := s.stderr.String(); strings.Contains(out, "/setup#") || strings.Contains(out, "No admin can sign in") {
		t.Errorf("a start with an admin who can sign in printed a setup link:\n%s", out)
	}
}

// Users made and changed on the command line sign in, or cannot, at once.
func TestCLIPasswordsAndDisabledUsers(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n")
	const first, second = "ann's first password", "ann's second password"
	noteSecret(t.Name()+" password", first, second)
	if code, out, stderr := runCLI(t, nil, first+"\n", "users", "add", "--config", cfgPath, "--email", "ann@example.com", "--role", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("users add: %d %s %s", code, out, stderr)
	}
	_, key, _ := runCLI(t, nil, "", "keys", "create", "--config", cfgPath, "--user", "ann@example.com")
	key = strings.TrimSpace(key)
	s := startServer(t, cfgPath, nil)
	login := func(password string) (int, string) {
		code, _, cookie := post(t, s.base+"/api/auth/login", "", map[string]string{"email": "ann@example.com", "password": password})
		return code, cookie
	}
	code, cookie := login(first)
	if code != 200 {
		t.Fatalf("login with the password of users add: %d", code)
	}
	if strings.Contains(s.stderr.String(), "No admin can sign in") {
		t.Errorf("a setup link although an admin can sign in:\n%s", s.stderr)
	}

	if code, _, stderr := runCLI(t, nil, second+"\n", "users", "passwd", "--config", cfgPath, "ann@example.com"); code != 2 || !strings.Contains(stderr, "--password-stdin is required") {
		t.Errorf("users passwd without --password-stdin: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "short\n", "users", "passwd", "--config", cfgPath, "ann@example.com", "--password-stdin"); code != 1 || !strings.Contains(stderr, "at least 8") {
		t.Errorf("users passwd with a short password: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, second+"\n", "users", "passwd", "--config", cfgPath, "ann@example.com", "--password-stdin"); code != 0 {
		t.Fatalf("users passwd: %d %s", code, stderr)
	}
	if code, _ := me(t, s.base, cookie); code != 401 {
		t.Errorf("a session after users passwd: %d", code)
	}
	if code, _ := login(first); code != 401 {
		t.Errorf("the old password: %d", code)
	}
	code, cookie = login(second)
	if code != 200 {
		t.Fatalf("the new password: %d", code)
	}

	if code, _, stderr := runCLI(t, nil, "", "users", "disable", "--config", cfgPath, "ann@example.com"); code != 0 || !strings.Contains(stderr, "disabled") {
		t.Fatalf("users disable: %d %s", code, stderr)
	}
	if code, _ := me(t, s.base, cookie); code != 401 {
		t.Errorf("a disabled user's session: %d", code)
	}
	if code := s.call(t, key, "GET", "/api/me", "", nil); code != 401 {
		t.Errorf("a disabled user's key: %d", code)
	}
	if code, _ := login(second); code != 401 {
		t.Errorf("a disabled user's login: %d", code)
	}
	_, out, _ := runCLI(t, nil, "", "users", "list", "--config", cfgPath, "--json")
	var users []map[string]any
	if err := json.Unmarshal([]byte(out), &users); err != nil || len(users) != 1 || users[0]["disabled"] != true || users[0]["has_password"] != true || strings.Contains(out, "$2a$") {
		t.Errorf("users list --json: %v %s", err, out)
	}
	if code, _, stderr := runCLI(t, nil, "", "users", "enable", "--config", cfgPath, "ann@example.com"); code != 0 {
		t.Fatalf("users enable: %d %s", code, stderr)
	}
	if code := s.call(t, key, "GET", "/api/me", "", nil); code != 200 {
		t.Errorf("the key of a user enabled again: %d", code)
	}
	if code, _ := login(second); code != 200 {
		t.Errorf("login of a user enabled again: %d", code)
	}
	if code, _, stderr := runCLI(t, nil, "", "users", "disable", "--config", cfgPath, "nobody@example.com"); code != 1 || !strings.Contains(stderr, "nobody@example.com") {
		t.Errorf("users disable of an unknown user: %d %s", code, stderr)
	}
}
