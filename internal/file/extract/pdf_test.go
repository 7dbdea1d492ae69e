package extract_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

// obj is one object of a hand-written PDF; with stream set, dict gets a
// /Length and the stream follows it.
type obj struct {
	dict   string
	stream []byte
}

// handPDF writes objects 1…n and a cross-reference table; the trailer gets
// /Size, /Root 1 0 R and extra.
func handPDF(extra string, objs ...obj) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		if o.stream == nil {
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o.dict)
			continue
		}
		d := strings.TrimSuffix(strings.TrimSpace(o.dict), ">>")
		fmt.Fprintf(&b, "%d 0 obj\n%s /Length %d >>\nstream\n", i+1, d, len(o.stream))
		b.Write(o.stream)
		b.WriteString("\nendstream\nendobj\n")
	}
	start := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, extra, start)
	return b.Bytes()
}

func zlibBytes(s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// onePage is a catalog, a page tree and one page with the given resources
// and content, as objects 1–4; more objects follow from 5.
func onePage(resources string, content obj, more ...obj) []obj {
	return append([]obj{
		{dict: "<< /Type /Catalog /Pages 2 0 R >>"},
		{dict: "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"},
		{dict: "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources " + resources + " /Contents 4 0 R >>"},
		content,
	}, more...)
}

func pdfPages(t *testing.T, data []byte) []string {
	t.Helper()
	doc, err := extract.Text(context.Background(), extract.PDF, data, nil)
	if err != nil {
		t.Fatalf("Text: %v", err)
	}
	var out []string
	for i, p := range doc.Pages {
		if p.Number != i+1 {
			t.Errorf("page %d has number %d", i+1, p.Number)
		}
		out = append(out, p.Text)
	}
	return out
}

// words collapses white space, for comparing text that was wrapped.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestPDFRoundTrip(t *testing.T) {
	pages := []string{
		"The quarterly report (draft) says revenue grew by 12% in the north region. " + strings.Repeat("Every line of this page is long enough to wrap over several lines of the page. ", 6),
		"Page two: café, naïve, “quotes” — and a backslash \\ too.\nA second paragraph on its own line.",
		"",
		"The last page names the answer: forty-two.",
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"xref table", extracttest.PDF(pages...)},
		{"object streams", extracttest.PDFWithObjectStreams(pages...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pdfPages(t, tc.data)
			if len(got) != len(pages) {
				t.Fatalf("got %d pages, want %d", len(got), len(pages))
			}
			for i := range pages {
				if words(got[i]) != words(pages[i]) {
					t.Errorf("page %d:\n got %q\nwant %q", i+1, words(got[i]), words(pages[i]))
				}
			}
			if !strings.Contains(got[1], "\nA second paragraph") {
				t.Errorf("page 2 lost its line break: %q", got[1])
			}
		})
	}
}

func TestPDFIncrementalUpdate(t *testing.T) {
	for _, base := range [][]byte{extracttest.PDF("one", "two", "three"), extracttest.PDFWithObjectStreams("one", "two", "three")} {
		data := extracttest.Update(base, 2, "two, revised")
		data = extracttest.Update(data, 3, "three, revised")
		got := pdfPages(t, data)
		if diff := cmp.Diff([]string{"one", "two, revised", "three, revised"}, got); diff != "" {
			t.Errorf("pages (-want +got):\n%s", diff)
		}
	}
}

func TestPDFBrokenXref(t *testing.T) {
	good := extracttest.PDF("alpha page", "beta page")
	cases := map[string][]byte{
		// startxref points into the middle of an object.
		"wrong startxref": bytes.Replace(good, []byte("startxref\n"), []byte("startxref\n1"), 1),
		// Every offset in the table is off by 7 bytes.
		"shifted offsets": append([]byte("garbage"), good...),
		"no xref at all":  good[:bytes.Index(good, []byte("xref\n"))],
	}
	objStm := extracttest.PDFWithObjectStreams("alpha page", "beta page")
	cases["object streams, no startxref"] = objStm[:bytes.LastIndex(objStm, []byte("startxref"))]
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			got := pdfPages(t, data)
			if diff := cmp.Diff([]string{"alpha page", "beta page"}, got); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}

