package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/redact"
)

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// patientEmbedder is an Embedder that can also try again after a passing
// failure, which an ingestion prefers (OpenAIEmbedder.EmbedPatiently).
type patientEmbedder interface {
	EmbedPatiently(ctx context.Context, texts []string) ([][]float32, error)
}

// OpenAIEmbedder is an Embedder over an OpenAI-compatible /embeddings endpoint
// (OpenAI, Azure, Ollama, vLLM, LM Studio, …).
type OpenAIEmbedder struct {
	// BaseURL is the API's base, e.g. https://api.openai.com/v1; /embeddings is
	// appended.
	BaseURL string
	// APIKey is sent as a bearer token when set. It is never logged and never
	// part of an error.
	APIKey string
	Model  string
	// Dimensions, when above 0, asks models that can shorten their vectors for
	// that many.
	Dimensions int
	// Client is the HTTP client; nil means one with a 60-second timeout.
	Client *http.Client
	// Sleep waits for d or until ctx ends, between tries; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

type embeddingRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embeddingResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

var defaultClient = &http.Client{Timeout: 60 * time.Second}

// Retries of a request an ingestion makes (to the embeddings endpoint, or
// the RAG API's /embed): an ingestion sends one embeddings request per 64
// chunks, so a large file sends many, and a provider's rate limit (429) or a
// passing 5xx on any of them would otherwise fail the whole file for good.
const (
	embedTries = 3
	embedBase  = time.Second
	// embedMaxWait bounds one wait; an endpoint asking (Retry-After) for
	// longer is not waited for: the file fails, saying why.
	embedMaxWait = time.Minute
)

// patiently calls send up to tries times, until it succeeds, ctx ends, or
// send says not to try again: send's wait is below 0 for never, 0 for after
// the backoff (1 s, then 2 s, …), above 0 for after that long (Retry-After).
// sleep waits between tries (nil: a timer); it returns send's last error.
func patiently(ctx context.Context, tries int, sleep func(context.Context, time.Duration) error, send func() (time.Duration, error)) error {
	if sleep == nil {
		sleep = sleepCtx
	}
	for try := 1; ; try++ {
		wait, err := send()
		if err == nil || wait < 0 || try >= tries || ctx.Err() != nil {
			return err
		}
		if wait == 0 {
			wait = embedBase << (try - 1)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return err
		}
	}
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryWait is, for patiently, when a request answered status with the
// Retry-After header h may be sent again: after a rate limit (429), a
// timeout (408) or a passing 5xx, and never after any other refusal.
func retryWait(status int, h string) time.Duration {
	switch status {
	case http.StatusTooManyRequests, http.StatusRequestTimeout, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retryAfter(h)
	}
	return -1
}

// Embed asks the endpoint for the vectors of texts, once: a search, which
// someone waits for, falls back to full text at once should it fail.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedTries(ctx, texts, 1)
}

// EmbedPatiently is Embed for an ingestion, a long job that one passing
// refusal should not fail: it tries again, up to three times in all, after a
// rate limit (429), a 5xx or a failed connection, after the wait the endpoint
// asks for (Retry-After, at most a minute), else after 1 s, then 2 s.
func (e *OpenAIEmbedder) EmbedPatiently(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedTries(ctx, texts, embedTries)
}

// embedTries asks the endpoint for the vectors of texts, up to tries times.
func (e *OpenAIEmbedder) embedTries(ctx context.Context, texts []string, tries int) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(embeddingRequest{Model: e.Model, Input: texts, Dimensions: e.Dimensions})
	if err != nil {
		return nil, fmt.Errorf("embeddings request: %w", err)
	}
	var vecs [][]float32
	err = patiently(ctx, tries, e.Sleep, func() (time.Duration, error) {
		v, wait, err := e.embed(ctx, body, len(texts))
		vecs = v
		return wait, err
	})
	if err != nil {
		return nil, err
	}
	return vecs, nil
}

// embed sends one request. On failure wait says whether to try again: below
// 0 not, 0 after the backoff, above 0 after that long (Retry-After).
func (e *OpenAIEmbedder) embed(ctx context.Context, body []byte, n int) ([][]float32, time.Duration, error) {
	endpoint := strings.TrimRight(e.BaseURL, "/") + "/embeddings"
	// Errors name the endpoint without its user info or query, which may
	// hold credentials: a file's error, which its owner reads, says it.
	url := redact.URL(endpoint, true)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, -1, fmt.Errorf("embeddings request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	client := e.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("embeddings endpoint %s: %w", url, withoutURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("embeddings endpoint %s: %s: %s", url, resp.Status, snippet(resp.Body, e.APIKey))
		return nil, retryWait(resp.StatusCode, resp.Header.Get("Retry-After")), err
	}
	var out embeddingResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, -1, fmt.Errorf("embeddings endpoint %s: reading the answer: %w", url, err)
	}
	vecs := make([][]float32, n)
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= n || len(d.Embedding) == 0 {
			return nil, -1, fmt.Errorf("embeddings endpoint %s: answered an embedding for input %d of %d", url, d.Index, n)
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, -1, fmt.Errorf("embeddings endpoint %s: no embedding for input %d of %d", url, i, n)
		}
	}
	return vecs, 0, nil
}

// retryAfter is the wait a Retry-After header of whole seconds asks for: 0
// when there is none (the backoff then), below 0 when it is over
// embedMaxWait.
func retryAfter(h string) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(h))
	switch {
	case err != nil || secs < 0:
		return 0
	case time.Duration(secs)*time.Second > embedMaxWait:
		return -1
	}
	return time.Duration(secs) * time.Second
}

// withoutURL is err of an HTTP client without the request's URL, which
// *url.Error writes in full but for its password.
func withoutURL(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// snippet is the start of an error answer, for messages, with secret removed
// in case the server echoed it.
func snippet(r io.Reader, secret string) string {
	b, _ := io.ReadAll(io.LimitReader(r, 300))
	s := strings.TrimSpace(string(b))
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "****")
	}
	return s
}
