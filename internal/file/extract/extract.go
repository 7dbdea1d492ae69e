// Package extract turns the bytes of an uploaded file into pages of plain text
// (PDF, DOCX, HTML, Markdown, plain text, CSV, JSON) and cuts that text into
// overlapping chunks that keep their page numbers, for retrieval.
//
// Everything is read with the standard library: the PDF reader is Relay's own
// (cross-reference tables and streams, object streams, incremental updates,
// a rebuild when the cross-reference is broken, the common filters, fonts
// with ToUnicode CMaps or simple encodings), as is the DOCX reader (a stream
// of XML tokens from the zip). Files that cannot be read fail with an error
// classified fault.Invalid whose message says why; Text never panics.
package extract

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/relay-ai/relay/internal/fault"
)

// ErrUnsupported is returned (wrapped, with the type named) for a media type
// Relay cannot read text from. It is classified fault.Invalid.
var ErrUnsupported error = &fault.Error{Kind: fault.Invalid, Message: "unsupported type"}

// ErrEncrypted is returned for an encrypted PDF, which Relay does not
// decrypt. It is classified fault.Invalid.
var ErrEncrypted error = &fault.Error{Kind: fault.Invalid, Message: errEncrypted.Error()}

// ErrBinary is returned (wrapped, saying which type) for a file read as text
// whose bytes are not text. It is classified fault.Invalid.
var ErrBinary error = &fault.Error{Kind: fault.Invalid, Message: "not text"}

// The Notes of documents with no text.
const (
	// EmptyNote is the Note of an empty file.
	EmptyNote = "the file is empty"
	// BlankNote is the Note of a file with bytes but no text, other than a PDF.
	BlankNote = "no text was found in the file"
)

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
	// Cut says the text was cut at Limits.MaxTextBytes (the Note says so).
	Cut bool
}

// Chunk is one piece of a document's text.
type Chunk struct {
	// Index is the chunk's place in the document, from 0.
	Index int
	// Page is the page the chunk starts on.
	Page int
	Text string
}

// Detect returns the media type of a file from its name and first bytes (a
// few hundred are enough): PDF and DOCX by their magic bytes, then HTML,
// Markdown, plain text, CSV and JSON by extension, then HTML and plain text
// by content. A zip that is not a DOCX is application/zip; anything else is
// application/octet-stream.
func Detect(name string, head []byte) string { return detect(name, head) }

// Text extracts the text of data, whose media type is mime. progress, when not
// nil, is called with the fraction done (0–1) as the work advances. A file that
// cannot be read (corrupt, encrypted) is an error that says why; a type with no
// extractor wraps ErrUnsupported.
//
// An empty file, whatever its type, is a Document without pages and with
// Note EmptyNote. CSV records become lines with their fields joined by ", ";
// JSON is validated and indented by two spaces; plain text and Markdown keep
// their lines. Text that is not UTF-8 has its invalid bytes replaced by
// U+FFFD; a byte order mark is dropped (UTF-16 with one is decoded).
func Text(ctx context.Context, mime string, data []byte, progress func(done float64)) (*Document, error) {
	return TextWithin(ctx, mime, data, Limits{}, progress)
}

