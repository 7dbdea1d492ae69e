package extract

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
)

// maxToken bounds the bytes of XML read for one token: the decoder holds a
// token whole, so one huge run of text or attribute must not be read at once.
const maxToken = 4 << 20

// docxText reads a DOCX as streams of XML tokens: paragraphs become lines,
// w:tab a tab, w:br and w:cr line breaks, table cells are separated by tabs
// and rows by lines; text boxes (w:txbxContent) are read where they are
// anchored, once (mc:Fallback repeats them). Pages are cut at the breaks Word
// records: explicit page breaks, the page breaks of its last layout
// (w:lastRenderedPageBreak), paragraphs that start a page
// (w:pageBreakBefore) and section breaks. Breaks with no text between them
// count once, because Word records one break in several of these ways.
//
// Footnotes and endnotes are written inline, right after the reference to
// them, as "[footnote 1: text]" or "[endnote 1: text]" (numbered in the order
// they are referenced; a note with a custom mark has no number): in
// regulatory texts the notes carry definitions, exceptions and citations,
// and a chunk that holds the sentence with the note it cites is what a
// search should find, where a list of notes at the end would be cut apart
// from the sentences. The separator notes Word keeps are not text. Each
// distinct header and footer is written once, as a line "[header: text]" or
// "[footer: text]" at the start of the first page, since they often carry the
// document's identifier but repeat on every page and section. The cached
// values of page-number fields (PAGE, NUMPAGES, SECTIONPAGES) are dropped:
// they are the numbers of whichever page Word laid out last. Comments, deleted
// text and the sources of moves (tracked changes) are not read. A notes, header or footer
// part that is not well-formed is left out, and the Note says so.
//
// Every part is read through a limit on its inflated bytes, shared by all
// the parts read (lim.MaxDecodedBytes, whatever the zip declares), so a zip
// bomb fails when it passes it; the text stops at lim.MaxTextBytes (the
// notes read are held to it as well) and more than lim.MaxPages pages fail.
func docxText(ctx context.Context, data []byte, lim Limits, progress func(float64)) (*Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	pkg := &docxPackage{files: make(map[string]*zip.File, len(zr.File)), left: lim.MaxDecodedBytes, limit: lim.MaxDecodedBytes}
	for _, zf := range zr.File {
		if _, ok := pkg.files[zf.Name]; !ok {
			pkg.files[zf.Name] = zf
		}
	}
	part := mainPart(pkg.files)
	if pkg.files[part] == nil {
		return nil, fmt.Errorf("%s is missing", part)
	}
	rels := partRels(pkg.files, part)
	var note string
	cut := false
	// side reads a notes, header or footer part: one that is not
	// well-formed is noted and left out, the body being worth more than a
	// failure; a limit passed fails the file.
	side := func(name string, w *docxWriter) error {
		err := pkg.read(ctx, name, w, nil)
		var le *LimitError
		switch {
		case err == nil, errors.Is(err, errTextFull):
			return err
		case errors.As(err, &le), ctx.Err() != nil:
			return err
		}
		note = addNote(note, fmt.Sprintf("%v, so its text is not searchable", err))
		return nil
	}

	// The notes are read first, for the body to place them.
	notes := map[string]string{}
	var noteText int64
readNotes:
	for _, kind := range []string{"footnotes", "endnotes"} {
		for _, name := range rels[kind] {
			nw := &docxWriter{room: lim.MaxTextBytes - noteText, noPages: true, found: notes}
			err := side(name, nw)
			noteText += nw.done
			if errors.Is(err, errTextFull) {
				cut = true
				break readNotes
			}
			if err != nil {
				return nil, err
			}
		}
	}

	w := &docxWriter{room: lim.MaxTextBytes, maxPages: lim.MaxPages, notes: notes, numbers: map[string]int{}}
	seen := map[string]bool{}
margins:
	for _, kind := range []string{"header", "footer"} {
		for _, name := range rels[kind] {
			hw := &docxWriter{room: lim.MaxTextBytes - w.done - int64(w.cur.Len()), noPages: true}
			err := side(name, hw)
			if err != nil && !errors.Is(err, errTextFull) {
				return nil, err
			}
			if text := oneLine(hw.cur.String()); text != "" && !seen[kind+"\x00"+text] {
				seen[kind+"\x00"+text] = true
				w.text("[" + kind + ": " + text + "]\n")
			}
			if err != nil {
				break margins
			}
		}
	}

	err = pkg.read(ctx, part, w, progress)
	var le *LimitError
	switch {
	case errors.As(err, &le):
		return nil, le
	case errors.Is(err, errTextFull):
		cut = true
	case err != nil:
		return nil, err
	}
	doc := &Document{Pages: w.finish(), Note: note}
	if len(doc.Pages) > lim.MaxPages {
		return nil, w.pagesError()
	}
	if cut {
		doc.Note, doc.Cut = addNote(textCutNote(lim.MaxTextBytes), doc.Note), true
	}
	return doc, nil
}

