// Package extracttest writes real files for tests and benchmarks of text
// extraction and ingestion: multi-page PDFs (with a cross-reference table, or
// with object and cross-reference streams), PDFs of images only, encrypted
// PDFs, DOCX files with page breaks, a corrupt DOCX, and large PDFs.
// Everything it writes is deterministic.
package extracttest

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Object numbers in the PDFs this package writes: the catalog, the page tree
// and the font come first, then each page and its content stream. Page i
// (from 1) is object PageObject(i) and its content ContentObject(i).
const (
	catalogObj = 1
	pagesObj   = 2
	fontObj    = 3
)

// PageObject is the object number of page i (from 1) in PDF and
// PDFWithObjectStreams files.
func PageObject(i int) int { return 2 + 2*i }

// ContentObject is the object number of the content stream of page i (from
// 1) in PDF and PDFWithObjectStreams files.
func ContentObject(i int) int { return 3 + 2*i }

// pdfWriter writes objects and remembers where each starts.
type pdfWriter struct {
	buf  bytes.Buffer
	offs map[int]int
}

func newPDFWriter(version string) *pdfWriter {
	w := &pdfWriter{offs: map[int]int{}}
	// A comment of high bytes tells tools the file is binary.
	fmt.Fprintf(&w.buf, "%%PDF-%s\n%%\xe2\xe3\xcf\xd3\n", version)
	return w
}

func (w *pdfWriter) object(num int, body string) {
	w.offs[num] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n%s\nendobj\n", num, body)
}

func (w *pdfWriter) stream(num int, dict string, data []byte) {
	w.offs[num] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< %s /Length %d >>\nstream\n", num, dict, len(data))
	w.buf.Write(data)
	w.buf.WriteString("\nendstream\nendobj\n")
}

// xrefTable writes a classic cross-reference table and trailer for objects
// 0 to size-1.
func (w *pdfWriter) xrefTable(size int) { w.xrefTableWith(size, "") }

// xrefTableWith is xrefTable with more entries in the trailer.
func (w *pdfWriter) xrefTableWith(size int, trailer string) {
	start := w.buf.Len()
	fmt.Fprintf(&w.buf, "xref\n0 %d\n0000000000 65535 f \n", size)
	for i := 1; i < size; i++ {
		if off, ok := w.offs[i]; ok {
			fmt.Fprintf(&w.buf, "%010d 00000 n \n", off)
		} else {
			w.buf.WriteString("0000000000 65535 f \n")
		}
	}
	fmt.Fprintf(&w.buf, "trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", size, catalogObj, trailer, start)
}

func deflate(data []byte) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// cp1252 maps the characters WinAnsiEncoding puts in 0x80–0x9F.
var cp1252 = map[rune]byte{
	'€': 0x80, '‚': 0x82, 'ƒ': 0x83, '„': 0x84, '…': 0x85, '†': 0x86, '‡': 0x87, 'ˆ': 0x88, '‰': 0x89,
	'Š': 0x8A, '‹': 0x8B, 'Œ': 0x8C, 'Ž': 0x8E, '‘': 0x91, '’': 0x92, '“': 0x93, '”': 0x94, '•': 0x95,
	'–': 0x96, '—': 0x97, '˜': 0x98, '™': 0x99, 'š': 0x9A, '›': 0x9B, 'œ': 0x9C, 'ž': 0x9E, 'Ÿ': 0x9F,
}

// pdfString writes s as a literal string in WinAnsiEncoding; characters it
// cannot encode become '?'.
func pdfString(s string) string {
	var b strings.Builder
	b.WriteByte('(')
	for _, r := range s {
		var c byte
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			c = byte(r)
		case r >= 0x20 && r < 0x7F, r >= 0xA0 && r <= 0xFF:
			c = byte(r)
		default:
			if x, ok := cp1252[r]; ok {
				c = x
			} else {
				c = '?'
			}
		}
		b.WriteByte(c)
	}
	b.WriteByte(')')
	return b.String()
}

// wrap splits text into lines of at most width characters, at spaces;
// existing line breaks are kept.
func wrap(text string, width int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case len([]rune(line))+1+len([]rune(word)) > width:
				out = append(out, line)
				line = word
			default:
				line += " " + word
			}
		}
		out = append(out, line)
	}
	return out
}

// pageContent is the content stream of a page of text in 11-point
// Helvetica, 14 points apart, wrapped at 90 characters.
func pageContent(text string) []byte {
	var b strings.Builder
	b.WriteString("BT\n/F1 11 Tf\n14 TL\n72 740 Td\n")
	for i, line := range wrap(text, 90) {
		if i > 0 {
			b.WriteString("T*\n")
		}
		fmt.Fprintf(&b, "%s Tj\n", pdfString(line))
	}
	b.WriteString("ET\n")
	return []byte(b.String())
}

