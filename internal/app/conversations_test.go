package app

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInterspersedFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantArgs []string
		wantUser string
		wantJSON bool
	}{
		{"flags first", []string{"--user", "bob", "conv_1", "New", "title"}, []string{"conv_1", "New", "title"}, "bob", false},
		{"flags between", []string{"conv_1", "--json", "New", "--user=bob", "title"}, []string{"conv_1", "New", "title"}, "bob", true},
		{"flags last", []string{"conv_1", "New", "--json"}, []string{"conv_1", "New"}, "", true},
		{"after --", []string{"conv_1", "--", "--json", "-x"}, []string{"conv_1", "--json", "-x"}, "", false},
		{"none", nil, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			user := fs.String("user", "", "")
			asJSON := fs.Bool("json", false, "")
			got, err := interspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantArgs, got); diff != "" || *user != tt.wantUser || *asJSON != tt.wantJSON {
				t.Errorf("args (-want +got):\n%s\nuser %q json %v; want %q %v", diff, *user, *asJSON, tt.wantUser, tt.wantJSON)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := interspersed(fs, []string{"conv_1", "--nope"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}
