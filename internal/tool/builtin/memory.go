package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/tool"
)

// Names of the memory tools, as the model calls them.
const (
	SetMemoryName    = "set_memory"
	DeleteMemoryName = "delete_memory"
)

// Descriptions of the memory tools, as the model reads them.
const (
	SetMemoryDescription    = "Save a fact about the user to remember in future conversations, under a short key. Saving under a key that already holds a memory replaces it."
	DeleteMemoryDescription = "Delete the memory stored under a key, when it is wrong or no longer true."
)

// keyDescription is the description of the key argument of both tools.
const keyDescription = "The memory's key: 1 to 64 lower-case letters a-z or underscores, e.g. \"preferences\"."

// SetMemorySchema returns the JSON schema of set_memory's arguments: an object
// with the strings key and value, both required, and nothing else.
func SetMemorySchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"key":   map[string]any{"type": "string", "description": keyDescription},
			"value": map[string]any{"type": "string", "description": "The text to remember, short and self-contained."},
		},
		"required":             []any{"key", "value"},
		"additionalProperties": false,
	}
}

// DeleteMemorySchema returns the JSON schema of delete_memory's arguments: an
// object with the string key, required, and nothing else.
func DeleteMemorySchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"key": map[string]any{"type": "string", "description": keyDescription},
		},
		"required":             []any{"key"},
		"additionalProperties": false,
	}
}

// SetMemory returns the set_memory tool, which stores a value under a key for
// the calling user through svc.
func SetMemory(svc *memory.Service) tool.Tool { return setMemory{svc} }

type setMemory struct{ svc *memory.Service }

func (setMemory) Name() string { return SetMemoryName }

const setMemoryUsage = `{"key": "<lower-case key>", "value": "<text to remember>"}`

func (t setMemory) Call(ctx context.Context, userID string, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Key   *string `json:"key"`
		Value *string `json:"value"`
	}
	if err := decodeArgs(args, &in, setMemoryUsage); err != nil {
		return tool.Errorf("Invalid arguments for %s: %v.", SetMemoryName, err), nil
	}
	var missing []string
	if in.Key == nil {
		missing = append(missing, `"key"`)
	}
	if in.Value == nil {
		missing = append(missing, `"value"`)
	}
	if len(missing) > 0 {
		return tool.Errorf("Invalid arguments for %s: missing %s; send %s.", SetMemoryName, joinAnd(missing), setMemoryUsage), nil
	}
	e, err := t.svc.Put(ctx, userID, *in.Key, *in.Value)
	if err != nil {
		return failure(err)
	}
	return tool.Text(fmt.Sprintf("Memory %q saved.", e.Key)), nil
}

// DeleteMemory returns the delete_memory tool, which removes the calling user's
// memory under a key through svc.
func DeleteMemory(svc *memory.Service) tool.Tool { return deleteMemory{svc} }

type deleteMemory struct{ svc *memory.Service }

func (deleteMemory) Name() string { return DeleteMemoryName }

const deleteMemoryUsage = `{"key": "<lower-case key>"}`

func (t deleteMemory) Call(ctx context.Context, userID string, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Key *string `json:"key"`
	}
	if err := decodeArgs(args, &in, deleteMemoryUsage); err != nil {
		return tool.Errorf("Invalid arguments for %s: %v.", DeleteMemoryName, err), nil
	}
	if in.Key == nil {
		return tool.Errorf(`Invalid arguments for %s: missing "key"; send %s.`, DeleteMemoryName, deleteMemoryUsage), nil
	}
	if err := t.svc.Delete(ctx, userID, *in.Key); err != nil {
		return failure(err)
	}
	return tool.Text(fmt.Sprintf("Memory %q deleted.", *in.Key)), nil
}

// joinAnd joins words as "a", "a and b" or "a, b and c".
func joinAnd(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	out := words[0]
	for _, w := range words[1 : len(words)-1] {
		out += ", " + w
	}
	return out + " and " + words[len(words)-1]
}
