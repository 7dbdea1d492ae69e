package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
)

// Delimiter separates the tool part from the server part of a tool key:
// `<tool>__mcp__<server>`.
const Delimiter = "__mcp__"

// LegacyDelimiter is LibreChat's delimiter. Agent tool lists written with it
// (`<tool>_mcp_<server>`) are accepted and mean the same tool.
const LegacyDelimiter = "_mcp_"

// AllTools is the tool part of a key that stands for every tool of a server:
// `all__mcp__<server>`.
const AllTools = "all"

// MaxKeyLen is the longest tool key Relay hands to a model. Providers limit
// function names to 64 characters of [A-Za-z0-9_-].
const MaxKeyLen = 64

// shortPrefixLen is how much of an over-long key survives shortening; the rest
// of the 64 characters is "_" and eight hex digits of a hash.
const shortPrefixLen = 55

// Key returns the tool key the model sees for the tool named tool on the MCP
// server named server: `<tool>__mcp__<server>`, each part normalised with
// [NormaliseServer] (every character outside [A-Za-z0-9_-] becomes "_").
//
// A key longer than [MaxKeyLen] is shortened to exactly 64 characters: its first
// 55 characters, "_", and the first 8 hex digits of the SHA-256 of the full
// normalised key, that is of the UTF-8 (here plain ASCII) bytes of
// `<normalised tool>__mcp__<normalised server>` before shortening. The hash
// keeps two long keys that share their first 55 characters apart; [Names] maps a
// shortened key back to its server and tool.
func Key(tool, server string) string {
	return shorten(fullKey(tool, server))
}

// fullKey is the normalised, unshortened key.
func fullKey(tool, server string) string {
	return NormaliseServer(tool) + Delimiter + NormaliseServer(server)
}

// shorten applies the 64-character rule of [Key] to a full normalised key.
func shorten(full string) string {
	if len(full) <= MaxKeyLen {
		return full
	}
	return full[:shortPrefixLen] + "_" + hash8(full)
}

