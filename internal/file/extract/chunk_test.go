package extract_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/file/extract"
)

func TestChunks(t *testing.T) {
	p := func(n int, text string) extract.Page { return extract.Page{Number: n, Text: text} }
	for _, tc := range []struct {
		name          string
		pages         []extract.Page
		size, overlap int
		want          []extract.Chunk
	}{
		{"no pages", nil, 10, 2, nil},
		{"only white space", []extract.Page{p(1, " \n\t "), p(2, "")}, 10, 2, nil},
		{"zero size", []extract.Page{p(1, "text")}, 0, 0, nil},
		{"fits", []extract.Page{p(1, "  short   text  ")}, 20, 5, []extract.Chunk{{0, 1, "short text"}}},
		{"exactly size", []extract.Page{p(1, "aaaa bbbb")}, 9, 2, []extract.Chunk{{0, 1, "aaaa bbbb"}}},
		{"exact multiple, cut at the boundary space", []extract.Page{p(1, "aaaa bbbb cccc dddd")}, 9, 0,
			[]extract.Chunk{{0, 1, "aaaa bbbb"}, {1, 1, "cccc dddd"}}},
		{"overlap starts at a word", []extract.Page{p(1, "one two three four five six")}, 14, 5,
			[]extract.Chunk{{0, 1, "one two three"}, {1, 1, "three four"}, {2, 1, "four five six"}}},
		{"one word longer than size", []extract.Page{p(1, "abcdefghijklmnopqrstuvwxyz")}, 10, 3,
			[]extract.Chunk{{0, 1, "abcdefghij"}, {1, 1, "hijklmnopq"}, {2, 1, "opqrstuvwx"}, {3, 1, "vwxyz"}}},
		{"long word after a short one is cut, not left alone", []extract.Page{p(1, "a bcdefghijklmnop")}, 10, 0,
			[]extract.Chunk{{0, 1, "a bcdefghi"}, {1, 1, "jklmnop"}}},
		{"runes, not bytes", []extract.Page{p(1, "ééééé ààààà üüüüü")}, 11, 0,
			[]extract.Chunk{{0, 1, "ééééé ààààà"}, {1, 1, "üüüüü"}}},
		{"line breaks kept, spaces collapsed", []extract.Page{p(1, "Title\r\n\r\n\r\n  first   line\n\tsecond")}, 100, 10,
			[]extract.Chunk{{0, 1, "Title\n\nfirst line\n\tsecond"}}},
		{"chunks stay within their page", []extract.Page{p(1, "alpha beta"), p(2, ""), p(3, "gamma delta zeta eta"), p(4, "epsilon")}, 16, 6,
			[]extract.Chunk{{0, 1, "alpha beta"}, {1, 3, "gamma delta zeta"}, {2, 3, "zeta eta"}, {3, 4, "epsilon"}}},
		{"overlap larger than half the size is capped", []extract.Page{p(1, "aa bb cc dd ee ff")}, 6, 50,
			[]extract.Chunk{{0, 1, "aa bb"}, {1, 1, "bb cc"}, {2, 1, "cc dd"}, {3, 1, "dd ee"}, {4, 1, "ee ff"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := extract.Chunks(tc.pages, tc.size, tc.overlap)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

// Properties at Relay's settings over a long multi-page text: every chunk
// fits and stays within its page, consecutive chunks of a page overlap, nothing is lost, and the result is the
// same every time.
func TestChunksRelaySettings(t *testing.T) {
	var pages []extract.Page
	for i := 1; i <= 30; i++ {
		var b strings.Builder
		for j := 0; b.Len() < 2500; j++ {
			fmt.Fprintf(&b, "page%d word%d ", i, j)
			if j%17 == 0 {
				b.WriteString("\n")
			}
		}
		pages = append(pages, extract.Page{Number: i, Text: b.String()})
	}
	chunks := extract.Chunks(pages, 1500, 100)
	if diff := cmp.Diff(chunks, extract.Chunks(pages, 1500, 100)); diff != "" {
		t.Fatalf("not deterministic:\n%s", diff)
	}
	if len(chunks) < 30*2500/1500 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	lastPage := 0
	for i, c := range chunks {
		if c.Index != i {
			t.Errorf("chunk %d has index %d", i, c.Index)
		}
		if n := utf8.RuneCountInString(c.Text); n > 1500 || n < 700 && i < len(chunks)-1 {
			t.Errorf("chunk %d has %d characters", i, n)
		}
		first := strings.Fields(c.Text)[0]
		if want := "page" + fmt.Sprint(c.Page) + " "; !strings.HasPrefix(first+" ", want) && !strings.HasPrefix(first, "word") {
			t.Errorf("chunk %d starts with %q but says page %d", i, first, c.Page)
		}
		if c.Page < lastPage {
			t.Errorf("chunk %d goes back to page %d", i, c.Page)
		}
		if strings.Contains(c.Text, fmt.Sprintf("page%d ", c.Page+1)) {
			t.Errorf("chunk %d of page %d runs into the next page", i, c.Page)
		}
		newPage := c.Page != lastPage
		lastPage = c.Page
		if i > 0 && !newPage {
			prev := chunks[i-1].Text
			head := c.Text[:strings.IndexAny(c.Text, " \n")]
			if !strings.Contains(prev[len(prev)-110:], head) {
				t.Errorf("chunk %d does not overlap the previous one: starts %q, previous ends %q", i, head, prev[len(prev)-110:])
			}
		}
	}
	// Every word of the text is in some chunk.
	all := strings.Join(func() []string {
		var s []string
		for _, c := range chunks {
			s = append(s, c.Text)
		}
		return s
	}(), " ")
	for _, p := range pages {
		for _, w := range strings.Fields(p.Text) {
			if !strings.Contains(all, w) {
				t.Fatalf("word %q of page %d is in no chunk", w, p.Number)
			}
		}
	}
}
