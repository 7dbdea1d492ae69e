package extract

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The single-byte encodings of simple fonts, as text for each code. Codes a
// table leaves undefined map to 0 and produce no text.

// latin1 fills 0xA0–0xFF with ISO 8859-1, which WinAnsiEncoding shares.
func latin1(t *[256]rune) {
	for c := 0xA0; c <= 0xFF; c++ {
		t[c] = rune(c)
	}
}

// ascii fills the printable ASCII codes.
func ascii(t *[256]rune) {
	for c := 0x20; c <= 0x7E; c++ {
		t[c] = rune(c)
	}
}

// cp1252 is what Windows puts in 0x80–0x9F.
const cp1252 = "€\x00‚ƒ„…†‡ˆ‰Š‹Œ\x00Ž\x00\x00‘’“”•–—˜™š›œ\x00žŸ"

func winAnsiEncoding() *[256]rune {
	var t [256]rune
	ascii(&t)
	i := 0x80
	for _, r := range cp1252 {
		t[i] = r
		i++
	}
	latin1(&t)
	t[0xA0] = ' '
	t[0xAD] = '-'
	return &t
}

// macRomanUpper is the Mac OS Roman character set from 0x80 (0xF0 is the
// Apple logo, which has no Unicode character and is left out).
const macRomanUpper = "ÄÅÇÉÑÖÜáàâäãåçéèêëíìîïñóòôöõúùûü" +
	"†°¢£§•¶ß®©™´¨≠ÆØ∞±≤≥¥µ∂∑∏π∫ªºΩæø" +
	"¿¡¬√ƒ≈∆«»… ÀÃÕŒœ–—“”‘’÷◊ÿŸ⁄€‹›ﬁﬂ" +
	"‡·‚„‰ÂÊÁËÈÍÎÏÌÓÔ\x00ÒÚÛÙıˆ˜¯˘˙˚¸˝˛ˇ"

func macRomanEncoding() *[256]rune {
	var t [256]rune
	ascii(&t)
	i := 0x80
	for _, r := range macRomanUpper {
		t[i] = r
		i++
	}
	return &t
}

// standardUpper lists the codes of Adobe StandardEncoding above 0x7F.
var standardUpper = map[byte]rune{
	0xA1: '¡', 0xA2: '¢', 0xA3: '£', 0xA4: '⁄', 0xA5: '¥', 0xA6: 'ƒ', 0xA7: '§', 0xA8: '¤',
	0xA9: '\'', 0xAA: '“', 0xAB: '«', 0xAC: '‹', 0xAD: '›', 0xAE: 'ﬁ', 0xAF: 'ﬂ',
	0xB1: '–', 0xB2: '†', 0xB3: '‡', 0xB4: '·', 0xB6: '¶', 0xB7: '•', 0xB8: '‚', 0xB9: '„',
	0xBA: '”', 0xBB: '»', 0xBC: '…', 0xBD: '‰', 0xBF: '¿',
	0xC1: '`', 0xC2: '´', 0xC3: 'ˆ', 0xC4: '˜', 0xC5: '¯', 0xC6: '˘', 0xC7: '˙', 0xC8: '¨',
	0xCA: '˚', 0xCB: '¸', 0xCD: '˝', 0xCE: '˛', 0xCF: 'ˇ', 0xD0: '—',
	0xE1: 'Æ', 0xE3: 'ª', 0xE8: 'Ł', 0xE9: 'Ø', 0xEA: 'Œ', 0xEB: 'º',
	0xF1: 'æ', 0xF5: 'ı', 0xF8: 'ł', 0xF9: 'ø', 0xFA: 'œ', 0xFB: 'ß',
}

func standardEncoding() *[256]rune {
	var t [256]rune
	ascii(&t)
	t['\''] = '’'
	t['`'] = '‘'
	for c, r := range standardUpper {
		t[c] = r
	}
	return &t
}

// latin1Names are the glyph names of 0xA1–0xFF in ISO 8859-1 order.
const latin1Names = "exclamdown cent sterling currency yen brokenbar section dieresis copyright ordfeminine " +
	"guillemotleft logicalnot hyphen registered macron degree plusminus twosuperior threesuperior acute mu " +
	"paragraph periodcentered cedilla onesuperior ordmasculine guillemotright onequarter onehalf threequarters " +
	"questiondown Agrave Aacute Acircumflex Atilde Adieresis Aring AE Ccedilla Egrave Eacute Ecircumflex " +
	"Edieresis Igrave Iacute Icircumflex Idieresis Eth Ntilde Ograve Oacute Ocircumflex Otilde Odieresis " +
	"multiply Oslash Ugrave Uacute Ucircumflex Udieresis Yacute Thorn germandbls agrave aacute acircumflex " +
	"atilde adieresis aring ae ccedilla egrave eacute ecircumflex edieresis igrave iacute icircumflex " +
	"idieresis eth ntilde ograve oacute ocircumflex otilde odieresis divide oslash ugrave uacute ucircumflex " +
	"udieresis yacute thorn ydieresis"

