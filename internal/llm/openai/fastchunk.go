package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/llm"
)

// decodeChunk reads one data event of a stream into c, as json.Unmarshal
// does. The chunks of a streamed answer are small and nearly all alike: a
// piece of text in choices[0].delta.content, a piece of a tool call's
// arguments in choices[0].delta.tool_calls, the usage at the end. Those are
// read here by hand, without reflection; anything else (errors, content
// parts, refusals, escapes in keys, keys that differ from Relay's only in
// case, a key twice where json.Unmarshal would merge the two, malformed
// JSON, …) goes to json.Unmarshal, so that what is decoded never differs.
func decodeChunk(data []byte, c *chunk) error {
	*c = chunk{}
	if fastChunk(data, c) {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(data, c)
}

// fastChunk decodes the common chunk into c and reports whether it could.
func fastChunk(data []byte, c *chunk) bool {
	s := scan{b: data}
	seenChoices := false
	seenUsage := false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if seenChoices {
				return false
			}
			seenChoices = true
			return s.choices(c)
		case "usage":
			if seenUsage { // a second is merged into the first: json's business
				return false
			}
			seenUsage = true
			if s.null() {
				c.Usage = nil
				return true
			}
			c.Usage = &llm.Usage{}
			return s.usage(c.Usage)
		case "error":
			c.Error = json.RawMessage("null") // as json.Unmarshal leaves it
			return s.null()
		}
		return !knownKey(key, chunkKeys) && s.skip()
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// The keys of each object that decoding looks at, as the fields of its Go
// type name them: json.Unmarshal matches keys without regard to case, so a
// key equal to one of them but for case is left to it.
var (
	chunkKeys    = []string{"choices", "usage", "error"}
	choiceKeys   = []string{"index", "delta", "message", "finish_reason", "content_filter_results"}
	deltaKeys    = []string{"content", "tool_calls", "refusal"}
	usageKeys    = []string{"prompt_tokens", "completion_tokens", "total_tokens"}
	toolCallKeys = []string{"index", "id", "function"}
	functionKeys = []string{"name", "arguments"}
)

// knownKey reports whether key is one of keys but for case, as
// encoding/json folds it: with Unicode's simple folding, so that "ſ" (U+017F)
// is an "s" and the Kelvin sign a "k", of another length in bytes.
func knownKey(key []byte, keys []string) bool {
	for _, k := range keys {
		if bytes.EqualFold(key, []byte(k)) {
			return true
		}
	}
	return false
}

// choices reads the choices array.
func (s *scan) choices(c *chunk) bool {
	if s.null() {
		c.Choices = nil
		return true
	}
	c.Choices = c.room.choice[:0]
	return s.array(func() bool {
		c.Choices = append(c.Choices, choice{})
		ch := &c.Choices[len(c.Choices)-1]
		first := len(c.Choices) == 1
		seenDelta := false
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "index":
				n, ok := s.integer()
				ch.Index = n
				return ok
			case "delta":
				if seenDelta { // a second one is merged into the first: json's business
					return false
				}
				seenDelta = true
				if s.null() {
					return true
				}
				if first {
					ch.Delta = &c.room.delta
				} else {
					ch.Delta = &delta{}
				}
				return s.delta(c, ch.Delta)
			case "finish_reason":
				if s.null() {
					ch.FinishReason = nil
					return true
				}
				v, ok := s.str()
				ch.FinishReason = &v
				return ok
			case "content_filter_results":
				// Azure sends these with every chunk.
				s.ws()
				start := s.i
				if !s.skip() {
					return false
				}
				ch.ContentFilterResults = bytes.Clone(s.b[start:s.i])
				return true
			}
			return !knownKey(key, choiceKeys) && s.skip()
		})
	})
}

// delta reads a delta holding text (content a string or null) or pieces of
// tool calls.
func (s *scan) delta(c *chunk, d *delta) bool {
	seenCalls := false
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			if s.null() {
				return true
			}
			v, ok := s.str()
			d.Content = content(v)
			return ok
		case "tool_calls":
			if seenCalls {
				return false
			}
			seenCalls = true
			return s.toolCalls(c, d)
		case "refusal":
			return s.null()
		}
		return !knownKey(key, deltaKeys) && s.skip()
	})
}

