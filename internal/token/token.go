// Package token counts the tokens of a chat request before it is sent, so that
// Relay can keep a conversation inside the model's context window
// (docs/config.md, "Context window").
//
// OpenAI-family models are counted with their own byte-pair encoding:
// o200k_base for gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4 and chatgpt-4o;
// cl100k_base for gpt-4 and gpt-3.5. Both vocabularies are compiled into the
// binary (nothing is downloaded) and loaded on first use. Every other model
// (Anthropic's, Google's, a custom endpoint's) has a tokenizer Relay does not
// hold; its count is an estimate: the cl100k_base count plus a fifth,
// rounded up.
//
// Messages are counted the way OpenAI counts chat messages: 3 tokens per
// message, the tokens of its role, content and name, 1 more for a name, and 3
// for the reply's priming; tools as OpenAI renders function definitions. The
// formula is in docs/config.md.
package token

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/tiktoken-go/tokenizer/codec"
)

// Encoding names a byte-pair encoding.
type Encoding string

// The encodings Relay holds.
const (
	O200k  Encoding = "o200k_base"
	Cl100k Encoding = "cl100k_base"
)

// The parts of OpenAI's chat format that are not text (docs/config.md).
const (
	perMessage = 3 // <|start|>{role}<|message|> … <|end|>
	perName    = 1 // a message's name
	replyStart = ReplyPriming
	perCall    = 3   // a tool call's own framing (an estimate: OpenAI does not document it)
	perImage   = 765 // a 1024×1024 image in high detail: 85 + 4 tiles × 170
)

// ReplyPriming is what a request counts besides its messages and tools: the
// reply is primed with <|start|>assistant<|message|>.
const ReplyPriming = 3

// EncodingFor returns the encoding of an OpenAI-family model and true, or
// cl100k_base and false for any other model, whose count is then an estimate.
// A provider prefix ("openai/gpt-4o" on a router) is ignored.
func EncodingFor(model string) (Encoding, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, p := range []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"} {
		if strings.HasPrefix(m, p) {
			return O200k, true
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "gpt-35"} {
		if strings.HasPrefix(m, p) {
			return Cl100k, true
		}
	}
	return Cl100k, false
}

// Counters makes a Counter per model. Its counters share the encodings and a
// cache of message counts, so that a conversation's earlier messages are
// tokenized once, not on every turn and every step of the agent loop. It is
// safe for concurrent use; the zero value is not: use NewCounters.
type Counters struct {
	seed maphash.Seed
	max  int

	encOnce [2]sync.Once
	enc     [2]*codec.Codec

	mu sync.Mutex
	// cache holds counts by the hash of what was counted, a map for each
	// encoding (indexed as enc). Keys and values hold no pointers, so the
	// garbage collector does not look through them.
	cache [2]map[uint64]int32
}

// cacheKey is where a count is kept in the cache: the encoding's map, and
// the hash of what was counted.
type cacheKey struct {
	hash uint64
	enc  Encoding
}

// DefaultCacheEntries is how many counts NewCounters(0) keeps for each
// encoding: a map of about a megabyte (the next thousands of entries would
// take it past one and a half).
const DefaultCacheEntries = 48 << 10

// NewCounters returns Counters that cache up to entries counts for each
// encoding (0: DefaultCacheEntries). When an encoding's cache is full it
// starts over.
func NewCounters(entries int) *Counters {
	if entries <= 0 {
		entries = DefaultCacheEntries
	}
	return &Counters{seed: maphash.MakeSeed(), max: entries, cache: [2]map[uint64]int32{{}, {}}}
}

// encIndex is the index of an encoding's codec and cache.
func encIndex(e Encoding) int {
	if e == Cl100k {
		return 1
	}
	return 0
}

func (cs *Counters) codec(e Encoding) *codec.Codec {
	i := encIndex(e)
	cs.encOnce[i].Do(func() {
		if e == O200k {
			cs.enc[i] = codec.NewO200kBase()
		} else {
			cs.enc[i] = codec.NewCl100kBase()
		}
	})
	return cs.enc[i]
}

// Load reads the encodings' tables now, so that the first count of each
// does not pay for it (tens of milliseconds of CPU an encoding).
func (cs *Counters) Load(encodings ...Encoding) {
	for _, e := range encodings {
		cs.codec(e)
	}
}

// For returns the Counter for a model (see EncodingFor).
func (cs *Counters) For(model string) *Counter {
	e, exact := EncodingFor(model)
	return &Counter{cs: cs, enc: e, exact: exact}
}

