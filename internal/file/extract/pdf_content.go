package extract

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"unicode/utf8"
)

// matrix is a PDF transformation [a b c d e f]; points are row vectors.
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul returns m × n: m applied first, then n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2],
		m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2],
		m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4],
		m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return x*m[0] + y*m[2] + m[4], x*m[1] + y*m[3] + m[5]
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// gstate is the part of the graphics state text extraction needs.
type gstate struct {
	ctm     matrix
	font    *pdfFont
	size    float64
	charSp  float64
	wordSp  float64
	hscale  float64
	leading float64
	rise    float64
}

// Limits for hostile content: nested forms, saved states, operand stacks.
const (
	maxFormDepth = 8
	maxStates    = 256
	maxOperands  = 4096
	formCost     = 4096 // bytes of decoding budget charged for each form drawn
)

// textWriter collects a page's text, deciding where spaces and line breaks go.
type textWriter struct {
	b strings.Builder
	// room is how many bytes of text the writer takes; past it, full is
	// set and the rest is dropped.
	room    int
	full    bool
	space   bool // a space is due before the next text
	newline bool // a line break is due before the next text
	last    byte // the last byte written
}

func (w *textWriter) breakLine() {
	if w.b.Len() > 0 {
		w.newline = true
	}
}

func (w *textWriter) addSpace() {
	if w.b.Len() > 0 {
		w.space = true
	}
}

func (w *textWriter) write(s string) {
	if s == "" || w.full {
		return
	}
	for _, r := range s {
		switch {
		case r == ' ' || r == '\t' || r == '\u00a0':
			w.addSpace()
			continue
		case r == '\n' || r == '\r':
			w.breakLine()
			continue
		case r < 0x20 || r == 0x7f || r == '\ufffd' || (r >= 0xfff0 && r <= 0xffff) || (r >= 0xe000 && r <= 0xf8ff):
			// Controls, replacement characters and private-use code points
			// (unmapped glyphs) are not text.
			continue
		}
		if w.newline {
			w.b.WriteByte('\n')
		} else if w.space && w.last != '\n' && w.last != ' ' && w.b.Len() > 0 {
			w.b.WriteByte(' ')
		}
		w.newline, w.space = false, false
		if r < utf8.RuneSelf {
			w.b.WriteByte(byte(r))
		} else if lig, ok := ligatures[r]; ok {
			w.b.WriteString(lig)
		} else {
			w.b.WriteRune(r)
		}
		w.last = 'x'
		if w.b.Len() >= w.room {
			w.full = true
			return
		}
	}
}

// ligatures are spelled out so that search finds "find" in "ﬁnd".
var ligatures = map[rune]string{'ﬀ': "ff", 'ﬁ': "fi", 'ﬂ': "fl", 'ﬃ': "ffi", 'ﬄ': "ffl", 'ﬅ': "st", 'ﬆ': "st"}

// interp runs content streams, tracking just enough of the graphics and
// text state to place text: where each string starts and ends on the page
// decides whether a space or a line break separates it from the previous one.
type interp struct {
	doc     *pdfDoc
	out     *textWriter
	gs      gstate
	stack   []gstate
	tm, tlm matrix
	endX    float64 // where the last shown string ended, in device space
	endY    float64
	hasEnd  bool
	forced  bool // T*, ' or " asked for a new line
	forms   []*pdfStream
	glyphs  []glyph
	warning error
	stopped error // why the extraction was stopped (its context's error)
}

func newInterp(d *pdfDoc, out *textWriter) *interp {
	return &interp{doc: d, out: out, gs: gstate{ctm: identity, hscale: 1}, tm: identity, tlm: identity}
}

