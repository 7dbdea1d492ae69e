package builtin

import (
	"bytes"
	"html"
	"strings"
	"unicode"
)

// Elements whose content is text that is never shown (or is shown elsewhere,
// like a title): everything up to their end tag is skipped unread.
var rawTextElements = map[string]bool{
	"script": true, "style": true, "noscript": true, "textarea": true, "title": true,
	"xmp": true, "iframe": true, "noembed": true, "noframes": true,
}

// Elements whose content, though markup, is not part of the page's text.
var hiddenElements = map[string]bool{
	"head": true, "svg": true, "template": true, "select": true, "datalist": true,
	"object": true, "canvas": true, "audio": true, "video": true,
}

// Elements whose end tag is often left out; a hidden attribute on one of them
// is not followed, since its end could not be found reliably.
var impliedEndElements = map[string]bool{
	"p": true, "li": true, "dt": true, "dd": true, "tr": true, "td": true, "th": true,
	"option": true, "optgroup": true, "thead": true, "tbody": true, "tfoot": true,
	"colgroup": true, "rb": true, "rt": true, "rtc": true, "rp": true, "caption": true,
}

// Elements that have no content and no end tag.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// Elements that start and end a line of text.
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true,
	"details": true, "dialog": true, "div": true, "dl": true, "dt": true, "fieldset": true,
	"figcaption": true, "figure": true, "footer": true, "form": true, "h1": true, "h2": true,
	"h3": true, "h4": true, "h5": true, "h6": true, "header": true, "hr": true, "li": true,
	"main": true, "nav": true, "ol": true, "p": true, "pre": true, "section": true,
	"summary": true, "table": true, "tr": true, "ul": true, "caption": true, "body": true, "html": true,
}

// htmlText returns the visible text of an HTML document or fragment: the
// content of scripts, styles, the head and hidden elements is left out, block
// elements start new lines, table cells are separated by spaces, character
// references are decoded and white space is collapsed. It is forgiving, as
// pages are: a stray '<' is text, an unterminated tag or comment ends the text.
func htmlText(doc []byte) string {
	var b textLines
	skip, depth := "", 0 // the hidden element being skipped, and its nesting
	i, n := 0, len(doc)
	for i < n {
		lt := bytes.IndexByte(doc[i:], '<')
		if lt < 0 {
			if skip == "" {
				b.text(doc[i:])
			}
			break
		}
		if skip == "" {
			b.text(doc[i : i+lt])
		}
		i += lt
		rest := doc[i:]
		if bytes.HasPrefix(rest, []byte("<!--")) {
			end := bytes.Index(rest[4:], []byte("-->"))
			if end < 0 {
				break
			}
			i += 4 + end + 3
			continue
		}
		if len(rest) > 1 && (rest[1] == '!' || rest[1] == '?') {
			end := bytes.IndexByte(rest, '>')
			if end < 0 {
				break
			}
			i += end + 1
			continue
		}
		j := 1
		closing := len(rest) > 1 && rest[1] == '/'
		if closing {
			j = 2
		}
		k := j
		for k < len(rest) && isTagNameByte(rest[k], k == j) {
			k++
		}
		if k == j { // not a tag: the '<' is text
			if skip == "" {
				b.text(rest[:1])
			}
			i++
			continue
		}
		name := strings.ToLower(string(rest[j:k]))
		end := tagEnd(rest, k)
		if end < 0 {
			break
		}
		attrs := rest[k : end-1]
		selfClosing := bytes.HasSuffix(bytes.TrimSpace(attrs), []byte("/"))
		i += end

		if skip != "" {
			if name == skip {
				switch {
				case closing:
					if depth--; depth == 0 {
						skip = ""
					}
				case !selfClosing:
					depth++
				}
			}
			continue
		}
		if closing {
			b.boundary(name)
			continue
		}
		if rawTextElements[name] && !selfClosing {
			end := indexFold(doc[i:], "</"+name)
			if end < 0 {
				break
			}
			i += end
			continue
		}
		if !selfClosing && !voidElements[name] && (hiddenElements[name] || (!impliedEndElements[name] && hiddenByAttrs(attrs))) {
			skip, depth = name, 1
			continue
		}
		b.boundary(name)
	}
	return b.String()
}