// Counter counts the tokens of requests to one model.
type Counter struct {
	cs    *Counters
	enc   Encoding
	exact bool
}

// Encoding is the encoding the counter uses.
func (c *Counter) Encoding() Encoding { return c.enc }

// Exact reports whether counts are the model's own (an OpenAI-family model)
// rather than an estimate.
func (c *Counter) Exact() bool { return c.exact }

// Method says how the counter counts, for people: "o200k_base", or
// "estimate (cl100k_base + 20%)".
func (c *Counter) Method() string {
	if c.exact {
		return string(c.enc)
	}
	return "estimate (" + string(c.enc) + " + 20%)"
}

// Text returns the tokens of s in the counter's encoding, without margin,
// from the cache when it was counted before. A long text is counted
// paragraph by paragraph, each through the cache: a system prompt whose
// first line holds the time is tokenized again only there. The count is the
// same: the encodings' split never joins a run of line breaks with the
// letter or digit that follows it.
func (c *Counter) Text(s string) int {
	if len(s) < paragraphMin {
		return c.paragraph(s)
	}
	n := 0
	for s != "" {
		end := paragraphEnd(s)
		n += c.paragraph(s[:end])
		s = s[end:]
	}
	return n
}

// paragraphMin is the length from which a text is counted by paragraphs.
const paragraphMin = 512

// paragraphEnd returns where the first paragraph of s ends: after a run of
// two or more line breaks that a letter or digit follows, or at the end.
func paragraphEnd(s string) int {
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], "\r\n")
		if j < 0 {
			return len(s)
		}
		start := i + j
		end := start
		for end < len(s) && (s[end] == '\n' || s[end] == '\r') {
			end++
		}
		if end-start >= 2 && end < len(s) {
			if r, _ := utf8.DecodeRuneInString(s[end:]); unicode.IsLetter(r) || unicode.IsNumber(r) {
				return end
			}
		}
		i = end
	}
	return len(s)
}

// paragraph counts a short text, or one paragraph of a long one, through
// the cache.
func (c *Counter) paragraph(s string) int {
	if s == "" {
		return 0
	}
	k := cacheKey{hash: maphash.String(c.cs.seed, s), enc: c.enc}
	k.hash ^= 2 // not a message's key
	if n, ok := c.cs.lookup(k); ok {
		return n
	}
	n := c.count(s)
	c.cs.store(k, n)
	return n
}

// count tokenizes s.
func (c *Counter) count(s string) int {
	if s == "" {
		return 0
	}
	n, err := c.cs.codec(c.enc).Count(s)
	if err != nil { // the split expression timed out or failed: fall back to bytes
		return (len(s) + 2) / 3
	}
	return n
}

func (cs *Counters) lookup(k cacheKey) (int, bool) {
	cs.mu.Lock()
	n, ok := cs.cache[encIndex(k.enc)][k.hash]
	cs.mu.Unlock()
	return int(n), ok
}

// store keeps n unless it is too large to be kept (no count of a text Relay
// sends comes near).
func (cs *Counters) store(k cacheKey, n int) {
	if n > math.MaxInt32 {
		return
	}
	cs.mu.Lock()
	m := cs.cache[encIndex(k.enc)]
	if len(m) >= cs.max {
		clear(m)
	}
	m[k.hash] = int32(n)
	cs.mu.Unlock()
}

// margin turns a count of the cl100k encoding into the estimate for a model
// whose tokenizer Relay does not hold.
func (c *Counter) margin(n int) int {
	if c.exact {
		return n
	}
	return n + (n+4)/5
}

// Message returns the tokens of one message, from the cache when it was
// counted before.
func (c *Counter) Message(m *llm.Message) int {
	k := cacheKey{hash: c.hashMessage(m), enc: c.enc}
	if c.exact {
		k.hash ^= 1 // exact and estimated counts of one text differ
	}
	if n, ok := c.cs.lookup(k); ok {
		return n
	}
	n := c.margin(c.message(m))
	c.cs.store(k, n)
	return n
}

// message counts m without the cache: the per-message framing, then every
// text of it (docs/config.md).
func (c *Counter) message(m *llm.Message) int {
	n := perMessage + c.Text(string(m.Role))
	if len(m.Parts) > 0 {
		for i := range m.Parts {
			p := &m.Parts[i]
			if p.Type == llm.PartImage {
				n += perImage
			} else {
				n += c.Text(p.Text)
			}
		}
	} else {
		n += c.Text(m.Content)
	}
	if m.Name != "" {
		n += c.Text(m.Name) + perName
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		n += perCall + c.Text(tc.ID) + c.Text(tc.Function.Name) + c.Text(tc.Function.Arguments)
	}
	n += c.Text(m.ToolCallID) // the call's id again: from the cache
	// Reasoning sent back to the provider that wrote it (Anthropic's signed
	// thinking blocks), counted as its JSON: a little more than its text.
	n += c.Text(string(m.Thinking))
	return n
}

