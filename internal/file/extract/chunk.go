package extract

import (
	"strings"
	"unicode"
)

// normalizeSpace tidies extracted text: "\r\n" and "\r" become "\n"; runs of
// spaces within a line become one space (one tab if the run holds a tab, so
// that table cells stay apart); lines are trimmed, except for a tab that
// starts a line; at most one blank line
// separates paragraphs; control characters and zero-width no-break spaces
// (byte order marks) are dropped.
func normalizeSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var pending rune // ' ' or '\t' due before the next character
	newlines := 0
	prevCR := false
	for _, r := range s {
		cr := prevCR
		prevCR = r == '\r'
		switch {
		case r == '\n' && cr:
			continue // the second half of "\r\n"
		case r == '\n' || r == '\r':
			newlines++
			pending = 0
			continue
		case r == '\t':
			pending = '\t'
			continue
		case unicode.IsSpace(r):
			if pending == 0 {
				pending = ' '
			}
			continue
		case r < 0x20 || r == 0x7f || r == '\ufeff' || (r >= 0x80 && r < 0xa0):
			continue
		}
		if b.Len() > 0 {
			switch {
			case newlines > 1:
				b.WriteString("\n\n")
			case newlines == 1:
				b.WriteByte('\n')
				if pending == '\t' {
					// A tab that starts a line is an empty first table cell.
					b.WriteByte('\t')
				}
			case pending != 0:
				b.WriteRune(pending)
			}
		}
		newlines, pending = 0, 0
		b.WriteRune(r)
	}
	return b.String()
}

// Chunks cuts pages into chunks of at most size characters (runes), each
// starting up to overlap characters before the previous one ended (overlap
// is capped at half the size). Text is first tidied as by normalizeSpace. A
// chunk never spans pages, so the page it records is the page all of its text
// is on, and a citation of it names the right page; a page shorter than size
// is one chunk. A chunk ends at the last white space in the second half of its
// window when there is one, else it is cut mid-word; the overlap starts at a
// word boundary when one is within it. Index counts chunks across the pages.
// The result depends only on the input.
func Chunks(pages []Page, size, overlap int) []Chunk {
	if size <= 0 {
		return nil
	}
	overlap = max(0, min(overlap, size/2))
	var out []Chunk
	var text []rune
	for _, p := range pages {
		text = append(text[:0], []rune(normalizeSpace(p.Text))...)
		out = chunkPage(out, text, p.Number, size, overlap)
	}
	return out
}

// chunkPage appends the chunks of one page's text to out.
func chunkPage(out []Chunk, text []rune, page, size, overlap int) []Chunk {
	start := 0
	for {
		for start < len(text) && unicode.IsSpace(text[start]) {
			start++
		}
		if start >= len(text) {
			return out
		}
		cut := len(text)
		if end := start + size; end < len(text) {
			cut = end
			if !unicode.IsSpace(text[end]) {
				for i := end - 1; i > start+size/2; i-- {
					if unicode.IsSpace(text[i]) {
						cut = i
						break
					}
				}
			}
		}
		out = append(out, Chunk{
			Index: len(out),
			Page:  page,
			Text:  strings.TrimRightFunc(string(text[start:cut]), unicode.IsSpace),
		})
		if cut >= len(text) {
			return out
		}
		next := max(cut-overlap, start+1)
		if !unicode.IsSpace(text[next-1]) && !unicode.IsSpace(text[next]) {
			// In the middle of a word: start the overlap at the next word.
			j := next
			for j < cut && !unicode.IsSpace(text[j]) {
				j++
			}
			if j < cut {
				next = j
			}
		}
		start = next
	}
}
