package run

import (
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
)

// Image is a picture sent with a user's message, for models that see images.
type Image struct {
	// MIMEType is image/png, image/jpeg, image/gif or image/webp.
	MIMEType string `json:"mime_type"`
	// Data is the image, base64 in the standard encoding.
	Data string `json:"data"`
}

// imageTypes are the image types every provider Relay speaks to accepts.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// checkImages refuses images of other types or whose data is not base64.
func checkImages(images []Image) error {
	var fs fault.Fields
	for i, img := range images {
		for _, f := range img.Check() {
			fs = append(fs, fault.FieldError{Field: fmt.Sprintf("images[%d].%s", i, f.Field), Message: f.Message})
		}
	}
	return fs.Err("invalid chat request")
}

// Check says what is wrong with the image, by field (mime_type, data): a
// type other than those every provider accepts, or data that is not base64.
// None is nothing wrong. A chat request's images are checked so by Start; a
// caller that reads them from another shape checks them first to name its
// own fields.
func (img Image) Check() []fault.FieldError {
	var fs []fault.FieldError
	if !slices.Contains(imageTypes, img.MIMEType) {
		fs = append(fs, fault.FieldError{Field: "mime_type", Message: "must be one of image/png, image/jpeg, image/gif, image/webp"})
	}
	if img.Data == "" {
		fs = append(fs, fault.FieldError{Field: "data", Message: "required"})
	} else if _, err := base64.StdEncoding.DecodeString(img.Data); err != nil {
		fs = append(fs, fault.FieldError{Field: "data", Message: "must be base64 (standard encoding)"})
	}
	return fs
}

// imageParts are the stored parts of a user message's images.
func imageParts(images []Image) []Part {
	var out []Part
	for _, img := range images {
		out = append(out, Part{Type: PartImage, MIMEType: img.MIMEType, Data: img.Data})
	}
	return out
}

// userMessage is a user's message as the model gets it: its text, and its
// images when it has any.
func userMessage(text string, parts []Part) llm.Message {
	m := llm.Message{Role: llm.RoleUser, Content: text}
	for _, p := range parts {
		if p.Type != PartImage {
			continue
		}
		if len(m.Parts) == 0 {
			m.Parts = append(m.Parts, llm.Part{Type: llm.PartText, Text: text})
		}
		m.Parts = append(m.Parts, llm.Part{Type: llm.PartImage, MIMEType: p.MIMEType, Data: p.Data})
	}
	return m
}
