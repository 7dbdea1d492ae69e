package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/relay-ai/relay/internal/fault"
)

// DefaultFile is the file Load reads when neither --config, RELAY_CONFIG nor
// CONFIG_PATH names one; LibreChatFile is the next one it looks for.
const (
	DefaultFile   = "relay.yaml"
	LibreChatFile = "librechat.yaml"
)

// envOverrides are the environment variables that override the file, and the
// paths they set.
var envOverrides = []struct {
	name, path string
	set        func(c *Config, v string)
}{
	{"RELAY_ADDR", "server.addr", func(c *Config, v string) { c.Server.Addr = v }},
	{"RELAY_DATA_DIR", "server.data_dir", func(c *Config, v string) { c.Server.DataDir = v }},
	{"RELAY_DATABASE_URL", "database.url", func(c *Config, v string) { c.Database.URL = v }},
	{"RELAY_TIMEZONE", "server.timezone", func(c *Config, v string) { c.Server.Timezone = v }},
	{"RELAY_LOG_LEVEL", "server.log_level", func(c *Config, v string) { c.Server.LogLevel = v }},
}

// secretsKeyEnv holds the key of per-user secrets when the file sets none.
const secretsKeyEnv = "RELAY_SECRETS_KEY"

// Load reads the configuration, applies the environment and validates it.
//
// The file is path when it is not empty (the --config flag), else the file named
// by RELAY_CONFIG, else the one named by CONFIG_PATH (LibreChat's variable), else
// ./relay.yaml, else ./librechat.yaml when it exists; a file named by the first
// three must exist. Without a file, Load uses Default. Keys the file holds that
// Relay does not know are listed in Unknown, not errors. The file may be an existing
// librechat.yaml: ${VAR} in its values is expanded from getenv (except in
// mcpServers and in agent prompts), and LibreChat keys Relay does not use are
// listed in Ignored. Then RELAY_ADDR, RELAY_DATA_DIR, RELAY_DATABASE_URL,
// RELAY_TIMEZONE and RELAY_LOG_LEVEL override the file when set and not empty;
// RELAY_SECRETS_KEY is secrets.key when the file sets none.
// Command-line flags are the caller's to apply afterwards (then call Validate).
// Variables of the .env file beside the config file (of the working directory
// without one) count as environment where the real environment lacks them;
// Config.Getenv looks them up the same way.
//
// getenv nil means os.LookupEnv. Errors are fault.Invalid and name every problem
// with its dotted path and, where known, file:line:column; when the file also
// holds unknown keys, the error is an *InvalidError that lists them.
func Load(path string, getenv func(string) (string, bool)) (*Config, error) {
	return LoadWithEnvFile(path, "", getenv)
}

// LoadWithEnvFile is Load with the variables of envFile (the --env-file flag)
// in place of the .env file beside the config, when envFile is not empty.
// That file must exist, and since it is read first, it may name the config
// file itself (RELAY_CONFIG, CONFIG_PATH); the real environment still wins
// over it.
func LoadWithEnvFile(path, envFile string, getenv func(string) (string, bool)) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	var (
		dotEnv string
		vars   map[string]string
	)
	if envFile != "" {
		data, err := os.ReadFile(envFile)
		if err != nil {
			return nil, unreadable(err, "reading the --env-file %s", envFile)
		}
		dotEnv, vars = envFile, parseDotEnv(string(data))
		getenv = withDotEnv(getenv, vars)
	}
	file, from, err := find(path, getenv)
	if err != nil {
		return nil, err
	}
	if envFile == "" {
		dotEnv, vars, err = readDotEnv(filepath.Dir(file))
		if err != nil {
			return nil, err
		}
		getenv = withDotEnv(getenv, vars)
	}
	c := Default()
	c.DotEnv, c.getenv = dotEnv, getenv
	d := newDecoder(file, getenv)
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, unreadable(err, "reading config file %s", file)
		}
		doc, err := oneDocument(file, data)
		if err != nil {
			return nil, err
		}
		c.Path, c.PathFrom = file, from
		d.decodeFile(doc, c)
		c.MCPOrder = d.order["mcpServers"]
		slices.Sort(d.ignored)
		c.Ignored = slices.Compact(d.ignored)
		c.Unknown = d.unknown
	}
	c.where = d.where
	if file != "" {
		c.Unknown = append(c.Unknown, c.libreChatValues()...)
	}
	for _, o := range envOverrides {
		if v, ok := getenv(o.name); ok && v != "" {
			o.set(c, v)
			c.where[o.path] = "env " + o.name
		}
	}
	if v, ok := getenv(secretsKeyEnv); ok && v != "" && c.SecretKeys.Key == "" {
		c.SecretKeys.Key = v
		c.where["secrets.key"] = "env " + secretsKeyEnv
	}
	c.complete()
	if err := c.validate(d.problems, d.bad); err != nil {
		if len(c.Unknown) > 0 {
			return nil, &InvalidError{Err: err, Unknown: c.Unknown}
		}
		return nil, err
	}
	return c, nil
}

