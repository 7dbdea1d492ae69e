package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// userVars is the users' customUserVars values, by user and server, as Relay's
// vault would give them.
type userVars struct {
	mu   sync.Mutex
	vals map[string]map[string]string // user → name → value
}

func (v *userVars) Vars(_ context.Context, _, userID string) (map[string]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]string{}
	for k, val := range v.vals[userID] {
		out[k] = val
	}
	return out, nil
}

func (v *userVars) Authorization(string, *mcp.User) mcp.Authorization { return nil }

func (v *userVars) set(user, name, value string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.vals == nil {
		v.vals = map[string]map[string]string{}
	}
	if v.vals[user] == nil {
		v.vals[user] = map[string]string{}
	}
	v.vals[user][name] = value
}

// TestCustomUserVarsReachTheServerPerUser: each user's connection carries that
// user's own value of a customUserVars header; a user without one is told to
// set it, without the server being asked, and is connected once they have.
func TestCustomUserVarsReachTheServerPerUser(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	vars := &userVars{}
	vars.set("ann", "MY_KEY", "ann-key\r\nX-Evil: 1")
	vars.set("bob", "MY_KEY", "bob-key")
	srv := mcp.ServerConfig{
		Name: "keyed", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeUser,
		Timeout: 10 * time.Second, InitTimeout: 10 * time.Second, Headers: map[string]string{"X-User": "{{MY_KEY}}"},
		UserVars: []mcp.UserVar{{Name: "MY_KEY"}},
	}
	m := mcp.NewManager([]mcp.ServerConfig{srv}, mcp.Options{Users: vars})
	t.Cleanup(func() { _ = m.Close() })
	ctx := t.Context()

	who := func(user string) (mcptest.Whoami, error) {
		res, err := m.Call(ctx, &mcp.User{ID: user}, mcp.Key("whoami", "keyed"), json.RawMessage(`{}`))
		if err != nil {
			return mcptest.Whoami{}, err
		}
		var w mcptest.Whoami
		err = json.Unmarshal([]byte(mcp.Format(res, mcp.FamilyText).Text), &w)
		return w, err
	}
	for user, want := range map[string]string{"ann": "ann-keyX-Evil: 1", "bob": "bob-key"} {
		w, err := who(user)
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if w.Header != want {
			t.Errorf("%s: the server saw X-User %q, want %q (the user's own value, without line breaks)", user, w.Header, want)
		}
	}

	_, err := who("cid")
	var need *mcp.VarsRequiredError
	if !errors.As(err, &need) || !mcp.NeedsUser(err) || strings.Join(need.Missing, ",") != "MY_KEY" {
		t.Fatalf("cid without a value: err = %v; want a VarsRequiredError naming MY_KEY", err)
	}
	if text := mcp.FailureText(mcp.Key("whoami", "keyed"), err); !strings.Contains(text, "needs your settings: set MY_KEY") {
		t.Errorf("the model reads %q; want it to say what the user must set", text)
	}
	st := m.Status(&mcp.User{ID: "cid"})[0]
	if st.State != mcp.StateAuthRequired {
		t.Errorf("cid's state = %s, want %s", st.State, mcp.StateAuthRequired)
	}
	// Another user's listing stands in for cid's tools, so that a model can
	// still call one and read what cid must do.
	if ts, err := m.Tools(ctx, "keyed", &mcp.User{ID: "cid"}); err != nil || len(ts) == 0 {
		t.Errorf("Tools for cid = %d tools, %v; want the known tools", len(ts), err)
	}

	vars.set("cid", "MY_KEY", "cid-key")
	if w, err := who("cid"); err != nil || w.Header != "cid-key" {
		t.Errorf("cid after setting the value: %+v, %v; want X-User cid-key at once", w, err)
	}
	vars.set("ann", "MY_KEY", "ann-new")
	m.Disconnect("keyed", "ann")
	if w, err := who("ann"); err != nil || w.Header != "ann-new" {
		t.Errorf("ann after a change and Disconnect: %+v, %v; want X-User ann-new", w, err)
	}
}