// docxPackage is the zip of a DOCX, its parts by name, and what is left of
// lim.MaxDecodedBytes, which all the parts read share.
type docxPackage struct {
	files       map[string]*zip.File
	left, limit int64
}

// read streams the part name into w.
func (p *docxPackage) read(ctx context.Context, name string, w *docxWriter, progress func(float64)) error {
	f := p.files[name]
	if f == nil {
		return fmt.Errorf("%s is missing", name)
	}
	if f.UncompressedSize64 > uint64(p.left) {
		return decodedError("DOCX", p.limit)
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer rc.Close()
	cr := &countingReader{r: io.LimitReader(rc, p.left+1), total: int64(f.UncompressedSize64), progress: progress}
	w.in = cr
	err = w.read(ctx, xml.NewDecoder(cr))
	p.left -= cr.n
	var le *LimitError
	switch {
	case p.left < 0:
		return decodedError("DOCX", p.limit)
	case errors.As(err, &le), errors.Is(err, errTextFull):
		return err
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// rel is one relationship of a part.
type rel struct {
	Type       string `xml:"Type,attr"`
	Target     string `xml:"Target,attr"`
	TargetMode string `xml:"TargetMode,attr"`
}

// readRels reads a relationships part; one that cannot be read has none.
func readRels(zf *zip.File) []rel {
	if zf == nil {
		return nil
	}
	rc, err := zf.Open()
	if err != nil {
		return nil
	}
	defer rc.Close()
	var rels struct {
		Rel []rel `xml:"Relationship"`
	}
	if err := xml.NewDecoder(io.LimitReader(rc, 1<<20)).Decode(&rels); err != nil {
		return nil
	}
	return rels.Rel
}

// mainPart finds the main document part from the package relationships,
// which is word/document.xml in files Word writes.
func mainPart(files map[string]*zip.File) string {
	for _, r := range readRels(files["_rels/.rels"]) {
		if strings.HasSuffix(r.Type, "/officeDocument") && r.Target != "" {
			return strings.TrimPrefix(path.Clean("/"+r.Target), "/")
		}
	}
	return "word/document.xml"
}

// partRels returns the parts that part relates to (its footnotes, endnotes,
// headers, footers, …), by the last element of the relationship's type, each
// kind in the order of their names (header2.xml before header10.xml).
func partRels(files map[string]*zip.File, part string) map[string][]string {
	dir := path.Dir(part)
	out := map[string][]string{}
	for _, r := range readRels(files[path.Join(dir, "_rels", path.Base(part)+".rels")]) {
		if r.Target == "" || strings.EqualFold(r.TargetMode, "External") {
			continue
		}
		target := r.Target
		if !strings.HasPrefix(target, "/") {
			target = path.Join("/", dir, target)
		}
		target = strings.TrimPrefix(path.Clean(target), "/")
		kind := path.Base(r.Type)
		if !slices.Contains(out[kind], target) {
			out[kind] = append(out[kind], target)
		}
	}
	for _, names := range out {
		slices.SortFunc(names, func(a, b string) int {
			return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
		})
	}
	return out
}

// oneLine joins the words of s with single spaces, for text written inline.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// countingReader reports progress as the fraction of total read.
type countingReader struct {
	r        io.Reader
	n, total int64
	last     int64
	// token counts the bytes read since the decoder last gave a token.
	token    int64
	progress func(float64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.token > maxToken {
		return 0, errTokenTooLarge
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.token += int64(n)
	if c.progress != nil && c.total > 0 && c.n-c.last >= 1<<20 {
		c.last = c.n
		c.progress(min(1, float64(c.n)/float64(c.total)))
	}
	return n, err
}

// errTextFull stops reading a DOCX whose text reached its limit.
var errTextFull = errors.New("the text limit is reached")

// errTokenTooLarge stops reading an XML token larger than maxToken.
var errTokenTooLarge = fmt.Errorf("an XML element is larger than %s", mb(maxToken))

type docxWriter struct {
	pages []Page
	cur   strings.Builder
	// room is how many more bytes of text are kept; done is the text of
	// the pages already flushed.
	room, done int64
	maxPages   int
	in         *countingReader // when set, told of each token read
	pending    bool            // a page break is due before the next text
	inText     bool            // inside w:t
	cellParas  []int
	cells      []int
	sectBreak  bool // the paragraph ends a section that starts a new page
	// noPages reads a part that has no pages: notes, headers and footers.
	noPages bool
	// found, when reading a notes part, is where the text of each note
	// goes, by kind and id ("footnote:2"); note is the one being read.
	found map[string]string
	note  string
	// notes, when reading the body, are the notes to write at their
	// references, taken from found; numbers counts the notes of each kind
	// numbered so far; due is a note to write at the end of the run that
	// references it.
	notes   map[string]string
	numbers map[string]int
	due     string
	// fields are the fields being read, innermost last, at most
	// maxFields deep (deeper ones are counted in deeper); hiding counts
	// those whose result is a page number.
	fields         []docxField
	deeper, hiding int
	inInstr        bool // inside w:instrText
}

// docxField is a field (w:fldSimple, or w:fldChar begin … end) being read.
type docxField struct {
	instr  string // the start of its instruction
	result bool   // its result is being read
	hide   bool   // its result is not text: a page number
}

// pageField reports whether a field's instruction gives a page number.
func pageField(instr string) bool {
	f := strings.Fields(instr)
	if len(f) == 0 {
		return false
	}
	switch strings.ToUpper(f[0]) {
	case "PAGE", "NUMPAGES", "SECTIONPAGES":
		return true
	}
	return false
}

// maxFields bounds the fields held as nested: a field begins with an empty
// element (w:fldChar), so the XML's own nesting does not bound them.
const maxFields = 32

// beginField starts reading a field.
func (w *docxWriter) beginField(f docxField) {
	if len(w.fields) == maxFields {
		w.deeper++
		return
	}
	w.fields = append(w.fields, f)
	if f.hide {
		w.hiding++
	}
}

// endField ends the innermost field.
func (w *docxWriter) endField() {
	k := len(w.fields)
	switch {
	case w.deeper > 0:
		w.deeper--
	case k > 0:
		if w.fields[k-1].hide {
			w.hiding--
		}
		w.fields = w.fields[:k-1]
	}
}

func (w *docxWriter) pageBreak() {
	if !w.noPages {
		w.pending = true
	}
}

// writeDue writes the note due, if any.
func (w *docxWriter) writeDue() {
	if w.due != "" {
		w.text(w.due)
		w.due = ""
	}
}

func (w *docxWriter) text(s string) {
	if strings.TrimSpace(s) != "" && w.pending {
		w.flush()
	}
	w.cur.WriteString(s)
}

// full reports whether the text reached its limit.
func (w *docxWriter) full() bool { return w.done+int64(w.cur.Len()) >= w.room }

func (w *docxWriter) flush() {
	text := normalizeSpace(w.cur.String())
	text, _ = cutText(text, w.room-w.done)
	w.done += int64(len(text))
	w.pages = append(w.pages, Page{Number: len(w.pages) + 1, Text: text})
	w.cur.Reset()
	w.pending = false
}

func (w *docxWriter) pagesError() error {
	return &LimitError{LimitPages, fmt.Sprintf("the DOCX has more than %d pages, the limit of pages per file", w.maxPages)}
}

func (w *docxWriter) finish() []Page {
	w.pending = false
	w.flush()
	return w.pages
}

func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func (w *docxWriter) read(ctx context.Context, dec *xml.Decoder) error {
	var stack []string
	parent := func() string {
		if len(stack) < 2 {
			return ""
		}
		return stack[len(stack)-2]
	}
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if w.full() {
			return errTextFull
		}
		if len(w.pages) > w.maxPages {
			return w.pagesError()
		}
		tok, err := dec.Token()
		if w.in != nil {
			w.in.token = 0
		}
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return errors.New("the XML ends early")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if name == "Fallback" || name == "moveFrom" {
				// mc:AlternateContent repeats its content for older
				// readers; a tracked move keeps the text moved, in w:t,
				// where it was (w:moveFrom) as well as where it went
				// (w:moveTo), and the second is the document's.
				if err := dec.Skip(); err != nil {
					return err
				}
				continue
			}
			if (name == "footnote" || name == "endnote") && w.found != nil && len(stack) == 1 {
				// The separator lines Word keeps as notes are not text.
				if typ := attr(t, "type"); typ != "" && typ != "normal" {
					if err := dec.Skip(); err != nil {
						return err
					}
					continue
				}
				w.note = name + ":" + attr(t, "id")
				w.cur.Reset()
			}
			stack = append(stack, name)
			switch name {
			case "footnoteReference", "endnoteReference":
				// A reference deleted with tracked changes is gone once
				// they are accepted, and its note with it.
				if w.notes == nil || slices.Contains(stack, "del") {
					break
				}
				kind := strings.TrimSuffix(name, "Reference")
				label := kind
				if v := attr(t, "customMarkFollows"); v != "1" && v != "true" && v != "on" {
					w.numbers[kind]++
					label += " " + strconv.Itoa(w.numbers[kind])
				}
				// A note is written once, however often it is referenced.
				key := kind + ":" + attr(t, "id")
				if text, ok := w.notes[key]; ok {
					delete(w.notes, key)
					w.due += "[" + label + ": " + text + "]"
				}
				if parent() != "r" {
					w.writeDue()
				}
			case "fldSimple":
				w.beginField(docxField{result: true, hide: pageField(attr(t, "instr"))})
			case "fldChar":
				switch attr(t, "fldCharType") {
				case "begin":
					w.beginField(docxField{})
				case "separate":
					if k := len(w.fields); k > 0 && w.deeper == 0 && !w.fields[k-1].result {
						w.fields[k-1].result = true
						if w.fields[k-1].hide = pageField(w.fields[k-1].instr); w.fields[k-1].hide {
							w.hiding++
						}
					}
				case "end":
					w.endField()
				}
			case "instrText":
				w.inInstr = true
			case "p":
				if k := len(w.cellParas); k > 0 {
					if w.cellParas[k-1] > 0 {
						w.text(" ")
					}
					w.cellParas[k-1]++
				}
			case "pageBreakBefore":
				if v := attr(t, "val"); v != "0" && v != "false" && v != "off" {
					w.pageBreak()
				}
			case "sectPr":
				if parent() == "pPr" {
					if v := attr(t, "type"); v != "continuous" {
						w.sectBreak = true
					}
				}
			case "t":
				w.inText = true
			case "tab":
				if parent() == "r" {
					w.text("\t")
				}
			case "br":
				if attr(t, "type") == "page" {
					w.pageBreak()
				} else {
					w.text("\n")
				}
			case "cr":
				w.text("\n")
			case "lastRenderedPageBreak":
				w.pageBreak()
			case "noBreakHyphen":
				w.text("-")
			case "tr":
				w.cells = append(w.cells, 0)
			case "tc":
				if k := len(w.cells); k > 0 {
					if w.cells[k-1] > 0 {
						w.text("\t")
					}
					w.cells[k-1]++
				}
				w.cellParas = append(w.cellParas, 0)
			}
		case xml.EndElement:
			if len(stack) == 0 {
				return errors.New("unbalanced XML")
			}
			name := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch name {
			case "t":
				w.inText = false
			case "instrText":
				w.inInstr = false
			case "fldSimple":
				w.endField()
			case "r":
				w.writeDue()
			case "footnote", "endnote":
				if w.note != "" {
					if text := oneLine(w.cur.String()); text != "" {
						w.found[w.note] = text
						w.done += int64(len(text))
					}
					w.cur.Reset()
					w.note = ""
				}
			case "p":
				w.writeDue()
				if len(w.cellParas) == 0 {
					w.text("\n")
				}
				if w.sectBreak {
					w.sectBreak = false
					w.pageBreak()
				}
			case "tr":
				if k := len(w.cells); k > 0 {
					w.cells = w.cells[:k-1]
				}
				w.text("\n")
			case "tc":
				if k := len(w.cellParas); k > 0 {
					w.cellParas = w.cellParas[:k-1]
				}
			}
		case xml.CharData:
			switch {
			case w.inText && w.hiding == 0:
				w.text(string(t))
			case w.inInstr:
				// Enough of the instruction to know its field.
				if k := len(w.fields); k > 0 && w.deeper == 0 && !w.fields[k-1].result && len(w.fields[k-1].instr) < 64 {
					w.fields[k-1].instr += string(t)
				}
			}
		}
	}
}
