package extract

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeText turns file bytes into a valid UTF-8 string: a UTF-8 byte order
// mark is dropped, UTF-16 with a byte order mark is decoded, and bytes that
// are not UTF-8 become U+FFFD.
func decodeText(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case len(data) >= 2 && (data[0] == 0xFF && data[1] == 0xFE || data[0] == 0xFE && data[1] == 0xFF):
		big := data[0] == 0xFE
		data = data[2:]
		u := make([]uint16, len(data)/2)
		for i := range u {
			a, b := uint16(data[2*i]), uint16(data[2*i+1])
			if big {
				u[i] = a<<8 | b
			} else {
				u[i] = b<<8 | a
			}
		}
		return string(utf16.Decode(u))
	}
	if utf8.Valid(data) {
		return string(data)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// plainText is the text of plain text and Markdown files: decoded, with line
// ends made "\n", control characters other than tabs dropped, and otherwise
// as written (Markdown's marks are meaningful to a reader and to a model, so
// they stay; Chunks tidies white space).
func plainText(data []byte) string { return tidyLines(decodeText(data)) }

// tidyLines makes every line end "\n", drops control characters but tabs,
// and trims white space at the end of lines and of the text.
func tidyLines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || r == '\ufeff' {
			return -1
		}
		return r
	}, s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// csvText writes each record on a line with its fields joined by ", ". A file
// that is not well-formed CSV keeps its text as it is.
func csvText(data []byte) string {
	s := decodeText(data)
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var b strings.Builder
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return normalizeSpace(s)
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		for i, f := range rec {
			if i > 0 {
				b.WriteString(", ")
			}
			// A field's own line breaks would split its record.
			b.WriteString(strings.Join(strings.Fields(f), " "))
		}
	}
	return normalizeSpace(b.String())
}

// jsonText validates JSON and returns it indented by two spaces, so that
// every value is on its own line and chunks can end between values.
func jsonText(data []byte) (string, error) {
	s := decodeText(data)
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(s), "", "  "); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return "", fmt.Errorf("at byte %d: %w", se.Offset, err)
		}
		return "", err
	}
	return out.String(), nil
}