// shortened reports whether key ends as shorten makes an over-long key end
// (and disambiguate a colliding one): "_" and 8 hex digits.
func shortened(key string) bool {
	n := len(key) - 9
	if n < 1 || key[n] != '_' {
		return false
	}
	for _, c := range []byte(key[n+1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// hash8 is the first 8 hex digits of the SHA-256 of s.
func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// NormaliseServer returns name as it appears in a tool key: every character
// (Unicode code point) outside [A-Za-z0-9_-] becomes "_", so "Landbouw & Natuur"
// becomes "Landbouw___Natuur" and "NEO NL" becomes "NEO_NL". Tool names are
// normalised the same way.
func NormaliseServer(name string) string {
	clean := true
	for i := 0; i < len(name); i++ {
		if !keyByte(name[i]) {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if r < 0x80 && keyByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// keyByte reports whether c may appear in a tool key as is.
func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// SplitKey splits an unshortened tool key into its tool and server parts. Both
// `<tool>__mcp__<server>` and LibreChat's `<tool>_mcp_<server>` are accepted;
// when the key contains "__mcp__" that delimiter is used, otherwise "_mcp_".
// The key is split at the last occurrence of the delimiter, because tool names
// may contain "_" and "-" (and even "_mcp_") while server names rarely do. The
// parts are returned as written in the key (normalised if the key came from
// [Key]); ok is false when there is no delimiter or either part is empty.
//
// A shortened key cannot be split reliably; use [Names.Lookup] for keys handed
// to a model.
func SplitKey(key string) (tool, server string, ok bool) {
	for _, d := range [...]string{Delimiter, LegacyDelimiter} {
		i := strings.LastIndex(key, d)
		if i < 0 {
			continue
		}
		tool, server = key[:i], key[i+len(d):]
		if tool == "" || server == "" {
			return "", "", false
		}
		return tool, server, true
	}
	return "", "", false
}

// IsAllKey reports whether key is `all__mcp__<server>` (or `all_mcp_<server>`),
// which in an agent's tool list means every tool of that server, and returns the
// server part.
func IsAllKey(key string) (server string, ok bool) {
	tool, server, ok := SplitKey(key)
	if !ok || tool != AllTools {
		return "", false
	}
	return server, true
}

// Names maps tool keys back to the MCP server and tool they stand for. It is
// built from the tools the servers actually list, because a shortened key can
// only be resolved by remembering what it was made from, and the raw names (not
// the normalised ones) are what tools/call needs. The zero value is ready to
// use; a Names is safe for concurrent use.
//
// Collisions: two distinct (server, tool) pairs may normalise to the same key,
// for example servers "NEO NL" and "NEO_NL", or tools "get.item" and "get_item".
// The pair added first keeps the plain key. A later pair gets the plain key cut
// to at most 55 characters, "_", and the first 8 hex digits of the SHA-256 of
// `<raw server> NUL <raw tool>` (with ` NUL <n>` appended in the unlikely case
// that this key is taken too). The suffix depends only on the pair's raw names,
// so the same pair always gets the same key as long as the same pair came first.
// Spellings other than the exact key (the full normalised key, the "_mcp_" form,
// raw names) resolve to the pair holding the plain key.
//
// Which pair comes first would depend on which server lists its tools first,
// and servers connect in parallel: a server marked with Yield (one whose name
// normalises as an earlier server's in the config does) never takes a plain
// key, so that the same key names the same tool at every start.
type Names struct {
	mu      sync.RWMutex
	keys    map[string]toolRef  // every key Lookup answers exactly
	pairs   map[toolRef]string  // the key handed out for each pair
	yielded map[string]struct{} // servers whose tools never take a plain key
}

// Yield makes every tool of the server named server take a disambiguated key
// (see Names), never the plain one, even while that is free.
func (n *Names) Yield(server string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.yielded == nil {
		n.yielded = map[string]struct{}{}
	}
	n.yielded[server] = struct{}{}
}

// toolRef names one tool of one MCP server by the raw names the server uses.
type toolRef struct {
	Server string
	Tool   string
}

// Add remembers the tool named tool on the server named server and returns its
// key. Adding the same pair again returns the same key.
func (n *Names) Add(server, tool string) string {
	ref := toolRef{Server: server, Tool: tool}
	n.mu.Lock()
	defer n.mu.Unlock()
	if key, ok := n.pairs[ref]; ok {
		return key
	}
	if n.keys == nil {
		n.keys = map[string]toolRef{}
		n.pairs = map[toolRef]string{}
	}
	full := fullKey(tool, server)
	key := shorten(full)
	_, yielded := n.yielded[server]
	if _, taken := n.keys[key]; taken || yielded {
		key = n.disambiguate(key, ref)
	}
	n.keys[key] = ref
	n.pairs[ref] = key
	if _, taken := n.keys[full]; !taken && !yielded {
		n.keys[full] = ref
	}
	return key
}

// disambiguate returns a free key for ref whose plain key is taken.
func (n *Names) disambiguate(key string, ref toolRef) string {
	prefix := key[:min(len(key), shortPrefixLen)]
	seed := ref.Server + "\x00" + ref.Tool
	for i := 0; ; i++ {
		s := seed
		if i > 0 {
			s += "\x00" + strconv.Itoa(i)
		}
		k := prefix + "_" + hash8(s)
		if _, taken := n.keys[k]; !taken {
			return k
		}
	}
}

// Lookup returns the server and tool behind key. It accepts the key [Names.Add]
// returned (shortened or not), the full normalised key of a shortened one, and
// the same key written with LibreChat's "_mcp_" delimiter or with raw names
// (e.g. "search_mcp_NEO NL"), which are normalised before the lookup.
func (n *Names) Lookup(key string) (server, tool string, ok bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if ref, ok := n.keys[key]; ok {
		return ref.Server, ref.Tool, true
	}
	t, s, ok := SplitKey(key)
	if !ok {
		return "", "", false
	}
	full := fullKey(t, s)
	for _, k := range [...]string{full, shorten(full)} {
		if ref, ok := n.keys[k]; ok {
			return ref.Server, ref.Tool, true
		}
	}
	return "", "", false
}

// RemoveServer forgets every tool of the server named server, for when its tool
// list changes or it goes away. Keys handed out for other servers stay as they
// are.
func (n *Names) RemoveServer(server string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for key, ref := range n.keys {
		if ref.Server == server {
			delete(n.keys, key)
		}
	}
	for ref := range n.pairs {
		if ref.Server == server {
			delete(n.pairs, ref)
		}
	}
}

// NamedBy reports whether the server part of a tool key names the configured
// server name: as written, or normalised as keys write it.
func NamedBy(name, keyPart string) bool {
	return name == keyPart || NormaliseServer(name) == keyPart
}
