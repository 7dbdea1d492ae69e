package extract_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

// checkDocument fails on what must never happen, whatever the input: a panic
// (Text turns one into an error that says so), pages out of order, text
// that is not UTF-8, or chunks that break their contract.
func checkDocument(t *testing.T, doc *extract.Document, err error) {
	t.Helper()
	if err != nil {
		if strings.Contains(err.Error(), "the file could not be read (") {
			t.Fatalf("panic: %v", err)
		}
		return
	}
	for i, p := range doc.Pages {
		if p.Number != i+1 {
			t.Fatalf("page %d has number %d", i+1, p.Number)
		}
		if !utf8.ValidString(p.Text) {
			t.Fatalf("page %d is not UTF-8: %q", p.Number, p.Text)
		}
	}
	for _, c := range extract.Chunks(doc.Pages, 60, 10) {
		if n := utf8.RuneCountInString(c.Text); n > 60 || n == 0 {
			t.Fatalf("chunk %d has %d characters", c.Index, n)
		}
	}
}

// FuzzText feeds the PDF reader; the seeds are the fixtures, hand-written
// files from the tests and testdata/fuzz/FuzzText. Run it with
// go test -fuzz=FuzzText -fuzztime=3m ./internal/file/extract/
func FuzzText(f *testing.F) {
	base := extracttest.PDF("first page text", "second (page) text")
	for _, seed := range [][]byte{
		base,
		extracttest.PDFWithObjectStreams("object streams", "page two"),
		extracttest.Update(base, 1, "updated"),
		extracttest.ImagePDF(1),
		base[:bytes.Index(base, []byte("xref"))],
		handPDF("", onePage("<< /Font << /F1 5 0 R >> >>", obj{dict: "<< >>", stream: []byte("BT /F1 9 Tf [<0001> -300 <0002>] TJ ET")},
			obj{dict: "<< /Type /Font /Subtype /Type0 /Encoding /Identity-H /ToUnicode 6 0 R >>"},
			obj{dict: "<< >>", stream: []byte("1 begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfrange <0001> <0002> <0041> endbfrange")})...),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := extract.Text(context.Background(), extract.PDF, data, nil)
		checkDocument(t, doc, err)
	})
}

// FuzzTextFormats feeds the other readers: DOCX, HTML, CSV and JSON.
func FuzzTextFormats(f *testing.F) {
	f.Add(uint8(0), extracttest.DOCX("one\ntwo", "three"))
	f.Add(uint8(0), extracttest.CorruptDOCX())
	f.Add(uint8(1), []byte(`<html><head><title>t</title></head><body><p>a<b>b</b></p><table><tr><td>x</td></tr></table><script>x<y</script></body>`))
	f.Add(uint8(2), []byte("a,b\n\"c,d\",e\n"))
	f.Add(uint8(3), []byte(`{"a":[1,2,{"b":null}]}`))
	f.Add(uint8(4), []byte("\xff\xfeh\x00i\x00"))
	kinds := []string{extract.DOCX, extract.HTML, extract.CSV, extract.JSON, extract.Plain}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		doc, err := extract.Text(context.Background(), kinds[int(kind)%len(kinds)], data, nil)
		checkDocument(t, doc, err)
	})
}
