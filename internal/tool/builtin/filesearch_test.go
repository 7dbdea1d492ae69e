package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// searcher records the queries it gets and answers with hits or err.
type searcher struct {
	got  []file.Query
	hits []file.Hit
	err  error
}

func (s *searcher) Search(_ context.Context, q file.Query) ([]file.Hit, error) {
	s.got = append(s.got, q)
	return s.hits, s.err
}

func TestFileSearch(t *testing.T) {
	s := &searcher{hits: []file.Hit{
		{FileID: "file_a", FileName: "report.pdf", Page: 3, Text: "  The reactor must be inspected yearly.  ", Score: 0.91234},
		{FileID: "file_b", FileName: "notes.docx", Page: 1, Text: "Inspections happen in spring.", Score: 0.5},
	}}
	ts := builtin.FileSearch(s, []string{"file_a", "file_b"})
	if ts.Name() != "file_search" {
		t.Fatalf("Name() = %q", ts.Name())
	}
	res, err := ts.Call(context.Background(), "user_1", json.RawMessage(`{"query":"inspection interval"}`))
	if err != nil || res.IsError {
		t.Fatalf("Call = %+v, %v", res, err)
	}
	want := "File: report.pdf\nPage: 3\nRelevance: 0.9123\nAnchor: \\ue202turn0file0\nContent: The reactor must be inspected yearly.\n" +
		"\n---\n" +
		"File: notes.docx\nPage: 1\nRelevance: 0.5000\nAnchor: \\ue202turn0file1\nContent: Inspections happen in spring.\n"
	if diff := cmp.Diff(want, res.Text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.Text, `\ue202turn0file1`) || len(`\ue202`) != 6 {
		t.Errorf("anchors are not the six literal characters: %q", res.Text)
	}
	wantSources := []tool.Source{
		{Kind: tool.SourceFile, Anchor: `\ue202turn0file0`, FileID: "file_a", FileName: "report.pdf", Page: 3, Relevance: 0.91234, Snippet: "The reactor must be inspected yearly."},
		{Kind: tool.SourceFile, Anchor: `\ue202turn0file1`, FileID: "file_b", FileName: "notes.docx", Page: 1, Relevance: 0.5, Snippet: "Inspections happen in spring."},
	}
	if diff := cmp.Diff(wantSources, res.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	// One context per passage, without the headers the model reads.
	if diff := cmp.Diff([]string{"The reactor must be inspected yearly.", "Inspections happen in spring."}, res.Contexts); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]file.Query{{FileIDs: []string{"file_a", "file_b"}, Text: "inspection interval", Limit: 10}}, s.got); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

func TestFileSearchProblems(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		ids        []string
		s          *searcher
		isError    bool
		wantErr    bool
		text       string
	}{
		{name: "no query", args: `{}`, ids: []string{"f"}, s: &searcher{}, isError: true, text: `"query" is required`},
		{name: "blank query", args: `{"query":"  "}`, ids: []string{"f"}, s: &searcher{}, isError: true, text: `"query" is required`},
		{name: "unknown field", args: `{"query":"x","k":3}`, ids: []string{"f"}, s: &searcher{}, isError: true, text: `unknown argument "k"`},
		{name: "not a string", args: `{"query":3}`, ids: []string{"f"}, s: &searcher{}, isError: true, text: `"query" must be a string`},
		{name: "no files", args: `{"query":"x"}`, s: &searcher{}, text: builtin.NoFilesText},
		{name: "no hits", args: `{"query":"x"}`, ids: []string{"f"}, s: &searcher{}, text: "No passages"},
		{name: "store failure", args: `{"query":"x"}`, ids: []string{"f"}, s: &searcher{err: errors.New("disk gone")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := builtin.FileSearch(tc.s, tc.ids).Call(context.Background(), "u", json.RawMessage(tc.args))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if res.IsError != tc.isError || !strings.Contains(res.Text, tc.text) || len(tc.s.got) > 0 && tc.text == builtin.NoFilesText {
				t.Errorf("Call = %+v, want IsError %v and text containing %q", res, tc.isError, tc.text)
			}
		})
	}
}

// A file still being read, or one that could not be read, is not searched:
// the model is told so, not that nothing in it matches (so that it neither
// tries other words in vain nor answers that the document is silent).
func TestFileSearchTellsOfFilesNotReady(t *testing.T) {
	unready := func(context.Context, []string) ([]*file.File, error) {
		return []*file.File{
			{ID: "file_b", Name: "gdpr.pdf", Status: file.Processing, Progress: 40},
			{ID: "file_c", Name: "scan.pdf", Status: file.Failed, Error: "the PDF is encrypted"},
		}, nil
	}
	none := builtin.Files{SearchFunc: func(context.Context, file.Query) ([]file.Hit, error) { return nil, nil }, UnreadyFunc: unready}
	res, err := builtin.FileSearch(none, []string{"file_a", "file_b", "file_c"}).Call(context.Background(), "u", json.RawMessage(`{"query":"Article 6(1)"}`))
	if err != nil || res.IsError {
		t.Fatalf("Call = %+v, %v", res, err)
	}
	want := "Not searched: gdpr.pdf is still being read (processing, 40%). Tell the user to ask again once it is ready.\n" +
		"Not searched: scan.pdf could not be read (the PDF is encrypted). Tell the user, who may upload a readable copy.\n" +
		"No passages of the other files match the query.\n"
	if diff := cmp.Diff(want, res.Text); diff != "" {
		t.Errorf("text with no passages (-want +got):\n%s", diff)
	}

	some := builtin.Files{SearchFunc: func(context.Context, file.Query) ([]file.Hit, error) {
		return []file.Hit{{FileID: "file_a", FileName: "notes.txt", Page: 1, Text: "Article 6(1) applies.", Score: 0.5}}, nil
	}, UnreadyFunc: unready}
	res, err = builtin.FileSearch(some, []string{"file_a", "file_b", "file_c"}).Call(context.Background(), "u", json.RawMessage(`{"query":"Article 6(1)"}`))
	if err != nil || res.IsError {
		t.Fatalf("Call = %+v, %v", res, err)
	}
	if !strings.HasPrefix(res.Text, "File: notes.txt\n") || !strings.Contains(res.Text, "\n---\nNot searched: gdpr.pdf is still being read") ||
		len(res.Sources) != 1 || len(res.Contexts) != 1 {
		t.Errorf("result with passages and files not ready: %+v", res)
	}
}
