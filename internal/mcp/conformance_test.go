package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// The conformance test runs the official MCP conformance suite (a peer, see
// shared/peers) against cmd/mcp-conformance-client, a small program that plays
// the suite's client scenarios with this package. Every client scenario of the
// suite (`list --client`) runs on its own, so that each has its own verdict; the
// scenarios Relay does not support yet are listed in expectedFailuresFile and
// must fail, so that the list shrinks as features land.

const expectedFailuresFile = "testdata/conformance-expected-failures.txt"

// conformanceMustPass are the scenarios Relay's client supports: they may never
// be listed as expected failures.
var conformanceMustPass = []string{
	"initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults",
	// OAuth (docs/mcp.md#oauth).
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/pre-registration", "auth/resource-mismatch",
	"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
	"auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/offline-access-scope", "auth/offline-access-not-supported", "auth/client-credentials-basic",
}

const (
	// suiteClientTimeout is how long the suite lets the client run (its --timeout).
	suiteClientTimeout = 20 * time.Second
	// suiteRunTimeout bounds one run of the suite for one scenario, whatever the
	// suite does.
	suiteRunTimeout = 40 * time.Second
	// conformanceTimeout bounds the whole test.
	conformanceTimeout = 200 * time.Second
	// scenariosAtOnce is how many scenarios run at once. sse-retry checks the
	// client's reconnection delay to within 200 ms, so the machine should not be
	// swamped.
	scenariosAtOnce = 4
)

func TestConformance(t *testing.T) {
	node := mcptest.Peer(t, "PEER_NODE22")
	suite := mcptest.Peer(t, "PEER_CONFORMANCE")

	ctx, cancel := context.WithTimeout(t.Context(), conformanceTimeout)
	defer cancel()

	expected, err := readExpectedFailures(expectedFailuresFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range conformanceMustPass {
		if _, ok := expected[name]; ok {
			t.Fatalf("%s lists %s, which Relay's client must pass", expectedFailuresFile, name)
		}
	}

	client := buildConformanceClient(ctx, t)
	scenarios, err := clientScenarios(ctx, node, suite)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the suite has %d client scenarios", len(scenarios))
	for _, name := range conformanceMustPass {
		if !slices.Contains(scenarios, name) {
			t.Errorf("the suite no longer has client scenario %s", name)
		}
	}
	for name := range expected {
		if !slices.Contains(scenarios, name) {
			t.Errorf("%s lists %s, which is not a client scenario of the suite: remove it", expectedFailuresFile, name)
		}
	}

	results := make([]scenarioResult, len(scenarios))
	sem := make(chan struct{}, scenariosAtOnce)
	var wg sync.WaitGroup
	for i, name := range scenarios {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, failing := expected[name]
			results[i] = runScenario(ctx, node, suite, client, name, t.TempDir())
			if !failing && !results[i].Passed && ctx.Err() == nil {
				// A scenario that should pass gets a second run, since sse-retry's
				// timing check can miss on a loaded machine.
				first := results[i]
				results[i] = runScenario(ctx, node, suite, client, name, t.TempDir())
				results[i].Earlier = &first
			}
		})
	}
	wg.Wait()

	for i, name := range scenarios {
		r := results[i]
		t.Run(name, func(t *testing.T) {
			if r.Earlier != nil {
				t.Logf("first run failed; second run follows\n%s", r.Earlier.report())
			}
			t.Log(r.report())
			reason, failing := expected[name]
			switch {
			case r.Err != nil:
				t.Errorf("running the suite: %v", r.Err)
			case failing && r.Passed:
				t.Errorf("scenario %s now passes: remove it from %s (it was listed because: %s)", name, filepath.Base(expectedFailuresFile), reason)
			case failing:
				t.Logf("expected failure: %s", reason)
			case !r.Passed:
				t.Errorf("scenario %s fails; it must pass (or, for a feature Relay lacks, be listed in %s with the reason)", name, filepath.Base(expectedFailuresFile))
			}
		})
	}
}

// readExpectedFailures reads scenario names, one a line, each with the reason
// after a `#`. Lines that are only a comment, and blank lines, are skipped.
func readExpectedFailures(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading expected failures: %w", err)
	}
	names := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, reason, _ := strings.Cut(sc.Text(), "#")
		name := strings.TrimSpace(line)
		if name == "" {
			continue
		}
		reason = strings.TrimSpace(reason)
		switch {
		case strings.ContainsAny(name, " \t"):
			return nil, fmt.Errorf("%s:%d: want one scenario name, got %q", path, n, name)
		case reason == "":
			return nil, fmt.Errorf("%s:%d: %s has no `# reason`", path, n, name)
		}
		if _, dup := names[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", path, n, name)
		}
		names[name] = reason
	}
	return names, sc.Err()
}

