package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written in YAML as "30s", "2m", "1h30m" or as an
// integer number of seconds.
type Duration struct{ time.Duration }

// UnmarshalYAML reads a Go duration string or a whole number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		const maxSeconds = math.MaxInt64 / int64(time.Second)
		if n.ShortTag() == "!!int" {
			if s, err := strconv.ParseInt(n.Value, 0, 64); err == nil && s >= -maxSeconds && s <= maxSeconds {
				d.Duration = time.Duration(s) * time.Second
				return nil
			}
		} else if v, err := time.ParseDuration(strings.TrimSpace(n.Value)); err == nil {
			d.Duration = v
			return nil
		}
	}
	return fmt.Errorf("expected a duration such as \"30s\" or \"2m\", or a number of seconds, got %s", describeNode(n))
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// ServerInstructions is the serverInstructions key of an MCP server: absent or
// false (no instructions), true (the server's own, from its initialize answer), or
// a text to use instead.
type ServerInstructions struct {
	// Use is true when instructions go into the prompt.
	Use bool
	// Text is the configured text; "" with Use means the server's own.
	Text string
}

// FromServer reports whether the server's own instructions are to be used.
func (si ServerInstructions) FromServer() bool { return si.Use && si.Text == "" }

// IsZero reports whether no instructions are configured.
func (si ServerInstructions) IsZero() bool { return !si.Use && si.Text == "" }

// UnmarshalYAML accepts a boolean or a text. A quoted "true" or "false" is read
// as the boolean, since nobody means it as instructions; an empty text is false.
func (si *ServerInstructions) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected true, false or a text, got %s", describeNode(n))
	}
	switch v := strings.ToLower(strings.TrimSpace(n.Value)); {
	case v == "true":
		*si = ServerInstructions{Use: true}
	case v == "false", v == "":
		*si = ServerInstructions{}
	default:
		*si = ServerInstructions{Use: true, Text: n.Value}
	}
	return nil
}

// MarshalYAML writes the text, or true when the server's own are used.
func (si ServerInstructions) MarshalYAML() (any, error) {
	if si.Text != "" {
		return si.Text, nil
	}
	return si.Use, nil
}

// SafeSearch is the web search safety level.
type SafeSearch int

// The safe search levels.
const (
	SafeSearchOff      SafeSearch = 0
	SafeSearchModerate SafeSearch = 1
	SafeSearchStrict   SafeSearch = 2
)

// UnmarshalYAML accepts 0, 1 or 2, or a boolean (false is off, true is moderate).
func (s *SafeSearch) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!bool":
			if b, err := strconv.ParseBool(n.Value); err == nil {
				*s = SafeSearchOff
				if b {
					*s = SafeSearchModerate
				}
				return nil
			}
		case "!!int":
			if v, err := strconv.Atoi(n.Value); err == nil {
				*s = SafeSearch(v)
				return nil
			}
		}
	}
	return fmt.Errorf("expected 0, 1, 2, true or false, got %s", describeNode(n))
}

// ModelList is a list of model names. In YAML each entry is a name or, as
// librechat.yaml also allows, a mapping with a `name` (and a description that
// Relay does not keep).
type ModelList []string

// UnmarshalYAML reads a list of names or {name, description} mappings.
func (l *ModelList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("expected a list of model names, got %s", describeNode(n))
	}
	out := make(ModelList, 0, len(n.Content))
	for i, item := range n.Content {
		switch item.Kind {
		case yaml.ScalarNode:
			out = append(out, item.Value)
			continue
		case yaml.MappingNode:
			var m struct {
				Name        string `yaml:"name"`
				Description string `yaml:"description"`
			}
			if err := item.Decode(&m); err == nil && m.Name != "" {
				out = append(out, m.Name)
				continue
			}
		}
		return fmt.Errorf("item %d: expected a model name or a mapping with a name, got %s", i, describeNode(item))
	}
	*l = out
	return nil
}

// describeNode names what a node holds, for error messages. It quotes scalars
// but never more than a short prefix of them.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return strconv.Quote(v)
}
