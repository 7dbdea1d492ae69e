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
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/redact"
)

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
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

// Embed asks the endpoint for the vectors of texts.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(embeddingRequest{Model: e.Model, Input: texts, Dimensions: e.Dimensions})
	if err != nil {
		return nil, fmt.Errorf("embeddings request: %w", err)
	}
	endpoint := strings.TrimRight(e.BaseURL, "/") + "/embeddings"
	// Errors name the endpoint without its user info or query, which may
	// hold credentials: a file's error, which its owner reads, says it.
	url := redact.URL(endpoint, true)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings request: %w", err)
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
		return nil, fmt.Errorf("embeddings endpoint %s: %w", url, withoutURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings endpoint %s: %s: %s", url, resp.Status, snippet(resp.Body, e.APIKey))
	}
	var out embeddingResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: reading the answer: %w", url, err)
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings endpoint %s: answered an embedding for input %d of %d", url, d.Index, len(texts))
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("embeddings endpoint %s: no embedding for input %d of %d", url, i, len(texts))
		}
	}
	return vecs, nil
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
