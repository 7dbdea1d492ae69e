package store

import "encoding/json"

// validJSON reports whether b is JSON, as json.Valid does, in one tight pass
// (json.Valid steps a state machine through a function call a byte): every
// event's data and every model request's body a run stores is checked.
// Values nested deeper than maxJSONDepth are left to json.Valid, which
// refuses those past its own limit.
func validJSON(b []byte) bool {
	v := jsonValidator{b: b}
	i, ok := v.value(v.space(0), 0)
	if v.deep {
		return json.Valid(b)
	}
	return ok && v.space(i) == len(b)
}

// maxJSONDepth is how deep validJSON follows objects and arrays itself.
const maxJSONDepth = 100

type jsonValidator struct {
	b    []byte
	deep bool // a value nested past maxJSONDepth was met
}

// space returns the index of the first byte from i that is not white space.
func (v *jsonValidator) space(i int) int {
	for i < len(v.b) {
		switch v.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value reads the value that starts at b[i] and returns the index after it,
// with whether it is valid.
func (v *jsonValidator) value(i, depth int) (int, bool) {
	b := v.b
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return jsonString(b, i)
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			v.deep = true
			return i, false
		}
		return v.container(i, depth)
	case c == '-' || '0' <= c && c <= '9':
		return jsonNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

// container reads the object or array that starts at b[i].
func (v *jsonValidator) container(i, depth int) (int, bool) {
	b := v.b
	closing, object := byte(']'), b[i] == '{'
	if object {
		closing = '}'
	}
	i = v.space(i + 1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i, ok = jsonString(b, i); !ok {
				return i, false
			}
			if i = v.space(i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = v.space(i + 1)
		}
		if i, ok = v.value(i, depth+1); !ok {
			return i, false
		}
		if i = v.space(i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = v.space(i + 1)
		case closing:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// jsonNumber reads the number that starts at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// literal reads word (true, false or null) at b[i].
func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// jsonString reads the string that starts at b[i] and returns the index
// after it, with whether it is a valid JSON string. As json.Valid, it does
// not ask the bytes of a string to be UTF-8.
func jsonString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}
