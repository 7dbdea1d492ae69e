package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/openai"
)

// ListModels reads the endpoint's list of models with the client's key and
// headers, sorted and each once; an error answer names the status, never the key.
func TestListModels(t *testing.T) {
	var auth, extra string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		auth, extra = r.Header.Get("Authorization"), r.Header.Get("X-Team")
		if auth != "Bearer sk-good-key" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"bad key sk-wrong-key"}}`))
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"b-model","object":"model"},{"id":"a-model"},{"id":"b-model"},{"id":""}]}`))
	}))
	defer srv.Close()

	c := openai.New(openai.Options{BaseURL: srv.URL + "/v1/", APIKey: "sk-good-key", Headers: map[string]string{"X-Team": "blue"}})
	ids, err := c.ListModels(context.Background())
	if err != nil || !slices.Equal(ids, []string{"a-model", "b-model"}) {
		t.Fatalf("ListModels = %v, %v", ids, err)
	}
	if extra != "blue" {
		t.Errorf("the endpoint's header was not sent: X-Team %q", extra)
	}

	bad := openai.New(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-wrong-key"})
	_, err = bad.ListModels(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "sk-wrong-key") {
		t.Errorf("a refused list: %v; want HTTP 401 without the key", err)
	}
	notList := openai.New(openai.Options{BaseURL: srv.URL + "/nothing", APIKey: "sk-good-key"})
	if _, err := notList.ListModels(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("an endpoint without a list: %v", err)
	}
}
