package extract

import (
	"strings"
	"unicode/utf16"
)

// pdfFont turns the bytes of a shown string into text and advance widths.
type pdfFont struct {
	composite bool // Type0: multi-byte codes, widths by CID
	toUnicode *cmap
	codes     *cmap // a Type0 font's embedded encoding CMap: only its code lengths are used
	ucs2      bool  // a Type0 font whose predefined CMap makes codes UTF-16
	simple    [256]string
	// simpleWidths are a simple font's widths by code, worked out once.
	simpleWidths [256]float64
	first        int
	widths       []float64 // simple fonts: from first; glyph units
	cidWidths    map[int]float64
	missing      float64 // width of codes without one, glyph units
	base         string
	scale        float64 // glyph units to text space units
}

// glyph is one code of a shown string.
type glyph struct {
	text  string
	width float64 // text space units, for a font size of 1
	space bool    // the single-byte code 32, to which word spacing applies
}

// maxCIDWidths bounds the widths read from a /W array.
const maxCIDWidths = 1 << 17

// loadFont builds a font from its dictionary. Unknown or broken parts fall
// back to defaults: a font that cannot be read fully still yields what text
// it can.
func (d *pdfDoc) loadFont(v any) *pdfFont {
	if r, ok := v.(pdfRef); ok {
		if f, ok := d.fonts[r.num]; ok {
			return f
		}
		f := d.buildFont(d.dictOf(r))
		d.fonts[r.num] = f
		return f
	}
	return d.buildFont(d.dictOf(v))
}

func (d *pdfDoc) buildFont(fd pdfDict) *pdfFont {
	f := &pdfFont{scale: 0.001, missing: 500}
	if fd == nil {
		enc := standardEncoding()
		for c, r := range enc {
			if r != 0 {
				f.simple[c] = string(r)
			}
			f.simpleWidths[c] = f.missing
		}
		return f
	}
	f.base = string(d.nameOf(fd["BaseFont"]))
	if s := d.streamOf(fd["ToUnicode"]); s != nil {
		if data, err := d.decode(s, maxStreamBytes); err == nil {
			f.toUnicode = parseCMap(data)
		}
	}
	subtype := d.nameOf(fd["Subtype"])
	if subtype == "Type0" {
		f.composite = true
		f.missing = 1000
		switch e := fd["Encoding"].(type) {
		case pdfName:
			n := string(e)
			f.ucs2 = strings.Contains(n, "UCS2") || strings.Contains(n, "UTF16")
		default:
			if s := d.streamOf(e); s != nil {
				if data, err := d.decode(s, maxStreamBytes); err == nil {
					f.codes = parseCMap(data)
				}
			}
		}
		if desc := d.arrayOf(fd["DescendantFonts"]); len(desc) > 0 {
			df := d.dictOf(desc[0])
			if dw, ok := d.numberOf(df["DW"]); ok {
				f.missing = dw
			}
			f.cidWidths = d.cidWidths(d.arrayOf(df["W"]))
		}
		return f
	}
	if subtype == "Type3" {
		if m := d.arrayOf(fd["FontMatrix"]); len(m) == 6 {
			if s, ok := d.numberOf(m[0]); ok && s != 0 {
				f.scale = s
			}
		}
	}
	// The encoding: a base table, then /Differences.
	var table *[256]rune
	var diffs pdfArray
	ev, _ := d.resolve(fd["Encoding"])
	baseName := pdfName("")
	switch e := ev.(type) {
	case pdfName:
		baseName = e
	case pdfDict:
		baseName = d.nameOf(e["BaseEncoding"])
		diffs = d.arrayOf(e["Differences"])
	}
	switch baseName {
	case "WinAnsiEncoding":
		table = winAnsiEncoding()
	case "MacRomanEncoding":
		table = macRomanEncoding()
	case "StandardEncoding":
		table = standardEncoding()
	default:
		if subtype == "TrueType" {
			table = winAnsiEncoding()
		} else {
			table = standardEncoding()
		}
	}
	for c, r := range table {
		if r != 0 {
			f.simple[c] = string(r)
		}
	}
	code := -1
	for _, x := range diffs {
		x, _ = d.resolve(x)
		switch x := x.(type) {
		case int64:
			code = int(x)
		case float64:
			code = int(x)
		case pdfName:
			if code >= 0 && code < 256 {
				f.simple[code] = glyphText(string(x))
			}
			code++
		}
	}
	// Widths.
	f.first, _ = d.intOf(fd["FirstChar"])
	if ws := d.arrayOf(fd["Widths"]); len(ws) > 0 && len(ws) <= 256 {
		f.widths = make([]float64, len(ws))
		for i, w := range ws {
			f.widths[i], _ = d.numberOf(w)
		}
	}
	f.missing = 0
	if desc := d.dictOf(fd["FontDescriptor"]); desc != nil {
		f.missing, _ = d.numberOf(desc["MissingWidth"])
	}
	for c := range f.simpleWidths {
		f.simpleWidths[c] = f.width(c)
	}
	return f
}

