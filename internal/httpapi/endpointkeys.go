package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// EndpointKeys keeps each user's own values of the endpoint fields that say
// user_provided, an API key or a base URL (docs/api.md, "Endpoint keys"). It
// never gives a value back: only which fields are set and when.
type EndpointKeys interface {
	// List returns, for the user, every endpoint that takes a value of theirs.
	List(ctx context.Context, userID string) ([]EndpointKey, error)
	// Set stores the user's values of an endpoint's fields ("apiKey",
	// "baseURL"); an empty value removes that one. A field the endpoint does
	// not take from users, and a base URL Relay would not connect to, are
	// invalid. It returns the endpoint's fields as they now are.
	Set(ctx context.Context, userID, endpoint string, values map[string]string) (EndpointKey, error)
	// Clear removes every value of the user's for the endpoint.
	Clear(ctx context.Context, userID, endpoint string) error
}

// EndpointKey is an endpoint that takes values from each user, and which of
// them the user has set.
type EndpointKey struct {
	// Endpoint is the endpoint's name, as agents name their provider.
	Endpoint string             `json:"endpoint"`
	Fields   []EndpointKeyField `json:"fields"`
}

// EndpointKeyField is one field the user supplies: whether they have, and
// when they last changed it (null when unset).
type EndpointKeyField struct {
	Name      string     `json:"name"`
	Set       bool       `json:"set"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// endpointKeys is Options.EndpointKeys, or an error when there is none.
func (s *Server) endpointKeys() (EndpointKeys, error) {
	if s.opts.EndpointKeys == nil {
		return nil, fault.New(fault.Unavailable, "per-user endpoint keys are not available on this server")
	}
	return s.opts.EndpointKeys, nil
}

func (s *Server) listEndpointKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.endpointKeys()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := keys.List(r.Context(), userFrom(r.Context()).ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []EndpointKey{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list})
}

// putEndpointKeyRequest is the body of PUT /api/endpoints/{name}/key: the
// fields to set; absent ones are left as they are.
type putEndpointKeyRequest struct {
	APIKey  *string `json:"apiKey"`
	BaseURL *string `json:"baseURL"`
}

func (s *Server) putEndpointKey(w http.ResponseWriter, r *http.Request) {
	keys, err := s.endpointKeys()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req putEndpointKeyRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	values := map[string]string{}
	if req.APIKey != nil {
		values["apiKey"] = *req.APIKey
	}
	if req.BaseURL != nil {
		values["baseURL"] = *req.BaseURL
	}
	k, err := keys.Set(r.Context(), userFrom(r.Context()).ID, r.PathValue("name"), values)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

func (s *Server) deleteEndpointKey(w http.ResponseWriter, r *http.Request) {
	keys, err := s.endpointKeys()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := keys.Clear(r.Context(), userFrom(r.Context()).ID, r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
