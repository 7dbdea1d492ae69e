package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/relay-ai/relay/internal/agent"
)

// decoder walks a YAML node tree against the Go types of Config and decodes as it
// goes. Walking the tree ourselves, instead of one yaml.Unmarshal, is what lets
// every unknown key and type error carry its dotted path, line and column, lets
// LibreChat's keys be accepted and recorded as ignored, and lets ${VAR} expansion
// skip the values that must stay raw.
type decoder struct {
	file   string
	getenv func(string) (string, bool)

	ignored []string
	// unknown are the keys Relay does not know, as "file:line:col: unknown key ...".
	unknown []string
	// where maps each decoded path to the position of its value.
	where map[string]string
	// order holds the key order of every decoded map of structs, by path.
	order    map[string][]string
	problems []problem
	// bad are the paths whose value could not be decoded; validation does not
	// report them again.
	bad []string
}

// problem is one thing wrong with a config: where it is (a file position or an
// environment variable), the dotted path of the field, and what is wrong.
type problem struct {
	where, path, msg string
}

// defaulter is implemented by entries of lists and maps whose absent keys have
// defaults other than the zero value.
type defaulter interface{ setDefaults() }

// scalarDecoder is implemented by structs that are walked key by key when
// written as a mapping and also have a scalar form (an Azure model's `true`).
type scalarDecoder interface{ decodeScalar(n *yaml.Node) error }

// listDecoder is implemented by structs that are walked key by key when
// written as a mapping and also have a list form (a provider's `models`, which
// LibreChat's endpoints.anthropic writes as a list of names).
type listDecoder interface{ decodeList(n *yaml.Node) error }

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func newDecoder(file string, getenv func(string) (string, bool)) *decoder {
	return &decoder{file: file, getenv: getenv, where: map[string]string{}, order: map[string][]string{}}
}

func (d *decoder) pos(n *yaml.Node) string {
	return fmt.Sprintf("%s:%d:%d", d.file, n.Line, n.Column)
}

func (d *decoder) add(n *yaml.Node, path, format string, args ...any) {
	d.problems = append(d.problems, problem{where: d.pos(n), path: path, msg: fmt.Sprintf(format, args...)})
}

// decodeFile decodes a parsed document into c.
func (d *decoder) decodeFile(doc *yaml.Node, c *Config) {
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return
		}
		doc = doc.Content[0]
	}
	if doc.Kind == 0 || isNull(doc) {
		return
	}
	if doc.Kind != yaml.MappingNode {
		d.add(doc, "", "the file must be a mapping of keys such as server, endpoints and mcpServers, got %s", describeNode(doc))
		return
	}
	d.decode(doc, reflect.ValueOf(c).Elem(), "", false)
}

// decode decodes n into v, which is at path. raw turns ${VAR} expansion off for
// everything below.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, raw bool) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.where[path] = d.pos(n)
	t := v.Type()
	if !isUnmarshaler(t) {
		switch {
		case t.Kind() == reflect.Struct:
			if sd, ok := v.Addr().Interface().(scalarDecoder); ok && n.Kind == yaml.ScalarNode && !isNull(n) {
				if err := sd.decodeScalar(n); err != nil {
					d.typeProblem(n, path, "%s", err)
				}
				return
			}
			if ld, ok := v.Addr().Interface().(listDecoder); ok && n.Kind == yaml.SequenceNode {
				if !raw {
					n = d.expand(n)
				}
				if err := ld.decodeList(n); err != nil {
					d.typeProblem(n, path, "%s", err)
				}
				return
			}
			d.decodeStruct(n, v, path, raw)
			return
		case t.Kind() == reflect.Pointer && isWalked(t.Elem()):
			if isNull(n) {
				return
			}
			if v.IsNil() {
				v.Set(reflect.New(t.Elem()))
			}
			d.decode(n, v.Elem(), path, raw)
			return
		case t.Kind() == reflect.Map && isWalked(t.Elem()):
			d.decodeMap(n, v, path, raw)
			return
		case t.Kind() == reflect.Slice && isWalked(t.Elem()):
			d.decodeSlice(n, v, path, raw)
			return
		}
	}
	d.decodeLeaf(n, v, path, raw)
}

// isWalked reports whether values of t are walked key by key rather than handed
// to yaml.v3 whole.
func isWalked(t reflect.Type) bool { return t.Kind() == reflect.Struct && !isUnmarshaler(t) }