// hashMessage hashes what message counts.
func (c *Counter) hashMessage(m *llm.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(c.cs.seed)
	str := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	str(string(m.Role))
	str(m.Content)
	str(m.Name)
	str(m.ToolCallID)
	for i := range m.Parts {
		p := &m.Parts[i]
		str(p.Type)
		if p.Type != llm.PartImage {
			str(p.Text)
		}
	}
	str(string(m.Thinking))
	h.WriteByte(1)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		str(tc.ID)
		str(tc.Function.Name)
		str(tc.Function.Arguments)
	}
	return h.Sum64()
}

// Messages returns the tokens of msgs and of the reply's priming.
func (c *Counter) Messages(msgs []llm.Message) int {
	n := replyStart
	for i := range msgs {
		n += c.Message(&msgs[i])
	}
	return n
}

// Tools returns the tokens of the tools array as OpenAI renders function
// definitions for the model (docs/config.md).
func (c *Counter) Tools(tools []llm.FunctionTool) int {
	if len(tools) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(c.cs.seed)
	h.WriteString("tools")
	for i := range tools {
		f := &tools[i].Function
		h.WriteString(f.Name)
		h.WriteByte(0)
		h.WriteString(f.Description)
		h.WriteByte(0)
		h.Write(f.Parameters)
		h.WriteByte(0)
	}
	k := cacheKey{hash: h.Sum64(), enc: c.enc}
	if c.exact {
		k.hash ^= 1
	}
	if n, ok := c.cs.lookup(k); ok {
		return n
	}
	n := c.margin(c.tools(tools))
	c.cs.store(k, n)
	return n
}

// The framing of function definitions as OpenAI counts them: per function,
// per properties block, per property, per enum and per enum item, and once
// for the whole tools block.
type toolFraming struct{ funcInit, propInit, propKey, enumInit, enumItem, funcEnd int }

func (c *Counter) framing() toolFraming {
	if c.enc == O200k {
		return toolFraming{funcInit: 7, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12}
	}
	return toolFraming{funcInit: 10, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12}
}

func (c *Counter) tools(tools []llm.FunctionTool) int {
	fr := c.framing()
	n := 0
	for i := range tools {
		f := &tools[i].Function
		n += fr.funcInit + c.Text(f.Name+":"+strings.TrimSuffix(f.Description, "."))
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(f.Parameters, &schema) != nil {
			n += c.Text(string(f.Parameters)) // not an object schema: its text
			continue
		}
		if len(schema.Properties) == 0 {
			continue
		}
		n += fr.propInit
		for name, raw := range schema.Properties {
			n += fr.propKey
			var prop map[string]json.RawMessage
			if json.Unmarshal(raw, &prop) != nil {
				n += c.Text(name) + c.Text(string(raw))
				continue
			}
			var typ, desc string
			if t, ok := prop["type"]; ok {
				if json.Unmarshal(t, &typ) != nil {
					typ = string(t)
				}
			}
			if d, ok := prop["description"]; ok {
				_ = json.Unmarshal(d, &desc)
			}
			if e, ok := prop["enum"]; ok {
				var items []any
				if json.Unmarshal(e, &items) == nil {
					n += fr.enumInit
					for _, it := range items {
						s, isStr := it.(string)
						if !isStr {
							b, _ := json.Marshal(it)
							s = string(b)
						}
						n += fr.enumItem + c.Text(s)
					}
				}
			}
			n += c.Text(name + ":" + typ + ":" + strings.TrimSuffix(desc, "."))
			// What OpenAI's formula leaves out (nested properties, items,
			// defaults, …) is counted as its JSON text: more, never less.
			for k, v := range prop {
				switch k {
				case "type", "description", "enum":
				default:
					n += c.Text(k) + c.Text(string(v))
				}
			}
		}
	}
	return n + fr.funcEnd
}

// Request returns the tokens of the whole request: its messages, the reply's
// priming and its tools.
func (c *Counter) Request(r *llm.Request) int {
	return c.Messages(r.Messages) + c.Tools(r.Tools)
}
