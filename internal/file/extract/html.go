package extract

import (
	"html"
	"strings"
)

// htmlSkip are elements whose content is not visible text.
var htmlSkip = map[string]bool{
	"script": true, "style": true, "head": true, "title": true, "template": true,
	"noscript": true, "svg": true, "math": true, "iframe": true, "object": true, "canvas": true,
}

// htmlBlock are elements that start on a new line.
var htmlBlock = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "body": true, "br": true,
	"caption": true, "dd": true, "details": true, "dialog": true, "div": true, "dl": true, "dt": true,
	"fieldset": true, "figcaption": true, "figure": true, "footer": true, "form": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "header": true,
	"hr": true, "li": true, "main": true, "nav": true, "ol": true, "p": true, "pre": true,
	"section": true, "summary": true, "table": true, "tbody": true, "thead": true, "tfoot": true,
	"tr": true, "ul": true, "html": true, "option": true, "legend": true,
}

// htmlText returns the visible text of an HTML document: tags dropped,
// entities decoded, the content of scripts, styles and the head skipped,
// block elements on their own lines and table cells separated by tabs.
// White space in text collapses as a browser would, except inside <pre>.
func htmlText(src string) string {
	var b strings.Builder
	skip := "" // the element whose content is being skipped
	skipDepth := 0
	pre := 0
	space := false // white space is due before the next word
	text := func(s string) {
		s = html.UnescapeString(s)
		if pre > 0 {
			b.WriteString(s)
			space = false
			return
		}
		for i, f := range strings.Fields(s) {
			if (i > 0 || space || startsSpace(s)) && b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f)
		}
		space = endsSpace(s)
	}
	cells := 0 // cells so far in the current table row
	block := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
		space = false
	}
	for i := 0; i < len(src); {
		lt := strings.IndexByte(src[i:], '<')
		if lt < 0 {
			if skip == "" {
				text(src[i:])
			}
			break
		}
		if lt > 0 && skip == "" {
			text(src[i : i+lt])
		}
		i += lt
		rest := src[i:]
		switch {
		case strings.HasPrefix(rest, "<!--"):
			end := strings.Index(rest[4:], "-->")
			if end < 0 {
				return normalizeSpace(b.String())
			}
			i += 4 + end + 3
			continue
		case strings.HasPrefix(rest, "<!") || strings.HasPrefix(rest, "<?"):
			end := strings.IndexByte(rest, '>')
			if end < 0 {
				return normalizeSpace(b.String())
			}
			i += end + 1
			continue
		}
		name, closing, end := htmlTag(rest)
		if name == "" {
			// A '<' that opens no tag is text.
			if skip == "" {
				text("<")
			}
			i++
			continue
		}
		i += end
		if skip != "" {
			if name == skip {
				if closing {
					skipDepth--
				} else if name != "script" && name != "style" && name != "title" {
					// Script, style and title hold raw text: a "<script>" in
					// a script is not a tag.
					skipDepth++
				}
				if skipDepth == 0 {
					skip = ""
				}
			} else if skip == "head" && name == "body" && !closing {
				skip, skipDepth = "", 0
				block()
			}
			continue
		}
		if !closing && htmlSkip[name] && !strings.HasSuffix(rest[:end], "/>") {
			skip, skipDepth = name, 1
			continue
		}
		switch {
		case name == "pre":
			if closing {
				pre = max(0, pre-1)
			} else {
				pre++
			}
			block()
		case htmlBlock[name]:
			block()
			if name == "tr" {
				cells = 0
			}
		case name == "td" || name == "th":
			if !closing {
				if cells > 0 {
					b.WriteByte('\t')
				}
				cells++
				space = false
			}
		case name == "img" && !closing:
			// Alternative text is what a reader would get for an image.
			if alt := htmlAttr(rest[:end], "alt"); alt != "" {
				text(" " + alt + " ")
			}
		}
	}
	return normalizeSpace(b.String())
}

func startsSpace(s string) bool { return s != "" && strings.TrimLeft(s[:1], " \t\n\r\f") == "" }
func endsSpace(s string) bool   { return s != "" && strings.TrimLeft(s[len(s)-1:], " \t\n\r\f") == "" }

// htmlTag reads the tag at the start of s ("<name …>" or "</name>"): its
// lower-case name, whether it closes, and its length. Quoted attribute values
// may hold '>'. The name is "" when s does not start a tag.
func htmlTag(s string) (name string, closing bool, n int) {
	i := 1
	if i < len(s) && s[i] == '/' {
		closing = true
		i++
	}
	start := i
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || (i > start && (s[i] >= '0' && s[i] <= '9' || s[i] == '-' || s[i] == ':'))) {
		i++
	}
	if i == start {
		return "", false, 0
	}
	name = strings.ToLower(s[start:i])
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return name, closing, i + 1
		}
	}
	return name, closing, len(s)
}

// htmlAttr returns the decoded value of attribute key in tag, or "".
func htmlAttr(tag, key string) string {
	low := strings.ToLower(tag)
	for from := 0; ; {
		k := strings.Index(low[from:], key)
		if k < 0 {
			return ""
		}
		k += from
		from = k + len(key)
		if k == 0 || !strings.ContainsRune(" \t\n\r\f", rune(low[k-1])) {
			continue
		}
		rest := strings.TrimLeft(tag[k+len(key):], " \t\n\r\f")
		if !strings.HasPrefix(rest, "=") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t\n\r\f")
		if rest == "" {
			return ""
		}
		if q := rest[0]; q == '"' || q == '\'' {
			if end := strings.IndexByte(rest[1:], q); end >= 0 {
				return html.UnescapeString(rest[1 : 1+end])
			}
			return ""
		}
		end := strings.IndexAny(rest, " \t\n\r\f>")
		if end < 0 {
			end = len(rest)
		}
		return html.UnescapeString(rest[:end])
	}
}
