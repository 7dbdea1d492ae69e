// Package arch holds no code, only the test that keeps Relay's packages in
// the layers docs/architecture.md lists: a package imports only packages in
// lower layers, apart from the exceptions listed there with their reasons.
package arch

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// edge is one import: the package from imports the package to. Both are
// paths inside the module, without the module's path.
type edge struct{ from, to string }

// rules are the layers and exceptions read from docs/architecture.md.
type rules struct {
	// layer is the layer of each listed path, 0 the lowest.
	layer map[string]int
	// except holds the allowed imports that break the rule, with the reason.
	except map[edge]string
}

// parseRules reads the fenced blocks "layers" and "exceptions" of doc. In the
// first, each line not starting with # is one layer, lowest first, of paths
// separated by spaces; in the second, each such line is "importer imported
// # reason".
func parseRules(doc string) (*rules, error) {
	blocks := fencedBlocks(doc)
	layers, ok := blocks["layers"]
	if !ok {
		return nil, errors.New("no ```layers block")
	}
	r := &rules{layer: map[string]int{}, except: map[edge]string{}}
	n := 0
	for _, line := range layers {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, p := range strings.Fields(line) {
			p = strings.TrimSuffix(p, "/")
			if _, dup := r.layer[p]; dup {
				return nil, fmt.Errorf("%s is listed twice", p)
			}
			r.layer[p] = n
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("the ```layers block lists no layer")
	}
	for _, line := range blocks["exceptions"] {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		imports, reason, _ := strings.Cut(line, "#")
		f := strings.Fields(imports)
		if len(f) != 2 || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("exception %q: want \"importer imported # reason\"", line)
		}
		r.except[edge{f[0], f[1]}] = strings.TrimSpace(reason)
	}
	return r, nil
}

// fencedBlocks returns the lines of each fenced code block of doc by its info
// string.
func fencedBlocks(doc string) map[string][]string {
	out := map[string][]string{}
	var name string
	in := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, name = true, strings.TrimSpace(strings.TrimPrefix(line, "```"))
			if _, ok := out[name]; !ok {
				out[name] = []string{}
			}
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in:
			out[name] = append(out[name], line)
		}
	}
	return out
}

// place returns the listed path that covers pkg (the longest listed path
// equal to pkg or one of its parents) and its layer.
func (r *rules) place(pkg string) (path string, layer int, ok bool) {
	for p := pkg; ; {
		if l, ok := r.layer[p]; ok {
			return p, l, true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return "", 0, false
		}
		p = p[:i]
	}
}

// check returns what breaks the rules in imports, which maps each package of
// the module to the packages of the module it imports: a package in no layer,
// an import of a package in a higher layer or in another component of the
// same layer, a listed path that covers no package, and an exception whose
// import is gone.
func (r *rules) check(imports map[string][]string) []string {
	var problems []string
	used := map[edge]bool{}
	covers := map[string]bool{}
	for _, pkg := range sortedKeys(imports) {
		path, layer, ok := r.place(pkg)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is in no layer of docs/architecture.md", pkg))
			continue
		}
		covers[path] = true
		for _, imp := range imports[pkg] {
			ipath, ilayer, ok := r.place(imp)
			if !ok || ipath == path || ilayer < layer {
				continue // an unplaced package is reported as itself
			}
			e := edge{pkg, imp}
			if _, ok := r.except[e]; ok {
				used[e] = true
				continue
			}
			if ilayer == layer {
				problems = append(problems, fmt.Sprintf("%s imports %s, another package of its own layer (%d)", pkg, imp, layer+1))
			} else {
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s, in the higher layer %d", pkg, layer+1, imp, ilayer+1))
			}
		}
	}
	for _, p := range sortedKeys(r.layer) {
		if !covers[p] {
			problems = append(problems, fmt.Sprintf("%s is listed in docs/architecture.md but is no package", p))
		}
	}
	for e := range r.except {
		if !used[e] {
			problems = append(problems, fmt.Sprintf("the exception %s → %s is not needed any more: remove it", e.from, e.to))
		}
	}
	slices.Sort(problems)
	return problems
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// loadImports parses the non-test Go files of the module at root and returns
// each package's imports of the module's own packages, by their paths inside
// the module. Nested modules, testdata, node_modules and hidden directories
// are skipped, as the go command skips them.
func loadImports(root string) (map[string][]string, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if ignored(f) {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		imps := out[pkg]
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(imps, rest) {
				imps = append(imps, rest)
			}
		}
		out[pkg] = imps
		return nil
	})
	return out, err
}