// cidWidths reads a /W array: "c [w1 w2 …]" and "cfirst clast w" runs.
func (d *pdfDoc) cidWidths(a pdfArray) map[int]float64 {
	if len(a) == 0 {
		return nil
	}
	m := map[int]float64{}
	for i := 0; i < len(a) && len(m) < maxCIDWidths; {
		c, ok := d.intOf(a[i])
		if !ok || i+1 >= len(a) {
			break
		}
		next, _ := d.resolve(a[i+1])
		if ws, ok := next.(pdfArray); ok {
			for j, w := range ws {
				m[c+j], _ = d.numberOf(w)
			}
			i += 2
			continue
		}
		if i+2 >= len(a) {
			break
		}
		last, ok1 := intOf(next)
		w, ok2 := d.numberOf(a[i+2])
		if !ok1 || !ok2 {
			break
		}
		for cid := c; cid <= last && len(m) < maxCIDWidths; cid++ {
			m[cid] = w
		}
		i += 3
	}
	return m
}

// width is the advance of code (a CID for composite fonts) in glyph units.
func (f *pdfFont) width(code int) float64 {
	if f.composite {
		if w, ok := f.cidWidths[code]; ok {
			return w
		}
		return f.missing
	}
	if i := code - f.first; i >= 0 && i < len(f.widths) && f.widths[i] > 0 {
		return f.widths[i]
	}
	if f.missing > 0 {
		return f.missing
	}
	return standardWidth(f.base, code)
}

// glyphs splits a shown string into its codes.
func (f *pdfFont) glyphs(s []byte, out []glyph) []glyph {
	out = out[:0]
	if !f.composite {
		for _, c := range s {
			text := ""
			if f.toUnicode != nil {
				if t, ok := f.toUnicode.lookup(uint32(c), 1); ok {
					text = t
				} else if t, ok := f.toUnicode.lookup(uint32(c), 2); ok {
					text = t
				} else {
					text = f.simple[c]
				}
			} else {
				text = f.simple[c]
			}
			out = append(out, glyph{text: text, width: f.simpleWidths[c] * f.scale, space: c == ' '})
		}
		return out
	}
	lengths := f.codes
	if lengths == nil || len(lengths.space) == 0 {
		lengths = f.toUnicode
	}
	for i := 0; i < len(s); {
		n := 2
		if lengths != nil {
			n = lengths.codeLen(s[i:], 2)
		}
		n = min(n, len(s)-i)
		code := uint32(0)
		for _, c := range s[i : i+n] {
			code = code<<8 | uint32(c)
		}
		i += n
		text := ""
		if f.toUnicode != nil {
			text, _ = f.toUnicode.lookup(code, n)
		}
		if text == "" && f.ucs2 && n == 2 {
			text = string(utf16.Decode([]uint16{uint16(code)}))
		}
		out = append(out, glyph{text: text, width: f.width(int(code)) * f.scale, space: n == 1 && code == ' '})
	}
	return out
}
