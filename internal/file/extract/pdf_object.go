package extract

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// The PDF object model. Values are Go values: nil (null), bool, int64
// (integer), float64 (real), pdfName, pdfString, pdfArray, pdfDict, pdfRef,
// *pdfStream, and pdfKeyword for bare words (operators in content streams,
// "obj", "R" and the like while parsing a file).
type (
	pdfName    string
	pdfString  string
	pdfKeyword string
	pdfArray   []any
	pdfDict    map[pdfName]any
	pdfRef     struct{ num, gen int }
)

// pdfStream is a stream object. raw is a slice of the file, not a copy, so
// parsing a stream costs nothing until it is decoded.
type pdfStream struct {
	dict pdfDict
	raw  []byte
}

// maxNesting bounds how deeply arrays and dictionaries may nest. Real files
// stay in single digits; the bound keeps a hostile file from exhausting the
// stack, which Go cannot recover from.
const maxNesting = 64

var (
	errSyntax     = errors.New("syntax error")
	errEndOfInput = errors.New("unexpected end of data")
)

// lexer reads PDF objects from b. With refs set, "n g R" is read as a
// reference (in files); content streams and CMaps have no references.
type lexer struct {
	b     []byte
	pos   int
	refs  bool
	depth int
}

func isSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func isDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func isRegular(c byte) bool { return !isSpace(c) && !isDelim(c) }

// skipSpace skips white space and comments.
func (l *lexer) skipSpace() {
	for l.pos < len(l.b) {
		c := l.b[l.pos]
		if isSpace(c) {
			l.pos++
			continue
		}
		if c == '%' {
			for l.pos < len(l.b) && l.b[l.pos] != '\n' && l.b[l.pos] != '\r' {
				l.pos++
			}
			continue
		}
		return
	}
}

// word reads a run of regular characters.
func (l *lexer) word() []byte {
	start := l.pos
	for l.pos < len(l.b) && isRegular(l.b[l.pos]) {
		l.pos++
	}
	return l.b[start:l.pos]
}

// hasKeyword reports whether the keyword kw starts at the current position
// (after white space), without moving.
func (l *lexer) hasKeyword(kw string) bool {
	save := l.pos
	l.skipSpace()
	ok := bytes.HasPrefix(l.b[l.pos:], []byte(kw)) && (l.pos+len(kw) == len(l.b) || !isRegular(l.b[l.pos+len(kw)]))
	l.pos = save
	return ok
}

func (l *lexer) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %w: %s", l.pos, errSyntax, fmt.Sprintf(format, args...))
}

// object reads the next object. A closing delimiter (']' or '>>') or a
// keyword comes back as a pdfKeyword so that callers can stop on them.
func (l *lexer) object() (any, error) {
	l.skipSpace()
	if l.pos >= len(l.b) {
		return nil, errEndOfInput
	}
	c := l.b[l.pos]
	switch c {
	case '/':
		l.pos++
		return l.name(), nil
	case '(':
		l.pos++
		return l.literal()
	case '<':
		if l.pos+1 < len(l.b) && l.b[l.pos+1] == '<' {
			l.pos += 2
			return l.dict()
		}
		l.pos++
		return l.hex()
	case '>':
		if l.pos+1 < len(l.b) && l.b[l.pos+1] == '>' {
			l.pos += 2
			return pdfKeyword(">>"), nil
		}
		l.pos++
		return nil, l.errorf("unexpected '>'")
	case '[':
		l.pos++
		return l.array()
	case ']', '{', '}':
		l.pos++
		return pdfKeyword(c), nil
	case ')':
		l.pos++
		return nil, l.errorf("unexpected ')'")
	}
	if c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9') {
		return l.number()
	}
	w := l.word()
	if len(w) == 0 {
		l.pos++
		return nil, l.errorf("unexpected byte %q", c)
	}
	switch string(w) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	return pdfKeyword(w), nil
}

