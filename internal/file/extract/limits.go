package extract

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
)

// Limits bounds the work and memory of one extraction; docs/config.md names
// the fileConfig keys that set them. A zero field takes its default.
type Limits struct {
	// MaxDecodedBytes bounds the bytes a file decodes to in all: every
	// stream of a PDF (forms count each time they are drawn), the parts of a
	// DOCX read (body, notes, headers and footers) once inflated. Over it,
	// extraction fails.
	MaxDecodedBytes int64
	// MaxTextBytes bounds the extracted text. Over it, the text is cut
	// there and the Document's Note says so.
	MaxTextBytes int64
	// MaxPages bounds the pages of a PDF or DOCX. Over it, extraction fails.
	MaxPages int
	// MaxOperations bounds the content-stream operators a PDF's pages run,
	// across the whole document; each form drawn counts formOperations
	// more. Over it, extraction fails.
	MaxOperations int64
}

// The defaults of Limits.
const (
	DefaultMaxDecodedBytes = 256 << 20
	DefaultMaxTextBytes    = 8 << 20
	DefaultMaxPages        = 2000
	DefaultMaxOperations   = 20_000_000
)

// formOperations is what drawing one form costs in operations, beyond the
// operators it runs: a form drawn tens of thousands of times is a bomb even
// when it is empty.
const formOperations = 1000

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxDecodedBytes <= 0 {
		l.MaxDecodedBytes = DefaultMaxDecodedBytes
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultMaxTextBytes
	}
	if l.MaxPages <= 0 {
		l.MaxPages = DefaultMaxPages
	}
	if l.MaxOperations <= 0 {
		l.MaxOperations = DefaultMaxOperations
	}
	return l
}

// Limit names one of Limits' fields, in a LimitError.
type Limit string

// The limits a LimitError names.
const (
	LimitDecoded    Limit = "decoded"
	LimitPages      Limit = "pages"
	LimitOperations Limit = "operations"
)

// LimitError is the error of an extraction stopped by one of its Limits.
type LimitError struct {
	Limit   Limit
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// Unwrap classifies the error fault.Invalid.
func (e *LimitError) Unwrap() error { return &fault.Error{Kind: fault.Invalid, Message: e.Message} }

func decodedError(kind string, limit int64) *LimitError {
	return &LimitError{LimitDecoded, fmt.Sprintf("the %s decodes to more than %s, the limit of decoded data per file", kind, mb(limit))}
}

// mb writes a byte count in MB, or in bytes when it is under one.
func mb(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// textCutNote is the Note of a document whose text was cut at
// Limits.MaxTextBytes.
func textCutNote(limit int64) string {
	return fmt.Sprintf("the text was cut at %s, the limit of extracted text per file; the rest of the file is not searchable", mb(limit))
}

// cutText returns s cut to at most n bytes, at a rune boundary, and whether
// it was cut.
func cutText(s string, n int64) (string, bool) {
	if int64(len(s)) <= n {
		return s, false
	}
	i := int(n)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// addNote joins a note to the notes already there.
func addNote(note, more string) string {
	if note == "" {
		return more
	}
	return strings.TrimSuffix(note, ".") + "; " + more
}
