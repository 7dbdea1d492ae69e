package cli

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/vault"
)

// newUser creates a user through the API and returns their id and a key of theirs.
func (s *server) newUser(t *testing.T, email string) (id, key string) {
	t.Helper()
	var u struct{ ID string }
	if code := s.call(t, testKey, "POST", "/api/users", fmt.Sprintf(`{"email":%q}`, email), &u); code != 201 {
		t.Fatalf("create user %s: %d", email, code)
	}
	var k struct{ Secret string }
	if code := s.call(t, testKey, "POST", "/api/keys", fmt.Sprintf(`{"name":"t","user_id":%q}`, u.ID), &k); code != 201 {
		t.Fatalf("create key for %s: %d", email, code)
	}
	noteSecret(t.Name()+" user key", k.Secret)
	return u.ID, k.Secret
}

// rawCall is call that returns the body as it came.
func (s *server) rawCall(t *testing.T, key, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestEndpointKeysEachUsersOwn: an endpoint with apiKey: user_provided sends
// each user's own key, one with baseURL: user_provided reaches each user's
// own address, a user without one is told what to set, and no key is ever
// in an answer or a log.
func TestEndpointKeysEachUsersOwn(t *testing.T) {
	answer := func(r upstreamRequest, s *llmtest.SSE) { streamText(s, "Hello from upstream.") }
	shared, mine := startUpstream(t, answer), startUpstream(t, answer)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  allowed_addresses: ["127.0.0.1"]
endpoints:
  custom:
    - {name: byok, baseURL: "%s/v1", apiKey: user_provided}
    - {name: ownurl, baseURL: user_provided, apiKey: sk-ownurl-fixed-key-4242}
agents:
  - {id: keyed, provider: byok, model: m1}
  - {id: routed, provider: ownurl, model: m2}
`, filepath.Join(dir, "data"), shared.URL))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	_, ann := s.newUser(t, "ann@example.com")
	_, bob := s.newUser(t, "bob@example.com")
	_, cy := s.newUser(t, "cy@example.com")
	annKey, bobKey := "sk-ann-own-key-1111111", "sk-bob-own-key-2222222"
	noteSecret(t.Name()+" endpoint keys", annKey, bobKey)
	var bodies []string
	keep := func(b string) string { bodies = append(bodies, b); return b }

	// The catalog says which fields each user supplies.
	code, body := s.rawCall(t, ann, "GET", "/api/config", "")
	if code != 200 || !strings.Contains(keep(body), `{"name":"byok","models":[],"user_provided":["apiKey"]}`) ||
		!strings.Contains(body, `{"name":"ownurl","models":[],"user_provided":["baseURL"]}`) {
		t.Errorf("GET /api/config: %d %s", code, body)
	}

	for _, c := range []struct{ key, value string }{{ann, annKey}, {bob, bobKey}} {
		if code, body := s.rawCall(t, c.key, "PUT", "/api/endpoints/byok/key", fmt.Sprintf(`{"apiKey":%q}`, c.value)); code != 200 || strings.Contains(keep(body), c.value) {
			t.Fatalf("PUT key: %d %s", code, body)
		}
	}
	chat := func(key, agent string) (int, string) {
		return s.rawCall(t, key, "POST", "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, agent))
	}
	for _, key := range []string{ann, bob} {
		if code, body := chat(key, "keyed"); code != 200 || !strings.Contains(keep(body), "Hello from upstream.") {
			t.Fatalf("chat: %d %s", code, body)
		}
	}
	var auths []string
	for _, r := range shared.requests() {
		auths = append(auths, r.Header.Get("Authorization"))
	}
	if diff := cmp.Diff([]string{"Bearer " + annKey, "Bearer " + bobKey}, auths); diff != "" {
		t.Errorf("Authorization sent upstream (-want +got):\n%s", diff)
	}

	// Cy has set nothing: told before anything runs, by /v1 and /api/chat.
	want := `endpoint \"byok\" needs your own API key: set it on the Connections page or with relay endpoints key byok`
	if code, body := chat(cy, "keyed"); code != 400 || !strings.Contains(keep(body), want) {
		t.Errorf("chat without a key: %d %s", code, body)
	}
	if code, body := s.rawCall(t, cy, "POST", "/api/chat", `{"agent_id":"keyed","text":"hi"}`); code != 400 || !strings.Contains(keep(body), want) {
		t.Errorf("/api/chat without a key: %d %s", code, body)
	}

	// Ann's keys list: which fields are set, never a value.
	code, body = s.rawCall(t, ann, "GET", "/api/endpoints/keys", "")
	if code != 200 || !strings.Contains(keep(body), `{"endpoint":"byok","fields":[{"name":"apiKey","set":true,"updated_at":"`) ||
		!strings.Contains(body, `{"endpoint":"ownurl","fields":[{"name":"baseURL","set":false,"updated_at":null}]}`) {
		t.Errorf("GET /api/endpoints/keys: %d %s", code, body)
	}

	// A field the endpoint does not take, an unknown endpoint, one that takes
	// nothing from users, and addresses the outbound guard refuses.
	for _, c := range []struct {
		path, body string
		code       int
		says       string
	}{
		{"/api/endpoints/byok/key", `{"baseURL":"http://127.0.0.1:1/v1"}`, 400, `"field":"baseURL"`},
		{"/api/endpoints/nope/key", `{"apiKey":"sk-x-1234567"}`, 404, `no endpoint \"nope\"`},
		{"/api/endpoints/openAI/key", `{"apiKey":"sk-x-1234567"}`, 400, "takes no key or base URL from its users"},
		{"/api/endpoints/ownurl/key", `{"baseURL":"ftp://example.com"}`, 400, "must be an http or https URL"},
		{"/api/endpoints/ownurl/key", `{"baseURL":"http://169.254.169.254/v1"}`, 400, "link-local"},
		{"/api/endpoints/ownurl/key", `{"baseURL":"http://10.1.2.3/v1"}`, 400, "private"},
		{"/api/endpoints/ownurl/key", `{}`, 400, "nothing to set"},
	} {
		if code, body := s.rawCall(t, ann, "PUT", c.path, c.body); code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("PUT %s %s: %d %s, want %d saying %s", c.path, c.body, code, body, c.code, c.says)
		}
	}

	// baseURL: user_provided goes to the user's own address, with the
	// configured key.
	if code, body := s.rawCall(t, bob, "PUT", "/api/endpoints/ownurl/key", fmt.Sprintf(`{"baseURL":"%s/mine/v1"}`, mine.URL)); code != 200 {
		t.Fatalf("PUT baseURL: %d %s", code, body)
	}
	if code, body := chat(bob, "routed"); code != 200 || !strings.Contains(keep(body), "Hello from upstream.") {
		t.Fatalf("chat on ownurl: %d %s", code, body)
	}
	if got := mine.requests(); len(got) != 1 || got[0].Path != "/mine/v1/chat/completions" || got[0].Header.Get("Authorization") != "Bearer sk-ownurl-fixed-key-4242" {
		t.Errorf("requests to the user's own base URL: %+v", got)
	}
	if code, body := chat(ann, "routed"); code != 400 || !strings.Contains(keep(body), `needs your own base URL`) {
		t.Errorf("ownurl without a base URL: %d %s", code, body)
	}

	// A changed key is used at once; a deleted one is asked for again.
	annNew := "sk-ann-new-key-3333333"
	noteSecret(t.Name()+" endpoint keys", annNew)
	if code, _ := s.rawCall(t, ann, "PUT", "/api/endpoints/byok/key", fmt.Sprintf(`{"apiKey":%q}`, annNew)); code != 200 {
		t.Fatalf("PUT new key: %d", code)
	}
	if code, body := chat(ann, "keyed"); code != 200 {
		t.Fatalf("chat with the new key: %d %s", code, body)
	}
	if got := shared.requests(); got[len(got)-1].Header.Get("Authorization") != "Bearer "+annNew {
		t.Errorf("after a change, sent %q", got[len(got)-1].Header.Get("Authorization"))
	}
	if code, _ := s.rawCall(t, ann, "DELETE", "/api/endpoints/byok/key", ""); code != 204 {
		t.Errorf("DELETE: %d", code)
	}
	if code, body := chat(ann, "keyed"); code != 400 || !strings.Contains(body, want) {
		t.Errorf("chat after DELETE: %d %s", code, body)
	}

	for _, secret := range []string{annKey, bobKey, annNew} {
		for _, b := range bodies {
			if strings.Contains(b, secret) {
				t.Errorf("an answer holds a user's key: %s", b)
			}
		}
		if strings.Contains(s.stderr.String(), secret) {
			t.Errorf("the log holds a user's key")
		}
	}
}