// run interprets one content stream with the given resources.
func (in *interp) run(content []byte, res pdfDict) {
	l := &lexer{b: content}
	var ops []any
	for {
		if in.doc.budget <= 0 || in.doc.ops <= 0 || in.out.full || in.stopped != nil {
			return
		}
		v, err := l.object()
		if err != nil {
			if err != errEndOfInput && in.warning == nil {
				in.warning = err
			}
			if err == errEndOfInput || l.pos >= len(l.b) {
				return
			}
			ops = ops[:0]
			continue
		}
		op, ok := v.(pdfKeyword)
		if !ok {
			if len(ops) >= maxOperands {
				ops = ops[:0]
			}
			ops = append(ops, v)
			continue
		}
		if in.doc.ops--; in.doc.ops%stopEvery == 0 && in.doc.stop != nil {
			if in.stopped = in.doc.stop(); in.stopped != nil {
				return
			}
		}
		in.op(l, string(op), ops, res)
		ops = ops[:0]
	}
}

func num(ops []any, i int) float64 {
	if i < 0 || i >= len(ops) {
		return 0
	}
	f, _ := numberOf(ops[i])
	return f
}

func (in *interp) op(l *lexer, op string, ops []any, res pdfDict) {
	n := len(ops)
	switch op {
	case "q":
		if len(in.stack) < maxStates {
			in.stack = append(in.stack, in.gs)
		}
	case "Q":
		if k := len(in.stack); k > 0 {
			in.gs = in.stack[k-1]
			in.stack = in.stack[:k-1]
		}
	case "cm":
		if n >= 6 {
			m := matrix{num(ops, n-6), num(ops, n-5), num(ops, n-4), num(ops, n-3), num(ops, n-2), num(ops, n-1)}
			in.gs.ctm = m.mul(in.gs.ctm)
		}
	case "BT":
		in.tm, in.tlm = identity, identity
	case "Tf":
		if n >= 2 {
			in.gs.size = num(ops, n-1)
			in.gs.font = nil
			if name, ok := ops[n-2].(pdfName); ok {
				if fonts := in.doc.dictOf(res["Font"]); fonts != nil {
					if fv, ok := fonts[name]; ok {
						in.gs.font = in.doc.loadFont(fv)
					}
				}
			}
		}
	case "Tc":
		in.gs.charSp = num(ops, n-1)
	case "Tw":
		in.gs.wordSp = num(ops, n-1)
	case "Tz":
		in.gs.hscale = num(ops, n-1) / 100
	case "TL":
		in.gs.leading = num(ops, n-1)
	case "Ts":
		in.gs.rise = num(ops, n-1)
	case "Td":
		in.moveLine(num(ops, n-2), num(ops, n-1))
	case "TD":
		in.gs.leading = -num(ops, n-1)
		in.moveLine(num(ops, n-2), num(ops, n-1))
	case "Tm":
		if n >= 6 {
			in.tm = matrix{num(ops, n-6), num(ops, n-5), num(ops, n-4), num(ops, n-3), num(ops, n-2), num(ops, n-1)}
			in.tlm = in.tm
		}
	case "T*":
		in.nextLine()
	case "Tj":
		if n >= 1 {
			in.show(ops[n-1])
		}
	case "'":
		in.nextLine()
		if n >= 1 {
			in.show(ops[n-1])
		}
	case "\"":
		if n >= 3 {
			in.gs.wordSp = num(ops, n-3)
			in.gs.charSp = num(ops, n-2)
		}
		in.nextLine()
		if n >= 1 {
			in.show(ops[n-1])
		}
	case "TJ":
		if n >= 1 {
			if a, ok := ops[n-1].(pdfArray); ok {
				for _, x := range a {
					if s, ok := x.(pdfString); ok {
						in.show(s)
					} else if adj, ok := numberOf(x); ok {
						// A negative adjustment moves right: a kerning gap,
						// or a word space when it is large.
						tx := -adj / 1000 * in.gs.size * in.gs.hscale
						in.tm = translate(tx, 0).mul(in.tm)
					}
				}
			}
		}
	case "Do":
		if n >= 1 {
			if name, ok := ops[n-1].(pdfName); ok {
				in.form(name, res)
			}
		}
	case "BI":
		skipInlineImage(l)
	}
}

func (in *interp) moveLine(tx, ty float64) {
	in.tlm = translate(tx, ty).mul(in.tlm)
	in.tm = in.tlm
}

func (in *interp) nextLine() {
	in.moveLine(0, -in.gs.leading)
	in.forced = true
}