// InvalidError is the error of a config file that holds keys Relay does not
// know and does not validate: Err names the problems, and Unknown lists
// those keys as Config.Unknown does, since a misspelt key often explains a
// problem (the value it was meant to set is missing).
type InvalidError struct {
	Err     error
	Unknown []string
}

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// libreChatValues returns a warning, with its position, for each value the
// file gives that LibreChat accepts and Relay does not have, so that such a
// librechat.yaml loads as it is (docs/config.md "Unknown keys").
func (c *Config) libreChatValues() []string {
	var out []string
	if p := c.WebSearch.SearchProvider; slices.Contains(libreChatSearchProviders, p) {
		out = append(out, fmt.Sprintf("%s: webSearch.searchProvider: %q is a LibreChat search provider Relay does not have; web_search answers that it is not available (known: %s)",
			c.whereOf("webSearch.searchProvider"), p, strings.Join(searchProviders, ", ")))
	}
	for _, t := range c.Endpoints.titleSettings() {
		if e := t.TitleEndpoint; e != "" && !c.Endpoints.isProvider(e) && isLibreChatEndpoint(e) {
			at := t.path + ".titleEndpoint"
			out = append(out, fmt.Sprintf("%s: %s: %q is a LibreChat endpoint Relay does not have; titles are made as if titleEndpoint were not set (known: %s)",
				c.whereOf(at), at, e, strings.Join(c.Providers(), ", ")))
		}
	}
	return out
}

// Strict returns the error of a strict check (`relay config check --strict`):
// each warning of Unknown as a problem at its position, or nil when there are
// none. The LibreChat keys listed in Ignored never make it fail. The caller
// decides when warnings are errors; Load never does.
func (c *Config) Strict() error {
	if len(c.Unknown) == 0 {
		return nil
	}
	fe := &fault.Error{Kind: fault.Invalid, Message: "invalid config " + c.Path + " (--strict): unknown keys"}
	for _, u := range c.Unknown {
		where, msg, _ := strings.Cut(u, ": ")
		fe.Fields = append(fe.Fields, fault.FieldError{Field: where, Message: msg})
	}
	return fe
}

// find returns the config file to read, or "" for defaults only, in the order
// of docs/config.md "Where the configuration comes from".
// from says what chose it: "--config", "RELAY_CONFIG", "CONFIG_PATH" or
// "working directory".
func find(path string, getenv func(string) (string, bool)) (file, from string, err error) {
	if path != "" {
		return path, "--config", mustExist(path, "--config")
	}
	for _, name := range []string{"RELAY_CONFIG", "CONFIG_PATH"} {
		if p, ok := getenv(name); ok && p != "" {
			if name == "CONFIG_PATH" && (hasPrefixFold(p, "http://") || hasPrefixFold(p, "https://")) {
				return "", "", fault.New(fault.Invalid, "config file %s (from CONFIG_PATH): Relay reads a local file, not a URL; download it and name the file", p)
			}
			return p, name, mustExist(p, name)
		}
	}
	for _, f := range []string{DefaultFile, LibreChatFile} {
		switch _, err := os.Stat(f); {
		case err == nil:
			return f, "working directory", nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", "", unreadable(err, "config file %s", f)
		}
	}
	return "", "", nil
}

func mustExist(path, from string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fault.New(fault.Invalid, "config file %s (from %s) does not exist", path, from)
		}
		return unreadable(err, "config file %s (from %s)", path, from)
	}
	if fi.IsDir() {
		return fault.New(fault.Invalid, "config file %s (from %s) is a directory", path, from)
	}
	return nil
}