func isUnmarshaler(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, raw bool) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.typeProblem(n, path, "expected a mapping, got %s", describeNode(n))
		return
	}
	fields := fieldsOf(v.Type())
	seen := map[string]*yaml.Node{}
	for _, kv := range pairs(n) {
		k, val := kv[0], kv[1]
		if k.Kind != yaml.ScalarNode {
			d.add(k, path, "keys must be plain names, got %s", describeNode(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.add(k, "", "duplicate key %q %s (first at line %d)", k.Value, inPath(path), first.Line)
			continue
		}
		seen[k.Value] = k
		f, ok := lookup(fields, k.Value)
		if !ok {
			// LibreChat strips keys its schema does not know; Relay warns and
			// goes on (docs/config.md, "Unknown keys").
			msg := fmt.Sprintf("%s: unknown key %q %s (known: %s)", d.pos(k), k.Value, inPath(path), known(fields))
			if hint, ok := unknownHints[joinPath(path, k.Value)]; ok {
				msg += "; " + hint
			}
			d.unknown = append(d.unknown, msg)
			continue
		}
		kp := joinPath(path, k.Value)
		if f.ignored {
			d.ignored = append(d.ignored, kp)
			if why, ok := safeguards[kp]; ok {
				d.unknown = append(d.unknown, fmt.Sprintf("%s: %s is not in effect: %s", d.pos(k), kp, why))
			}
			continue
		}
		d.decode(val, v.FieldByIndex(f.index), kp, raw || f.raw)
	}
}

// safeguards are the LibreChat keys Relay ignores that an operator may count
// on to protect data or to hold tool calls: each is warned about as well as
// listed, so that `relay config check` says it is not in effect and --strict
// refuses it (docs/config.md, "LibreChat keys Relay ignores").
var safeguards = map[string]string{
	"filters":                       "Relay does not filter personal data out of messages, files or tool calls",
	"messageFilter":                 "Relay does not filter personal data out of messages, files or tool calls",
	"endpoints.agents.toolApproval": "a tool call in Relay is never held for approval",
}

// unknownHints say, for an unknown key that is written in the belief that it
// does something, what does it instead.
var unknownHints = map[string]string{
	"memory.enabled": "memory is on unless memory.disabled is true",
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, raw bool) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.typeProblem(n, path, "expected a mapping of names to entries, got %s", describeNode(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]*yaml.Node{}
	for _, kv := range pairs(n) {
		k, val := kv[0], kv[1]
		if k.Kind != yaml.ScalarNode {
			d.add(k, path, "names must be plain strings, got %s", describeNode(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.add(k, "", "duplicate name %q %s (first at line %d)", k.Value, inPath(path), first.Line)
			continue
		}
		seen[k.Value] = k
		e := reflect.New(v.Type().Elem())
		if def, ok := e.Interface().(defaulter); ok {
			def.setDefaults()
		}
		d.decode(val, e.Elem(), mapPath(path, k.Value), raw)
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e.Elem())
		d.order[path] = append(d.order[path], k.Value)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string, raw bool) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.typeProblem(n, path, "expected a list, got %s", describeNode(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		e := s.Index(i)
		if def, ok := e.Addr().Interface().(defaulter); ok {
			def.setDefaults()
		}
		d.decode(item, e, fmt.Sprintf("%s[%d]", path, i), raw)
	}
	v.Set(s)
}

// decodeLeaf hands n, after ${VAR} expansion, to yaml.v3. A null value leaves
// the default in place.
func (d *decoder) decodeLeaf(n *yaml.Node, v reflect.Value, path string, raw bool) {
	if !raw {
		n = d.expand(n)
	}
	if isNull(n) {
		return
	}
	if fractional(n, v.Type()) {
		// yaml.v3 would keep the whole part of it, silently.
		d.typeProblem(n, path, "expected a whole number, got %s", n.Value)
		return
	}
	err := n.Decode(v.Addr().Interface())
	if err == nil {
		return
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		t := v.Type()
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if wrongShape(n, t) {
			d.typeProblem(n, path, "expected %s, got %s", kindName(t), describeNode(n))
			return
		}
		msgs := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			msgs[i] = trimYAMLPrefix(e)
		}
		d.typeProblem(n, path, "%s", strings.Join(msgs, "; "))
		return
	}
	d.typeProblem(n, path, "%s", trimYAMLPrefix(err.Error()))
}

// fractional reports whether n is a number with a fractional part (2.9) going
// into an integer of type t; 2.0 and 1e3 are whole.
func fractional(n *yaml.Node, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isUnmarshaler(t) || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
		return false // a Duration, say, reads its own forms
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f, err := strconv.ParseFloat(n.Value, 64)
		return err == nil && f != math.Trunc(f)
	}
	return false
}

func (d *decoder) typeProblem(n *yaml.Node, path, format string, args ...any) {
	d.add(n, path, format, args...)
	d.bad = append(d.bad, path)
}

// wrongShape reports whether a type error is best told as "expected X, got Y":
// the value is not even the right kind of node for t.
func wrongShape(n *yaml.Node, t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice:
		return n.Kind != yaml.SequenceNode
	case reflect.Map:
		return n.Kind != yaml.MappingNode
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

var yamlPrefix = regexp.MustCompile(`^(yaml: )?(unmarshal errors:\s*)?(line \d+(, column \d+)?: )?`)

// trimYAMLPrefix drops yaml.v3's "yaml: line N:" lead-in; the caller gives the position.
func trimYAMLPrefix(msg string) string { return yamlPrefix.ReplaceAllString(msg, "") }

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "a mapping of strings"
		}
		return "a mapping"
	}
	return t.String()
}

