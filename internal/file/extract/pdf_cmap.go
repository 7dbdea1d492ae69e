package extract

import (
	"unicode/utf16"
)

// cmap is what Relay reads of a CMap: the code space (how many bytes each
// code takes) and, for a ToUnicode CMap, the text of each code.
type cmap struct {
	space  []codeRange
	chars  map[uint64]string // key: length<<32 | code
	ranges []bfRange         // ranges too large to expand into chars
}

type codeRange struct{ lo, hi []byte }

type bfRange struct {
	n      int
	lo, hi uint32
	dst    []byte // UTF-16BE of lo; later codes increment its last unit
}

// maxCMapChars bounds how many codes of ranges are expanded into the map;
// maxCMapRanges how many ranges beyond that are kept (each lookup scans them).
const (
	maxCMapChars  = 1 << 16
	maxCMapRanges = 1 << 10
)

func cmapKey(code uint32, n int) uint64 { return uint64(n)<<32 | uint64(code) }

// parseCMap reads codespace ranges, bfchar and bfrange sections. A CMap that
// breaks off keeps what was read before the break.
func parseCMap(data []byte) *cmap {
	m := &cmap{chars: map[uint64]string{}}
	l := &lexer{b: data}
	for {
		v, err := l.object()
		if err != nil {
			return m
		}
		kw, ok := v.(pdfKeyword)
		if !ok {
			continue
		}
		switch kw {
		case "begincodespacerange":
			for {
				lo, err1 := l.object()
				if k, ok := lo.(pdfKeyword); ok && k == "endcodespacerange" || err1 != nil {
					break
				}
				hi, err2 := l.object()
				ls, ok1 := lo.(pdfString)
				hs, ok2 := hi.(pdfString)
				if err2 != nil || !ok1 || !ok2 {
					return m
				}
				if len(ls) == len(hs) && len(ls) >= 1 && len(ls) <= 4 {
					m.space = append(m.space, codeRange{lo: []byte(ls), hi: []byte(hs)})
				}
			}
		case "beginbfchar":
			for {
				src, err1 := l.object()
				if k, ok := src.(pdfKeyword); ok && k == "endbfchar" || err1 != nil {
					break
				}
				dst, err2 := l.object()
				ss, ok := src.(pdfString)
				if err2 != nil || !ok {
					return m
				}
				if len(ss) < 1 || len(ss) > 4 {
					continue
				}
				text := ""
				switch t := dst.(type) {
				case pdfString:
					text = utf16Text([]byte(t))
				case pdfName:
					text = glyphText(string(t))
				}
				m.chars[cmapKey(codeOf([]byte(ss)), len(ss))] = text
			}
		case "beginbfrange":
			for {
				lo, err1 := l.object()
				if k, ok := lo.(pdfKeyword); ok && k == "endbfrange" || err1 != nil {
					break
				}
				hi, err2 := l.object()
				dst, err3 := l.object()
				ls, ok1 := lo.(pdfString)
				hs, ok2 := hi.(pdfString)
				if err2 != nil || err3 != nil || !ok1 || !ok2 {
					return m
				}
				if len(ls) != len(hs) || len(ls) < 1 || len(ls) > 4 {
					continue
				}
				n := len(ls)
				a, b := codeOf([]byte(ls)), codeOf([]byte(hs))
				if b < a {
					continue
				}
				switch t := dst.(type) {
				case pdfArray:
					for i, x := range t {
						if a+uint32(i) > b {
							break
						}
						if s, ok := x.(pdfString); ok {
							m.chars[cmapKey(a+uint32(i), n)] = utf16Text([]byte(s))
						}
					}
				case pdfString:
					if len(t) == 0 {
						continue
					}
					if int(b-a) < maxCMapChars && len(m.chars) < maxCMapChars {
						for c := a; ; c++ {
							m.chars[cmapKey(c, n)] = utf16Text(incremented([]byte(t), c-a))
							if c == b {
								break
							}
						}
					} else if len(m.ranges) < maxCMapRanges {
						m.ranges = append(m.ranges, bfRange{n: n, lo: a, hi: b, dst: []byte(t)})
					}
				}
			}
		}
	}
}

func codeOf(b []byte) uint32 {
	var c uint32
	for _, x := range b {
		c = c<<8 | uint32(x)
	}
	return c
}

// incremented returns dst with its last 16-bit unit increased by k.
func incremented(dst []byte, k uint32) []byte {
	out := append([]byte(nil), dst...)
	if len(out) >= 2 {
		v := uint32(out[len(out)-2])<<8 | uint32(out[len(out)-1])
		v += k
		out[len(out)-2], out[len(out)-1] = byte(v>>8), byte(v)
	} else {
		out[0] += byte(k)
	}
	return out
}

// utf16Text decodes the UTF-16BE of a ToUnicode destination. An odd length
// is not UTF-16; such bytes are taken as Latin-1.
func utf16Text(b []byte) string {
	if len(b)%2 != 0 {
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return string(r)
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return string(utf16.Decode(u))
}

func (m *cmap) lookup(code uint32, n int) (string, bool) {
	if t, ok := m.chars[cmapKey(code, n)]; ok {
		return t, true
	}
	for _, r := range m.ranges {
		if r.n == n && code >= r.lo && code <= r.hi {
			return utf16Text(incremented(r.dst, code-r.lo)), true
		}
	}
	return "", false
}

// codeLen is how many bytes the code at the start of s takes: the length of
// the codespace range it falls in, else def.
func (m *cmap) codeLen(s []byte, def int) int {
	for n := 1; n <= 4 && n <= len(s); n++ {
		for _, r := range m.space {
			if len(r.lo) != n {
				continue
			}
			in := true
			for i := 0; i < n; i++ {
				if s[i] < r.lo[i] || s[i] > r.hi[i] {
					in = false
					break
				}
			}
			if in {
				return n
			}
		}
	}
	if len(m.space) > 0 && def == 2 {
		// No range matched; use the shortest length the code space has.
		short := 4
		for _, r := range m.space {
			short = min(short, len(r.lo))
		}
		return short
	}
	return def
}
