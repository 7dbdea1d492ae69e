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
		{"page numbers left out, other fields kept",
			`<w:p><w:r><w:t xml:space="preserve">Page </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGE </w:instrText></w:r>` +
				`<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>4</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>` +
				`<w:r><w:t xml:space="preserve"> of </w:t></w:r><w:fldSimple w:instr="NUMPAGES"><w:r><w:t>9</w:t></w:r></w:fldSimple>` +
				`<w:r><w:t xml:space="preserve">, see </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> REF x </w:instrText></w:r>` +
				`<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>Annex I</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>` +
				// Fields begun and never ended, past how many are held.
				`<w:p>` + strings.Repeat(`<w:r><w:fldChar w:fldCharType="begin"/></w:r>`, 100) + `<w:r><w:t>still read</w:t></w:r></w:p>`,
			[]extract.Page{{1, "Page of , see Annex I\nstill read"}}},
		{"tracked changes as accepted",
			`<w:p><w:r><w:t xml:space="preserve">Kept </w:t></w:r><w:del w:id="1" w:author="A"><w:r><w:delText>deleted </w:delText></w:r></w:del>` +
				`<w:ins w:id="2" w:author="A"><w:r><w:t xml:space="preserve">inserted </w:t></w:r></w:ins><w:moveTo w:id="3" w:author="A"><w:r><w:t>moved</w:t></w:r></w:moveTo></w:p>` +
				`<w:p><w:pPr><w:rPr><w:moveFrom w:id="5" w:author="A"/></w:rPr></w:pPr><w:moveFromRangeStart w:id="4" w:name="move1"/><w:moveFrom w:id="6" w:author="A"><w:r><w:t>moved</w:t></w:r></w:moveFrom><w:moveFromRangeEnd w:id="4"/></w:p>` +
				`<w:p><w:r><w:t>end</w:t></w:r></w:p>`,
			[]extract.Page{{1, "Kept inserted moved\n\nend"}}},
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

const wNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:v="urn:schemas-microsoft-com:vml"`

// docxParts writes a DOCX of body and the parts given; see
// extracttest.DOCXWithParts.
func docxParts(body string, parts map[string]string) []byte {
	for name, xml := range parts {
		parts[name] = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + xml
	}
	return extracttest.DOCXWithParts(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document `+wNS+`><w:body>`+body+`</w:body></w:document>`, parts)
}

