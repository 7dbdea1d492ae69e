package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
)

var _ llm.Lister = (*Client)(nil)

// listTimeout bounds a request for the endpoint's models, and maxListBytes
// what is read of its answer.
const (
	listTimeout  = 10 * time.Second
	maxListBytes = 8 << 20
)

// ListModels asks the endpoint for the models it serves (GET {baseURL}/models,
// OpenAI's list: {"data":[{"id":…},…]}) and returns their ids, sorted, each
// once. It is tried once; errors name the endpoint's host, never its key.
// An Azure deployment has no such list: ListModels fails for it.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	if c.opts.Azure != nil {
		return nil, fmt.Errorf("%s: Azure OpenAI deployments are listed in the config, not fetched", c.host)
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", c.host, c.redact(err.Error()))
	}
	for k, v := range provider.RequestHeader(ctx, c.ep.Header) { // no conversation: its placeholders are sent empty
		if k != "Content-Type" {
			req.Header[k] = v
		}
	}
	resp, err := c.ep.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing the models of %s: %s", c.host, c.redact(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListBytes))
	if err != nil {
		return nil, fmt.Errorf("listing the models of %s: %s", c.host, c.redact(err.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing the models of %s: HTTP %d", c.host, resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("listing the models of %s: the answer is not OpenAI's list of models: %v", c.host, err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