// A Type0 font with 2-byte codes and a ToUnicode CMap (bfchar, bfrange with
// a string and with an array), shown with TJ arrays whose large adjustments
// are word spaces and small ones kerning.
func TestPDFToUnicodeAndTJ(t *testing.T) {
	cmap := `/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
3 beginbfchar
<0001> <0048>
<0002> <0065>
<0010> <FB01>
endbfchar
2 beginbfrange
<0020> <0039> <0061>
<0050> <0052> [<0057> <006F> <D83DDE00>]
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end`
	// Codes: 0x20+k is 'a'+k; 0x10 is the ﬁ ligature; 0x50–0x52 are W, o, 😀.
	code := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, "%04X", 0x20+int(r-'a'))
		}
		return "<" + b.String() + ">"
	}
	content := fmt.Sprintf(`BT /F1 12 Tf 72 700 Td
[<00010002> 20 %s -40 %s -500 <0050> 10 <0051> %s] TJ
0 -20 Td [(ignored) ] TJ
<0010> Tj %s Tj [-600] TJ <0052> Tj
ET`, code("ll"), code("o"), code("rld"), code("nd"))
	content = strings.Replace(content, "[(ignored) ] TJ", "[<0001>] TJ", 1)
	data := handPDF("", onePage("<< /Font << /F1 5 0 R >> >>", obj{stream: []byte(content), dict: "<< >>"},
		obj{dict: "<< /Type /Font /Subtype /Type0 /BaseFont /ABC+Custom /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode 7 0 R >>"},
		obj{dict: "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABC+Custom /DW 500 /W [1 [722 556] 32 57 500] >>"},
		obj{dict: "<< /Filter /FlateDecode >>", stream: zlibBytes(cmap)},
	)...)
	got := pdfPages(t, data)
	want := []string{"Hello World\nHfind 😀"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// Simple fonts: /Differences with glyph names, MacRoman, StandardEncoding's
// quotes, a ToUnicode CMap of 1-byte codes (codes it leaves out fall back to
// the encoding), and the ', " and T* operators for new lines.
func TestPDFSimpleEncodings(t *testing.T) {
	content := `BT
/F1 10 Tf 14 TL 72 700 Td
(\001\002\003 ABC) Tj
/F2 10 Tf
T* (Caf\216 cr\217me) Tj
/F3 10 Tf
(It'll) '
2 1 (be ` + "`" + `fine') "
/F4 10 Tf T* (Aabcz) Tj
ET`
	data := handPDF("", onePage("<< /Font << /F1 5 0 R /F2 6 0 R /F3 7 0 R /F4 8 0 R >> >>", obj{dict: "<< >>", stream: []byte(content)},
		obj{dict: "<< /Type /Font /Subtype /Type1 /BaseFont /Custom /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [1 /eacute /uni00DF /f_i 65 /Omega] >> >>"},
		obj{dict: "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /MacRomanEncoding >>"},
		obj{dict: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"},
		obj{dict: "<< /Type /Font /Subtype /TrueType /BaseFont /Cyr /FirstChar 65 /Widths [600] /ToUnicode 9 0 R >>"},
		obj{dict: "<< >>", stream: []byte("1 begincodespacerange <00> <FF> endcodespacerange\n1 beginbfchar <41> <0416> endbfchar\n1 beginbfrange <61> <63> <0431> endbfrange")},
	)...)
	got := pdfPages(t, data)
	want := []string{"éßfi ΩBC\nCafé crème\nIt’ll\nbe ‘fine’\nЖбвгz"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// Text placed word by word with Td, on several lines, inside a form XObject
// and after an inline image, with content split over two streams that use
// the ASCIIHex and ASCII85 filters.
func TestPDFLayoutFiltersAndForms(t *testing.T) {
	part1 := `BT /F1 10 Tf 100 700 Td (Words) Tj 40 0 Td (placed) Tj 35 0 Td (apart) Tj
0 -14 Td (next) Tj (line) Tj ET
BI /W 2 /H 2 /BPC 8 /CS /G ID ` + "\x00EI\xff\x10" + ` EI
q 1 0 0 1 0 -100 cm /Fm1 Do Q`
	part2 := `BT /F1 10 Tf 100 450 Td (after the form) Tj ET`
	var a85 bytes.Buffer
	enc := ascii85.NewEncoder(&a85)
	enc.Write(zlibBytes(part2))
	enc.Close()
	a85.WriteString("~>")
	form := `BT /F1 10 Tf 100 600 Td (inside a form) Tj ET`
	data := handPDF("", []obj{
		{dict: "<< /Type /Catalog /Pages 2 0 R >>"},
		{dict: "<< /Type /Pages /Kids [3 0 R] /Count 1 /Resources << /Font << /F1 6 0 R >> /XObject << /Fm1 7 0 R >> >> >>"},
		{dict: "<< /Type /Page /Parent 2 0 R /Contents [4 0 R 5 0 R] >>"},
		{dict: "<< /Filter /ASCIIHexDecode >>", stream: []byte(strings.ToUpper(hex.EncodeToString([]byte(part1))) + ">")},
		{dict: "<< /Filter [/ASCII85Decode /FlateDecode] >>", stream: a85.Bytes()},
		{dict: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"},
		{dict: "<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 6 0 R >> >> >>", stream: []byte(form)},
	}...)
	got := pdfPages(t, data)
	want := []string{"Words placed apart\nnextline\ninside a form\nafter the form"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

func TestPDFNoText(t *testing.T) {
	doc, err := extract.Text(context.Background(), extract.PDF, extracttest.ImagePDF(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != 3 || doc.Note != extract.NoTextNote {
		t.Errorf("got %d pages, note %q; want 3 pages and %q", len(doc.Pages), doc.Note, extract.NoTextNote)
	}
	for _, p := range doc.Pages {
		if p.Text != "" {
			t.Errorf("page %d has text %q", p.Number, p.Text)
		}
	}
}

func TestPDFErrors(t *testing.T) {
	good := extracttest.PDF("some text")
	encrypted := handPDF("/Encrypt 5 0 R /ID [<01> <01>]", onePage("<< >>", obj{dict: "<< >>", stream: []byte("BT ET")},
		obj{dict: "<< /Filter /Standard /V 2 /R 3 /O <00> /U <00> /P -4 >>"})...)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"encrypted", encrypted, "the PDF is encrypted (password-protected), which Relay cannot read: upload a copy without a password or encryption"},
		{"encrypted, as written", extracttest.EncryptedPDF(), "the PDF is encrypted (password-protected)"},
		{"not a PDF", []byte("hello, I am text"), "corrupt PDF: not a PDF: the %PDF- header is missing"},
		{"header only", []byte("%PDF-1.7\n"), "corrupt PDF: no objects found"},
		{"truncated", good[:len(good)/3], "corrupt PDF"},
		{"no catalog", handPDF("", obj{dict: "<< /Type /Font >>"}), "corrupt PDF"},
		{"content is garbage", handPDF("", onePage("<< >>", obj{dict: "<< /Filter /FlateDecode >>", stream: []byte("not zlib at all")})...), "page 1: content stream: FlateDecode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := extract.Text(context.Background(), extract.PDF, tc.data, nil)
			if err == nil {
				t.Fatalf("got %+v, want an error", doc)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("error %q is %s, want invalid", err, fault.KindOf(err))
			}
		})
	}
	_, err := extract.Text(context.Background(), extract.PDF, encrypted, nil)
	if !errors.Is(err, extract.ErrEncrypted) {
		t.Errorf("encrypted: error %v is not ErrEncrypted", err)
	}
}

func TestPDFProgressAndCancel(t *testing.T) {
	data := extracttest.PDF("a", "b", "c", "d")
	var got []float64
	if _, err := extract.Text(context.Background(), extract.PDF, data, func(f float64) { got = append(got, f) }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{0.25, 0.5, 0.75, 1}, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := extract.Text(ctx, extract.PDF, data, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}

func TestPDFLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large PDF")
	}
	data := extracttest.LargePDF(5 << 20)
	doc, err := extract.Text(context.Background(), extract.PDF, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) < 90 {
		t.Fatalf("got %d pages of a 5 MB file", len(doc.Pages))
	}
	for _, i := range []int{1, len(doc.Pages) / 2, len(doc.Pages)} {
		if got, want := words(doc.Pages[i-1].Text), words(extracttest.LargeText(i)); got != want {
			t.Errorf("page %d:\n got %.200q\nwant %.200q", i, got, want)
		}
	}
}

// Forms that draw forms ten times each, eight deep, over a stream of a
// megabyte: without a bound on decoding this would decode 100 TB.
func TestPDFDecodeBudget(t *testing.T) {
	objs := []obj{
		{dict: "<< /Type /Catalog /Pages 2 0 R >>"},
		{dict: "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"},
		{dict: "<< /Type /Page /Parent 2 0 R /Resources << /XObject << /Fm 5 0 R >> >> /Contents 4 0 R >>"},
		{dict: "<< >>", stream: []byte("/Fm Do")},
	}
	for i := 0; i < 8; i++ {
		num := 5 + i
		objs = append(objs, obj{
			dict:   fmt.Sprintf("<< /Type /XObject /Subtype /Form /Resources << /XObject << /Fm %d 0 R >> >> >>", num+1),
			stream: []byte(strings.Repeat("/Fm Do ", 10)),
		})
	}
	objs = append(objs, obj{dict: "<< /Type /XObject /Subtype /Form /Filter /FlateDecode >>", stream: zlibBytes(strings.Repeat(" ", 1<<20))})
	_, err := extract.Text(context.Background(), extract.PDF, handPDF("", objs...), nil)
	var le *extract.LimitError
	if !errors.As(err, &le) || (le.Limit != extract.LimitDecoded && le.Limit != extract.LimitOperations) {
		t.Fatalf("got %v, want the error of the decoding or operations limit", err)
	}
}