func para(text string) string {
	return `<w:p><w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

// Footnotes and endnotes are read where they are referenced, headers and
// footers once each at the start, and what Word shows that is not the
// document's text (separator notes, comments, page numbers) is left out.
func TestDOCXNotesHeadersFooters(t *testing.T) {
	footnoteRef := func(id string) string {
		return `<w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteReference w:id="` + id + `"/></w:r>`
	}
	body := `<w:p><w:r><w:t>Article 3 applies to credit institutions</w:t></w:r>` + footnoteRef("2") +
		`<w:del w:id="7" w:author="A">` + footnoteRef("9") + `</w:del>` +
		`<w:r><w:t xml:space="preserve"> and to investment firms.</w:t></w:r><w:commentRangeStart w:id="0"/>` +
		`<w:r><w:commentReference w:id="0"/></w:r></w:p>` +
		// A text box, in DrawingML with a VML fallback, and one in VML only:
		// each paragraph of theirs is a line, then their own ends.
		`<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>` + para("Box: see Annex II") + `</w:txbxContent></w:drawing></mc:Choice>` +
		`<mc:Fallback><w:pict><v:textbox><w:txbxContent>` + para("Box: see Annex II") + `</w:txbxContent></v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>` +
		`<w:p><w:r><w:pict><v:shape><v:textbox><w:txbxContent>` + para("Old box") + `</w:txbxContent></v:textbox></v:shape></w:pict></w:r></w:p>` +
		`<w:tbl><w:tr><w:tc>` + para("Term") + `</w:tc><w:tc>` + para("Meaning") + `</w:tc></w:tr>` +
		`<w:tr><w:tc><w:p><w:r><w:t>CRR</w:t></w:r>` + footnoteRef("3") + `</w:p></w:tc><w:tc>` + para("the regulation") + `</w:tc></w:tr></w:tbl>` +
		// The first section ends here, with a header and footer of its own.
		`<w:p><w:pPr><w:sectPr><w:headerReference w:type="default" r:id="header1"/><w:footerReference w:type="default" r:id="footer1"/><w:type w:val="nextPage"/></w:sectPr></w:pPr>` +
		`<w:r><w:t>Exemptions are listed below.</w:t></w:r><w:r><w:endnoteReference w:id="1"/></w:r></w:p>` +
		`<w:p><w:r><w:t>A starred remark</w:t></w:r><w:r><w:footnoteReference w:customMarkFollows="1" w:id="4"/><w:t>*</w:t></w:r><w:r><w:t xml:space="preserve"> ends it.</w:t></w:r></w:p>` +
		`<w:p><w:r><w:t>Page </w:t></w:r><w:fldSimple w:instr=" PAGE \* MERGEFORMAT "><w:r><w:t>2</w:t></w:r></w:fldSimple>` +
		`<w:r><w:t xml:space="preserve"> cites </w:t></w:r><w:fldSimple w:instr=" REF art3 "><w:r><w:t>Article 3</w:t></w:r></w:fldSimple></w:p>` +
		`<w:sectPr><w:headerReference w:type="default" r:id="header2"/><w:headerReference w:type="first" r:id="header3"/><w:footerReference w:type="default" r:id="footer2"/></w:sectPr>`
	note := func(kind, typ, id, content string) string {
		if typ != "" {
			typ = ` w:type="` + typ + `"`
		}
		return `<w:` + kind + typ + ` w:id="` + id + `">` + content + `</w:` + kind + `>`
	}
	footnotes := `<w:footnotes ` + wNS + `>` +
		note("footnote", "separator", "-1", `<w:p><w:r><w:separator/><w:t>SEPARATOR</w:t></w:r></w:p>`) +
		note("footnote", "continuationSeparator", "0", `<w:p><w:r><w:continuationSeparator/></w:r></w:p>`) +
		note("footnote", "continuationNotice", "1", para("CONTINUED")) +
		note("footnote", "", "2", `<w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> Within the meaning of Article 4(1).</w:t></w:r></w:p>`+para("Except  branches.")) +
		note("footnote", "normal", "3", `<w:p><w:r><w:footnoteRef/></w:r><w:r><w:t>Regulation (EU) No 575/2013.</w:t></w:r></w:p>`) +
		note("footnote", "", "4", para("Starred.")) +
		note("footnote", "", "9", para("Deleted with its reference.")) +
		`</w:footnotes>`
	endnotes := `<w:endnotes ` + wNS + `>` +
		note("endnote", "separator", "-1", `<w:p><w:r><w:separator/></w:r></w:p>`) +
		note("endnote", "", "1", `<w:p><w:r><w:endnoteRef/></w:r><w:r><w:t xml:space="preserve"> See the list in Annex I.</w:t></w:r></w:p>`) +
		`</w:endnotes>`
	margin := func(kind, text string) string {
		return `<w:` + kind + ` ` + wNS + `>` + para(text) + `</w:` + kind + `>`
	}
	// The footers of both sections read the same once their page numbers,
	// a simple field in one and a complex field in the other, are left out.
	footer1 := `<w:ftr ` + wNS + `><w:p><w:r><w:t>REG-2024-17 · Confidential</w:t></w:r><w:r><w:tab/></w:r>` +
		`<w:fldSimple w:instr=" PAGE "><w:r><w:t>1</w:t></w:r></w:fldSimple></w:p></w:ftr>`
	footer2 := `<w:ftr ` + wNS + `><w:p><w:r><w:t>REG-2024-17 · Confidential</w:t></w:r><w:r><w:tab/></w:r>` +
		`<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> NUMPAGES </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>` +
		`<w:r><w:t>7</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p></w:ftr>`
	data := docxParts(body, map[string]string{
		"footnotes.xml": footnotes,
		"endnotes.xml":  endnotes,
		"comments.xml":  `<w:comments ` + wNS + `><w:comment w:id="0" w:author="A">` + para("Reviewer: check this") + `</w:comment></w:comments>`,
		"header1.xml":   margin("hdr", "EBA/GL/2024/17 Guidelines on exemptions"),
		"header2.xml":   margin("hdr", "EBA/GL/2024/17  Guidelines on exemptions"),
		"header3.xml":   margin("hdr", ""),
		"footer1.xml":   footer1,
		"footer2.xml":   footer2,
	})
	want := []extract.Page{
		{1, "[header: EBA/GL/2024/17 Guidelines on exemptions]\n[footer: REG-2024-17 · Confidential]\n" +
			"Article 3 applies to credit institutions[footnote 1: Within the meaning of Article 4(1). Except branches.] and to investment firms.\n" +
			"Box: see Annex II\n\nOld box\n\nTerm\tMeaning\nCRR[footnote 2: Regulation (EU) No 575/2013.]\tthe regulation\n" +
			"Exemptions are listed below.[endnote 1: See the list in Annex I.]"},
		{2, "A starred remark*[footnote: Starred.] ends it.\nPage cites Article 3"},
	}
	if diff := cmp.Diff(want, docxPages(t, data)); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// A notes or header part that is not well-formed is left out with a note;
// the body is still read.
func TestDOCXBrokenNotesPart(t *testing.T) {
	data := docxParts(`<w:p><w:r><w:t>Body text.</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r></w:p>`, map[string]string{
		"footnotes.xml": `<w:footnotes ` + wNS + `><w:footnote w:id="1"><w:p><w:r><w:t>cut`,
		"header1.xml":   `<w:hdr ` + wNS + `>` + para("Doc 7") + `</w:hdr>`,
	})
	doc, err := extract.Text(context.Background(), extract.DOCX, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]extract.Page{{1, "[header: Doc 7]\nBody text."}}, doc.Pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(doc.Note, "word/footnotes.xml: XML syntax error") || !strings.HasSuffix(doc.Note, "so its text is not searchable") || doc.Cut {
		t.Errorf("note %q, cut %v", doc.Note, doc.Cut)
	}
}
