package extract

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// The media types Detect returns and Text reads.
const (
	// PDF is a PDF document.
	PDF = "application/pdf"
	// DOCX is a Word document (Office Open XML).
	DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	// HTML is a web page.
	HTML = "text/html"
	// Markdown is Markdown text.
	Markdown = "text/markdown"
	// Plain is plain text.
	Plain = "text/plain"
	// CSV is comma-separated values.
	CSV = "text/csv"
	// JSON is a JSON document.
	JSON = "application/json"
	// Zip is a zip archive that is not a DOCX; Text does not read it.
	Zip = "application/zip"
	// Binary is any other type.
	Binary = "application/octet-stream"
)

var byExtension = map[string]string{
	".pdf": PDF, ".docx": DOCX, ".html": HTML, ".htm": HTML, ".xhtml": HTML,
	".md": Markdown, ".markdown": Markdown, ".txt": Plain, ".text": Plain, ".log": Plain,
	".csv": CSV, ".json": JSON, ".zip": Zip,
}

// detect is Detect; see extract.go for the contract.
func detect(name string, head []byte) string {
	// Magic bytes first: they cannot lie about the format the way a name can.
	switch {
	case bytes.Contains(head[:min(len(head), 1024)], []byte("%PDF-")):
		return PDF
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		// A DOCX's first entries are its content types, relationships and
		// the word/ folder; a head too short to show them still counts
		// when the name says DOCX.
		if bytes.Contains(head, []byte("word/")) || strings.EqualFold(path.Ext(name), ".docx") {
			return DOCX
		}
		return Zip
	}
	if t, ok := byExtension[strings.ToLower(path.Ext(name))]; ok && t != PDF && t != DOCX && t != Zip {
		return t
	}
	// No known extension: sniff text.
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF}), " \t\r\n")
	lower := bytes.ToLower(trimmed[:min(len(trimmed), 64)])
	switch {
	case bytes.HasPrefix(lower, []byte("<!doctype html")) || bytes.HasPrefix(lower, []byte("<html")):
		return HTML
	case len(head) > 0 && looksText(head):
		return Plain
	}
	return Binary
}

// looksText reports whether head is text: valid UTF-8 (allowing a rune cut
// off at the end), or UTF-16 with a byte order mark, and no NUL bytes.
func looksText(head []byte) bool {
	if len(head) >= 2 && (head[0] == 0xFF && head[1] == 0xFE || head[0] == 0xFE && head[1] == 0xFF) {
		return true
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n <= 1 {
			return len(head)-i < utf8.UTFMax && !utf8.FullRune(head[i:])
		}
		i += n
	}
	return true
}
