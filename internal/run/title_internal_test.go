package run

import "testing"

func TestFallbackTitle(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"short", "What is 2+3?", "What is 2+3?"},
		{"one line", "  Plan\nmy   trip\tto Rome  ", "Plan my trip to Rome"},
		{"first eight words", "one two three four five six seven eight nine ten", "one two three four five six seven eight…"},
		{"exactly eight words", "one two three four five six seven eight", "one two three four five six seven eight"},
		{"sixty characters", "Supercalifragilistic expialidocious words keep going on and on forever", "Supercalifragilistic expialidocious words keep going on and…"},
		{"one long word", "https://example.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "https://example.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…"},
		{"runes, not bytes", "Ünïcödé ëvërÿwhërë 🚀🚀🚀", "Ünïcödé ëvërÿwhërë 🚀🚀🚀"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstWords(tt.in); got != tt.want {
				t.Errorf("FirstWords(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCleanTitle(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Trip to Rome", "Trip to Rome"},
		{"quoted with a period", `"Trip to Rome".`, "Trip to Rome"},
		{"labelled", "Title: Trip to Rome", "Trip to Rome"},
		{"markdown", "**Title:** *Trip to Rome*", "Trip to Rome"},
		{"heading", "# Trip to Rome", "Trip to Rome"},
		{"first line with text", "\n\n  Trip to Rome\nThis conversation is about…", "Trip to Rome"},
		{"curly quotes", "“Voyage à Rome”", "Voyage à Rome"},
		{"spaces", "Trip \t to   Rome", "Trip to Rome"},
		{"nothing", " \n\"\" ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cleanTitle(tt.in); got != tt.want {
				t.Errorf("cleanTitle(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	long := ""
	for range 30 {
		long += "abcde "
	}
	if got := []rune(cleanTitle(long)); len(got) != generatedTitleRunes+1 || got[len(got)-1] != '…' {
		t.Errorf("cleanTitle of %d characters = %q; want %d characters and …", len(long), string(got), generatedTitleRunes)
	}
}
