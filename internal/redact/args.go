package redact

import (
	"regexp"
	"strings"
)

// The command-line options whose values are secret (docs/config.md, "Secrets
// in relay config check"): `--api-key VALUE` (a flag whose name says key,
// token, secret, pass or credential, followed by a word that is no option)
// and `--token=VALUE` or `API_KEY=VALUE`.
var (
	secretFlag   = regexp.MustCompile(`(?i)^-{1,2}[a-z0-9_-]*(key|token|secret|pass|credential)[a-z0-9_-]*$`)
	secretAssign = regexp.MustCompile(`(?i)^(-{0,2}[a-z0-9_.-]*(key|token|secret|pass|credential)[a-z0-9_.-]*=)(.+)$`)
)

// ArgSecret says whether args[i] holds the value of a secret-looking option:
// it is `NAME=VALUE` with such a name (prefix is then `NAME=`), or the word
// after such a flag (prefix is then empty).
func ArgSecret(args []string, i int) (prefix, value string, ok bool) {
	a := args[i]
	if m := secretAssign.FindStringSubmatch(a); m != nil {
		return m[1], m[3], true
	}
	if i > 0 && secretFlag.MatchString(args[i-1]) && !strings.HasPrefix(a, "-") {
		return "", a, true
	}
	return "", "", false
}

// ArgSecrets returns the secret values in args (ArgSecret).
func ArgSecrets(args []string) []string {
	var out []string
	for i := range args {
		if _, v, ok := ArgSecret(args, i); ok {
			out = append(out, v)
		}
	}
	return out
}
