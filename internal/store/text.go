package store

import (
	"errors"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
)

// What a text column may hold is the same on every engine (docs/api.md,
// "Text that cannot be stored as it is"). Postgres refuses NUL and invalid
// UTF-8 in text, and \u0000 or a lone surrogate in JSONB; SQLite takes them
// all. So that both engines keep, and read back, the same text, every value
// of a query passes through storable on its way to the driver, on both
// engines, reads included (a name with a NUL finds what was stored for it):
//
//   - a string loses its NULs and invalid bytes, each becoming U+FFFD, the
//     replacement character, as encoding/json does with invalid bytes;
//   - a jsonValue (JSON that Relay decodes back into fields: agent specs,
//     message parts, a tool call's sources and contexts) also has its
//     \u0000 escapes and lone surrogate escapes become \ufffd, so that the
//     text in it reads back as text stored on its own does;
//   - JSON kept byte for byte (event data, model request bodies) is a
//     string like any other: it holds no NUL byte (JSON escapes it as
//     \u0000, six ASCII characters, which are kept), so events and request
//     bodies come back exactly as they were streamed and sent;
//   - []byte values are binary (file contents, vectors) and kept as they are.

// replacement is U+FFFD in UTF-8.
const replacement = "\uFFFD"

// storableText returns s with each NUL and each byte that does not begin a
// valid UTF-8 sequence replaced by U+FFFD. Text that needs no change is
// returned as it is, without a copy.
func storableText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0, r == utf8.RuneError && n == 1:
			b.WriteString(replacement)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// jsonValue is a query argument holding JSON that Relay decodes back into
// fields (see above); on Postgres some of it is kept in JSONB columns.
type jsonValue string

// storableJSON returns the JSON text s as a jsonValue is stored: text
// storable, and each \u0000 escape and each escaped surrogate that is not
// half of a pair replaced by \ufffd, which encoding/json decodes them to
// anyway (except NUL, which the rule for text replaces too).
func storableJSON(s string) string {
	s = storableText(s)
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		// In valid JSON a backslash only starts an escape within a string.
		if s[i+1] != 'u' {
			b.WriteString(s[i : i+2])
			i++
			continue
		}
		u, ok := hex4(s, i+2)
		if !ok {
			b.WriteString(s[i : i+2])
			i++
			continue
		}
		switch {
		case u == 0:
			b.WriteString(`\ufffd`)
		case u >= 0xD800 && u < 0xDC00: // high surrogate: a low one must follow
			if lowSurrogateAt(s, i+6) {
				b.WriteString(s[i : i+12])
				i += 11
				continue
			}
			b.WriteString(`\ufffd`)
		case u >= 0xDC00 && u < 0xE000: // a low surrogate alone
			b.WriteString(`\ufffd`)
		default:
			b.WriteString(s[i : i+6])
		}
		i += 5
	}
	return b.String()
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// lowSurrogateAt reports whether s[i:] starts with the escape of a low surrogate.
func lowSurrogateAt(s string, i int) bool {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return false
	}
	r, ok := hex4(s, i+2)
	return ok && r >= 0xDC00 && r < 0xE000
}

// storable returns the arguments of a query as they are stored (see the
// rule above), copying args only when a value changes. Strings of named
// types (statuses, roles) follow the rule too.
func storable(args []any) []any {
	out, copied := args, false
	for i, a := range args {
		var v any
		switch a := a.(type) {
		case nil, bool, int, int64, float64, []byte, time.Time:
			continue
		case string:
			s := storableText(a)
			if s == a {
				continue
			}
			v = s
		case jsonValue:
			v = storableJSON(string(a))
		default:
			rv := reflect.ValueOf(a)
			if rv.Kind() != reflect.String {
				continue
			}
			s := rv.String()
			kept := storableText(s)
			if kept == s {
				continue
			}
			v = kept
		}
		if !copied {
			out, copied = append([]any(nil), args...), true
		}
		out[i] = v
	}
	return out
}

// refused classifies an error of the database refusing a value itself (the
// dialect's IsRefusedValue) as fault.Invalid: storing the same value again
// would be refused again, so it must not be retried like an outage. A full
// database (IsFull) is fault.Unavailable, saying so.
func (db *DB) refused(err error) error {
	if db.d.full(err) {
		// Said plainly, for the operator and the client alike: a 503, not
		// an internal error whose cause is only in the log.
		return fault.Wrap(fault.Unavailable, err, "the database's disk is full: nothing can be stored until space is freed on it")
	}
	if !db.d.refusedValue(err) {
		return err
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return err
	}
	return fault.Wrap(fault.Invalid, err, "the database refused a value")
}