// isTagNameByte reports whether c may be part of a tag name (first: a letter).
func isTagNameByte(c byte, first bool) bool {
	letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	if first {
		return letter
	}
	return letter || c >= '0' && c <= '9' || c == '-' || c == ':' || c == '_'
}

// tagEnd returns the index just past the '>' that ends the tag whose
// attributes start at k, skipping '>' inside quoted attribute values, or -1.
func tagEnd(s []byte, k int) int {
	var quote byte
	valueNext := false // after '=', a quote opens a value
	for p := k; p < len(s); p++ {
		c := s[p]
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch {
		case c == '>':
			return p + 1
		case valueNext && (c == '"' || c == '\''):
			quote, valueNext = c, false
		case c == '=':
			valueNext = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
		default:
			valueNext = false
		}
	}
	return -1
}

// hiddenByAttrs reports whether a tag's attributes hide the element: the
// hidden attribute, aria-hidden="true", or an inline display:none or
// visibility:hidden.
func hiddenByAttrs(attrs []byte) bool {
	if len(attrs) == 0 {
		return false
	}
	for name, value := range attrPairs(attrs) {
		switch name {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(value), "true") {
				return true
			}
		case "style":
			v := strings.ToLower(strings.Join(strings.Fields(value), ""))
			if strings.Contains(v, "display:none") || strings.Contains(v, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

// attrPairs yields a tag's attributes as lower-cased names and raw values.
func attrPairs(attrs []byte) func(yield func(string, string) bool) {
	return func(yield func(string, string) bool) {
		s := string(attrs)
		for {
			s = strings.TrimLeft(s, " \t\n\r\f/")
			if s == "" {
				return
			}
			end := strings.IndexAny(s, " \t\n\r\f=/>")
			if end < 0 {
				end = len(s)
			}
			name := strings.ToLower(s[:end])
			s = strings.TrimLeft(s[end:], " \t\n\r\f")
			value := ""
			if strings.HasPrefix(s, "=") {
				s = strings.TrimLeft(s[1:], " \t\n\r\f")
				if s != "" && (s[0] == '"' || s[0] == '\'') {
					q := s[0]
					if e := strings.IndexByte(s[1:], q); e >= 0 {
						value, s = s[1:1+e], s[2+e:]
					} else {
						value, s = s[1:], ""
					}
				} else {
					e := strings.IndexAny(s, " \t\n\r\f>")
					if e < 0 {
						e = len(s)
					}
					value, s = s[:e], s[e:]
				}
			}
			if name != "" && !yield(name, html.UnescapeString(value)) {
				return
			}
			if end == 0 && value == "" && len(s) > 0 {
				s = s[1:] // a stray character; never loop on it
			}
		}
	}
}

// indexFold returns the index of the first case-insensitive match of the
// ASCII string sub in s, or -1.
func indexFold(s []byte, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := bytes.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if i+len(sub) <= len(s) && strings.EqualFold(string(s[i:i+len(sub)]), sub) {
			return i
		}
	}
	return -1
}

// textLines collects text into lines with white space collapsed.
type textLines struct {
	lines []string
	cur   strings.Builder
	space bool // a space is due before the next word
}

// text adds raw character data, decoding character references.
func (t *textLines) text(raw []byte) {
	if len(raw) == 0 {
		return
	}
	s := string(raw)
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == 0 {
			t.space = true
			continue
		}
		if t.space && t.cur.Len() > 0 {
			t.cur.WriteByte(' ')
		}
		t.space = false
		t.cur.WriteRune(r)
	}
}

// boundary reacts to a start or end tag named name: block elements end the
// line, table cells and other inline boundaries separate words.
func (t *textLines) boundary(name string) {
	switch {
	case blockElements[name]:
		if t.cur.Len() > 0 {
			t.lines = append(t.lines, t.cur.String())
			t.cur.Reset()
		}
		t.space = false
	case name == "td" || name == "th" || name == "img" || name == "input":
		t.space = true
	}
}

// String returns the lines collected, one per line.
func (t *textLines) String() string {
	lines := t.lines
	if t.cur.Len() > 0 {
		lines = append(lines, t.cur.String())
	}
	return strings.Join(lines, "\n")
}
