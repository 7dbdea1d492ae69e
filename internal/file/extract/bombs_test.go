package extract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

// docxBomb is a DOCX whose document.xml inflates past a gigabyte, built once.
var docxBomb = sync.OnceValue(func() []byte { return extracttest.DOCXBomb(1<<30+1<<20, false) })

// Files built to exhaust a server end at the first limit with an error that
// names it, using the default limits.
func TestBombsFail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mime  string
		data  func() []byte
		limit extract.Limit
		msg   string
	}{
		{"form drawn 60,000 times", extract.PDF, func() []byte { return extracttest.FormBombPDF(60000) },
			extract.LimitOperations, "the PDF's pages run more than 20000000 operations"},
		{"forms nested 8 deep, each drawn 10 times", extract.PDF, func() []byte { return extracttest.NestedFormPDF(8, 10) },
			extract.LimitOperations, "the PDF's pages run more than"},
		{"40 pages each just under the stream cap", extract.PDF, func() []byte { return extracttest.StreamBombPDF(40, 8<<20-1024) },
			extract.LimitDecoded, "the PDF decodes to more than 256 MB, the limit of decoded data per file"},
		{"2,001 pages", extract.PDF, func() []byte { return extracttest.PDF(make([]string, 2001)...) },
			extract.LimitPages, "the PDF has more than 2000 pages"},
		{"document.xml over a gigabyte", extract.DOCX, docxBomb,
			extract.LimitDecoded, "the DOCX decodes to more than 256 MB"},
		{"footnotes.xml over a gigabyte", extract.DOCX, func() []byte { return extracttest.DOCXNotesBomb(0, 1<<30+1<<20) },
			extract.LimitDecoded, "the DOCX decodes to more than 256 MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			if len(data) > 4<<20 {
				t.Fatalf("the bomb is %d bytes on disk, want it small", len(data))
			}
			doc, err := extract.Text(context.Background(), tc.mime, data, nil)
			var le *extract.LimitError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, %v; want a limit error", doc, err)
			}
			if le.Limit != tc.limit || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %s: %v, want %s: %q", le.Limit, err, tc.limit, tc.msg)
			}
			if fault.KindOf(err) != fault.Invalid {
				t.Errorf("kind %s, want invalid", fault.KindOf(err))
			}
		})
	}
}

// A DOCX whose zip headers claim a small document.xml that inflates past a
// gigabyte fails as soon as it passes the size it declared.
func TestDOCXBombLyingHeader(t *testing.T) {
	data := extracttest.DOCXBomb(1<<30+1<<20, true)
	_, err := extract.Text(context.Background(), extract.DOCX, data, nil)
	if err == nil || !strings.Contains(err.Error(), "corrupt DOCX") {
		t.Fatalf("got %v, want a corrupt DOCX", err)
	}
}

