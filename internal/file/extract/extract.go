// Package extract turns the bytes of an uploaded file into pages of plain text
// (PDF, DOCX, HTML, Markdown, plain text, CSV, JSON) and cuts that text into
// overlapping chunks that keep their page numbers, for retrieval.
package extract

import (
	"context"
	"errors"
)

// ErrUnsupported is returned (wrapped, with the type named) for a media type
// Relay cannot read text from.
var ErrUnsupported = errors.New("unsupported type")

// Page is the text of one page. Formats without pages have one page, number 1.
type Page struct {
	Number int
	Text   string
}

// Document is what extraction found in a file.
type Document struct {
	Pages []Page
	// Note says something a person should know about an extraction that
	// succeeded, e.g. "no text was found (the PDF may be scanned images)".
	Note string
}

// Chunk is one piece of a document's text.
type Chunk struct {
	// Index is the chunk's place in the document, from 0.
	Index int
	// Page is the page the chunk starts on.
	Page int
	Text string
}

// Detect returns the media type of a file from its name and first bytes.
func Detect(name string, head []byte) string { return "application/octet-stream" }

// Text extracts the text of data, whose media type is mime. progress, when not
// nil, is called with the fraction done (0–1) as the work advances. A file that
// cannot be read (corrupt, encrypted) is an error that says why; a type with no
// extractor wraps ErrUnsupported.
func Text(ctx context.Context, mime string, data []byte, progress func(done float64)) (*Document, error) {
	return nil, ErrUnsupported
}

// Chunks cuts pages into chunks of at most size characters, each overlapping
// the previous one by overlap characters, preferring to cut at whitespace.
func Chunks(pages []Page, size, overlap int) []Chunk { return nil }
