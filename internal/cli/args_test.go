package cli

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseInterleaved(t *testing.T) {
	for _, tt := range []struct {
		name       string
		args       []string
		positional []string
		format     string
		versions   bool
	}{
		{"flags first", []string{"--format", "mermaid", "--versions", "a1"}, []string{"a1"}, "mermaid", true},
		{"flags after the argument", []string{"a1", "--format", "mermaid", "--versions"}, []string{"a1"}, "mermaid", true},
		{"flags between arguments", []string{"a1", "--versions", "b2", "--format=json", "c3"}, []string{"a1", "b2", "c3"}, "json", true},
		{"after -- everything is an argument", []string{"a1", "--", "--versions", "-x"}, []string{"a1", "--versions", "-x"}, "text", false},
		{"none", nil, nil, "text", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			format := fs.String("format", "text", "")
			versions := fs.Bool("versions", false, "")
			got, err := parseInterleaved(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.positional, got); diff != "" || *format != tt.format || *versions != tt.versions {
				t.Errorf("positional %q (-want +got: %s), format %q, versions %v", got, diff, *format, *versions)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterleaved(fs, []string{"a1", "--nope"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}
