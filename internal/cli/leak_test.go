package cli

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The logs of this package's tests are where `relay serve` and the CLI commands
// write for real. Every helper that runs Main hands its stderr to suiteLogs, and
// every secret a test gives Relay (the bootstrap key, API keys and header
// values of the configs it writes, secret-looking variables) is noted in
// suiteSecrets. After the whole run, TestMain fails it if any log holds any of
// them: docs/config.md, "Secrets in logs and errors".

// capture is the stderr of one command of one test.
type capture struct {
	test string
	out  string
}

var (
	suiteMu      sync.Mutex
	suiteLogs    []capture
	suiteSecrets = map[string]string{testKey: "testKey"}
)

// keepLog adds the stderr of a command run by t to what TestMain checks.
func keepLog(t testing.TB, out string) {
	suiteMu.Lock()
	defer suiteMu.Unlock()
	suiteLogs = append(suiteLogs, capture{test: t.Name(), out: out})
}

// minLogSecret is the length of the shortest secret the log masks
// (docs/config.md, "Secrets in logs and errors"): shorter values are not
// looked for.
const minLogSecret = 8

// noteSecret adds values that must never be logged, with where they came from.
func noteSecret(from string, values ...string) {
	suiteMu.Lock()
	defer suiteMu.Unlock()
	for _, v := range values {
		if len(v) >= minLogSecret && !strings.Contains(v, "${") && !strings.Contains(v, "{{") {
			suiteSecrets[v] = from
		}
	}
}

// secretLine is a config line whose value is a secret: apiKey, a key or token
// header, an Authorization header.
var secretLine = regexp.MustCompile(`(?im)^[\s-]*"?[A-Za-z0-9_-]*(apikey|api-key|api_key|authorization|token|secret|password)"?\s*:\s*(.+?)\s*$`)

// userPass is the password of a URL.
var userPass = regexp.MustCompile(`://[^/?#:@\s]+:([^/?#@\s]+)@`)

// noteConfigSecrets notes the secrets of a config file's text.
func noteConfigSecrets(t testing.TB, body string) {
	from := t.Name() + " config"
	for _, m := range secretLine.FindAllStringSubmatch(body, -1) {
		v := strings.Trim(m[2], `"'`)
		if v == "" || strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") || v == "user_provided" {
			continue
		}
		noteSecret(from, v)
		if _, rest, ok := strings.Cut(v, " "); ok {
			noteSecret(from, rest) // the credentials of "Bearer xyz"
		}
	}
	for _, m := range userPass.FindAllStringSubmatch(body, -1) {
		noteSecret(from, m[1])
	}
}

// secretVar is the name of a variable whose value is a secret.
var secretVar = regexp.MustCompile(`(?i)key|token|secret|password`)

// noteVarSecrets notes the values of secret-looking variables.
func noteVarSecrets(t testing.TB, vars map[string]string) {
	for k, v := range vars {
		if secretVar.MatchString(k) {
			noteSecret(t.Name()+" "+k, v)
		}
	}
}

// leaks lists each secret found in a kept log, with the test that wrote it.
func leaks() []string {
	suiteMu.Lock()
	defer suiteMu.Unlock()
	var out []string
	for _, c := range suiteLogs {
		for v, from := range suiteSecrets {
			if i := strings.Index(c.out, v); i >= 0 {
				line := c.out[strings.LastIndexByte(c.out[:i], '\n')+1:]
				line, _, _ = strings.Cut(line, "\n")
				out = append(out, fmt.Sprintf("%s logged the secret of %s: %s", c.test, from, line))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	suiteMu.Lock()
	n, s := len(suiteLogs), len(suiteSecrets)
	suiteMu.Unlock()
	if found := leaks(); len(found) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: secrets in the logs (%d logs checked for %d secrets):\n  %s\n", n, s, strings.Join(found, "\n  "))
		code = 1
	} else if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "no secret in %d logs (checked for %d secrets)\n", n, s)
	}
	os.Exit(code)
}
