package run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/relay-ai/relay/internal/llm"
)

// SentBody is the body a run would send to the agent's provider for req: the
// provider client's own — its format, the stream parameters, the endpoint's
// addParams and dropParams — when models gives a client that can show it
// (llm.Bodier), for user userID. Otherwise it is the provider-neutral request, with a warning
// saying why when the provider's client could not be made.
func SentBody(ctx context.Context, models Models, userID, provider string, req *llm.Request) (body json.RawMessage, warning string, err error) {
	if models != nil {
		m, _, err := models(ctx, userID, provider, req.Model)
		if err == nil {
			if b, ok := m.(llm.Bodier); ok {
				body, err := b.Body(req)
				if err != nil {
					return nil, "", fmt.Errorf("writing the %s request body: %w", provider, err)
				}
				return body, "", nil
			}
		} else {
			warning = fmt.Sprintf("provider %q: %v; the body shown is Relay's own, before the provider's format and its endpoint's addParams and dropParams", provider, err)
		}
	}
	body, err = json.Marshal(req)
	if err != nil {
		return nil, "", fmt.Errorf("writing the request body: %w", err)
	}
	return body, warning, nil
}