func (l *lexer) number() (any, error) {
	w := l.word()
	isReal := bytes.ContainsAny(w, ".eE")
	if !isReal {
		n, err := strconv.ParseInt(string(w), 10, 64)
		if err != nil {
			// Malformed numbers ("--5", "1-2") occur in the wild; read what
			// can be read rather than fail the whole file.
			return lenientNumber(w), nil
		}
		if l.refs && n >= 0 {
			if r, ok := l.ref(n); ok {
				return r, nil
			}
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(string(w), 64)
	if err != nil {
		return lenientNumber(w), nil
	}
	return f, nil
}

// lenientNumber reads the longest sensible number at the start of w.
func lenientNumber(w []byte) float64 {
	neg := false
	i := 0
	for i < len(w) && (w[i] == '+' || w[i] == '-') {
		if w[i] == '-' {
			neg = !neg
		}
		i++
	}
	j := i
	dot := false
	for j < len(w) && ((w[j] >= '0' && w[j] <= '9') || (w[j] == '.' && !dot)) {
		if w[j] == '.' {
			dot = true
		}
		j++
	}
	f, _ := strconv.ParseFloat(string(w[i:j]), 64)
	if neg {
		f = -f
	}
	return f
}

// ref looks ahead for "gen R" after the integer num.
func (l *lexer) ref(num int64) (pdfRef, bool) {
	save := l.pos
	l.skipSpace()
	gw := l.word()
	gen, err := strconv.Atoi(string(gw))
	if err != nil || len(gw) == 0 || gen < 0 {
		l.pos = save
		return pdfRef{}, false
	}
	l.skipSpace()
	if l.pos < len(l.b) && l.b[l.pos] == 'R' && (l.pos+1 == len(l.b) || !isRegular(l.b[l.pos+1])) {
		l.pos++
		if num > 1<<31 {
			return pdfRef{num: -1, gen: gen}, true
		}
		return pdfRef{num: int(num), gen: gen}, true
	}
	l.pos = save
	return pdfRef{}, false
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (l *lexer) name() pdfName {
	w := l.word()
	if bytes.IndexByte(w, '#') < 0 {
		return pdfName(w)
	}
	out := make([]byte, 0, len(w))
	for i := 0; i < len(w); i++ {
		if w[i] == '#' && i+2 < len(w) {
			hi, ok1 := unhex(w[i+1])
			lo, ok2 := unhex(w[i+2])
			if ok1 && ok2 {
				out = append(out, hi<<4|lo)
				i += 2
				continue
			}
		}
		out = append(out, w[i])
	}
	return pdfName(out)
}

func (l *lexer) literal() (any, error) {
	var out []byte
	depth := 1
	for l.pos < len(l.b) {
		c := l.b[l.pos]
		l.pos++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return pdfString(out), nil
			}
		case '\r':
			// An end of line in a string is a line feed whatever its form.
			if l.pos < len(l.b) && l.b[l.pos] == '\n' {
				l.pos++
			}
			c = '\n'
		case '\\':
			if l.pos >= len(l.b) {
				return nil, errEndOfInput
			}
			e := l.b[l.pos]
			l.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if l.pos < len(l.b) && l.b[l.pos] == '\n' {
					l.pos++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.pos < len(l.b) && l.b[l.pos] >= '0' && l.b[l.pos] <= '7'; k++ {
						v = v*8 + int(l.b[l.pos]-'0')
						l.pos++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return nil, errEndOfInput
}

func (l *lexer) hex() (any, error) {
	var out []byte
	var hi byte
	half := false
	for l.pos < len(l.b) {
		c := l.b[l.pos]
		l.pos++
		if c == '>' {
			if half {
				out = append(out, hi<<4)
			}
			return pdfString(out), nil
		}
		if isSpace(c) {
			continue
		}
		v, ok := unhex(c)
		if !ok {
			return nil, l.errorf("bad hex digit %q in string", c)
		}
		if half {
			out = append(out, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	return nil, errEndOfInput
}

func (l *lexer) array() (any, error) {
	if l.depth >= maxNesting {
		return nil, l.errorf("arrays and dictionaries nested too deeply")
	}
	l.depth++
	defer func() { l.depth-- }()
	var a pdfArray
	for {
		v, err := l.object()
		if err != nil {
			return nil, err
		}
		if k, ok := v.(pdfKeyword); ok {
			switch k {
			case "]":
				return a, nil
			case ">>":
				return nil, l.errorf("unexpected '>>' in array")
			}
		}
		a = append(a, v)
	}
}

func (l *lexer) dict() (any, error) {
	if l.depth >= maxNesting {
		return nil, l.errorf("arrays and dictionaries nested too deeply")
	}
	l.depth++
	defer func() { l.depth-- }()
	d := pdfDict{}
	for {
		k, err := l.object()
		if err != nil {
			return nil, err
		}
		switch k := k.(type) {
		case pdfKeyword:
			if k == ">>" {
				return d, nil
			}
			return nil, l.errorf("dictionary key %q is not a name", string(k))
		case pdfName:
			v, err := l.object()
			if err != nil {
				return nil, err
			}
			if kw, ok := v.(pdfKeyword); ok && kw == ">>" {
				// A key without a value: tolerate it as null.
				return d, nil
			}
			d[k] = v
		default:
			return nil, l.errorf("dictionary key is not a name")
		}
	}
}

// Accessors that do not resolve references; see doc for the resolving ones.

func numberOf(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		if n > 1<<40 || n < -(1<<40) {
			return 0, false
		}
		return int(n), true
	case float64:
		if n > 1<<40 || n < -(1<<40) || n != n {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}