// buildConformanceClient builds cmd/mcp-conformance-client into a temporary directory.
func buildConformanceClient(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-conformance-client")
	// The suite splits --command on spaces.
	if strings.ContainsAny(bin, " \t") {
		t.Skipf("the temporary directory %q has a space, which the suite's --command cannot carry", bin)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/relay-ai/relay/cmd/mcp-conformance-client")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the conformance client: %v\n%s", err, out)
	}
	return bin
}

// suiteListLine is one scenario in the suite's list of client scenarios:
// `  - name [spec versions]`.
var suiteListLine = regexp.MustCompile(`(?m)^\s+- (\S+)(?: \[[^\]]*\])?\s*$`)

// clientScenarios returns the names of the suite's client scenarios.
func clientScenarios(ctx context.Context, node, suite string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, suiteRunTimeout)
	defer cancel()
	out, err := suiteCommand(ctx, node, suite, "list", "--client").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the client scenarios: %w", err)
	}
	var names []string
	for _, m := range suiteListLine.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("listing the client scenarios: no scenario in the suite's answer:\n%s", out)
	}
	return names, nil
}

// scenarioResult is the outcome of one scenario.
type scenarioResult struct {
	Name    string
	Passed  bool
	Err     error        // the suite could not be run, or timed out
	Checks  []suiteCheck // what the suite's server saw, from its checks.json
	Client  string       // the client program's stderr
	Output  string       // the suite's own output, when it saved no checks
	Took    time.Duration
	Earlier *scenarioResult // a failed first run, for a scenario that must pass
}

// suiteCheck is one entry of the suite's checks.json.
type suiteCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING or INFO
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// runScenario runs the suite for one scenario with the client program. The
// suite passes a scenario when it exits 0: no check failed or warned, and the
// client neither failed nor timed out. A scenario must also have at least one
// successful check, since `initialize` records none when no client connects.
func runScenario(ctx context.Context, node, suite, client, name, dir string) scenarioResult {
	ctx, cancel := context.WithTimeout(ctx, suiteRunTimeout)
	defer cancel()
	start := time.Now()
	cmd := suiteCommand(ctx, node, suite, "client",
		"--command", client,
		"--scenario", name,
		"--timeout", strconv.FormatInt(suiteClientTimeout.Milliseconds(), 10),
		"--output-dir", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever the suite left behind in its group goes with it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	r := scenarioResult{Name: name, Took: time.Since(start).Round(time.Millisecond)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Err = fmt.Errorf("no verdict after %s: %w", suiteRunTimeout, context.Cause(ctx))
	case err != nil && !errors.As(err, &exit):
		r.Err = err
	}
	r.Checks, r.Client = savedResults(dir)
	if r.Checks == nil {
		r.Output = out.String()
	}
	r.Passed = err == nil && r.Err == nil && slices.ContainsFunc(r.Checks, func(c suiteCheck) bool { return c.Status == "SUCCESS" })
	return r
}

// savedResults reads the checks and the client's stderr that the suite saved
// under dir (in <scenario>-<time>/, where a scenario name may hold a slash).
func savedResults(dir string) ([]suiteCheck, string) {
	var checks []suiteCheck
	var stderr string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		switch d.Name() {
		case "checks.json":
			if data, err := os.ReadFile(path); err == nil {
				_ = json.Unmarshal(data, &checks)
			}
		case "stderr.txt":
			if data, err := os.ReadFile(path); err == nil {
				stderr = strings.TrimSpace(string(data))
			}
		}
		return nil
	})
	return checks, stderr
}

// report says what happened in a scenario, for the test log.
func (r scenarioResult) report() string {
	var b strings.Builder
	verdict := "FAIL"
	if r.Passed {
		verdict = "PASS"
	}
	fmt.Fprintf(&b, "%s %s (%s)", verdict, r.Name, r.Took)
	for _, c := range r.Checks {
		if c.Status == "INFO" {
			continue
		}
		fmt.Fprintf(&b, "\n  %-7s %s: %s", c.Status, c.ID, c.Description)
		if c.ErrorMessage != "" {
			fmt.Fprintf(&b, "\n          %s", c.ErrorMessage)
		}
	}
	if r.Client != "" {
		fmt.Fprintf(&b, "\n  client stderr: %s", r.Client)
	}
	if r.Output != "" {
		fmt.Fprintf(&b, "\n  suite output:\n%s", r.Output)
	}
	return b.String()
}

// suiteCommand runs the suite under node in its own process group, which is
// killed whole when ctx ends, so that neither the suite's servers nor the client
// it started outlive the test.
func suiteCommand(ctx context.Context, node, suite string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, node, append([]string{suite}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
