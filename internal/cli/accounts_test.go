package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/secret"
)

// newUserKey creates a user through the API of s and returns an API key of theirs.
func newUserKey(t *testing.T, s *server, email string) string {
	t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	if code := s.call(t, testKey, "POST", "/api/users", fmt.Sprintf(`{"email":%q}`, email), &u); code != 201 {
		t.Fatalf("creating %s: %d", email, code)
	}
	var k struct {
		Secret string `json:"secret"`
	}
	if code := s.call(t, testKey, "POST", "/api/keys", fmt.Sprintf(`{"name":"test","user_id":%q}`, u.ID), &k); code != 201 {
		t.Fatalf("creating a key for %s: %d", email, code)
	}
	return k.Secret
}

// toolResult is what POST /api/mcp/tools/{key}/call answers.
type toolResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error"`
}

func callTool(t *testing.T, s *server, key, tool string) toolResult {
	t.Helper()
	res, err := tryTool(s, key, tool)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryTool is callTool for other goroutines than the test's.
func tryTool(s *server, key, tool string) (toolResult, error) {
	var res toolResult
	req, err := http.NewRequest("POST", s.base+"/api/mcp/tools/"+tool+"/call", strings.NewReader(`{"arguments":{}}`))
	if err != nil {
		return res, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return res, fmt.Errorf("calling %s: %s", tool, resp.Status)
	}
	return res, json.NewDecoder(resp.Body).Decode(&res)
}

// connectAccount plays a user's browser: it starts the authorization on one
// replica, approves it at the authorization server as subject, and follows
// the redirect back to another replica (public_url is a proxy in front of
// both), which finishes it.
func connectAccount(t *testing.T, as *mcptest.OAuthServer, start, back *server, key, subject string) {
	t.Helper()
	var started struct {
		AuthURL string `json:"auth_url"`
	}
	if code := start.call(t, key, "POST", "/api/mcp/servers/tickets/oauth", "", &started); code != 200 {
		t.Fatalf("starting the authorization: %d", code)
	}
	finishAt(t, as, back, started.AuthURL, subject)
}

// finishAt approves authURL as subject and delivers the callback to s.
func finishAt(t *testing.T, as *mcptest.OAuthServer, s *server, authURL, subject string) {
	t.Helper()
	loc, err := as.Approve(t.Context(), authURL, subject)
	if err != nil {
		t.Fatalf("approving: %v", err)
	}
	cb, err := url.Parse(loc)
	if err != nil || cb.Host != "relay.example" || cb.Path != "/api/mcp/oauth/callback" {
		t.Fatalf("the authorization server sent the browser to %q; want Relay's public callback", loc)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(s.base + cb.Path + "?" + cb.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || got != "/connections?connected=tickets" {
		t.Fatalf("callback answered %d to %q; want 303 to /connections?connected=tickets", resp.StatusCode, got)
	}
}

// TestMCPOAuthAcrossReplicas: a user authorizes Relay once at an
// OAuth-protected MCP server, whose authorization server issues 5-second
// tokens that rotate their refresh token at each use; two replicas on one
// Postgres then call its tools concurrently across several expiries. Every
// call works, every expiry is refreshed by exactly one replica (a second
// refresh would present a used refresh token), each user's calls carry their
// own token, a revoked authorization gives the "connect your account" result,
// and signing out everywhere revokes it at the authorization server.
func TestMCPOAuthAcrossReplicas(t *testing.T) {
	pg := os.Getenv("TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("TEST_POSTGRES_URL is not set: skipping the MCP OAuth test on two replicas")
	}
	as := mcptest.StartOAuth(t, mcptest.OAuthOptions{TokenTTL: 5 * time.Second})
	key := secret.GenerateKey()
	noteSecret(t.Name()+" secrets.key", key)
	db := schemaURL(t, pg)
	var (
		replicas []*server
		cfgs     []string
	)
	for range 2 {
		dir := t.TempDir()
		cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  public_url: http://relay.example
  data_dir: %s
  log_level: debug
database:
  url: %q
secrets:
  key: %q
limits:
  api: {key_per_minute: 0, ip_per_minute: 0}
mcpServers:
  tickets:
    type: streamable-http
    url: %s
    requiresOAuth: true
`, filepath.Join(dir, "data"), db, key, as.MCPURL))
		cfgs = append(cfgs, cfg)
		replicas = append(replicas, startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}))
	}
	r1, r2 := replicas[0], replicas[1]
	ann := newUserKey(t, r1, "ann@example.com")
	bob := newUserKey(t, r1, "bob@example.com")
	subject := mcp.Key("subject", "tickets")

	// Before connecting, a call says what to do.
	if res := callTool(t, r1, ann, subject); !res.IsError || !strings.Contains(res.Text, `needs you to connect your account`) {
		t.Fatalf("before connecting: %+v; want the connect-your-account result", res)
	}
	connectAccount(t, as, r1, r2, ann, "ann")
	var st struct {
		OAuth struct {
			Connected bool `json:"connected"`
		} `json:"oauth"`
		Ready bool `json:"ready"`
	}
	if code := r1.call(t, ann, "GET", "/api/mcp/servers/tickets/account", "", &st); code != 200 || !st.OAuth.Connected || !st.Ready {
		t.Fatalf("ann's account after connecting: %d %+v", code, st)
	}

	// Both replicas, four callers each, for three token lifetimes.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		calls    int
	)
	stop := time.Now().Add(13 * time.Second)
	for i := range 8 {
		s := replicas[i%2]
		wg.Go(func() {
			// A steady load over real time, against real servers.
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for ; time.Now().Before(stop); <-tick.C {
				res, err := tryTool(s, ann, subject)
				mu.Lock()
				calls++
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case res.IsError || res.Text != "ann":
					failures = append(failures, res.Text)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed across expiries; first: %q", len(failures), calls, failures[0])
	}
	refreshes, reused := as.Refreshes(), as.ReusedRefreshes()
	t.Logf("%d calls on two replicas over 13 s of 5 s tokens: %d refreshes", calls, refreshes)
	if reused != 0 {
		t.Errorf("%d refreshes presented a refresh token already used: two replicas refreshed one expiry", reused)
	}
	if refreshes < 2 || refreshes > 4 {
		t.Errorf("%d refreshes in 13 s of 5 s tokens; want one per expiry (2 to 4)", refreshes)
	}

	// Bob has his own authorization, never ann's.
	if res := callTool(t, r2, bob, subject); !res.IsError {
		t.Fatalf("bob, not connected, got %+v", res)
	}
	connectAccount(t, as, r2, r1, bob, "bob")
	for _, s := range replicas {
		if res := callTool(t, s, bob, subject); res.IsError || res.Text != "bob" {
			t.Errorf("bob's call on %s: %+v; want subject bob", s.base, res)
		}
		if res := callTool(t, s, ann, subject); res.IsError || res.Text != "ann" {
			t.Errorf("ann's call on %s: %+v; want subject ann", s.base, res)
		}
	}

	// An authorization revoked at the server: the connect-your-account
	// result, and the account shows as not connected.
	as.RevokeUser("ann")
	res := callTool(t, r1, ann, subject)
	if !res.IsError || !strings.Contains(res.Text, "connect your account") {
		t.Errorf("after revocation: %+v; want the connect-your-account result", res)
	}
	if code := r2.call(t, ann, "GET", "/api/mcp/servers/tickets/account", "", &st); code != 200 || st.OAuth.Connected {
		t.Errorf("ann's account after revocation: %d %+v; want not connected", code, st)
	}

	// relay mcp auth prints a link that connects the user again.
	code, out, errOut := runCLI(t, nil, "", "mcp", "auth", "tickets", "--user", "ann@example.com", "--config", cfgs[0])
	if code != 0 {
		t.Fatalf("relay mcp auth: exit %d\n%s", code, errOut)
	}
	fields := strings.Fields(out)
	if len(fields) == 0 || !strings.HasPrefix(fields[len(fields)-1], as.Issuer+"/authorize?") {
		t.Fatalf("relay mcp auth printed %q; want the authorization link last", out)
	}
	finishAt(t, as, r2, fields[len(fields)-1], "ann")
	if res := callTool(t, r1, ann, subject); res.IsError || res.Text != "ann" {
		t.Errorf("ann after connecting again from the command line: %+v", res)
	}

	// Signing out everywhere revokes bob's authorization at the server.
	if code := r1.call(t, bob, "POST", "/api/auth/logout-all", "", nil); code != 204 {
		t.Fatalf("logout-all: %d", code)
	}
	if n := as.Tokens("bob"); n != 0 {
		t.Errorf("bob has %d valid tokens after signing out everywhere; want them revoked", n)
	}
	if res := callTool(t, r2, bob, subject); !res.IsError || !strings.Contains(res.Text, "connect your account") {
		t.Errorf("bob after signing out everywhere: %+v", res)
	}
}

// connectedToTickets starts an OAuth MCP server, "tickets", and a Relay on
// SQLite with it, and connects ann's account there; it returns the server,
// Relay, ann's API key and the key of the tool that says whose token it got.
func connectedToTickets(t *testing.T) (*mcptest.OAuthServer, *server, string, string) {
	t.Helper()
	as, s := ticketsServer(t)
	ann := newUserKey(t, s, "ann@example.com")
	subject := mcp.Key("subject", "tickets")
	connectAccount(t, as, s, s, ann, "ann")
	if res := callTool(t, s, ann, subject); res.IsError || res.Text != "ann" {
		t.Fatalf("after connecting: %+v", res)
	}
	return as, s, ann, subject
}

// ticketsServer starts an OAuth-protected MCP server, "tickets", whose
// tokens last an hour, and Relay with it behind http://relay.example.
func ticketsServer(t *testing.T) (*mcptest.OAuthServer, *server) {
	t.Helper()
	as := mcptest.StartOAuth(t, mcptest.OAuthOptions{TokenTTL: time.Hour})
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  public_url: http://relay.example
  data_dir: %s
secrets:
  key: %q
mcpServers:
  tickets:
    type: streamable-http
    url: %s
    requiresOAuth: true
`, filepath.Join(dir, "data"), secret.GenerateKey(), as.MCPURL))
	return as, startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
}

// TestMCPAccountsNoneIsAnEmptyList: a server whose MCP servers need nothing
// of users answers the list of accounts as an empty list, not null.
func TestMCPAccountsNoneIsAnEmptyList(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf("server:\n  data_dir: %s\nsecrets:\n  key: %q\n", filepath.Join(dir, "data"), secret.GenerateKey()))
	s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var raw json.RawMessage
	if code := s.call(t, testKey, "GET", "/api/mcp/accounts", "", &raw); code != 200 || string(raw) != `{"data":[]}` {
		t.Errorf("GET /api/mcp/accounts: %d %s; want 200 {\"data\":[]}", code, raw)
	}
}

// ticketsConnected reports whether the account of key's user at "tickets"
// shows as connected.
func ticketsConnected(t *testing.T, s *server, key string) bool {
	t.Helper()
	var st struct {
		OAuth struct {
			Connected bool `json:"connected"`
		} `json:"oauth"`
	}
	if code := s.call(t, key, "GET", "/api/mcp/servers/tickets/account", "", &st); code != 200 {
		t.Fatalf("GET /api/mcp/servers/tickets/account: %d", code)
	}
	return st.OAuth.Connected
}

// TestMCPOAuthRefusedTokenIsRenewed: an access token the server stops
// accepting before its expiry is renewed with the refresh token, and the call
// answers as if nothing happened; once the refresh token is revoked too, the
// call says to connect again.
func TestMCPOAuthRefusedTokenIsRenewed(t *testing.T) {
	as, s, ann, subject := connectedToTickets(t)

	as.EndAccess("ann")
	if res := callTool(t, s, ann, subject); res.IsError || res.Text != "ann" {
		t.Fatalf("after the access token ended early: %+v; want the call to go through", res)
	}
	if n := as.Refreshes(); n != 1 {
		t.Errorf("%d refreshes for one refused token; want 1", n)
	}
	if res := callTool(t, s, ann, subject); res.IsError || res.Text != "ann" || as.Refreshes() != 1 {
		t.Errorf("the next call: %+v after %d refreshes; want it to use the renewed token", res, as.Refreshes())
	}

	as.RevokeUser("ann")
	if res := callTool(t, s, ann, subject); !res.IsError || !strings.Contains(res.Text, "connect your account") {
		t.Errorf("after revocation: %+v; want the connect-your-account result", res)
	}
	if ticketsConnected(t, s, ann) {
		t.Error("ann's account after revocation shows connected")
	}
}

// TestMCPOAuthStepUp: a server that comes to need more scope than the user
// granted has them connect again, and that authorization asks for the scopes
// granted before and those the server asked for, so that it ends the refusal.
func TestMCPOAuthStepUp(t *testing.T) {
	as, s, ann, subject := connectedToTickets(t)

	as.RequireScope("tickets:write")
	if res := callTool(t, s, ann, subject); !res.IsError || !strings.Contains(res.Text, "needs more permissions than you granted") {
		t.Fatalf("after the server came to need more scope: %+v; want to be told to connect again", res)
	}
	if ticketsConnected(t, s, ann) {
		t.Error("ann's account shows connected while more scope is wanted")
	}
	var started struct {
		AuthURL string `json:"auth_url"`
	}
	if code := s.call(t, ann, "POST", "/api/mcp/servers/tickets/oauth", "", &started); code != 200 {
		t.Fatalf("starting the authorization again: %d", code)
	}
	u, err := url.Parse(started.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	if scopes := strings.Fields(u.Query().Get("scope")); !slices.Contains(scopes, "tools") || !slices.Contains(scopes, "tickets:write") {
		t.Fatalf("the new authorization asks for scopes %q; want those granted before and those the server asked for", scopes)
	}
	finishAt(t, as, s, started.AuthURL, "ann")
	if res := callTool(t, s, ann, subject); res.IsError || res.Text != "ann" {
		t.Errorf("after connecting with the wider scope: %+v", res)
	}
}

// keyedConfig starts a test MCP server and returns a config naming it
// "keyed", with a customUserVars value MY_TOKEN in its X-User header.
func keyedConfig(t *testing.T) string {
	t.Helper()
	mcpURL := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	dir := t.TempDir()
	return writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  log_level: debug
mcpServers:
  keyed:
    type: streamable-http
    url: %s
    headers:
      X-User: "{{MY_TOKEN}}"
    customUserVars:
      MY_TOKEN:
        title: Your token
        description: From your profile page
`, filepath.Join(dir, "data"), mcpURL))
}

// TestMCPUserVarsPerUser: a server whose header carries a customUserVars
// value; two users set different values through the API and the server
// receives each user's own; the values are never answered back, and the
// whole log holds neither.
func TestMCPUserVarsPerUser(t *testing.T) {
	cfg := keyedConfig(t)
	s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	values := map[string]string{"ann": "ann-token-7Qx2vLp9", "bob": "bob-token-Mz4kR8wd"}
	keys := map[string]string{}
	for user, v := range values {
		noteSecret(t.Name()+" "+user+"'s MY_TOKEN", v)
		keys[user] = newUserKey(t, s, user+"@example.com")
	}
	whoami := mcp.Key("whoami", "keyed")

	if res := callTool(t, s, keys["ann"], whoami); !res.IsError || !strings.Contains(res.Text, "needs your settings: set MY_TOKEN") {
		t.Fatalf("before setting it: %+v; want the set-your-settings result", res)
	}
	for user, v := range values {
		var st struct {
			Vars []struct {
				Name  string `json:"name"`
				Title string `json:"title"`
				Set   bool   `json:"set"`
			} `json:"vars"`
			Ready bool `json:"ready"`
		}
		body := fmt.Sprintf(`{"values":{"MY_TOKEN":%q}}`, v)
		if code := s.call(t, keys[user], "PUT", "/api/mcp/servers/keyed/vars", body, &st); code != 200 {
			t.Fatalf("%s setting MY_TOKEN: %d", user, code)
		}
		if len(st.Vars) != 1 || !st.Vars[0].Set || st.Vars[0].Title != "Your token" || !st.Ready {
			t.Errorf("%s's status: %+v", user, st)
		}
	}
	for user, v := range values {
		res := callTool(t, s, keys[user], whoami)
		var w mcptest.Whoami
		if err := json.Unmarshal([]byte(res.Text), &w); err != nil || res.IsError {
			t.Fatalf("%s: %+v (%v)", user, res, err)
		}
		if w.Header != v {
			t.Errorf("%s's call reached the server with X-User %q; want their own value", user, w.Header)
		}
	}
	var raw json.RawMessage
	s.call(t, keys["ann"], "GET", "/api/mcp/accounts", "", &raw)
	if strings.Contains(string(raw), values["ann"]) {
		t.Errorf("GET /api/mcp/accounts shows the value: %s", raw)
	}
	if code := s.call(t, keys["ann"], "PUT", "/api/mcp/servers/keyed/vars", `{"values":{"OTHER":"x"}}`, nil); code != 400 {
		t.Errorf("an undeclared variable: %d, want 400", code)
	}
	s.stop(t)
	for user, v := range values {
		if strings.Contains(s.stderr.String(), v) {
			t.Errorf("the log holds %s's value", user)
		}
	}
}

// TestMCPUserVarsCommand: relay mcp vars sets a user's values from standard
// input (never echoing them), lists which are set, and clears them; relay mcp
// call then reaches the server with the user's value.
func TestMCPUserVarsCommand(t *testing.T) {
	cfg := keyedConfig(t)
	cli := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, stdin, append(args, "--config", cfg)...)
	}
	code, uid, errOut := cli("", "users", "add", "--email", "ann@example.com")
	if code != 0 {
		t.Fatalf("users add: %d %s", code, errOut)
	}
	uid = strings.TrimSpace(uid)
	const value = "cli-token-Hq7Zr2Kd"
	noteSecret(t.Name(), value)
	code, out, errOut := cli("MY_TOKEN="+value+"\n", "mcp", "vars", "keyed", "--user", "ann@example.com", "--set-stdin")
	if code != 0 || strings.Contains(out+errOut, value) || !regexpMatch(`MY_TOKEN\s+true\s+\d{4}-`, out) {
		t.Fatalf("mcp vars --set-stdin: %d\n%s%s", code, out, errOut)
	}
	for _, who := range []string{uid, "ann@example.com"} {
		code, out, errOut = cli("", "mcp", "call", mcp.Key("whoami", "keyed"), "--args", "{}", "--user", who)
		var w mcptest.Whoami
		if code != 0 || json.Unmarshal([]byte(out), &w) != nil || w.Header != value {
			t.Errorf("mcp call as %s: %d %q %s; want the server to get her value", who, code, out, errOut)
		}
	}
	if code, out, errOut := cli("", "mcp", "call", mcp.Key("whoami", "keyed"), "--args", "{}", "--user", "nobody@example.com"); code != 1 || !strings.Contains(out+errOut, "nobody@example.com") {
		t.Errorf("mcp call as no user: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := cli("NOPE=1\n", "mcp", "vars", "keyed", "--user", uid, "--set-stdin"); code != 1 || !strings.Contains(errOut, "NOPE: not a variable") {
		t.Errorf("an undeclared variable: %d %s", code, errOut)
	}
	code, out, errOut = cli("", "mcp", "vars", "keyed", "--user", uid, "--clear")
	if code != 0 || !regexpMatch(`MY_TOKEN\s+false\s+-`, out) {
		t.Errorf("mcp vars --clear: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli("", "mcp", "call", mcp.Key("whoami", "keyed"), "--args", "{}", "--user", uid)
	if code != 1 || !strings.Contains(out, "needs your settings: set MY_TOKEN") {
		t.Errorf("mcp call after --clear: %d %q", code, out)
	}
}

// TestMCPOAuthCallbackInAnotherUsersBrowser: an authorization one user
// started, finished in the browser of another user signed in to Relay (who
// was sent its link), is refused and over: neither of them is connected. The
// same flow finished in its own user's signed-in browser connects them.
func TestMCPOAuthCallbackInAnotherUsersBrowser(t *testing.T) {
	as, s := ticketsServer(t)
	const password = "a password of eight"
	noteSecret(t.Name()+" password", password)
	cookies := map[string]string{}
	keys := map[string]string{}
	for _, name := range []string{"ann", "bob"} {
		email := name + "@example.com"
		if code := s.call(t, testKey, "POST", "/api/users", fmt.Sprintf(`{"email":%q,"password":%q}`, email, password), nil); code != 201 {
			t.Fatalf("creating %s: %d", name, code)
		}
		code, _, cookie := post(t, s.base+"/api/auth/login", "", map[string]string{"email": email, "password": password})
		if code != 200 || cookie == "" {
			t.Fatalf("signing %s in: %d", name, code)
		}
		cookies[name] = cookie
		var k struct {
			Secret string `json:"secret"`
		}
		if code := s.call(t, testKey, "POST", "/api/keys", fmt.Sprintf(`{"name":"test","user_id":%q}`, userID(t, s, email)), &k); code != 201 {
			t.Fatalf("a key for %s: %d", name, code)
		}
		keys[name] = k.Secret
	}
	callback := func(cookie string) string {
		t.Helper()
		var started struct {
			AuthURL string `json:"auth_url"`
		}
		if code := s.call(t, keys["ann"], "POST", "/api/mcp/servers/tickets/oauth", "", &started); code != 200 {
			t.Fatalf("ann starting the authorization: %d", code)
		}
		loc, err := as.Approve(t.Context(), started.AuthURL, "someone-at-tickets")
		if err != nil {
			t.Fatal(err)
		}
		cb, _ := url.Parse(loc)
		req, _ := http.NewRequest("GET", s.base+cb.Path+"?"+cb.RawQuery, nil)
		req.AddCookie(&http.Cookie{Name: "relay_session", Value: cookie})
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Location")
	}
	if got := callback(cookies["bob"]); !strings.HasPrefix(got, "/connections?error=") || !strings.Contains(got, "another+Relay+user") {
		t.Errorf("ann's authorization finished in bob's browser went to %q; want the refusal", got)
	}
	for _, name := range []string{"ann", "bob"} {
		if ticketsConnected(t, s, keys[name]) {
			t.Errorf("%s is connected after the refused callback", name)
		}
	}
	if got := callback(cookies["ann"]); got != "/connections?connected=tickets" || !ticketsConnected(t, s, keys["ann"]) {
		t.Errorf("ann's authorization finished in her own browser went to %q (connected: %v); want connected", got, ticketsConnected(t, s, keys["ann"]))
	}
}

// userID is the id of the user with email, as the admin key sees it.
func userID(t *testing.T, s *server, email string) string {
	t.Helper()
	var list struct {
		Data []struct{ ID, Email string } `json:"data"`
	}
	if code := s.call(t, testKey, "GET", "/api/users", "", &list); code != 200 {
		t.Fatalf("listing users: %d", code)
	}
	for _, u := range list.Data {
		if u.Email == email {
			return u.ID
		}
	}
	t.Fatalf("no user %s", email)
	return ""
}

// TestMCPOAuthURLWithUserVar: an OAuth server whose url holds one of its
// customUserVars (a tenant's path, say) is authorized at the address the
// user's connection uses, their value in it: the flow's discovery and the
// token's resource are that server's, not the url as written. A user who has
// set neither is told to set the variable first, by a call and by the start
// of an authorization.
func TestMCPOAuthURLWithUserVar(t *testing.T) {
	as := mcptest.StartOAuth(t, mcptest.OAuthOptions{TokenTTL: time.Hour})
	base := strings.TrimSuffix(as.MCPURL, mcptest.StreamablePath)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  public_url: http://relay.example
  data_dir: %s
secrets:
  key: %q
mcpServers:
  tickets:
    type: streamable-http
    url: %s/{{TENANT}}
    requiresOAuth: true
    customUserVars:
      TENANT:
        title: Your tenant
`, filepath.Join(dir, "data"), secret.GenerateKey(), base))
	s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	ann := newUserKey(t, s, "ann@example.com")

	var refused struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if code := s.call(t, ann, "POST", "/api/mcp/servers/tickets/oauth", "", &refused); code != 400 || !strings.Contains(refused.Error.Message, "TENANT") {
		t.Errorf("starting the authorization without TENANT: %d %q; want 400 naming TENANT", code, refused.Error.Message)
	}

	if res := callTool(t, s, ann, mcp.Key("subject", "tickets")); !res.IsError || !strings.Contains(res.Text, "set TENANT") {
		t.Errorf("a call before TENANT is set: %+v; want to be told to set it first", res)
	}
	if code := s.call(t, ann, "PUT", "/api/mcp/servers/tickets/vars", `{"values":{"TENANT":"mcp"}}`, nil); code != 200 {
		t.Fatalf("setting TENANT: %d", code)
	}
	var started struct {
		AuthURL string `json:"auth_url"`
	}
	if code := s.call(t, ann, "POST", "/api/mcp/servers/tickets/oauth", "", &started); code != 200 {
		t.Fatalf("starting the authorization: %d", code)
	}
	u, err := url.Parse(started.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query().Get("resource"); got != as.MCPURL {
		t.Fatalf("the authorization asks for a token for %q; want the user's server %q", got, as.MCPURL)
	}
	finishAt(t, as, s, started.AuthURL, "ann")
	if res := callTool(t, s, ann, mcp.Key("subject", "tickets")); res.IsError || res.Text != "ann" {
		t.Errorf("after connecting: %+v", res)
	}
}

// TestMCPOAuthClientSecretFromEnvironment: an oauth block's client_secret
// written as ${VAR}, as librechat.yaml files keep it out of the file, is the
// variable's value at the authorization server, not the text "${VAR}".
func TestMCPOAuthClientSecretFromEnvironment(t *testing.T) {
	const clientSecret = "tickets-client-secret-5Rk2"
	as := mcptest.StartOAuth(t, mcptest.OAuthOptions{TokenTTL: time.Hour, ClientID: "relay-tickets", ClientSecret: clientSecret})
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  public_url: http://relay.example
  data_dir: %s
secrets:
  key: %q
mcpServers:
  tickets:
    type: streamable-http
    url: %s
    oauth:
      client_id: ${TICKETS_CLIENT_ID}
      client_secret: ${TICKETS_CLIENT_SECRET}
`, filepath.Join(dir, "data"), secret.GenerateKey(), as.MCPURL))
	s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey,
		"TICKETS_CLIENT_ID": "relay-tickets", "TICKETS_CLIENT_SECRET": clientSecret})
	ann := newUserKey(t, s, "ann@example.com")
	connectAccount(t, as, s, s, ann, "ann")
	if res := callTool(t, s, ann, mcp.Key("subject", "tickets")); res.IsError || res.Text != "ann" {
		t.Errorf("after connecting: %+v", res)
	}
}
