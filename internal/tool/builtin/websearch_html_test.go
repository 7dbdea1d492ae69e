package builtin

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHTMLText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "just text", "just text"},
		{"blocks and inline", "<h1>Title</h1><p>One <em>two</em>\n   three</p><p>Four</p>", "Title\nOne two three\nFour"},
		{"line breaks", "a<br>b<br/>c", "a\nb\nc"},
		{"entities", "<p>caf&eacute; &amp; &lt;b&gt; &#8364;5 &#x41;</p>", "café & <b> €5 A"},
		{"script, style, comments", "<p>a</p><script>if (a<b) { x('</p>') }</script><style>p{}</style><!-- <p>c</p> --><p>b</p>", "a\nb"},
		{"script end tag in capitals", "<SCRIPT>x</SCRIPT><P>ok</P>", "ok"},
		{"head is not text", "<html><head><title>T</title><meta charset=utf-8></head><body>body</body></html>", "body"},
		{"hidden attribute", `<div>a</div><div hidden><div>nested</div>still hidden</div><div>b</div>`, "a\nb"},
		{"aria-hidden and inline styles", `<span aria-hidden="true">x</span><span style="display: none">y</span><span style="visibility:hidden">z</span>shown`, "shown"},
		{"hidden on an element without an end tag is ignored", `<p hidden>para<p>next`, "para\nnext"},
		{"quoted > in attributes", `<a title="a > b" href='/x>y'>link</a> after`, "link after"},
		{"table cells", "<table><tr><td>a</td><td>b</td></tr><tr><th>c</th><td>d</td></tr></table>", "a b\nc d"},
		{"svg and select", "<p>x<svg><text>no</text><svg>deeper</svg></svg>y</p><select><option>opt</option></select>", "xy"},
		{"stray less-than", "1 < 2 and 3<4", "1 < 2 and 3<4"},
		{"doctype and processing", "<!DOCTYPE html><?xml version='1.0'?><p>ok</p>", "ok"},
		{"unterminated comment", "a<!-- never ends", "a"},
		{"unterminated tag", "a<p class='x", "a"},
		{"unterminated script", "a<script>b", "a"},
		{"self-closing hidden element", `<div hidden/>after`, "after"},
		{"uppercase tags and attributes", `<DIV HIDDEN>x</DIV><B>y</B>`, "y"},
		{"nbsp collapses", "a&nbsp;&nbsp; b", "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := htmlText([]byte(tt.in)); got != tt.want {
				t.Errorf("htmlText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzHTMLText(f *testing.F) {
	for _, s := range []string{articleHTML, "<a b='>'>x</a>", "<!--", "<script>", "<div hidden><div>", "&#xFFFFFFFF;", "<p\x00>\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := htmlText([]byte(in))
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Errorf("valid input, invalid output %q", out)
		}
		if strings.Contains(out, "\n\n") || strings.HasPrefix(out, " ") {
			t.Errorf("white space not collapsed: %q", out)
		}
	})
}

func BenchmarkHTMLText(b *testing.B) {
	page := []byte(strings.Repeat(articleHTML, 200)) // about 80 KB
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		htmlText(page)
	}
}
