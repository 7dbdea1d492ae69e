package extract

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEncodingTables(t *testing.T) {
	if n := utf8.RuneCountInString(macRomanUpper); n != 128 {
		t.Errorf("MacRoman has %d upper codes, want 128", n)
	}
	if n := utf8.RuneCountInString(cp1252); n != 32 {
		t.Errorf("cp1252 has %d codes, want 32", n)
	}
	if n := len(strings.Fields(asciiNames)); n != 95 {
		t.Errorf("%d ASCII glyph names, want 95", n)
	}
	if n := len(strings.Fields(latin1Names)); n != 95 {
		t.Errorf("%d Latin-1 glyph names, want 95", n)
	}
	for code, want := range map[byte]rune{0x80: '€', 0x93: '“', 0xE9: 'é', 'A': 'A'} {
		if got := winAnsiEncoding()[code]; got != want {
			t.Errorf("WinAnsi %#x = %q, want %q", code, got, want)
		}
	}
	for code, want := range map[byte]rune{0x8E: 'é', 0xA5: '•', 0xD2: '“', 0xFF: 'ˇ'} {
		if got := macRomanEncoding()[code]; got != want {
			t.Errorf("MacRoman %#x = %q, want %q", code, got, want)
		}
	}
	for name, want := range map[string]string{
		"A": "A", "zero": "0", "eacute": "é", "ydieresis": "ÿ", "quoteright": "’", "fi": "fi",
		"uni0041": "A", "uni00410042": "AB", "u1F600": "😀", "f_f_i": "ffi", "a.sc": "a", "g123": "", "uniD800": "",
	} {
		if got := glyphText(name); got != want {
			t.Errorf("glyphText(%q) = %q, want %q", name, got, want)
		}
	}
}
