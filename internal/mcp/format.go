package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Family says how a provider takes tool results, which decides where images go.
type Family string

// The provider families of docs/mcp.md "Results".
const (
	// FamilyOpenAI is OpenAI-compatible chat completions (also used for Google
	// for now): the tool message holds text only, and images follow in a user
	// message as image_url parts.
	FamilyOpenAI Family = "openai"
	// FamilyAnthropic puts text and images inside the tool_result block and
	// marks failures with is_error.
	FamilyAnthropic Family = "anthropic"
	// FamilyText is a text-only model: images become "[image: <mime>]" notes.
	FamilyText Family = "text"
)

// NoResponse is the text the model sees when a tool returns no content.
const NoResponse = "(No response)"

// Output is a tool result prepared for one provider family.
type Output struct {
	// Text is the text-only rendering, filled for every family: text parts and
	// the other parts' renderings joined with a blank line, images as
	// "[image: <mime>]" notes. For FamilyOpenAI and FamilyText it is the content
	// of the tool message; for FamilyAnthropic it is for logs and the CLI.
	Text string
	// Blocks, for FamilyAnthropic only, are the ordered content blocks of the
	// tool_result.
	Blocks []Block
	// Images, for FamilyOpenAI only, go as image_url parts in a user message
	// that follows the tool message.
	Images []Image
	// IsError is the result's isError. FamilyAnthropic sends it as the
	// tool_result's is_error; the other families show the text as is.
	IsError bool
}

// Block is one content block inside an Anthropic tool_result; it marshals to
// the Messages API wire format: {"type":"text","text":…} or
// {"type":"image","source":{"type":"base64","media_type":…,"data":…}}.
type Block struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *ImageSource `json:"source,omitempty"`
}

// Block types.
const (
	BlockText  = "text"
	BlockImage = "image"
)