// show writes the text of a shown string and advances the text matrix.
func (in *interp) show(v any) {
	s, ok := v.(pdfString)
	if !ok {
		return
	}
	gs := &in.gs
	font := gs.font
	if font == nil {
		font = in.doc.loadFont(nil)
	}
	trm := in.tm.mul(gs.ctm)
	x, y := trm.apply(0, gs.rise)
	// The font size on the page, and the directions of the text's x and y
	// axes, so that moves can be measured along and across the line.
	size := math.Abs(gs.size) * math.Hypot(trm[2], trm[3])
	if size < 1e-6 || math.IsNaN(size) {
		size = 1e-6
	}
	ux, uy := trm[0], trm[1]
	if h := math.Hypot(ux, uy); h > 0 {
		ux, uy = ux/h, uy/h
	} else {
		ux, uy = 1, 0
	}
	if in.forced {
		in.out.breakLine()
	} else if in.hasEnd {
		dx, dy := x-in.endX, y-in.endY
		along := dx*ux + dy*uy
		across := -dx*uy + dy*ux
		switch {
		case math.Abs(across) > 0.5*size:
			in.out.breakLine()
		case along > 0.17*size || along < -0.5*size:
			in.out.addSpace()
		}
	}
	in.forced = false
	in.glyphs = font.glyphs([]byte(s), in.glyphs)
	total := 0.0
	for _, g := range in.glyphs {
		in.out.write(g.text)
		adv := g.width*gs.size + gs.charSp
		if g.space {
			adv += gs.wordSp
		}
		total += adv
	}
	in.tm = translate(total*gs.hscale, 0).mul(in.tm)
	in.endX, in.endY = in.tm.mul(gs.ctm).apply(0, gs.rise)
	in.hasEnd = true
}

// form runs a form XObject's content, which may show text of its own.
func (in *interp) form(name pdfName, res pdfDict) {
	xo := in.doc.dictOf(res["XObject"])
	if xo == nil || len(in.forms) >= maxFormDepth {
		return
	}
	s := in.doc.streamOf(xo[name])
	if s == nil || in.doc.nameOf(s.dict["Subtype"]) != "Form" {
		return
	}
	for _, f := range in.forms {
		if f == s {
			return // a form that draws itself
		}
	}
	data, err := in.doc.decode(s, maxStreamBytes)
	if err != nil {
		if in.warning == nil || errors.Is(err, errTooMuchData) {
			in.warning = err
		}
		return
	}
	// Running a form costs more than its bytes; charging a minimum keeps
	// forms drawing forms from running millions of times.
	in.doc.budget -= formCost
	in.doc.ops -= formOperations
	saved, savedTm, savedTlm := in.gs, in.tm, in.tlm
	if m := in.doc.arrayOf(s.dict["Matrix"]); len(m) == 6 {
		var fm matrix
		for i := range fm {
			fm[i], _ = in.doc.numberOf(m[i])
		}
		in.gs.ctm = fm.mul(in.gs.ctm)
	}
	formRes := in.doc.dictOf(s.dict["Resources"])
	if formRes == nil {
		formRes = res
	}
	in.forms = append(in.forms, s)
	depth := len(in.stack)
	in.run(data, formRes)
	in.stack = in.stack[:min(depth, len(in.stack))]
	in.forms = in.forms[:len(in.forms)-1]
	in.gs, in.tm, in.tlm = saved, savedTm, savedTlm
}

// skipInlineImage moves past an inline image's dictionary and binary data,
// which ends at the first "EI" standing alone.
func skipInlineImage(l *lexer) {
	for {
		v, err := l.object()
		if err != nil {
			l.pos = len(l.b)
			return
		}
		if k, ok := v.(pdfKeyword); ok && k == "ID" {
			break
		}
	}
	start := l.pos + 1
	for start < len(l.b) {
		i := bytes.Index(l.b[start:], []byte("EI"))
		if i < 0 {
			break
		}
		i += start
		before := i == 0 || isSpace(l.b[i-1])
		after := i+2 == len(l.b) || isSpace(l.b[i+2]) || isDelim(l.b[i+2])
		if before && after {
			l.pos = i + 2
			return
		}
		start = i + 2
	}
	l.pos = len(l.b)
}
