package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// maxToken bounds the bytes of XML read for one token: the decoder holds a
// token whole, so one huge run of text or attribute must not be read at once.
const maxToken = 4 << 20

// docxText reads the main document part of a DOCX as a stream of XML
// tokens: paragraphs become lines, w:tab a tab, w:br and w:cr line breaks,
// table cells are separated by tabs and rows by lines. Pages are cut at the
// breaks Word records: explicit page breaks, the page breaks of its last
// layout (w:lastRenderedPageBreak), paragraphs that start a page
// (w:pageBreakBefore) and section breaks. Breaks with no text between them
// count once, because Word records one break in several of these ways.
//
// The main part is read through a limit on its inflated bytes
// (lim.MaxDecodedBytes, whatever the zip declares), so a zip bomb fails when
// it passes it; the text stops at lim.MaxTextBytes and more than
// lim.MaxPages pages fail.
func docxText(ctx context.Context, data []byte, lim Limits, progress func(float64)) (*Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	part := mainPart(zr)
	var f *zip.File
	for _, zf := range zr.File {
		if zf.Name == part {
			f = zf
			break
		}
	}
	if f == nil {
		return nil, fmt.Errorf("%s is missing", part)
	}
	if f.UncompressedSize64 > uint64(lim.MaxDecodedBytes) {
		return nil, decodedError("DOCX", lim.MaxDecodedBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", part, err)
	}
	defer rc.Close()
	cr := &countingReader{r: io.LimitReader(rc, lim.MaxDecodedBytes+1), total: int64(f.UncompressedSize64), progress: progress}
	w := &docxWriter{room: lim.MaxTextBytes, maxPages: lim.MaxPages, in: cr}
	err = w.read(ctx, xml.NewDecoder(cr))
	var le *LimitError
	switch {
	case cr.n > lim.MaxDecodedBytes:
		return nil, decodedError("DOCX", lim.MaxDecodedBytes)
	case errors.As(err, &le):
		return nil, le
	case errors.Is(err, errTextFull):
		doc := &Document{Pages: w.finish()}
		if len(doc.Pages) > lim.MaxPages {
			return nil, w.pagesError()
		}
		doc.Note, doc.Cut = textCutNote(lim.MaxTextBytes), true
		return doc, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", part, err)
	}
	doc := &Document{Pages: w.finish()}
	if len(doc.Pages) > lim.MaxPages {
		return nil, w.pagesError()
	}
	return doc, nil
}

// mainPart finds the main document part from the package relationships,
// which is word/document.xml in files Word writes.
func mainPart(zr *zip.Reader) string {
	const def = "word/document.xml"
	for _, zf := range zr.File {
		if zf.Name != "_rels/.rels" {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return def
		}
		defer rc.Close()
		var rels struct {
			Rel []struct {
				Type   string `xml:"Type,attr"`
				Target string `xml:"Target,attr"`
			} `xml:"Relationship"`
		}
		if err := xml.NewDecoder(io.LimitReader(rc, 1<<20)).Decode(&rels); err != nil {
			return def
		}
		for _, r := range rels.Rel {
			if strings.HasSuffix(r.Type, "/officeDocument") && r.Target != "" {
				return strings.TrimPrefix(path.Clean("/"+r.Target), "/")
			}
		}
	}
	return def
}

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
}

func (w *docxWriter) pageBreak() { w.pending = true }

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
			if name == "Fallback" {
				// mc:AlternateContent repeats its content for older readers.
				if err := dec.Skip(); err != nil {
					return err
				}
				continue
			}
			stack = append(stack, name)
			switch name {
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
			case "p":
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
			if w.inText {
				w.text(string(t))
			}
		}
	}
}
