package extract

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
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

// Check refuses a file whose first bytes contradict the type its name
// declares: a .pdf without the %PDF- header, a .docx that is not a zip, a
// text type (.txt, .md, .csv, .json, .html, …) holding binary data (see
// isText). Content that is another readable type (a PDF named .txt) is
// accepted: Detect reads it by its magic bytes. The error is classified
// fault.Invalid and says why.
func Check(name string, head []byte) error {
	if len(head) == 0 {
		return nil
	}
	ext := strings.ToLower(path.Ext(name))
	declared, ok := byExtension[ext]
	if !ok {
		return nil
	}
	got := detect(name, head)
	switch {
	case declared == PDF && got != PDF:
		return fault.New(fault.Invalid, "the file is named %s but is not a PDF: the %%PDF- header is missing", ext)
	case declared == DOCX && got != DOCX:
		return fault.New(fault.Invalid, "the file is named %s but is not a DOCX: it is not a zip archive", ext)
	case declared == Zip || got == PDF || got == DOCX || got == Zip:
		return nil
	case !isText(head):
		return fault.New(fault.Invalid, "the file is named %s but holds binary data, not text", ext)
	}
	return nil
}

// isText reports whether data, said to be text, is: UTF-16 with a byte
// order mark, or no NUL byte in its first 8,000 bytes (git's test for binary
// files) and less than 30% of bytes that are neither UTF-8 nor a usual
// control character (legacy 8-bit text such as Latin-1 passes; its bytes
// become U+FFFD; compressed or random bytes have about 60%).
func isText(data []byte) bool {
	if len(data) >= 2 && (data[0] == 0xFF && data[1] == 0xFE || data[0] == 0xFE && data[1] == 0xFF) {
		return true
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return false
	}
	bad := 0
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b {
				bad++
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			bad++
		}
		i += n
	}
	return bad*10 < len(data)*3
}
