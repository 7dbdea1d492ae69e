package file

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/redact"
)

// RAGAPI is a client of a LibreChat-compatible RAG API, which chunks, embeds
// and searches files itself: POST /embed takes a file (multipart, fields
// file_id and file), POST /query answers {file_id, query, k} with
// [[{page_content, metadata: {page}}, distance], …] (cosine distance, lower is
// nearer), DELETE /documents takes a JSON list of file ids.
type RAGAPI struct {
	// URL is the API's base, e.g. http://rag_api:8000.
	URL string
	// Token, when set, is sent as a bearer token. It is never logged.
	Token string
	// Client is the HTTP client; nil means one with a 60-second timeout.
	Client *http.Client
	// Sleep waits for d or until ctx ends, between the tries of an /embed;
	// nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (a *RAGAPI) client() *http.Client {
	if a.Client != nil {
		return a.Client
	}
	return defaultClient
}

// do sends one request and decodes its answer into out (unless nil).
func (a *RAGAPI) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	_, err := a.send(ctx, method, path, contentType, body, out)
	return err
}

// send is do that also says, on failure, whether to try again (the wait of
// patiently): after a failed connection, a rate limit or a passing 5xx.
func (a *RAGAPI) send(ctx context.Context, method, path, contentType string, body []byte, out any) (time.Duration, error) {
	endpoint := strings.TrimRight(a.URL, "/") + path
	url := redact.URL(endpoint, true) // for errors: no user info or query
	req, err := http.NewRequestWithContext(ctx, method, endpoint, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("RAG API %s: %w", path, err)
	}
	req.Header.Set("Content-Type", contentType)
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	resp, err := a.client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("RAG API %s: %w", url, withoutURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("RAG API %s: %s: %s", url, resp.Status, snippet(resp.Body, a.Token))
		return retryWait(resp.StatusCode, resp.Header.Get("Retry-After")), err
	}
	if out == nil {
		return 0, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return -1, fmt.Errorf("RAG API %s: reading the answer: %w", url, err)
	}
	return 0, nil
}

// Embed sends a file's contents to be chunked and embedded under its id. It
// is part of an ingestion, a long job that one passing refusal should not
// fail, and tries as OpenAIEmbedder.EmbedPatiently does: up to three times in
// all, again after a rate limit (429), a 5xx or a failed connection, after
// the wait the API asks for (Retry-After, at most a minute), else after 1 s,
// then 2 s; never after another refusal, nor once ctx has ended.
func (a *RAGAPI) Embed(ctx context.Context, id, name, mimeType string, data []byte) error {
	var body bytes.Buffer
	body.Grow(len(data) + 1024)
	w := multipart.NewWriter(&body)
	if err := w.WriteField("file_id", id); err != nil {
		return err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", mimeType)
	part, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := part.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	var out struct {
		Status  bool   `json:"status"`
		Message string `json:"message"`
	}
	err = patiently(ctx, embedTries, a.Sleep, func() (time.Duration, error) {
		out.Status, out.Message = false, ""
		return a.send(ctx, http.MethodPost, "/embed", w.FormDataContentType(), body.Bytes(), &out)
	})
	if err != nil {
		return err
	}
	if !out.Status {
		return fmt.Errorf("RAG API /embed: the file was not embedded: %s", cmp.Or(out.Message, "no reason given"))
	}
	return nil
}

type ragQuery struct {
	FileID string `json:"file_id"`
	Query  string `json:"query"`
	K      int    `json:"k"`
}

// ragResult is one [document, distance] pair of a /query answer.
type ragResult struct {
	Content  string
	Page     int
	Distance float64
}

func (r *ragResult) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("expected a [document, score] pair, got %.60s", b)
	}
	var doc struct {
		PageContent string `json:"page_content"`
		Metadata    struct {
			Page *float64 `json:"page"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(pair[0], &doc); err != nil {
		return fmt.Errorf("document: %w", err)
	}
	if err := json.Unmarshal(pair[1], &r.Distance); err != nil {
		return fmt.Errorf("score: %w", err)
	}
	r.Content, r.Page = doc.PageContent, 1
	if doc.Metadata.Page != nil {
		// Loaders number pages from 0.
		r.Page = int(*doc.Metadata.Page) + 1
	}
	return nil
}

// Query asks for the passages of each of q's files (at once) and merges them,
// nearest first, with a relevance of 1 - distance.
func (a *RAGAPI) Query(ctx context.Context, q Query) ([]Hit, error) {
	k := q.PerFile
	if k <= 0 {
		k = q.Limit
	}
	var (
		mu   sync.Mutex
		hits []Hit
		errs = make([]error, len(q.FileIDs))
		wg   sync.WaitGroup
	)
	for i, id := range q.FileIDs {
		wg.Go(func() {
			body, _ := json.Marshal(ragQuery{FileID: id, Query: q.Text, K: k})
			var out []ragResult
			if err := a.do(ctx, http.MethodPost, "/query", "application/json", body, &out); err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for idx, r := range out {
				hits = append(hits, Hit{FileID: id, Chunk: idx, Page: r.Page, Text: r.Content, Score: clip(1 - r.Distance)})
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.FileID, b.FileID)
	})
	return hits[:min(len(hits), q.Limit)], nil
}

func clip(s float64) float64 { return min(max(s, 0), 1) }

// Delete removes the files' vectors from the API.
func (a *RAGAPI) Delete(ctx context.Context, ids []string) error {
	body, _ := json.Marshal(ids)
	return a.do(ctx, http.MethodDelete, "/documents", "application/json", body, nil)
}
