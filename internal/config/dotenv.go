package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// DotEnvFile is the file of variables read beside the config file, as
// LibreChat reads its .env (docs/config.md, "The .env file").
const DotEnvFile = ".env"

var dotEnvLine = regexp.MustCompile(`^\s*(?:export\s+)?([\w.-]+)\s*=\s*(.*)$`)

// parseDotEnv reads KEY=VALUE lines as LibreChat's dotenv does: blank lines,
// lines starting with # and lines without = are skipped; `export ` before the
// name is allowed; a value in single quotes or backquotes is taken as written,
// one in double quotes has \n turned into a newline, and both may span lines;
// an unquoted value is trimmed and ends at " #". The last of repeated names wins.
func parseDotEnv(text string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		m := dotEnvLine.FindStringSubmatch(lines[i])
		if m == nil || strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
			continue
		}
		name, v := m[1], m[2]
		if v != "" && strings.ContainsRune(`"'`+"`", rune(v[0])) {
			q := v[:1]
			body := v[1:]
			// A quoted value may go on over the next lines until its closing quote.
			for j := i; ; {
				if k := strings.Index(body, q); k >= 0 {
					v, i = body[:k], j
					break
				}
				if j+1 >= len(lines) {
					v = strings.TrimSpace(m[2]) // never closed: taken as written
					break
				}
				j++
				body += "\n" + lines[j]
			}
			if q == `"` {
				v = strings.ReplaceAll(strings.ReplaceAll(v, `\n`, "\n"), `\r`, "\r")
			}
			out[name] = v
			continue
		}
		if k := strings.Index(v, " #"); k >= 0 {
			v = v[:k]
		}
		if strings.HasPrefix(v, "#") {
			v = ""
		}
		out[name] = strings.TrimSpace(v)
	}
	return out
}

// readDotEnv reads the .env file of dir; a missing file is no variables.
func readDotEnv(dir string) (path string, vars map[string]string, err error) {
	path = filepath.Join(dir, DotEnvFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, unreadable(err, "reading %s", path)
	}
	return path, parseDotEnv(string(data)), nil
}

// withDotEnv looks a name up in getenv first: the real environment wins over
// the file, as with LibreChat's dotenv.
func withDotEnv(getenv func(string) (string, bool), vars map[string]string) func(string) (string, bool) {
	if len(vars) == 0 {
		return getenv
	}
	return func(name string) (string, bool) {
		if v, ok := getenv(name); ok {
			return v, true
		}
		v, ok := vars[name]
		return v, ok
	}
}