// TestCustomUserVarsChangedElsewhere: values changed where this Manager was
// not told (another Relay process) reach the server on the next use after
// VarsRecheck, on a new connection; values taken away make the user set them.
func TestCustomUserVarsChangedElsewhere(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	vars := &userVars{}
	vars.set("ann", "MY_KEY", "ann-key")
	srv := mcp.ServerConfig{
		Name: "keyed", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeUser,
		Timeout: 10 * time.Second, InitTimeout: 10 * time.Second, Headers: map[string]string{"X-User": "{{MY_KEY}}"},
		UserVars: []mcp.UserVar{{Name: "MY_KEY"}},
	}
	m := mcp.NewManager([]mcp.ServerConfig{srv}, mcp.Options{Users: vars, VarsRecheck: time.Nanosecond})
	t.Cleanup(func() { _ = m.Close() })
	ann := &mcp.User{ID: "ann"}
	who := func() (string, error) {
		res, err := m.Call(t.Context(), ann, mcp.Key("whoami", "keyed"), json.RawMessage(`{}`))
		if err != nil {
			return "", err
		}
		var w mcptest.Whoami
		err = json.Unmarshal([]byte(mcp.Format(res, mcp.FamilyText).Text), &w)
		return w.Header, err
	}
	for _, want := range []string{"ann-key", "ann-key"} { // unchanged: the same values, the same connection
		if got, err := who(); err != nil || got != want {
			t.Fatalf("X-User %q, %v; want %q", got, err, want)
		}
	}
	vars.set("ann", "MY_KEY", "ann-rotated")
	if got, err := who(); err != nil || got != "ann-rotated" {
		t.Errorf("after a change made elsewhere: X-User %q, %v; want ann-rotated", got, err)
	}
	vars.mu.Lock()
	delete(vars.vals["ann"], "MY_KEY")
	vars.mu.Unlock()
	var need *mcp.VarsRequiredError
	if _, err := who(); !errors.As(err, &need) {
		t.Errorf("after the value was removed elsewhere: %v; want a VarsRequiredError", err)
	}
}

// TestResolveUserVarsByPlace: a customUserVars value is encoded for its place
// in the URL, kept whole in env, and never put into args.
func TestResolveUserVarsByPlace(t *testing.T) {
	s := mcp.ServerConfig{
		Name: "x", Scope: mcp.ScopeUser, UserVars: []mcp.UserVar{{Name: "TOKEN"}, {Name: "UNSET"}},
		URL:  "https://mcp.example/t/{{TOKEN}}?k={{TOKEN}}",
		Args: []string{"--token={{TOKEN}}"},
		Env:  map[string]string{"TOKEN": "{{TOKEN}}", "OTHER": "{{UNDECLARED}}"},
	}
	got := s.ResolveVars(&mcp.User{ID: "u"}, map[string]string{"TOKEN": "a b/&c"}, nil)
	for field, c := range map[string]struct{ have, want string }{
		"url":        {got.URL, "https://mcp.example/t/a%20b%2F&c?k=a+b%2F%26c"},
		"arg":        {got.Args[0], "--token={{TOKEN}}"},
		"env":        {got.Env["TOKEN"], "a b/&c"},
		"undeclared": {got.Env["OTHER"], "{{UNDECLARED}}"},
	} {
		if c.have != c.want {
			t.Errorf("%s = %q, want %q", field, c.have, c.want)
		}
	}
	if missing := s.MissingVars(map[string]string{}); strings.Join(missing, ",") != "TOKEN" {
		t.Errorf("MissingVars = %v; want TOKEN (UNSET is declared but not used)", missing)
	}
}

// TestUserVarsMaskedInTheURL: a user's value put into the server's URL is
// masked in what a failed connection says, in the call's error and in the
// server's status, however the URL quotes it (as it is, path-escaped), short
// or long, token-like or not.
func TestUserVarsMaskedInTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every connection fails, quoting the URL
	vars := &userVars{}
	values := map[string]string{"ann": "correcthorsebatterystaple", "bob": "Bob Pass/42!", "cid": "short7"}
	for user, v := range values {
		vars.set(user, "MY_TOKEN", v)
	}
	srv := mcp.ServerConfig{
		Name: "pathed", Transport: mcp.TransportStreamableHTTP, URL: "http://" + addr + "/{{MY_TOKEN}}/mcp", Scope: mcp.ScopeUser,
		Timeout: 5 * time.Second, InitTimeout: 5 * time.Second, UserVars: []mcp.UserVar{{Name: "MY_TOKEN"}},
	}
	m := mcp.NewManager([]mcp.ServerConfig{srv}, mcp.Options{Users: vars})
	t.Cleanup(func() { _ = m.Close() })
	for user, v := range values {
		_, err := m.Call(t.Context(), &mcp.User{ID: user}, mcp.Key("whoami", "pathed"), json.RawMessage(`{}`))
		if err == nil {
			t.Fatalf("%s: the call reached a closed port", user)
		}
		said := []string{err.Error(), mcp.FailureText(mcp.Key("whoami", "pathed"), err), m.Status(&mcp.User{ID: user})[0].LastError}
		for _, s := range said {
			for _, form := range []string{v, url.PathEscape(v)} {
				if strings.Contains(s, form) {
					t.Errorf("%s: %q shows the value %q", user, s, form)
				}
			}
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %q does not say where it failed", user, err)
		}
	}
}
