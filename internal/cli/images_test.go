package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// An image the model makes (here Gemini's inlineData) comes back from /v1 as
// an image_url part with a data: URL: in the answer's message.images, and in a
// streamed chunk's delta.images.
func TestV1AnswersCarryTheModelsImages(t *testing.T) {
	gemini := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"candidates":[{"content":{"parts":[{"text":"A dot:"},{"inlineData":{"mimeType":"image/png","data":"`+pngPixel+`"}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8}}`+"\n\n")
	})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  google:
    apiKey: test-key
    baseURL: %s
agents:
  - id: painter
    provider: google
    model: gemini-2.5-flash-image
`, filepath.Join(dir, "data"), gemini.URL))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	wantURL := "data:image/png;base64," + pngPixel

	var out struct {
		Choices []struct {
			Message struct {
				Content string
				Images  []struct {
					Type     string `json:"type"`
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				}
			}
		}
	}
	body := `{"model":"painter","messages":[{"role":"user","content":"Draw a dot"}]}`
	if code := s.call(t, testKey, "POST", "/v1/chat/completions", body, &out); code != 200 || len(out.Choices) != 1 {
		t.Fatalf("/v1/chat/completions: %d %+v", code, out)
	}
	m := out.Choices[0].Message
	if m.Content != "A dot:" || len(m.Images) != 1 || m.Images[0].Type != "image_url" || m.Images[0].ImageURL.URL != wantURL {
		t.Errorf("answer %+v; want the text and the image as a data: URL", m)
	}

	resp := s.post(t, "/v1/chat/completions", `{"model":"painter","stream":true,"messages":[{"role":"user","content":"Draw a dot"}]}`, nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Images []struct {
						ImageURL struct {
							URL string `json:"url"`
						} `json:"image_url"`
					}
				}
			}
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, c := range chunk.Choices {
			for _, im := range c.Delta.Images {
				images = append(images, im.ImageURL.URL)
			}
		}
	}
	if len(images) != 1 || images[0] != wantURL {
		t.Errorf("streamed images %v; want the one image as a data: URL\n%s", images, raw)
	}
}
