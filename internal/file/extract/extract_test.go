package extract_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

func TestDetect(t *testing.T) {
	docx := extracttest.DOCX("hello")
	for _, tc := range []struct {
		name string
		head []byte
		want string
	}{
		{"report.pdf", extracttest.PDF("x"), extract.PDF},
		{"no-extension", extracttest.PDF("x"), extract.PDF},
		{"misnamed.txt", extracttest.PDF("x"), extract.PDF},
		{"report.docx", docx, extract.DOCX},
		{"report", docx, extract.DOCX},
		{"report.docx", docx[:4], extract.DOCX},
		{"archive.zip", extracttest.Zip(map[string]string{"a.txt": "a"}), extract.Zip},
		{"page.HTML", []byte("<p>hi</p>"), extract.HTML},
		{"page.htm", []byte("hi"), extract.HTML},
		{"page", []byte("\n  <!DOCTYPE html><html>"), extract.HTML},
		{"notes.md", []byte("# Title"), extract.Markdown},
		{"notes.txt", []byte("plain"), extract.Plain},
		{"data.csv", []byte("a,b\n1,2"), extract.CSV},
		{"data.json", []byte(`{"a":1}`), extract.JSON},
		{"README", []byte("just some text, é"), extract.Plain},
		{"README", []byte("cut in the middle of é"[:22]), extract.Plain},
		{"utf16", []byte{0xFF, 0xFE, 'h', 0, 'i', 0}, extract.Plain},
		{"image.png", []byte("\x89PNG\r\n\x1a\n\x00\x00"), extract.Binary},
		{"blob", []byte{0, 1, 2, 3}, extract.Binary},
		{"empty", nil, extract.Binary},
	} {
		if got := extract.Detect(tc.name, tc.head); got != tc.want {
			t.Errorf("Detect(%q, %.12q) = %q, want %q", tc.name, tc.head, got, tc.want)
		}
	}
}

func text(t *testing.T, mime, data string) *extract.Document {
	t.Helper()
	doc, err := extract.Text(context.Background(), mime, []byte(data), nil)
	if err != nil {
		t.Fatalf("Text(%s): %v", mime, err)
	}
	return doc
}

func TestTextFormats(t *testing.T) {
	for _, tc := range []struct {
		name, mime, data, want string
	}{
		{"plain", extract.Plain, "line one\r\nline two   \r\n\r\n\tindented\n", "line one\nline two\n\n\tindented"},
		{"plain with charset", "text/plain; charset=UTF-8", "hello", "hello"},
		{"BOM", extract.Plain, "\xef\xbb\xbfhello", "hello"},
		{"UTF-16LE", extract.Plain, "\xff\xfeh\x00\xe9\x00", "hé"},
		{"UTF-16BE", extract.Plain, "\xfe\xff\x00h\x00\xe9", "hé"},
		{"invalid UTF-8", extract.Plain, "caf\xe9 ok", "caf\ufffd ok"},
		{"NUL bytes past 8000", extract.Plain, strings.Repeat("a", 8000) + "\x00b", strings.Repeat("a", 8000) + "b"},
		{"markdown", extract.Markdown, "# Title\n\n- item *one*\n- item two\n", "# Title\n\n- item *one*\n- item two"},
		{"csv", extract.CSV, "name,city\n\"Smith, Jo\",\"New\nYork\"\n", "name, city\nSmith, Jo, New York"},
		{"csv ragged", extract.CSV, "a,b,c\n1\n", "a, b, c\n1"},
		{"csv lenient", extract.CSV, "a,\"b\nc", "a, b c"},
		{"json", extract.JSON, `{"name":"Relay","tags":["a","b"]}`, "{\n  \"name\": \"Relay\",\n  \"tags\": [\n    \"a\",\n    \"b\"\n  ]\n}"},
		{"html", extract.HTML, `<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style>
<script>if (a < b) { document.write("<script>x</script>") }</script></head>
<body><h1>Heading</h1><p>First   paragraph with <b>bold</b> and <a href="x">a link</a>.</p>
<!-- a comment --><div>Caf&eacute; &amp; <i>bar</i>&#x21;</div>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<ul><li>one</li><li>two</li></ul>x &lt; y<br>new line <img alt="a chart" src="c.png"> end
<noscript>enable JS</noscript><svg><text>svg text</text></svg></body></html>`,
			"Heading\nFirst paragraph with bold and a link.\nCafé & bar!\nk\tv\na\t1\none\ntwo\nx < y\nnew line a chart end"},
		{"html fragment", extract.HTML, "Hello <em>world</em>", "Hello world"},
		{"html unclosed", extract.HTML, "<p>text <b", "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := text(t, tc.mime, tc.data)
			want := []extract.Page{{Number: 1, Text: tc.want}}
			if diff := cmp.Diff(want, doc.Pages); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
			if doc.Note != "" {
				t.Errorf("note %q", doc.Note)
			}
		})
	}
}

func TestTextEmptyAndBlank(t *testing.T) {
	for _, mime := range []string{extract.PDF, extract.DOCX, extract.Plain, extract.JSON, extract.Binary} {
		doc := text(t, mime, "")
		if len(doc.Pages) != 0 || doc.Note != extract.EmptyNote {
			t.Errorf("%s: empty file gave %+v", mime, doc)
		}
	}
	doc := text(t, extract.Plain, " \n\t\n")
	if doc.Note != extract.BlankNote {
		t.Errorf("blank file: note %q", doc.Note)
	}
	doc = text(t, extract.HTML, "<script>only()</script>")
	if doc.Note != extract.BlankNote {
		t.Errorf("HTML with no visible text: note %q", doc.Note)
	}
}

func TestTextErrors(t *testing.T) {
	for _, tc := range []struct {
		name, mime, data, want string
	}{
		{"unsupported", "image/png", "\x89PNG", "unsupported type: image/png"},
		{"zip", extract.Zip, "PK\x03\x04", "unsupported type: application/zip"},
		{"invalid JSON", extract.JSON, `{"a": }`, "invalid JSON: at byte 7"},
		{"truncated JSON", extract.JSON, `{"a": [1, 2`, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extract.Text(context.Background(), tc.mime, []byte(tc.data), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("error is %s, want invalid", fault.KindOf(err))
			}
		})
	}
	_, err := extract.Text(context.Background(), "image/png", []byte("x"), nil)
	if !errors.Is(err, extract.ErrUnsupported) {
		t.Errorf("unsupported type: %v is not ErrUnsupported", err)
	}
}
