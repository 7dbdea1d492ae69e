package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The request body is written by hand rather than with encoding/json: the key
// order is fixed by docs/prompt.md "The request body", the texts are written without HTML escaping (a
// prompt full of <context> tags stays readable), and a build stays within a
// few allocations.

// EmptyObjectSchema is the parameters of a tool that takes no arguments.
const EmptyObjectSchema = `{"type":"object","properties":{}}`

// maxDepth bounds the nesting of a value, which also stops a map that holds
// itself.
const maxDepth = 1000

var errTooDeep = errors.New("value nested too deeply (or cyclic)")

const hexDigits = "0123456789abcdef"

// Every byte of a word set to 0x01 and to 0x80, for testing eight bytes at once.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// AppendJSONString appends s as a JSON string exactly as encoding/json writes
// it with HTML escaping off, for callers that write JSON by hand on a hot path.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

// AppendJSONValue appends v as JSON the way a [Request] writes its model
// parameters: JSON-shaped values by hand, maps with sorted keys, without HTML
// escaping; anything else through encoding/json. It fails on a value JSON
// cannot hold (NaN, a cycle, an invalid json.RawMessage).
func AppendJSONValue(dst []byte, v any) ([]byte, error) { return appendValue(dst, v, 0) }

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// control characters, U+2028 and U+2029 are escaped; <, > and & are not.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time: none is a control
		// character, '"', '\\' or >= 0x80.
		for i+8 <= len(s) {
			b := s[i : i+8]
			x := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
			quote, backslash := x^('"'*ones), x^('\\'*ones)
			if (x|(x-0x20*ones)&^x|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0 {
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendValue appends v as JSON. JSON-shaped values (maps with string keys,
// slices of any, strings, numbers, booleans, nil, json.RawMessage and
// json.Number) are written here, maps with sorted keys as encoding/json
// writes them; anything else goes through encoding/json.
func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		return appendFloat(dst, v, 64)
	case float32:
		return appendFloat(dst, float64(v), 32)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case json.Number:
		if !validNumber(string(v)) {
			return nil, fmt.Errorf("invalid number literal %q", string(v))
		}
		return append(dst, v...), nil
	case json.RawMessage:
		if v == nil {
			return append(dst, "null"...), nil
		}
		if !json.Valid(v) {
			return nil, errors.New("invalid JSON in json.RawMessage")
		}
		return append(dst, v...), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		// Small maps are sorted on the stack, members and all, so that no
		// member is looked up twice.
		var arr [16]member
		members := arr[:0]
		for k, e := range v {
			members = append(members, member{k, e})
		}
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
		dst = append(dst, '{')
		for i := range members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, members[i].key)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, members[i].value, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, e)
		}
		return append(dst, ']'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// member is one member of a JSON object.
type member struct {
	key   string
	value any
}

// appendFloat writes f as encoding/json does: plain decimals between 1e-6
// and 1e21, exponent notation (e-7, not e-07) outside.
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("unsupported number %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