// unreadable is the error of a file that could not be read or looked at:
// what was being done, naming the file, then the reason the system gives
// ("no such file or directory", "is a directory", "permission denied"),
// without the path again. The message is all that `relay` prints of a
// fault.Invalid error (see describe in internal/cli), so it says both.
func unreadable(err error, format string, args ...any) error {
	why := err.Error()
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		why = pe.Err.Error()
	}
	return fault.New(fault.Invalid, "%s: %s", fmt.Sprintf(format, args...), why)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxProblem turns a yaml.v3 parse error into file:line: message. yaml.v3
// gives the line of a syntax error but not its column.
// oneDocument reads the file's YAML, which must be one document: what would
// follow a second `---` would be left out unread (LibreChat refuses such a
// file).
func oneDocument(file string, data []byte) (*yaml.Node, error) {
	invalid := func(fe fault.FieldError) error {
		return &fault.Error{Kind: fault.Invalid, Message: "invalid config " + file, Fields: []fault.FieldError{fe}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, invalid(syntaxProblem(file, err))
	}
	for { // empty documents after it (a `---` at the end) are nothing
		var more yaml.Node
		switch err := dec.Decode(&more); {
		case errors.Is(err, io.EOF):
			return &doc, nil
		case err != nil:
			return nil, invalid(syntaxProblem(file, err))
		case len(more.Content) > 0 && !(more.Content[0].Kind == yaml.ScalarNode && more.Content[0].Tag == "!!null"):
			return nil, invalid(fault.FieldError{Field: fmt.Sprintf("%s:%d", file, more.Content[0].Line),
				Message: "a second YAML document (after ---): a config file is one document"})
		}
	}
}

func syntaxProblem(file string, err error) fault.FieldError {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fault.FieldError{Field: file + ":" + m[1], Message: "malformed YAML: " + msg[len(m[0]):]}
	}
	return fault.FieldError{Field: file, Message: "malformed YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// complete fills the defaults that depend on what else is set.
func (c *Config) complete() {
	c.Server.LogLevel = strings.ToLower(c.Server.LogLevel)
	c.Server.LogFormat = strings.ToLower(c.Server.LogFormat)
	// The default step limit yields to a lower cap rather than making the config invalid.
	if a := &c.Endpoints.Agents; a.RecursionLimit == Default().Endpoints.Agents.RecursionLimit && a.MaxRecursionLimit >= 1 && a.MaxRecursionLimit < a.RecursionLimit {
		a.RecursionLimit = a.MaxRecursionLimit
	}
	if c.Memory.Personalize == nil {
		c.Memory.Personalize = ptr(true)
	}
	if c.Auth.OIDC.AutoCreate == nil {
		c.Auth.OIDC.AutoCreate = ptr(true)
	}
	if c.Auth.OIDC.Label == "" {
		c.Auth.OIDC.Label = Default().Auth.OIDC.Label
	}
	for name, s := range c.MCPServers {
		if s.Type == "http" {
			s.Type = TransportStreamableHTTP
		}
		if s.Startup == nil {
			s.Startup = ptr(true)
		}
		if s.SendUserID == nil {
			s.SendUserID = ptr(true)
		}
		if s.Scope == "" {
			s.Scope = ScopeApp
			if s.usesUserPlaceholder() || s.UsesOAuth() || len(s.CustomUserVars) > 0 {
				s.Scope = ScopeUser
			}
		}
		c.MCPServers[name] = s
	}
}

// usesUserPlaceholder reports whether the server's env, args, headers or url
// name the user, which makes it one connection per user.
func (s MCPServer) usesUserPlaceholder() bool {
	const p = "{{LIBRECHAT_USER_"
	if strings.Contains(s.URL, p) || slices.ContainsFunc(s.Args, func(a string) bool { return strings.Contains(a, p) }) {
		return true
	}
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for _, v := range m {
			if strings.Contains(v, p) {
				return true
			}
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Getenv looks a variable up in the environment Load used: the real one, then
// the .env file it read (DotEnv).
func (c *Config) Getenv(name string) (string, bool) {
	if c.getenv == nil {
		return os.LookupEnv(name)
	}
	return c.getenv(name)
}
