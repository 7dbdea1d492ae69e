package app

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
)

const pngPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// Images sent by a client reach the provider as image parts of the user's
// message: through /api/chat's images and through /v1's image_url data: URLs;
// a URL to fetch is refused with a readable error.
func TestImagesReachTheModel(t *testing.T) {
	up := startUpstream(t, func(_ upstreamRequest, s *llmtest.SSE) { streamText(s, "A single pixel.") })
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: vision
      baseURL: %s/v1
agents:
  - id: eye
    provider: vision
    model: gpt-4o
`, filepath.Join(dir, "data"), up.URL))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	wantPart := map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + pngPixel}}
	check := func(how string) {
		t.Helper()
		reqs := up.requests()
		msgs := reqs[len(reqs)-1].Messages
		parts, _ := msgs[len(msgs)-1].Content.([]any)
		if len(parts) != 2 || fmt.Sprint(parts[0]) != fmt.Sprint(map[string]any{"type": "text", "text": "What is this?"}) || fmt.Sprint(parts[1]) != fmt.Sprint(wantPart) {
			t.Errorf("%s: the provider got user content %v", how, msgs[len(msgs)-1].Content)
		}
	}

	resp := s.post(t, "/api/chat", `{"agent_id":"eye","text":"What is this?","images":[{"mime_type":"image/png","data":"`+pngPixel+`"}]}`, nil)
	evs := readSSE(t, resp, nil)
	resp.Body.Close()
	if last := evs[len(evs)-1]; last.Type != "run.finished" || last.Data["status"] != "succeeded" {
		t.Fatalf("last event %+v", last)
	}
	check("/api/chat")

	body := `{"model":"eye","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pngPixel + `"}}]}]}`
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if code := s.call(t, testKey, "POST", "/v1/chat/completions", body, &out); code != 200 || len(out.Choices) != 1 || out.Choices[0].Message.Content != "A single pixel." {
		t.Fatalf("/v1/chat/completions: %d %+v", code, out)
	}
	check("/v1/chat/completions")

	var refused map[string]any
	fetch := `{"model":"eye","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`
	if code := s.call(t, testKey, "POST", "/v1/chat/completions", fetch, &refused); code != 400 {
		t.Errorf("an image URL to fetch: %d, want 400", code)
	}
	if b, _ := json.Marshal(refused); !strings.Contains(string(b), "data: URL") {
		t.Errorf("refusal %s does not say what to send", b)
	}
	var bad map[string]any
	if code := s.call(t, testKey, "POST", "/api/chat", `{"agent_id":"eye","text":"x","images":[{"mime_type":"image/tiff","data":"AAAA"}]}`, &bad); code != 400 {
		t.Errorf("a TIFF image: %d %v, want 400", code, bad)
	}
}