// toolCalls reads a delta's tool_calls: null, or an array of objects. The
// first tool call of c's first delta is put in c's room.
func (s *scan) toolCalls(c *chunk, d *delta) bool {
	if s.null() {
		d.ToolCalls = nil
		return true
	}
	roomy := d == &c.room.delta
	if roomy {
		d.ToolCalls = c.room.toolCall[:0] // [] is an empty slice, not nil
	} else {
		d.ToolCalls = make([]toolCallDelta, 0, 1)
	}
	return s.array(func() bool {
		d.ToolCalls = append(d.ToolCalls, toolCallDelta{})
		tc := &d.ToolCalls[len(d.ToolCalls)-1]
		first := roomy && len(d.ToolCalls) == 1
		seenFunction := false
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "index":
				if s.null() {
					tc.Index = nil
					return true
				}
				n, ok := s.integer()
				if first {
					c.room.index = n
					tc.Index = &c.room.index
				} else {
					tc.Index = &n
				}
				return ok
			case "id":
				v, ok := s.str()
				tc.ID = v
				return ok
			case "function":
				if seenFunction {
					return false
				}
				seenFunction = true
				return s.object(func(key []byte) bool {
					switch string(key) {
					case "name":
						v, ok := s.str()
						tc.Function.Name = v
						return ok
					case "arguments":
						v, ok := s.str()
						tc.Function.Arguments = v
						return ok
					}
					return !knownKey(key, functionKeys) && s.skip()
				})
			}
			return !knownKey(key, toolCallKeys) && s.skip()
		})
	})
}

// usage reads a usage object; a count that is not a whole number (or null,
// which json.Unmarshal passes over) is left to encoding/json.
func (s *scan) usage(u *llm.Usage) bool {
	return s.object(func(key []byte) bool {
		var n *int
		switch string(key) {
		case "prompt_tokens":
			n = &u.PromptTokens
		case "completion_tokens":
			n = &u.CompletionTokens
		case "total_tokens":
			n = &u.TotalTokens
		default:
			return !knownKey(key, usageKeys) && s.skip()
		}
		v, ok := s.integer()
		*n = v
		return ok
	})
}

// scan reads JSON from b at i.
type scan struct {
	b     []byte
	i     int
	depth int // of the values skip is inside
}

// maxSkipDepth is how deep skip goes into values no field asks for; deeper
// ones are left to encoding/json, which refuses those past 10,000 levels.
const maxSkipDepth = 100

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// lit consumes c if it comes next (after white space).
func (s *scan) lit(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// null consumes a null if one comes next.
func (s *scan) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object reads an object, calling field for each key with the scanner at
// its value; field must consume the value. Keys with escapes are refused.
func (s *scan) object(field func(key []byte) bool) bool {
	if !s.lit('{') {
		return false
	}
	s.ws()
	if s.lit('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.plainString()
		if !ok || !s.lit(':') || !field(key) {
			return false
		}
		s.ws()
		if s.lit('}') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// plainString reads a string without escapes, as a key is, and returns its
// bytes in b.
func (s *scan) plainString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i+1 : j]
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value. One with escapes or bytes that are not UTF-8 is
// decoded by encoding/json, which knows every rule.
func (s *scan) str() (string, bool) {
	raw, plain, ok := s.rawString()
	if !ok {
		return "", false
	}
	if plain && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// skipString consumes a string value that nothing reads, without making it.
func (s *scan) skipString() bool {
	raw, plain, ok := s.rawString()
	return ok && (plain || json.Valid(raw))
}

// rawString consumes a string value and returns it with its quotes, and
// whether it has no escapes. A control character in it is refused.
func (s *scan) rawString() (raw []byte, plain, ok bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start, plain := s.i, true
	for j := s.i + 1; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:s.i], plain, true
		case c == '\\':
			plain = false
			j++ // the escaped byte cannot end the string
		case c < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

// integer reads a number that is a whole number without exponent or fraction.
func (s *scan) integer() (int, bool) {
	s.ws()
	j, neg := s.i, false
	if j < len(s.b) && s.b[j] == '-' {
		neg = true
		j++
	}
	start, n := j, 0
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		if j-start >= 9 { // keep far from overflow; json.Unmarshal decides
			return 0, false
		}
		n = n*10 + int(s.b[j]-'0')
		j++
	}
	if j == start || j-start > 1 && s.b[start] == '0' {
		return 0, false
	}
	if j < len(s.b) {
		switch s.b[j] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	s.i = j
	if neg {
		n = -n
	}
	return n, true
}

// skip consumes any one JSON value, checking its shape; strings and numbers
// are checked by json.Valid.
func (s *scan) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if s.depth >= maxSkipDepth {
			return false
		}
		s.depth++
		ok := s.skipNested(c)
		s.depth--
		return ok
	case c == '"':
		return s.skipString()
	case c == 't' || c == 'f' || c == 'n':
		for _, w := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
				s.i += len(w)
				return true
			}
		}
		return false
	case c == '-' || c >= '0' && c <= '9':
		j := s.i + 1
		for j < len(s.b) && strings.IndexByte("0123456789+-.eE", s.b[j]) >= 0 {
			j++
		}
		if !json.Valid(s.b[s.i:j]) {
			return false
		}
		s.i = j
		return true
	}
	return false
}

// skipNested consumes the object or array that c starts, at s.i.
func (s *scan) skipNested(c byte) bool {
	if c == '{' {
		return s.object(func([]byte) bool { return s.skip() })
	}
	return s.array(s.skip)
}

// array reads an array, calling elem with the scanner at each element; elem
// must consume it.
func (s *scan) array(elem func() bool) bool {
	if !s.lit('[') {
		return false
	}
	if s.lit(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.lit(']') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}
