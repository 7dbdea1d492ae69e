package store

import "encoding/json"

// validJSON reports whether b is JSON, as json.Valid does. The data of
// nearly every event a run streams is a small object of strings
// ({"agent_id":…,"text":…}), recognised here in one tight pass; anything
// else is left to json.Valid.
func validJSON(b []byte) bool {
	return stringObject(b) || json.Valid(b)
}

// stringObject reports whether b is an object whose keys and values are all
// strings, written without white space. False means only that b is not
// that: it may still be JSON.
func stringObject(b []byte) bool {
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	if len(b) == 2 {
		return b[1] == '}'
	}
	i := 1
	for {
		var ok bool
		if i, ok = jsonString(b, i); !ok || i >= len(b) || b[i] != ':' {
			return false
		}
		if i, ok = jsonString(b, i+1); !ok || i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i == len(b)-1
		default:
			return false
		}
	}
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