// The limits given replace the defaults, and text over its limit is cut
// there with a note rather than failing.
func TestTextLimits(t *testing.T) {
	lim := extract.Limits{MaxTextBytes: 1 << 20, MaxPages: 5, MaxDecodedBytes: 64 << 20, MaxOperations: 1e6}
	ctx := context.Background()
	t.Run("DOCX text cut", func(t *testing.T) {
		doc, err := extract.TextWithin(ctx, extract.DOCX, extracttest.DOCX(strings.Repeat("Lorem ipsum dolor sit amet. ", 80000)), lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := textBytes(doc); n > 1<<20 || n < 1<<19 {
			t.Errorf("%d bytes of text, want at most 1 MB", n)
		}
		if !strings.Contains(doc.Note, "the text was cut at 1 MB") {
			t.Errorf("note %q", doc.Note)
		}
	})
	t.Run("PDF text cut", func(t *testing.T) {
		page := strings.Repeat("Lorem ipsum dolor sit amet. ", 20000)
		doc, err := extract.TextWithin(ctx, extract.PDF, extracttest.PDF(page, page, page), lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := textBytes(doc); n > 1<<20 || n < 1<<19 {
			t.Errorf("%d bytes of text, want at most 1 MB", n)
		}
		if !strings.Contains(doc.Note, "the text was cut at 1 MB") || !strings.Contains(doc.Note, "pages after 2 were not read") {
			t.Errorf("note %q", doc.Note)
		}
	})
	t.Run("plain text cut", func(t *testing.T) {
		doc, err := extract.TextWithin(ctx, extract.Plain, []byte(strings.Repeat("word ", 1<<20)), lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := textBytes(doc); n > 1<<20 {
			t.Errorf("%d bytes of text", n)
		}
		if !strings.Contains(doc.Note, "the text was cut at 1 MB") {
			t.Errorf("note %q", doc.Note)
		}
	})
	t.Run("HTML and JSON read to the limit", func(t *testing.T) {
		html := "<html><body>" + strings.Repeat("<p>Lorem ipsum dolor sit amet.</p>\n", 80000) + "</body></html>"
		doc, err := extract.TextWithin(ctx, extract.HTML, []byte(html), lim, nil)
		if err != nil || !doc.Cut || !strings.Contains(doc.Note, "only the first 1 MB of the page were read") || textBytes(doc) > 1<<20 {
			t.Errorf("HTML: %v, cut %v, note %q", err, doc != nil && doc.Cut, doc.Note)
		}
		json := "[" + strings.Repeat(`"Lorem ipsum dolor sit amet.",`, 80000) + `""]`
		doc, err = extract.TextWithin(ctx, extract.JSON, []byte(json), lim, nil)
		if err != nil || !doc.Cut || !strings.Contains(doc.Note, "the JSON is over 2 MB") || textBytes(doc) > 1<<20 {
			t.Errorf("JSON: %v, note %q", err, doc.Note)
		}
	})
	t.Run("pages", func(t *testing.T) {
		_, err := extract.TextWithin(ctx, extract.PDF, extracttest.PDF(make([]string, 6)...), lim, nil)
		if err == nil || err.Error() != "the PDF has more than 5 pages, the limit of pages per file" {
			t.Fatalf("got %v", err)
		}
		_, err = extract.TextWithin(ctx, extract.DOCX, extracttest.DOCX("1", "2", "3", "4", "5", "6"), lim, nil)
		if err == nil || err.Error() != "the DOCX has more than 5 pages, the limit of pages per file" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("operations", func(t *testing.T) {
		_, err := extract.TextWithin(ctx, extract.PDF, extracttest.FormBombPDF(2000), lim, nil)
		if err == nil || !strings.Contains(err.Error(), "more than 1000000 operations") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("one huge XML element", func(t *testing.T) {
		doc := `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>` +
			strings.Repeat("x", 5<<20) + `</w:t></w:r></w:p></w:body></w:document>`
		_, err := extract.Text(ctx, extract.DOCX, extracttest.DOCXWithDocument(doc), nil)
		if err == nil || !strings.Contains(err.Error(), "an XML element is larger than 4 MB") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("decoded", func(t *testing.T) {
		_, err := extract.TextWithin(ctx, extract.DOCX, extracttest.DOCXBomb(65<<20, false), lim, nil)
		if err == nil || err.Error() != "the DOCX decodes to more than 64 MB, the limit of decoded data per file" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("decoded by the parts together", func(t *testing.T) {
		// Each part is under the limit, the two together are over it.
		_, err := extract.TextWithin(ctx, extract.DOCX, extracttest.DOCXNotesBomb(40<<20, 40<<20), lim, nil)
		if err == nil || err.Error() != "the DOCX decodes to more than 64 MB, the limit of decoded data per file" {
			t.Fatalf("got %v", err)
		}
		doc, err := extract.TextWithin(ctx, extract.DOCX, extracttest.DOCXNotesBomb(20<<20, 20<<20), lim, nil)
		if err != nil || !strings.Contains(doc.Pages[0].Text, "The body cites a note.[footnote 1: A zip bomb repeats") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("DOCX notes cut", func(t *testing.T) {
		var body, notes strings.Builder
		for i := range 20 {
			fmt.Fprintf(&body, `<w:p><w:r><w:t>Paragraph %d.</w:t></w:r><w:r><w:footnoteReference w:id="%d"/></w:r></w:p>`, i, i+1)
			fmt.Fprintf(&notes, `<w:footnote w:id="%d"><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:footnote>`, i+1, strings.Repeat("Lorem ipsum dolor sit amet. ", 4000))
		}
		const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
		data := extracttest.Zip(map[string]string{
			"[Content_Types].xml": `<Types/>`,
			"word/document.xml":   `<w:document ` + ns + `><w:body>` + body.String() + `</w:body></w:document>`,
			"word/footnotes.xml":  `<w:footnotes ` + ns + `>` + notes.String() + `</w:footnotes>`,
			"word/_rels/document.xml.rels": `<Relationships><Relationship Id="rId1" Target="footnotes.xml"` +
				` Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes"/></Relationships>`,
		})
		doc, err := extract.TextWithin(ctx, extract.DOCX, data, lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := textBytes(doc); n > 1<<20 || n < 1<<19 {
			t.Errorf("%d bytes of text, want at most 1 MB", n)
		}
		if !doc.Cut || !strings.Contains(doc.Note, "the text was cut at 1 MB") {
			t.Errorf("cut %v, note %q", doc.Cut, doc.Note)
		}
	})
}

// Binary bytes declared as text are refused, at upload (Check, on the first
// bytes) and at extraction (on all of them).
func TestBinaryAsText(t *testing.T) {
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i*131 + i/7)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"notes.txt", bin, "the file is named .txt but holds binary data, not text"},
		{"data.csv", []byte("a,b\x00c"), "the file is named .csv but holds binary data, not text"},
		{"paper.pdf", []byte("just text, no header"), "the file is named .pdf but is not a PDF: the %PDF- header is missing"},
		{"report.docx", []byte("%PDF-1.4 not a zip"), "the file is named .docx but is not a DOCX: it is not a zip archive"},
		{"latin1.txt", []byte("caf\xe9 cr\xe8me br\xfbl\xe9e"), ""},
		{"utf16.txt", []byte("\xff\xfeh\x00i\x00"), ""},
		{"actually.txt", extracttest.PDF("a PDF named .txt is read as a PDF"), ""},
		{"blob.bin", bin, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := extract.Check(tc.name, tc.data)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || fault.KindOf(err) != fault.Invalid {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// Binary past the first bytes is found at extraction.
	data := append([]byte(strings.Repeat("text ", 1000)), bin...)
	data = append(data, bin...)
	data = append(data, bin...)
	_, err := extract.Text(context.Background(), extract.Plain, data, nil)
	if !errors.Is(err, extract.ErrBinary) {
		t.Fatalf("got %v, want ErrBinary", err)
	}
}
