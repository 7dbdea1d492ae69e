package extracttest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strings"
)

// FormBombPDF writes a small PDF of one page that draws one form XObject,
// which shows a line of text, draws times.
func FormBombPDF(draws int) []byte {
	w := newPDFWriter("1.4")
	w.object(catalogObj, catalogDic)
	w.object(pagesObj, fmt.Sprintf("<< /Type /Pages /Kids [4 0 R] /Count 1 /Resources << /Font << /F1 %d 0 R >> /XObject << /Fm 6 0 R >> >> /MediaBox [0 0 612 792] >>", fontObj))
	w.object(fontObj, fontDict)
	w.object(4, "<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>")
	w.stream(5, "/Filter /FlateDecode", deflate([]byte(strings.Repeat("/Fm Do\n", draws))))
	w.stream(6, "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Filter /FlateDecode",
		deflate(pageContent(strings.Repeat("A form drawn many times shows this line again. ", 4))))
	w.xrefTable(7)
	return w.buf.Bytes()
}

// NestedFormPDF writes a small PDF of one page that draws a form which draws
// the next form fanout times, depth forms deep; the last one shows a line of
// text. It draws fanout^depth forms.
func NestedFormPDF(depth, fanout int) []byte {
	w := newPDFWriter("1.4")
	w.object(catalogObj, catalogDic)
	w.object(pagesObj, fmt.Sprintf("<< /Type /Pages /Kids [4 0 R] /Count 1 /Resources << /Font << /F1 %d 0 R >> >> /MediaBox [0 0 612 792] >>", fontObj))
	w.object(fontObj, fontDict)
	w.object(4, "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> /XObject << /Fm 6 0 R >> >> /Contents 5 0 R >>")
	w.stream(5, "", []byte("/Fm Do\n"))
	for i := range depth {
		num := 6 + i
		w.stream(num, fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> /XObject << /Fm %d 0 R >> >>", num+1),
			[]byte(strings.Repeat("/Fm Do\n", fanout)))
	}
	w.stream(6+depth, "/Type /XObject /Subtype /Form /BBox [0 0 612 792]", pageContent("The innermost form shows this line."))
	w.xrefTable(7 + depth)
	return w.buf.Bytes()
}

// StreamBombPDF writes a PDF of pages pages that all share one compressed
// content stream, which inflates to size bytes (choose it just under the
// per-stream cap): a line of text, then comments. Repeated bytes compress
// about a thousand times and the stream is stored once, so the file is small
// however many pages there are.
func StreamBombPDF(pages, size int) []byte {
	text := "BT /F1 11 Tf 72 740 Td (Each page inflates to megabytes.) Tj ET\n"
	pad := "%" + strings.Repeat("padding ", 127) + "\n"
	content := deflate([]byte(text + strings.Repeat(pad, (size-len(text))/len(pad))))
	w := newPDFWriter("1.4")
	w.object(catalogObj, catalogDic)
	w.object(pagesObj, pagesDict(pages))
	w.object(fontObj, fontDict)
	for i := range pages {
		w.object(PageObject(i+1), fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>", pagesObj, ContentObject(1)))
	}
	w.stream(ContentObject(1), "/Filter /FlateDecode", content)
	w.xrefTable(PageObject(pages) + 1)
	return w.buf.Bytes()
}

// DOCXBomb writes a DOCX whose word/document.xml inflates to at least size
// bytes of paragraphs and white space between them, streaming them through the compressor so that neither
// the file (about a thousandth of size) nor the document is ever held whole.
// With lie, the zip's headers declare a document of a few kilobytes, as a
// hand-made bomb would, instead of its real size.
func DOCXBomb(size int64, lie bool) []byte {
	head := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" +
		`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`
	para := "<w:p><w:r><w:t>A zip bomb repeats this paragraph until it is over a gigabyte.</w:t></w:r></w:p>"
	return docxBomb(nil, bombPart{"word/document.xml", head, para, "</w:body></w:document>", size, lie})
}

// DOCXNotesBomb writes a DOCX whose word/document.xml inflates to at least
// bodySize bytes, as DOCXBomb's does, and whose word/footnotes.xml holds one
// footnote, referenced from the body, that inflates to at least notesSize
// bytes of paragraphs and white space.
func DOCXNotesBomb(bodySize, notesSize int64) []byte {
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	head := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" + `<w:document ` + ns + `><w:body>` +
		`<w:p><w:r><w:t>The body cites a note.</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r></w:p>`
	para := "<w:p><w:r><w:t>A zip bomb repeats this paragraph until it is over its size.</w:t></w:r></w:p>"
	notesHead := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n" + `<w:footnotes ` + ns + `><w:footnote w:id="1">`
	rels := map[string]string{"word/_rels/document.xml.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
		`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes" Target="footnotes.xml"/></Relationships>`}
	return docxBomb(rels,
		bombPart{"word/document.xml", head, para, "</w:body></w:document>", bodySize, false},
		bombPart{"word/footnotes.xml", notesHead, para, "</w:footnote></w:footnotes>", notesSize, false})
}

// bombPart is a part of a DOCX bomb: head, then para and white space until
// size bytes, then tail; lie declares it a few kilobytes in the zip.
type bombPart struct {
	name, head, para, tail string
	size                   int64
	lie                    bool
}

func docxBomb(small map[string]string, parts ...bombPart) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	files := []struct{ name, body string }{{"[Content_Types].xml", contentTypes}, {"_rels/.rels", packageRels}}
	for _, n := range slices.Sorted(maps.Keys(small)) {
		files = append(files, struct{ name, body string }{n, small[n]})
	}
	for _, f := range files {
		fw, _ := zw.Create(f.name)
		io.WriteString(fw, f.body)
	}
	for _, p := range parts {
		write := func(w io.Writer) (n int64, crc uint32) {
			h := crc32.NewIEEE()
			mw := io.MultiWriter(w, h)
			k, _ := io.WriteString(mw, p.head)
			n += int64(k)
			// A paragraph, then white space between elements, which
			// compresses best.
			block := []byte(p.para + strings.Repeat(" ", 1<<16))
			for n < p.size {
				k, _ := mw.Write(block)
				n += int64(k)
			}
			k, _ = io.WriteString(mw, p.tail)
			n += int64(k)
			return n, h.Sum32()
		}
		if !p.lie {
			fw, _ := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: zip.Deflate})
			write(fw)
			continue
		}
		var comp bytes.Buffer
		fl, _ := flate.NewWriter(&comp, flate.BestSpeed)
		_, crc := write(fl)
		fl.Close()
		fw, _ := zw.CreateRaw(&zip.FileHeader{Name: p.name, Method: zip.Deflate,
			CRC32: crc, CompressedSize64: uint64(comp.Len()), UncompressedSize64: 4096})
		fw.Write(comp.Bytes())
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}