// pairs returns the key/value pairs of a mapping, with YAML merge keys (<<)
// resolved: merged pairs come first and keys written in the mapping win.
func pairs(n *yaml.Node) [][2]*yaml.Node {
	var own, merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			for v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, src := range srcs {
				for src.Kind == yaml.AliasNode && src.Alias != nil {
					src = src.Alias
				}
				if src.Kind == yaml.MappingNode {
					merged = append(merged, pairs(src)...)
				}
			}
			continue
		}
		own = append(own, [2]*yaml.Node{k, v})
	}
	if merged == nil {
		return own
	}
	written := map[string]bool{}
	for _, kv := range own {
		written[kv[0].Value] = true
	}
	var out [][2]*yaml.Node
	for _, kv := range merged {
		if !written[kv[0].Value] {
			written[kv[0].Value] = true
			out = append(out, kv)
		}
	}
	return append(out, own...)
}

// field is a YAML key of a struct type.
type field struct {
	name  string
	index []int
	// ignored marks a LibreChat key that Relay accepts and does not use.
	ignored bool
	// raw turns off ${VAR} expansion for the value.
	raw bool
}

// fieldsOf lists the keys of struct type t from its yaml tags, following inline
// structs. A field tagged relay:"ignored" is an accepted LibreChat key; one
// tagged relay:"raw" keeps its values unexpanded.
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && hasOpt(opts, "inline") {
			for _, f := range fieldsOf(sf.Type) {
				f.index = append([]int{i}, f.index...)
				out = append(out, f)
			}
			continue
		}
		relay := sf.Tag.Get("relay")
		if relay == "ignored" {
			out = append(out, field{name: name, ignored: true})
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, field{name: name, index: []int{i}, raw: relay == "raw" || authoredText(t, name)})
	}
	return out
}

// authoredText reports whether a field of an agent definition holds text written
// for a model. ${VAR} is never expanded in such text, so that a prompt cannot pull
// the server's environment (API keys) into a conversation.
func authoredText(t reflect.Type, name string) bool {
	switch t {
	case reflect.TypeFor[agent.Spec]():
		return name == "instructions" || name == "description" || name == "conversation_starters"
	case reflect.TypeFor[agent.Edge]():
		return name == "prompt" || name == "description"
	}
	return false
}

func hasOpt(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func lookup(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// known lists the keys Relay uses, for an unknown-key message.
func known(fields []field) string {
	var names []string
	for _, f := range fields {
		if !f.ignored {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, ", ")
}

func inPath(path string) string {
	if path == "" {
		return "at top level"
	}
	return "in " + path
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mapPath is the path of a map entry: mcpServers.github, or mcpServers["NEO NL"]
// when the name is not a plain word.
func mapPath(path, key string) string {
	if plainName.MatchString(key) {
		return joinPath(path, key)
	}
	return path + "[" + strconv.Quote(key) + "]"
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand returns n with ${VAR} in its string scalars replaced from the
// environment, as librechat.yaml does: whole-string or embedded, and a variable
// that is not set stays as written. n itself is not changed.
func (d *decoder) expand(n *yaml.Node) *yaml.Node {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" || !strings.Contains(n.Value, "${") {
			return n
		}
		v, whole := expandEnv(n.Value, d.getenv)
		if v == n.Value {
			return n
		}
		c := *n
		c.Value = v
		if whole && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			// An unquoted `timeout: ${T}` stands for the value itself: let YAML
			// resolve it again, so that it can be a number or a boolean.
			c.Tag = ""
		}
		return &c
	case yaml.MappingNode, yaml.SequenceNode:
		c := *n
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				c.Content[i] = ch
				continue
			}
			c.Content[i] = d.expand(ch)
		}
		return &c
	}
	return n
}

// expandEnv expands the ${VAR} references of s; whole reports whether s was one
// reference, and set.
func expandEnv(s string, getenv func(string) (string, bool)) (out string, whole bool) {
	if m := envRef.FindStringSubmatchIndex(s); m != nil && m[0] == 0 && m[1] == len(s) {
		if v, ok := getenv(s[m[2]:m[3]]); ok {
			return v, true
		}
		return s, false
	}
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := getenv(ref[2 : len(ref)-1]); ok {
			return v
		}
		return ref
	}), false
}