// storedKeys reads a user's stored values of an endpoint through the vault
// of the config, as the server would.
func storedKeys(t *testing.T, cfgPath, userID, endpoint string) map[string]string {
	t.Helper()
	var got map[string]string
	err := withServices(t.Context(), &env{IO: IO{Getenv: testEnv(nil)}, configPath: cfgPath}, func(a *app.App) error {
		var err error
		got, err = a.Vault.Vars(t.Context(), userID, vault.KindEndpoint, endpoint)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestEndpointsKeyCommand: relay endpoints key sets a user's own key (read
// from standard input) and base URL, refuses fields the endpoint does not
// take, and clears them; relay endpoints keys shows which are set.
func TestEndpointsKeyCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - {name: byok, baseURL: "https://llm.example.com/v1", apiKey: user_provided}
    - {name: both, baseURL: user_provided, apiKey: user_provided}
`, filepath.Join(dir, "data")))
	cli := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, stdin, append(args, "--config", cfg)...)
	}
	code, uid, stderr := cli("", "users", "add", "--email", "ann@example.com")
	if code != 0 {
		t.Fatalf("users add: %d %s", code, stderr)
	}
	uid = strings.TrimSpace(uid)
	secret := "sk-cli-own-key-5555555"
	noteSecret(t.Name(), secret)
	if code, out, stderr := cli(secret+"\n", "endpoints", "key", "byok", "--user", "ann@example.com", "--api-key-stdin"); code != 0 || strings.Contains(out+stderr, secret) {
		t.Fatalf("endpoints key: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := cli("", "endpoints", "key", "both", "--user", uid, "--base-url", "https://mine.example.com/v1"); code != 0 {
		t.Fatalf("endpoints key --base-url: %d %q", code, stderr)
	}
	got := storedKeys(t, cfg, uid, "byok")
	if diff := cmp.Diff(map[string]string{"apiKey": secret}, got); diff != "" {
		t.Errorf("stored for byok (-want +got):\n%s", diff)
	}
	if code, _, stderr := cli("", "endpoints", "key", "byok", "--user", uid, "--base-url", "https://elsewhere.example.com/v1"); code != 1 || !strings.Contains(stderr, "baseURL: endpoint \"byok\" does not take a baseURL") {
		t.Errorf("a field the endpoint does not take: %d %q", code, stderr)
	}
	if code, _, stderr := cli("", "endpoints", "key", "byok", "--user", uid); code != 2 {
		t.Errorf("nothing to set: %d %q", code, stderr)
	}
	code, out, stderr := cli("", "endpoints", "keys", "--user", uid)
	if code != 0 || strings.Contains(out, secret) || !strings.Contains(out, "byok") || !regexpMatch(`both\s+apiKey\s+false\s+-`, out) || !regexpMatch(`both\s+baseURL\s+true\s+\d{4}-`, out) {
		t.Errorf("endpoints keys: %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := cli("", "endpoints", "key", "byok", "--user", uid, "--clear"); code != 0 {
		t.Errorf("--clear: %d %q", code, stderr)
	}
	if got := storedKeys(t, cfg, uid, "byok"); len(got) != 0 {
		t.Errorf("after --clear: %v", got)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