// asciiNames are the glyph names of 0x20–0x7E.
const asciiNames = "space exclam quotedbl numbersign dollar percent ampersand quotesingle parenleft parenright " +
	"asterisk plus comma hyphen period slash zero one two three four five six seven eight nine colon " +
	"semicolon less equal greater question at A B C D E F G H I J K L M N O P Q R S T U V W X Y Z " +
	"bracketleft backslash bracketright asciicircum underscore grave a b c d e f g h i j k l m n o p q r s t " +
	"u v w x y z braceleft bar braceright asciitilde"

// otherNames are common glyph names outside those two ranges.
var otherNames = map[string]string{
	"quoteright": "’", "quoteleft": "‘", "quotedblleft": "“", "quotedblright": "”",
	"quotesinglbase": "‚", "quotedblbase": "„", "guilsinglleft": "‹", "guilsinglright": "›",
	"guillemetleft": "«", "guillemetright": "»", "endash": "–", "emdash": "—", "bullet": "•",
	"ellipsis": "…", "dagger": "†", "daggerdbl": "‡", "trademark": "™", "perthousand": "‰",
	"Euro": "€", "florin": "ƒ", "fraction": "⁄", "minus": "−", "dotlessi": "ı", "OE": "Œ", "oe": "œ",
	"Scaron": "Š", "scaron": "š", "Zcaron": "Ž", "zcaron": "ž", "Ydieresis": "Ÿ", "Lslash": "Ł",
	"lslash": "ł", "circumflex": "ˆ", "tilde": "˜", "breve": "˘", "dotaccent": "˙", "ring": "˚",
	"ogonek": "˛", "caron": "ˇ", "hungarumlaut": "˝", "fi": "fi", "fl": "fl", "ff": "ff", "ffi": "ffi",
	"ffl": "ffl", "nbspace": " ", "nonbreakingspace": " ", "sfthyphen": "-", "softhyphen": "-",
	"middot": "·", "Omega": "Ω", "mu1": "µ", "copyrightserif": "©", "registerserif": "®",
}

// glyphNames maps glyph names to text. It is built once from the constant
// tables above and never changed.
var glyphNames = buildGlyphNames()

func buildGlyphNames() map[string]string {
	m := make(map[string]string, 300)
	for i, n := range strings.Fields(asciiNames) {
		m[n] = string(rune(0x20 + i))
	}
	for i, n := range strings.Fields(latin1Names) {
		m[n] = string(rune(0xA1 + i))
	}
	for n, s := range otherNames {
		m[n] = s
	}
	return m
}

// glyphText returns the text a glyph name stands for: a known name, a
// "uniXXXX…" or "uXXXX" name, or a ligature of such names joined by "_".
// Suffixes after a dot (".sc", ".alt") are ignored.
func glyphText(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	if s, ok := glyphNames[name]; ok {
		return s
	}
	if strings.Contains(name, "_") {
		var b strings.Builder
		for _, part := range strings.Split(name, "_") {
			b.WriteString(glyphText(part))
		}
		return b.String()
	}
	if strings.HasPrefix(name, "uni") && len(name) >= 7 && (len(name)-3)%4 == 0 {
		var b strings.Builder
		for i := 3; i+4 <= len(name); i += 4 {
			v, err := strconv.ParseUint(name[i:i+4], 16, 32)
			if err != nil || (v >= 0xD800 && v <= 0xDFFF) {
				return ""
			}
			b.WriteRune(rune(v))
		}
		return b.String()
	}
	if strings.HasPrefix(name, "u") && len(name) >= 5 && len(name) <= 7 {
		v, err := strconv.ParseUint(name[1:], 16, 32)
		if err == nil && utf8.ValidRune(rune(v)) {
			return string(rune(v))
		}
	}
	return ""
}

// helveticaWidths are the advance widths (thousandths of an em) of
// Helvetica's printable ASCII characters, from 0x20. Standard fonts usually
// come without /Widths; these keep spacing decisions sensible for them.
var helveticaWidths = [95]uint16{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // space … slash
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, // 0 … ?
	1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, // @ … O
	667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, // P … _
	333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, // ` … o
	556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // p … ~
}

// standardWidth guesses the width of code in one of the standard fonts,
// named by base, that came without widths.
func standardWidth(base string, code int) float64 {
	b := strings.ToLower(base)
	switch {
	case strings.Contains(b, "courier"):
		return 600
	case code >= 0x20 && code <= 0x7E:
		w := float64(helveticaWidths[code-0x20])
		if strings.Contains(b, "times") {
			w *= 0.9
		}
		return w
	}
	return 556
}