const (
	fontDict   = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
	catalogDic = "<< /Type /Catalog /Pages 2 0 R >>"
)

func pagesDict(n int) string {
	kids := make([]string, n)
	for i := range kids {
		kids[i] = fmt.Sprintf("%d 0 R", PageObject(i+1))
	}
	// The font is given once, on the page tree, and inherited by every page.
	return fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 %d 0 R >> >> /MediaBox [0 0 612 792] >>",
		strings.Join(kids, " "), n, fontObj)
}

func pageDict(i int) string {
	return fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>", pagesObj, ContentObject(i))
}

// PDF writes a valid PDF 1.4 with one page per argument: 11-point
// Helvetica (WinAnsiEncoding, inherited from the page tree), lines of the
// text wrapped at 90 characters and shown with Tj and T*, content streams
// compressed with FlateDecode, and a classic cross-reference table. Line
// breaks in a page's text start new lines. With no arguments it writes one
// empty page.
func PDF(pages ...string) []byte {
	if len(pages) == 0 {
		pages = []string{""}
	}
	w := newPDFWriter("1.4")
	w.object(catalogObj, catalogDic)
	w.object(pagesObj, pagesDict(len(pages)))
	w.object(fontObj, fontDict)
	for i, text := range pages {
		w.object(PageObject(i+1), pageDict(i+1))
		w.stream(ContentObject(i+1), "/Filter /FlateDecode", deflate(pageContent(text)))
	}
	w.xrefTable(ContentObject(len(pages)) + 1)
	return w.buf.Bytes()
}

// EncryptedPDF writes a one-page PDF as a password-protected one is made:
// its trailer names an encryption dictionary of the standard security
// handler (RC4, 128 bits) and the file's ID. Its content stream is left as it
// is, not encrypted; a reader that refuses encrypted PDFs never reads it.
func EncryptedPDF() []byte {
	w := newPDFWriter("1.4")
	w.object(catalogObj, catalogDic)
	w.object(pagesObj, pagesDict(1))
	w.object(fontObj, fontDict)
	w.object(PageObject(1), pageDict(1))
	w.stream(ContentObject(1), "/Filter /FlateDecode", deflate(pageContent("secret")))
	encrypt := ContentObject(1) + 1
	w.object(encrypt, "<< /Filter /Standard /V 2 /R 3 /Length 128 /P -3904 /O <"+strings.Repeat("5a", 32)+"> /U <"+strings.Repeat("a5", 32)+"> >>")
	w.xrefTableWith(encrypt+1, fmt.Sprintf(" /Encrypt %d 0 R /ID [<%s> <%s>]", encrypt, strings.Repeat("01", 16), strings.Repeat("01", 16)))
	return w.buf.Bytes()
}

// PDFWithObjectStreams writes the same pages as PDF, as PDF 1.5 does: the
// catalog, page tree, font and page dictionaries inside a compressed object
// stream, and a cross-reference stream (FlateDecode with the PNG Up
// predictor) instead of a table.
func PDFWithObjectStreams(pages ...string) []byte {
	if len(pages) == 0 {
		pages = []string{""}
	}
	w := newPDFWriter("1.5")
	n := len(pages)
	stmObj := ContentObject(n) + 1
	xrefObj := stmObj + 1
	// The object stream: catalog, pages, font and every page dictionary.
	type member struct {
		num  int
		body string
	}
	members := []member{{catalogObj, catalogDic}, {pagesObj, pagesDict(n)}, {fontObj, fontDict}}
	for i := 1; i <= n; i++ {
		members = append(members, member{PageObject(i), pageDict(i)})
	}
	var head, body strings.Builder
	for _, m := range members {
		fmt.Fprintf(&head, "%d %d ", m.num, body.Len())
		body.WriteString(m.body + "\n")
	}
	index := map[int]int{}
	for i, m := range members {
		index[m.num] = i
	}
	for i, text := range pages {
		w.stream(ContentObject(i+1), "/Filter /FlateDecode", deflate(pageContent(text)))
	}
	data := head.String() + body.String()
	w.stream(stmObj, fmt.Sprintf("/Type /ObjStm /N %d /First %d /Filter /FlateDecode", len(members), head.Len()), deflate([]byte(data)))
	// The cross-reference stream: type (1 byte), offset or object stream
	// (4 bytes), generation or index (2 bytes).
	w.offs[xrefObj] = w.buf.Len()
	size := xrefObj + 1
	const cols = 7
	rows := make([][]byte, size)
	for i := range rows {
		row := make([]byte, cols)
		switch {
		case i == 0:
			row[5], row[6] = 0xFF, 0xFF
		default:
			if k, ok := index[i]; ok {
				row[0] = 2
				putUint(row[1:5], stmObj)
				putUint(row[5:7], k)
			} else {
				row[0] = 1
				putUint(row[1:5], w.offs[i])
			}
		}
		rows[i] = row
	}
	var raw []byte
	prev := make([]byte, cols)
	for _, row := range rows {
		raw = append(raw, 2) // PNG Up
		for j := range row {
			raw = append(raw, row[j]-prev[j])
		}
		prev = row
	}
	enc := deflate(raw)
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< /Type /XRef /Size %d /Root %d 0 R /W [1 4 2] /Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns %d >> /Length %d >>\nstream\n",
		xrefObj, size, catalogObj, cols, len(enc))
	w.buf.Write(enc)
	fmt.Fprintf(&w.buf, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", w.offs[xrefObj])
	return w.buf.Bytes()
}