// ignored reports whether f is kept out of every build by "//go:build
// ignore", as generators and examples are.
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

// modulePath reads the module's path from its go.mod.
func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s names no module", gomod)
}

// repoRoot is the module's root: the nearest parent with a go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func docRules(t *testing.T, root string) *rules {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseRules(string(doc))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	return r
}

// TestImportsFollowTheLayers checks the module's packages against
// docs/architecture.md.
func TestImportsFollowTheLayers(t *testing.T) {
	root := repoRoot(t)
	r := docRules(t, root)
	imports, err := loadImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 20 {
		t.Fatalf("found only %d packages; is the walk wrong?", len(imports))
	}
	for _, p := range r.check(imports) {
		t.Error(p)
	}
}

// TestUpwardImportOfTheDocIsReported feeds the real layers an import that
// points up: a provider client importing prompt, which assembles requests
// above llm.
func TestUpwardImportOfTheDocIsReported(t *testing.T) {
	root := repoRoot(t)
	r := docRules(t, root)
	imports, err := loadImports(root)
	if err != nil {
		t.Fatal(err)
	}
	imports["internal/llm/openai"] = append(slices.Clip(imports["internal/llm/openai"]), "internal/prompt")
	got := r.check(imports)
	want := []string{"internal/llm/openai (layer 4) imports internal/prompt, in the higher layer 5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	const doc = "# Layers\n\n```layers\n# lowest first\nlow\nmid mid2\nhigh high/helper\n```\n\n" +
		"```exceptions\nmid2 high # kept while high moves down\n```\n"
	r, err := parseRules(doc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		imports map[string][]string
		want    []string
	}{
		{
			name:    "downward imports pass",
			imports: map[string][]string{"low": nil, "mid": {"low"}, "mid2": {"high"}, "high": {"mid", "low"}, "high/helper": {"low"}},
		},
		{
			name:    "an upward import is reported",
			imports: map[string][]string{"low": {"mid"}, "mid": nil, "mid2": {"high"}, "high": {"low"}, "high/helper": nil},
			want:    []string{"low (layer 1) imports mid, in the higher layer 2"},
		},
		{
			name:    "packages under one listed path import each other",
			imports: map[string][]string{"low": nil, "low/a": {"low", "low/b"}, "low/b": {"low"}, "mid": nil, "mid2": {"high"}, "high": nil, "high/helper": nil},
		},
		{
			name:    "a package listed on its own is not part of its parent's component",
			imports: map[string][]string{"low": nil, "mid": nil, "mid2": {"high"}, "high": {"high/helper"}, "high/helper": nil},
			want:    []string{"high imports high/helper, another package of its own layer (3)"},
		},
		{
			name:    "sideways within a layer is reported",
			imports: map[string][]string{"low": nil, "mid": {"mid2"}, "mid2": {"high"}, "high": nil, "high/helper": nil},
			want:    []string{"mid imports mid2, another package of its own layer (2)"},
		},
		{
			name:    "an unplaced package, an empty listed path and a stale exception are reported",
			imports: map[string][]string{"low": nil, "mid": nil, "mid2": nil, "high": nil, "elsewhere": {"low"}},
			want: []string{
				"elsewhere is in no layer of docs/architecture.md",
				"high/helper is listed in docs/architecture.md but is no package",
				"the exception mid2 → high is not needed any more: remove it",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, r.check(tt.imports)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRulesRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"no layers block":          "# Architecture\n",
		"empty layers block":       "```layers\n# nothing\n```\n",
		"a path listed twice":      "```layers\na\nb a\n```\n",
		"an exception sans reason": "```layers\na\nb\n```\n```exceptions\na b\n```\n",
	} {
		if _, err := parseRules(doc); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