// TextWithin is Text bounded by lim: over MaxDecodedBytes, MaxPages or
// MaxOperations it fails with a *LimitError (classified fault.Invalid); over
// MaxTextBytes the text is
// cut there and the Note says so. Text that is not text — NUL bytes, or
// mostly bytes that are not UTF-8 — in a file read as text fails with
// ErrBinary.
func TextWithin(ctx context.Context, mime string, data []byte, lim Limits, progress func(done float64)) (doc *Document, err error) {
	lim = lim.withDefaults()
	kind := mediaType(mime)
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fault.New(fault.Invalid, "corrupt %s: the file could not be read (%v)", label(kind), r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extracting text: %w", err)
	}
	if len(data) == 0 {
		return &Document{Note: EmptyNote}, nil
	}
	switch kind {
	case HTML, "application/xhtml+xml", Markdown, Plain, "text/x-markdown", CSV, JSON:
		if !isText(data) {
			return nil, fmt.Errorf("%w: the file holds binary data, not %s", ErrBinary, kind)
		}
	}
	// Text types are read no further than the text they may give: as many
	// bytes as MaxTextBytes (UTF-16 takes twice as many). JSON longer than
	// twice that is read as plain text, since a cut would make it invalid.
	cut, note := false, textCutNote(lim.MaxTextBytes)
	upTo := func(n int64) {
		if len(data) >= 2 && (data[0] == 0xFF && data[1] == 0xFE || data[0] == 0xFE && data[1] == 0xFF) {
			n *= 2
		}
		if int64(len(data)) > n {
			data, cut = data[:n], true
		}
	}
	if kind == JSON && int64(len(data)) > 2*lim.MaxTextBytes {
		kind, note = Plain, fmt.Sprintf("the JSON is over %s, twice the limit of extracted text per file, so it was read as plain text; %s", mb(2*lim.MaxTextBytes), note)
	}
	switch kind {
	case PDF:
		doc, err = pdfText(ctx, data, lim, progress)
	case DOCX:
		doc, err = docxText(ctx, data, lim, progress)
	case HTML, "application/xhtml+xml":
		if upTo(lim.MaxTextBytes); cut {
			note = fmt.Sprintf("only the first %s of the page were read, the limit of extracted text per file; the rest is not searchable", mb(lim.MaxTextBytes))
		}
		doc = single(htmlText(decodeText(data)))
	case Markdown, Plain, "text/x-markdown":
		upTo(lim.MaxTextBytes)
		doc = single(plainText(data))
	case CSV:
		upTo(lim.MaxTextBytes)
		doc = single(csvText(data))
	case JSON:
		var s string
		if s, err = jsonText(data); err == nil {
			doc = single(s)
		}
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, kind)
	}
	if err != nil {
		return nil, classify(ctx, kind, err)
	}
	if kind != PDF && kind != DOCX && len(doc.Pages) == 1 {
		var c bool
		if doc.Pages[0].Text, c = cutText(doc.Pages[0].Text, lim.MaxTextBytes); c || cut {
			doc.Note, doc.Cut = addNote(doc.Note, note), true
		}
	}
	if progress != nil && kind != PDF {
		progress(1)
	}
	return doc, nil
}

// single is a one-page document.
func single(text string) *Document {
	if strings.TrimSpace(text) == "" {
		return &Document{Pages: []Page{{Number: 1}}, Note: BlankNote}
	}
	return &Document{Pages: []Page{{Number: 1, Text: text}}}
}

// classify turns an extractor's error into one that says what kind of file
// could not be read, classified fault.Invalid; cancellation stays as it is.
func classify(ctx context.Context, kind string, err error) error {
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("extracting text: %w", err)
	case errors.Is(err, errEncrypted):
		return ErrEncrypted
	}
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	if kind == JSON {
		return fault.Wrap(fault.Invalid, err, "invalid JSON")
	}
	return fault.Wrap(fault.Invalid, err, "corrupt %s", label(kind))
}

func label(kind string) string {
	switch kind {
	case PDF:
		return "PDF"
	case DOCX:
		return "DOCX"
	case HTML:
		return "HTML"
	case CSV:
		return "CSV"
	}
	return "file"
}

// Readable reports whether TextWithin reads files of the type mime.
func Readable(mime string) bool {
	switch mediaType(mime) {
	case PDF, DOCX, HTML, "application/xhtml+xml", Markdown, Plain, "text/x-markdown", CSV, JSON:
		return true
	}
	return false
}

// ReadableKinds names the kinds of files Readable accepts, for messages.
const ReadableKinds = "PDF, DOCX, HTML, Markdown, plain text, CSV or JSON"

// mediaType drops parameters ("; charset=utf-8") and case.
func mediaType(m string) string {
	if t, _, err := mime.ParseMediaType(m); err == nil {
		return t
	}
	return strings.ToLower(strings.TrimSpace(m))
}
