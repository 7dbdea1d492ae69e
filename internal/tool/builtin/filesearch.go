package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/tool"
)

// FileSearchName is the name the model calls file_search by.
const FileSearchName = "file_search"

// NoFilesText is what a file_search call with no file to search answers, as
// LibreChat's file_search does (docs/config.md "rag").
const NoFilesText = "No files to search. Instruct the user to add files for the search."

// FileSearchLimit is how many passages one file_search call returns at most.
const FileSearchLimit = 10

// FileAnchor returns the citation anchor of the i-th passage of a file_search
// result: the six characters `\ue202` (a backslash escape written out, as the
// agents' instructions quote it), then turn0file<i>.
func FileAnchor(i int) string { return `\ue202turn0file` + strconv.Itoa(i) }

// Searcher finds the passages of files that best answer a query.
type Searcher interface {
	Search(ctx context.Context, q file.Query) ([]file.Hit, error)
}

// SearchFunc is a function that searches files, as a Searcher.
type SearchFunc func(ctx context.Context, q file.Query) ([]file.Hit, error)

// Search calls f.
func (f SearchFunc) Search(ctx context.Context, q file.Query) ([]file.Hit, error) { return f(ctx, q) }

// UnreadyLister names, of the files ids, those that a search leaves out for
// not being ready: pending, processing or failed. When file_search's Searcher
// is one too, a call tells the model about them, so that it does not take
// a file still being read, or one that could not be read, for a file that
// does not say what was asked.
type UnreadyLister interface {
	Unready(ctx context.Context, ids []string) ([]*file.File, error)
}

// Files is a Searcher and UnreadyLister made of two functions; with Unready
// nil it lists none.
type Files struct {
	SearchFunc  SearchFunc
	UnreadyFunc func(ctx context.Context, ids []string) ([]*file.File, error)
}

// Search calls f.SearchFunc.
func (f Files) Search(ctx context.Context, q file.Query) ([]file.Hit, error) {
	return f.SearchFunc(ctx, q)
}

// Unready calls f.UnreadyFunc, if any.
func (f Files) Unready(ctx context.Context, ids []string) ([]*file.File, error) {
	if f.UnreadyFunc == nil {
		return nil, nil
	}
	return f.UnreadyFunc(ctx, ids)
}

// FileSearch returns the file_search tool over the given files (the agent's
// own and the conversation's attachments, already checked as readable by the
// run's user). Each call returns the 10 best passages as text blocks with the
// file's name, page, relevance and citation anchor, and lists them as sources
// and, passage by passage, as the result's contexts.
func FileSearch(s Searcher, fileIDs []string) tool.Tool {
	return fileSearch{s: s, ids: fileIDs}
}

type fileSearch struct {
	s   Searcher
	ids []string
}

func (fileSearch) Name() string { return FileSearchName }

const fileSearchUsage = `{"query": "<what to look for>"}`

func (t fileSearch) Call(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Query *string `json:"query"`
	}
	if err := decodeArgs(args, &in, fileSearchUsage); err != nil {
		return tool.Errorf("Invalid arguments for %s: %v.", FileSearchName, err), nil
	}
	if in.Query == nil || strings.TrimSpace(*in.Query) == "" {
		return tool.Errorf("Invalid arguments for %s: %q is required and must not be empty; send %s.", FileSearchName, "query", fileSearchUsage), nil
	}
	if len(t.ids) == 0 {
		return tool.Text(NoFilesText), nil
	}
	hits, err := t.s.Search(ctx, file.Query{FileIDs: t.ids, Text: *in.Query, Limit: FileSearchLimit})
	if err != nil {
		return tool.Result{}, fmt.Errorf("searching files: %w", err)
	}
	unready, n, err := t.unready(ctx)
	if err != nil {
		return tool.Result{}, fmt.Errorf("searching files: %w", err)
	}
	if len(hits) == 0 {
		if n == 0 {
			return tool.Text("No passages of the files match the query. Try other words."), nil
		}
		if len(t.ids) > n {
			unready += "No passages of the other files match the query.\n"
		}
		return tool.Text(unready), nil
	}
	var b strings.Builder
	res := tool.Result{Sources: make([]tool.Source, 0, len(hits)), Contexts: make([]string, 0, len(hits))}
	for i, h := range hits {
		if i > 0 {
			b.WriteString("\n---\n")
		}
		anchor := FileAnchor(i)
		passage := strings.TrimSpace(h.Text)
		fmt.Fprintf(&b, "File: %s\nPage: %d\nRelevance: %.4f\nAnchor: %s\nContent: %s\n", h.FileName, h.Page, h.Score, anchor, passage)
		res.Contexts = append(res.Contexts, passage)
		res.Sources = append(res.Sources, tool.Source{
			Kind: tool.SourceFile, Anchor: anchor, FileID: h.FileID, FileName: h.FileName,
			Page: h.Page, Relevance: h.Score, Snippet: snippet(h.Text, 200),
		})
	}
	if unready != "" {
		b.WriteString("\n---\n")
		b.WriteString(unready)
	}
	res.Text = b.String()
	return res, nil
}

// unready says, one line each, which of the files were not searched and why,
// and how many they are; "" when every file was.
func (t fileSearch) unready(ctx context.Context) (string, int, error) {
	l, ok := t.s.(UnreadyLister)
	if !ok {
		return "", 0, nil
	}
	fs, err := l.Unready(ctx, t.ids)
	if err != nil || len(fs) == 0 {
		return "", 0, err
	}
	var b strings.Builder
	for _, f := range fs {
		switch f.Status {
		case file.Failed:
			fmt.Fprintf(&b, "Not searched: %s could not be read (%s). Tell the user, who may upload a readable copy.\n", f.Name, f.Error)
		default:
			fmt.Fprintf(&b, "Not searched: %s is still being read (%s, %d%%). Tell the user to ask again once it is ready.\n", f.Name, f.Status, f.Progress)
		}
	}
	return b.String(), len(fs), nil
}

// snippet returns the start of s, whitespace collapsed, cut at a word and at
// most n characters long, with an ellipsis when cut.
func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}
