package extract_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

func docxPages(t *testing.T, data []byte) []extract.Page {
	t.Helper()
	doc, err := extract.Text(context.Background(), extract.DOCX, data, nil)
	if err != nil {
		t.Fatalf("Text: %v", err)
	}
	return doc.Pages
}

func TestDOCXRoundTrip(t *testing.T) {
	pages := []string{
		"Introduction\nRelay reads <DOCX> files & keeps their paragraphs.",
		"The second page.\nIt has two paragraphs.",
		"Third page: the answer is forty-two.",
	}
	got := docxPages(t, extracttest.DOCX(pages...))
	var want []extract.Page
	for i, p := range pages {
		want = append(want, extract.Page{Number: i + 1, Text: p})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

func TestDOCXMarkup(t *testing.T) {
	const head = `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>`
	const tail = `</w:body></w:document>`
	for _, tc := range []struct {
		name string
		body string
		want []extract.Page
	}{
		{"runs, tabs and breaks",
			`<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:t>Name:</w:t></w:r><w:r><w:tab/><w:t xml:space="preserve">Ada </w:t></w:r><w:r><w:t>Lovelace</w:t><w:br/><w:t>next</w:t><w:cr/><w:t>line</w:t></w:r></w:p>` +
				`<w:p><w:r><w:instrText>PAGE</w:instrText><w:delText>gone</w:delText><w:t>non</w:t><w:noBreakHyphen/><w:t>stop</w:t></w:r></w:p>`,
			[]extract.Page{{1, "Name:\tAda Lovelace\nnext\nline\nnon-stop"}}},
		{"table",
			`<w:p><w:r><w:t>Before</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>a1</w:t></w:r></w:p><w:p><w:r><w:t>more</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>b1</w:t></w:r></w:p></w:tc></w:tr>` +
				`<w:tr><w:tc><w:p/></w:tc><w:tc><w:p><w:r><w:t>b2</w:t></w:r></w:p></w:tc></w:tr></w:tbl><w:p><w:r><w:t>After</w:t></w:r></w:p>`,
			[]extract.Page{{1, "Before\na1 more\tb1\n\tb2\nAfter"}}},
		{"page breaks of every kind, counted once",
			`<w:p><w:r><w:t>one</w:t></w:r></w:p>` +
				`<w:p><w:r><w:br w:type="page"/></w:r></w:p><w:p><w:r><w:lastRenderedPageBreak/><w:t>two</w:t></w:r></w:p>` +
				`<w:p><w:pPr><w:pageBreakBefore/></w:pPr><w:r><w:t>three</w:t></w:r></w:p>` +
				`<w:p><w:r><w:t>three, still</w:t></w:r><w:r><w:lastRenderedPageBreak/><w:t>four</w:t></w:r></w:p>` +
				`<w:p><w:pPr><w:sectPr><w:type w:val="nextPage"/></w:sectPr></w:pPr><w:r><w:t>four, end of section</w:t></w:r></w:p>` +
				`<w:p><w:r><w:t>five</w:t></w:r></w:p><w:p><w:pPr><w:pageBreakBefore w:val="0"/></w:pPr><w:r><w:t>five, too</w:t></w:r></w:p>`,
			[]extract.Page{{1, "one"}, {2, "two"}, {3, "three\nthree, still"}, {4, "four\nfour, end of section"}, {5, "five\nfive, too"}}},
		{"alternate content once",
			`<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:t>shape text</w:t></mc:Choice><mc:Fallback><w:t>shape text</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>`,
			[]extract.Page{{1, "shape text"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := docxPages(t, extracttest.DOCXWithDocument(head+tc.body+tail))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDOCXMainPartFromRelationships(t *testing.T) {
	data := extracttest.Zip(map[string]string{
		"[Content_Types].xml": `<Types/>`,
		"_rels/.rels":         `<Relationships><Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="/word/document2.xml"/></Relationships>`,
		"word/document2.xml":  extracttest.DocumentXML("from the second part"),
	})
	got := docxPages(t, data)
	if diff := cmp.Diff([]extract.Page{{1, "from the second part"}}, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

func TestDOCXErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"corrupt zip", extracttest.CorruptDOCX(), "corrupt DOCX: zip: not a valid zip file"},
		{"not a zip", []byte("plain text pretending"), "corrupt DOCX: zip: not a valid zip file"},
		{"no document.xml", extracttest.Zip(map[string]string{"[Content_Types].xml": "<Types/>"}), "corrupt DOCX: word/document.xml is missing"},
		{"broken XML", extracttest.DOCXWithDocument(`<w:document xmlns:w="x"><w:body><w:p><w:t>cut`), "corrupt DOCX: word/document.xml: XML syntax error"},
		{"not XML", extracttest.DOCXWithDocument("\x00\x01binary"), "corrupt DOCX: word/document.xml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extract.Text(context.Background(), extract.DOCX, tc.data, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("error is %s, want invalid", fault.KindOf(err))
			}
		})
	}
}