// ImageSource is the source of an Anthropic image block.
type ImageSource struct {
	Type      string `json:"type"` // always "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// Image is an image returned by a tool. It marshals to an OpenAI chat
// completions content part, {"type":"image_url","image_url":{"url":"data:…"}},
// and unmarshals from one.
type Image struct {
	MIMEType string
	Data     string // base64, standard encoding
}

// DataURL returns the image as a data URL: "data:<mime>;base64,<data>".
func (im Image) DataURL() string {
	return "data:" + im.MIMEType + ";base64," + im.Data
}

type imageURLPart struct {
	Type     string `json:"type"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// MarshalJSON writes the image as an OpenAI image_url content part.
func (im Image) MarshalJSON() ([]byte, error) {
	var p imageURLPart
	p.Type = "image_url"
	p.ImageURL.URL = im.DataURL()
	return json.Marshal(p)
}

// UnmarshalJSON reads an OpenAI image_url content part holding a base64 data
// URL.
func (im *Image) UnmarshalJSON(data []byte) error {
	var p imageURLPart
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Type != "image_url" {
		return fmt.Errorf("image part: type %q, want %q", p.Type, "image_url")
	}
	rest, ok := strings.CutPrefix(p.ImageURL.URL, "data:")
	if !ok {
		return errors.New("image part: url is not a data URL")
	}
	mime, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return errors.New("image part: data URL is not base64")
	}
	*im = Image{MIMEType: mime, Data: b64}
	return nil
}

// providerImage returns the MIME type under which OpenAI-compatible and
// Anthropic models accept an image of type mime, and false for types they
// reject; such images would make the whole request fail, so they are shown as
// notes instead.
func providerImage(mime string) (string, bool) {
	switch m := strings.ToLower(strings.TrimSpace(mime)); m {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return m, true
	case "image/jpg":
		return "image/jpeg", true
	}
	return "", false
}

// Format turns an MCP tools/call result into what the model of family fam sees
// (docs/mcp.md "Results"):
//   - text parts are joined with a blank line (empty ones are skipped);
//   - images go where fam takes them (see [Output]); an image of a type
//     providers do not accept, or any image for FamilyText, is a
//     "[image: <mime>]" note;
//   - an embedded resource is its text, then "Resource URI: <uri>" and
//     "Resource MIME Type: <mime>" lines; a binary (blob) resource has no text
//     but a "Resource Blob: <n> bytes (not shown)" line;
//   - audio, resource links and any other part are their JSON;
//   - structuredContent, when there is no content, is its JSON;
//   - no content at all is "(No response)".
//
// An unknown family is treated as FamilyText. A nil result is "(No response)".
func Format(res *sdk.CallToolResult, fam Family) Output {
	if res == nil {
		return Output{Text: NoResponse, Blocks: blocksFor(fam, []Block{{Type: BlockText, Text: NoResponse}})}
	}
	switch fam {
	case FamilyOpenAI, FamilyAnthropic:
	default:
		fam = FamilyText
	}
	out := Output{IsError: res.IsError}
	var texts []string   // the text-only rendering, piece by piece
	var pending []string // text not yet put into an Anthropic block
	flush := func() {
		if len(pending) > 0 {
			out.Blocks = append(out.Blocks, Block{Type: BlockText, Text: strings.Join(pending, "\n\n")})
			pending = nil
		}
	}
	addText := func(s string) {
		if s == "" {
			return
		}
		texts = append(texts, s)
		pending = append(pending, s)
	}

	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			addText(c.Text)
		case *sdk.ImageContent:
			note := "[image]"
			if c.MIMEType != "" {
				note = "[image: " + c.MIMEType + "]"
			}
			mime, ok := providerImage(c.MIMEType)
			if fam == FamilyText || !ok || len(c.Data) == 0 {
				addText(note)
				continue
			}
			data := base64.StdEncoding.EncodeToString(c.Data)
			texts = append(texts, note)
			if fam == FamilyOpenAI {
				out.Images = append(out.Images, Image{MIMEType: mime, Data: data})
				continue
			}
			flush()
			out.Blocks = append(out.Blocks, Block{Type: BlockImage, Source: &ImageSource{
				Type: "base64", MediaType: mime, Data: data,
			}})
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				addText(marshalText(c))
				continue
			}
			addText(resourceText(c.Resource))
		default:
			addText(marshalText(c))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		addText(marshalText(res.StructuredContent))
	}

	if len(texts) == 0 {
		addText(NoResponse)
	}
	flush()
	out.Text = strings.Join(texts, "\n\n")
	out.Blocks = blocksFor(fam, out.Blocks)
	return out
}

// blocksFor keeps blocks only for the family that uses them.
func blocksFor(fam Family, blocks []Block) []Block {
	if fam != FamilyAnthropic {
		return nil
	}
	return blocks
}

// resourceText renders an embedded resource: its text (if any), its URI and
// MIME type, and for binary contents their size.
func resourceText(r *sdk.ResourceContents) string {
	var lines []string
	if r.Text != "" {
		lines = append(lines, r.Text)
	}
	if r.URI != "" {
		lines = append(lines, "Resource URI: "+r.URI)
	}
	if r.MIMEType != "" {
		lines = append(lines, "Resource MIME Type: "+r.MIMEType)
	}
	if r.Text == "" && len(r.Blob) > 0 {
		lines = append(lines, fmt.Sprintf("Resource Blob: %d bytes (not shown)", len(r.Blob)))
	}
	return strings.Join(lines, "\n")
}

// marshalText is v's JSON, or a note saying why there is none.
func marshalText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(content that could not be shown: %v)", err)
	}
	return string(b)
}

// FailureText is the text result the model sees when calling the tool with key
// toolKey failed (transport error, timeout, JSON-RPC error): `"<toolKey>" tool
// call failed: <message>`.
func FailureText(toolKey string, err error) string {
	msg := "unknown error"
	if err != nil {
		// What the user must do, without the layers of the request it failed.
		ue, _ := userError(err)
		msg = ue.Error()
	}
	return `"` + toolKey + `" tool call failed: ` + msg
}

// Chunks returns the passages of a tools/call result, one per part, in order:
// the text of each text part and of each embedded text resource; images,
// binary resources and empty texts are left out. They are what a retrieval
// server returned, passage by passage: the retrieved contexts of a Ragas export
// (docs/api.md), where Format's text joins them for the model.
func Chunks(res *sdk.CallToolResult) []string {
	if res == nil {
		return nil
	}
	var out []string
	for _, c := range res.Content {
		var s string
		switch c := c.(type) {
		case *sdk.TextContent:
			s = c.Text
		case *sdk.EmbeddedResource:
			if c.Resource != nil {
				s = c.Resource.Text
			}
		}
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
