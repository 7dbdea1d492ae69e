package mcp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
)

// png is a PNG signature, standing in for image data.
const png = "iVBORw0KGgo="

func textBlock(s string) mcp.Block { return mcp.Block{Type: mcp.BlockText, Text: s} }

func imageBlock(mime, data string) mcp.Block {
	return mcp.Block{Type: mcp.BlockImage, Source: &mcp.ImageSource{Type: "base64", MediaType: mime, Data: data}}
}

// result decodes a tools/call result as it arrives on the wire.
func result(t *testing.T, wire string) *sdk.CallToolResult {
	t.Helper()
	var res sdk.CallToolResult
	if err := json.Unmarshal([]byte(wire), &res); err != nil {
		t.Fatalf("decode %s: %v", wire, err)
	}
	return &res
}

func TestFormat(t *testing.T) {
	const tinyText = "This is a tiny image:\n\n[image: image/png]\n\nThe image above is the MCP tiny image."
	audioJSON := `{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}`
	linkJSON := `{"type":"resource_link","mimeType":"text/plain","uri":"file:///tmp/a.txt","name":"a.txt","size":12}`

	tests := []struct {
		name string
		wire string
		// The expected output per family; Text is the same for all of them.
		text      string
		images    []mcp.Image
		blocks    []mcp.Block
		isError   bool
		textBlock bool // blocks is a single text block holding text
	}{
		{
			name:      "text parts joined with a blank line",
			wire:      `{"content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]}`,
			text:      "first\n\nsecond",
			textBlock: true,
		},
		{
			name:      "empty text parts skipped",
			wire:      `{"content":[{"type":"text","text":""},{"type":"text","text":"only"}]}`,
			text:      "only",
			textBlock: true,
		},
		{
			name: "tiny image: text, image, text",
			wire: `{"content":[{"type":"text","text":"This is a tiny image:"},` +
				`{"type":"image","data":"` + png + `","mimeType":"image/png"},` +
				`{"type":"text","text":"The image above is the MCP tiny image."}]}`,
			text:   tinyText,
			images: []mcp.Image{{MIMEType: "image/png", Data: png}},
			blocks: []mcp.Block{
				textBlock("This is a tiny image:"),
				imageBlock("image/png", png),
				textBlock("The image above is the MCP tiny image."),
			},
		},
		{
			name:   "image only",
			wire:   `{"content":[{"type":"image","data":"` + png + `","mimeType":"image/png"}]}`,
			text:   "[image: image/png]",
			images: []mcp.Image{{MIMEType: "image/png", Data: png}},
			blocks: []mcp.Block{imageBlock("image/png", png)},
		},
		{
			name:   "image/jpg is sent as image/jpeg",
			wire:   `{"content":[{"type":"image","data":"` + png + `","mimeType":"image/jpg"}]}`,
			text:   "[image: image/jpg]",
			images: []mcp.Image{{MIMEType: "image/jpeg", Data: png}},
			blocks: []mcp.Block{imageBlock("image/jpeg", png)},
		},
		{
			name:      "image type providers reject is a note",
			wire:      `{"content":[{"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"}]}`,
			text:      "[image: image/svg+xml]",
			textBlock: true,
		},
		{
			name: "embedded text resource",
			wire: `{"content":[{"type":"resource","resource":{"uri":"demo://resource/dynamic/text/2",` +
				`"mimeType":"text/plain","text":"Resource 2: This is a plaintext resource"}}]}`,
			text:      "Resource 2: This is a plaintext resource\nResource URI: demo://resource/dynamic/text/2\nResource MIME Type: text/plain",
			textBlock: true,
		},
		{
			name: "embedded resource among text",
			wire: `{"content":[{"type":"text","text":"Here is the resource:"},` +
				`{"type":"resource","resource":{"uri":"file:///notes.md","text":"# Notes"}}]}`,
			text:      "Here is the resource:\n\n# Notes\nResource URI: file:///notes.md",
			textBlock: true,
		},
		{
			name: "embedded blob resource",
			wire: `{"content":[{"type":"resource","resource":{"uri":"demo://resource/dynamic/blob/1",` +
				`"mimeType":"application/octet-stream","blob":"AAECAw=="}}]}`,
			text:      "Resource URI: demo://resource/dynamic/blob/1\nResource MIME Type: application/octet-stream\nResource Blob: 4 bytes (not shown)",
			textBlock: true,
		},
		{
			name:      "audio is its JSON",
			wire:      `{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]}`,
			text:      audioJSON,
			textBlock: true,
		},
		{
			name:      "resource link is its JSON",
			wire:      `{"content":[{"type":"resource_link","uri":"file:///tmp/a.txt","name":"a.txt","mimeType":"text/plain","size":12}]}`,
			text:      linkJSON,
			textBlock: true,
		},
		{
			name:      "empty content",
			wire:      `{"content":[]}`,
			text:      "(No response)",
			textBlock: true,
		},
		{
			name:      "no content field",
			wire:      `{}`,
			text:      "(No response)",
			textBlock: true,
		},
		{
			name:      "structured content without content",
			wire:      `{"content":[],"structuredContent":{"celsius":21.5,"city":"Utrecht"}}`,
			text:      `{"celsius":21.5,"city":"Utrecht"}`,
			textBlock: true,
		},
		{
			name:      "structured content beside content is not repeated",
			wire:      `{"content":[{"type":"text","text":"21.5 °C"}],"structuredContent":{"celsius":21.5}}`,
			text:      "21.5 °C",
			textBlock: true,
		},
		{
			name:      "isError",
			wire:      `{"content":[{"type":"text","text":"Unknown city: Atlantis"}],"isError":true}`,
			text:      "Unknown city: Atlantis",
			isError:   true,
			textBlock: true,
		},
		{
			name:      "isError without content",
			wire:      `{"content":[],"isError":true}`,
			text:      "(No response)",
			isError:   true,
			textBlock: true,
		},
		{
			name: "isError with an image",
			wire: `{"content":[{"type":"text","text":"render failed; partial output:"},` +
				`{"type":"image","data":"` + png + `","mimeType":"image/png"}],"isError":true}`,
			text:    "render failed; partial output:\n\n[image: image/png]",
			images:  []mcp.Image{{MIMEType: "image/png", Data: png}},
			blocks:  []mcp.Block{textBlock("render failed; partial output:"), imageBlock("image/png", png)},
			isError: true,
		},
	}
	for _, tt := range tests {
		res := result(t, tt.wire)
		blocks := tt.blocks
		if tt.textBlock {
			blocks = []mcp.Block{textBlock(tt.text)}
		}
		want := map[mcp.Family]mcp.Output{
			mcp.FamilyOpenAI:    {Text: tt.text, Images: tt.images, IsError: tt.isError},
			mcp.FamilyAnthropic: {Text: tt.text, Blocks: blocks, IsError: tt.isError},
			mcp.FamilyText:      {Text: tt.text, IsError: tt.isError},
		}
		for fam, want := range want {
			t.Run(fmt.Sprintf("%s/%s", tt.name, fam), func(t *testing.T) {
				got := mcp.Format(res, fam)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Format (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestFormatNilAndUnknownFamily(t *testing.T) {
	if diff := cmp.Diff(mcp.Output{Text: "(No response)"}, mcp.Format(nil, mcp.FamilyOpenAI)); diff != "" {
		t.Errorf("nil result, OpenAI (-want +got):\n%s", diff)
	}
	want := mcp.Output{Text: "(No response)", Blocks: []mcp.Block{textBlock("(No response)")}}
	if diff := cmp.Diff(want, mcp.Format(nil, mcp.FamilyAnthropic)); diff != "" {
		t.Errorf("nil result, Anthropic (-want +got):\n%s", diff)
	}
	res := &sdk.CallToolResult{Content: []sdk.Content{
		&sdk.TextContent{Text: "see"},
		&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
	}}
	want = mcp.Output{Text: "see\n\n[image: image/png]"}
	if diff := cmp.Diff(want, mcp.Format(res, mcp.Family("google-beta"))); diff != "" {
		t.Errorf("unknown family is text-only (-want +got):\n%s", diff)
	}
}

func TestFormatWireJSON(t *testing.T) {
	res := result(t, `{"content":[{"type":"text","text":"A"},{"type":"image","data":"`+png+`","mimeType":"image/png"}]}`)

	an := mcp.Format(res, mcp.FamilyAnthropic)
	b, err := json.Marshal(an.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	wantBlocks := `[{"type":"text","text":"A"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]`
	if string(b) != wantBlocks {
		t.Errorf("Anthropic blocks:\n got %s\nwant %s", b, wantBlocks)
	}

	oa := mcp.Format(res, mcp.FamilyOpenAI)
	b, err = json.Marshal(oa.Images)
	if err != nil {
		t.Fatal(err)
	}
	wantImages := `[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}}]`
	if string(b) != wantImages {
		t.Errorf("OpenAI image parts:\n got %s\nwant %s", b, wantImages)
	}
	if got := oa.Images[0].DataURL(); got != "data:image/png;base64,"+png {
		t.Errorf("DataURL = %q", got)
	}

	var back []mcp.Image
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(oa.Images, back); diff != "" {
		t.Errorf("image round trip (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`{"type":"text","text":"x"}`,
		`{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}`,
		`{"type":"image_url","image_url":{"url":"data:image/png,abc"}}`,
	} {
		var im mcp.Image
		if err := json.Unmarshal([]byte(bad), &im); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestFailureText(t *testing.T) {
	tests := []struct {
		key  string
		err  error
		want string
	}{
		{"echo__mcp__everything", errors.New("connection closed"), `"echo__mcp__everything" tool call failed: connection closed`},
		{"sleep__mcp__slow", fmt.Errorf("call: %w", errors.New("request timed out after 60000 ms")), `"sleep__mcp__slow" tool call failed: call: request timed out after 60000 ms`},
		{"x__mcp__y", nil, `"x__mcp__y" tool call failed: unknown error`},
		// A grant revoked mid-use fails the request deep in the transport:
		// the model reads what the user must do, not the layers (and URL) of
		// the request.
		{"subject__mcp__tickets", fmt.Errorf(`calling "tools/call": %w`, fmt.Errorf(`sending "tools/call": rejected by transport: %w`,
			&url.Error{Op: "Post", URL: "http://10.0.0.7:8080/mcp", Err: &mcp.AuthRequiredError{Server: "tickets", Reason: "the grant was revoked"}})),
			`"subject__mcp__tickets" tool call failed: MCP server "tickets" needs you to connect your account: the grant was revoked (connect it on the Connections page, or with ` + "`relay mcp auth tickets`)"},
	}
	for _, tt := range tests {
		if got := mcp.FailureText(tt.key, tt.err); got != tt.want {
			t.Errorf("FailureText(%q, %v) = %q, want %q", tt.key, tt.err, got, tt.want)
		}
	}
}

// Chunks keeps each passage of a result apart, text parts and embedded text
// resources alike, where Format joins them for the model.
func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		name, wire string
		want       []string
	}{
		{"passages", `{"content":[{"type":"text","text":"First passage.\n\nStill the first."},{"type":"text","text":"Second passage."}]}`,
			[]string{"First passage.\n\nStill the first.", "Second passage."}},
		{"resource and image", `{"content":[{"type":"image","data":"` + png + `","mimeType":"image/png"},` +
			`{"type":"resource","resource":{"uri":"doc://1","mimeType":"text/plain","text":"From the resource."}},` +
			`{"type":"resource","resource":{"uri":"doc://2","blob":"AAEC"}},{"type":"text","text":"  "}]}`,
			[]string{"From the resource."}},
		{"nothing", `{"content":[]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mcp.Chunks(result(t, tc.wire))); diff != "" {
				t.Errorf("Chunks (-want +got):\n%s", diff)
			}
		})
	}
	if got := mcp.Chunks(nil); got != nil {
		t.Errorf("Chunks(nil) = %q", got)
	}
}