func putUint(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

var (
	startxrefRE = regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`)
	sizeRE      = regexp.MustCompile(`/Size (\d+)`)
)

// Update appends an incremental update to a file written by PDF or
// PDFWithObjectStreams: a new content stream for page (from 1) showing text,
// and a cross-reference section whose /Prev points at the file's last one.
// Readers must follow /Prev to find the other objects.
func Update(pdf []byte, page int, text string) []byte {
	m := startxrefRE.FindSubmatch(pdf)
	sizes := sizeRE.FindAllSubmatch(pdf, -1)
	if m == nil || len(sizes) == 0 {
		panic("extracttest.Update: not a file written by this package")
	}
	prev, _ := strconv.Atoi(string(m[1]))
	size, _ := strconv.Atoi(string(sizes[len(sizes)-1][1]))
	w := &pdfWriter{offs: map[int]int{}}
	w.buf.Write(pdf)
	num := ContentObject(page)
	w.stream(num, "/Filter /FlateDecode", deflate(pageContent(text)))
	start := w.buf.Len()
	fmt.Fprintf(&w.buf, "xref\n0 1\n0000000000 65535 f \n%d 1\n%010d 00000 n \n", num, w.offs[num])
	fmt.Fprintf(&w.buf, "trailer\n<< /Size %d /Root %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n", size, catalogObj, prev, start)
	return w.buf.Bytes()
}

// ImagePDF writes a PDF of n pages (at least one) that each draw a small
// grey image and have no text, as a scan without a text layer does.
func ImagePDF(n int) []byte {
	n = max(n, 1)
	w := newPDFWriter("1.4")
	w.object(catalogObj, catalogDic)
	kids := make([]string, n)
	for i := range kids {
		kids[i] = fmt.Sprintf("%d 0 R", PageObject(i+1))
	}
	w.object(pagesObj, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /MediaBox [0 0 612 792] >>", strings.Join(kids, " "), n))
	imgObj := ContentObject(n) + 1
	pixels := make([]byte, 64*64)
	for i := range pixels {
		pixels[i] = byte(i*7 + i/64)
	}
	w.stream(imgObj, "/Type /XObject /Subtype /Image /Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", deflate(pixels))
	for i := 1; i <= n; i++ {
		w.object(PageObject(i), fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Resources << /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>", pagesObj, imgObj, ContentObject(i)))
		w.stream(ContentObject(i), "/Filter /FlateDecode", deflate([]byte("q 468 0 0 648 72 72 cm /Im1 Do Q\n")))
	}
	w.xrefTable(imgObj + 1)
	return w.buf.Bytes()
}

// words make up the text of LargePDF's pages.
var words = strings.Fields(`relay agent server retrieval passage document chunk page search index query vector
	embedding model tool schedule conversation message answer question file upload storage database postgres
	sqlite throughput latency memory budget report quarter revenue customer contract invoice policy section
	appendix figure table summary analysis result method evidence source citation review approval`)

// LargeText returns the deterministic text of page i (from 1) of LargePDF:
// about 3,000 characters of words, starting with "Page i.".
func LargeText(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	var b strings.Builder
	fmt.Fprintf(&b, "Page %d.", i)
	for b.Len() < 3000 {
		b.WriteByte(' ')
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// LargePDF writes a PDF of about size bytes (at least one page) shaped like a
// report with pictures: every page has about 3,000 characters of text
// (LargeText) and its own 128×128 RGB image of noise, about 49 KB, which
// does not compress. A 50 MB file has about 1,000 pages and 3 MB of text.
func LargePDF(size int) []byte {
	const side = 128
	r := rand.New(rand.NewPCG(7, 7))
	noise := make([]byte, side*side*3)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	img := deflate(noise)
	perPage := len(img) + 1500
	n := max(1, size/perPage)
	w := newPDFWriter("1.4")
	w.buf.Grow(size + size/8)
	w.object(catalogObj, catalogDic)
	w.object(pagesObj, pagesDict(n))
	w.object(fontObj, fontDict)
	// Images take the numbers after every page's content.
	imgObj := func(i int) int { return ContentObject(n) + i }
	for i := 1; i <= n; i++ {
		w.object(PageObject(i), fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>",
			pagesObj, fontObj, imgObj(i), ContentObject(i)))
		content := append([]byte("q 200 0 0 200 356 40 cm /Im1 Do Q\n"), pageContent(LargeText(i))...)
		w.stream(ContentObject(i), "/Filter /FlateDecode", deflate(content))
		w.stream(imgObj(i), fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode", side, side), img)
	}
	w.xrefTable(imgObj(n) + 1)
	return w.buf.Bytes()
}

const (
	contentTypes = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`
	packageRels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`
	documentHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`
	documentTail = `<w:sectPr><w:pgSz w:w="12240" w:h="15840"/></w:sectPr></w:body></w:document>`
)

func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// DocumentXML is the word/document.xml DOCX writes: a paragraph per line of
// each page's text (split on "\n") and a paragraph holding a page break
// (<w:br w:type="page"/>) between pages.
func DocumentXML(pages ...string) string {
	var b strings.Builder
	b.WriteString(documentHead)
	for i, page := range pages {
		if i > 0 {
			b.WriteString(`<w:p><w:r><w:br w:type="page"/></w:r></w:p>`)
		}
		for _, line := range strings.Split(page, "\n") {
			fmt.Fprintf(&b, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, xmlText(line))
		}
	}
	b.WriteString(documentTail)
	return b.String()
}

// DOCX writes a minimal real DOCX (a zip of [Content_Types].xml,
// _rels/.rels and word/document.xml) with one page per argument; see
// DocumentXML.
func DOCX(pages ...string) []byte {
	return Zip(map[string]string{
		"[Content_Types].xml": contentTypes,
		"_rels/.rels":         packageRels,
		"word/document.xml":   DocumentXML(pages...),
	})
}

// DOCXWithDocument writes a DOCX whose word/document.xml is exactly doc, for
// tests of particular markup.
func DOCXWithDocument(doc string) []byte {
	return Zip(map[string]string{
		"[Content_Types].xml": contentTypes,
		"_rels/.rels":         packageRels,
		"word/document.xml":   doc,
	})
}

// DOCXWithParts writes a DOCX whose word/document.xml is exactly doc, with
// the parts given (by their name under word/, e.g. "footnotes.xml",
// "header2.xml") related to it by word/_rels/document.xml.rels, each by the
// relationship type its name starts with (footnotes, header, …).
func DOCXWithParts(doc string, parts map[string]string) []byte {
	const relNS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
	files := map[string]string{
		"[Content_Types].xml": contentTypes,
		"_rels/.rels":         packageRels,
		"word/document.xml":   doc,
	}
	var rels strings.Builder
	rels.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" +
		`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		id := strings.TrimSuffix(name, ".xml")
		fmt.Fprintf(&rels, `<Relationship Id="%s" Type="%s%s" Target="%s"/>`, id, relNS, strings.TrimRight(id, "0123456789"), name)
		files["word/"+name] = parts[name]
	}
	rels.WriteString(`</Relationships>`)
	files["word/_rels/document.xml.rels"] = rels.String()
	return Zip(files)
}

// Zip writes a zip archive of the named files, in name order except that
// [Content_Types].xml comes first, as in Office files.
func Zip(files map[string]string) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		const first = "[Content_Types].xml"
		switch {
		case a == b:
			return 0
		case a == first:
			return -1
		case b == first:
			return 1
		}
		return strings.Compare(a, b)
	})
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		f, err := zw.Create(n)
		if err != nil {
			panic(err)
		}
		f.Write([]byte(files[n]))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// CorruptDOCX returns a DOCX cut short before its zip central directory:
// it starts like a DOCX, with every entry's data, but no zip reader can open
// it.
func CorruptDOCX() []byte {
	d := DOCX("This document lost the end of its zip archive.")
	if i := bytes.Index(d, []byte("PK\x01\x02")); i > 0 {
		return d[:i]
	}
	return d[:len(d)/2]
}
