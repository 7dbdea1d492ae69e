// Package agent owns agent definitions: their fields and edges, validation,
// versions, sharing, and who may see and change them. Running an agent is
// package turn's (one agent's turn) and package graph's (the agents a run
// reaches along their edges).
package agent

import (
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/ident"

	"context"
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Artifacts selects the artifacts prompt an agent gets.
type Artifacts string

// The artifacts modes (docs/agents.md "Agent": `artifacts`).
const (
	ArtifactsNone     Artifacts = ""
	ArtifactsDefault  Artifacts = "default"
	ArtifactsShadcnUI Artifacts = "shadcnui"
	ArtifactsCustom   Artifacts = "custom"
)

// ChainType says how a deprecated agent_ids chain passes context along.
type ChainType string

// The chain types (docs/agents.md "Agent": `chain_type`; what each does, "Edges").
const (
	ChainConvo             ChainType = "convo"
	ChainOutputPassthrough ChainType = "output_passthrough"
)

// EdgeType is the kind of an edge between two agents.
type EdgeType string

// The edge types of docs/agents.md "Edges".
const (
	EdgeHandoff EdgeType = "handoff"
	EdgeDirect  EdgeType = "direct"
)

// Spec is everything about an agent that its author writes. It is what the API
// accepts, what the config's `agents:` entries hold, and what each version stores.
type Spec struct {
	Name                  string         `json:"name,omitempty" yaml:"name"`
	Description           string         `json:"description,omitempty" yaml:"description"`
	Instructions          string         `json:"instructions,omitempty" yaml:"instructions"`
	Provider              string         `json:"provider" yaml:"provider"`
	Model                 string         `json:"model" yaml:"model"`
	ModelParameters       map[string]any `json:"model_parameters,omitempty" yaml:"model_parameters"`
	Tools                 []string       `json:"tools,omitempty" yaml:"tools"`
	Artifacts             Artifacts      `json:"artifacts,omitempty" yaml:"artifacts"`
	ToolResources         *ToolResources `json:"tool_resources,omitempty" yaml:"tool_resources"`
	Edges                 []Edge         `json:"edges,omitempty" yaml:"edges"`
	AgentIDs              []string       `json:"agent_ids,omitempty" yaml:"agent_ids"`
	ChainType             ChainType      `json:"chain_type,omitempty" yaml:"chain_type"`
	HideSequentialOutputs bool           `json:"hide_sequential_outputs,omitempty" yaml:"hide_sequential_outputs"`
	RecursionLimit        int            `json:"recursion_limit,omitempty" yaml:"recursion_limit"`
	ConversationStarters  []string       `json:"conversation_starters,omitempty" yaml:"conversation_starters"`
	Shared                bool           `json:"shared" yaml:"shared"`
}

// ToolResources holds the resources an agent's tools use.
type ToolResources struct {
	FileSearch *FileSearchResources `json:"file_search,omitempty" yaml:"file_search"`
}

// FileSearchResources lists the files the file_search tool searches.
type FileSearchResources struct {
	FileIDs []string `json:"file_ids" yaml:"file_ids"`
}

// MarshalJSON writes no files as [], never null: `"file_search": {}` reads
// back as `{"file_ids": []}`.
func (r FileSearchResources) MarshalJSON() ([]byte, error) {
	type plain FileSearchResources
	if r.FileIDs == nil {
		r.FileIDs = []string{}
	}
	return json.Marshal(plain(r))
}

// Edge connects agents (docs/agents.md "Edges"). From and To may each be one id or a list.
type Edge struct {
	From           IDs      `json:"from" yaml:"from"`
	To             IDs      `json:"to" yaml:"to"`
	EdgeType       EdgeType `json:"edgeType,omitempty" yaml:"edgeType"`
	Prompt         string   `json:"prompt,omitempty" yaml:"prompt"`
	ExcludeResults bool     `json:"excludeResults,omitempty" yaml:"excludeResults"`
	PromptKey      string   `json:"promptKey,omitempty" yaml:"promptKey"`
	Description    string   `json:"description,omitempty" yaml:"description"`
}

// IDs is one agent id or a list of them. It remembers which form it was written
// in, so that what a client sends is what it reads back.
type IDs struct {
	List []string
	// Single is true when the value was written as a plain string.
	Single bool
}

// One returns IDs holding a single id written as a string.
func One(id string) IDs { return IDs{List: []string{id}, Single: true} }

// MarshalJSON writes a string for a single id, else a list.
func (ids IDs) MarshalJSON() ([]byte, error) {
	if ids.Single && len(ids.List) == 1 {
		return json.Marshal(ids.List[0])
	}
	if ids.List == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(ids.List)
}

// UnmarshalJSON accepts a string or a list of strings.
func (ids *IDs) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*ids = IDs{List: []string{s}, Single: true}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("must be an agent id or a list of agent ids")
	}
	*ids = IDs{List: l}
	return nil
}

// UnmarshalYAML accepts a string or a list of strings.
func (ids *IDs) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*ids = IDs{List: []string{n.Value}, Single: true}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*ids = IDs{List: l}
		return nil
	}
	return fmt.Errorf("line %d, column %d: must be an agent id or a list of agent ids", n.Line, n.Column)
}

// MarshalYAML writes a string for a single id, else a list.
func (ids IDs) MarshalYAML() (any, error) {
	if ids.Single && len(ids.List) == 1 {
		return ids.List[0], nil
	}
	return ids.List, nil
}

// Agent is a stored agent: its current Spec and what Relay keeps about it.
type Agent struct {
	ID string `json:"id"`
	Spec
	// Author is the id of the user who created the agent; empty for config agents.
	Author string `json:"author,omitempty"`
	// Managed is true for agents defined in the config file; the API will not change them.
	Managed   bool      `json:"managed"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Permission is what the user who asked may do with the agent (Service
	// sets it; the store does not keep it): owner, editor or viewer.
	Permission Role `json:"permission,omitempty"`
}

// Version is one kept version of an agent's Spec.
type Version struct {
	AgentID   string    `json:"agent_id"`
	Version   int       `json:"version"`
	Spec      Spec      `json:"spec"`
	CreatedAt time.Time `json:"created_at"`
}

// ListOptions filters and pages a list of agents.
type ListOptions struct {
	// VisibleTo limits the list to the agents that user may read: their own,
	// those shared with everyone (config agents included), and those shared
	// with the user or one of their groups. Empty means every agent.
	VisibleTo string
	// Limit is the page size; the store treats values < 1 as 100.
	Limit int
	// Cursor is the NextCursor of the previous page, or empty for the first page.
	Cursor string
}

// Page is one page of agents, oldest first.
type Page struct {
	Agents []*Agent `json:"data"`
	// NextCursor fetches the following page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
	// Granted holds, by agent id, the highest role that shares grant the
	// ListOptions.VisibleTo user on the agents of the page, directly or
	// through a group; agents with no such share are absent.
	Granted map[string]Role `json:"-"`
}

// Store is what the agent package needs from storage. Methods return a fault.NotFound
// error for a missing agent and fault.Conflict when a version check fails.
type Store interface {
	// CreateAgent inserts a as version 1; it sets Version, CreatedAt and UpdatedAt.
	CreateAgent(ctx context.Context, a *Agent) error
	GetAgent(ctx context.Context, id string) (*Agent, error)
	ListAgents(ctx context.Context, opts ListOptions) (*Page, error)
	// UpdateAgent stores a.Spec as the next version if the stored version is still
	// a.Version; on success a.Version and a.UpdatedAt are advanced.
	UpdateAgent(ctx context.Context, a *Agent) error
	DeleteAgent(ctx context.Context, id string) error
	// AgentVersions lists every kept version of an agent, oldest first.
	AgentVersions(ctx context.Context, id string) ([]Version, error)
	// SyncManagedAgents makes the managed agents exactly the given ones, in one
	// transaction: new ones are inserted, changed ones get a new version, and agents
	// no longer in the list stop being managed. An agent id that exists but was
	// created through the API is a fault.Conflict.
	SyncManagedAgents(ctx context.Context, agents []*Agent) (SyncResult, error)

	// AgentRole returns the highest role an agent's shares grant a user,
	// directly or through one of their groups; RoleNone when none does.
	AgentRole(ctx context.Context, agentID, userID string) (Role, error)
	// AgentShares lists an agent's shares with the names (and users'
	// emails) of their principals: users first, then groups, each by name.
	AgentShares(ctx context.Context, agentID string) ([]Share, error)
	// SetAgentShares replaces an agent's shares, in one transaction. A
	// principal that does not exist is fault.NotFound.
	SetAgentShares(ctx context.Context, agentID string, shares []Share) error
	// GetUser and GetGroup look up the principals of shares.
	GetUser(ctx context.Context, id string) (*auth.User, error)
	GetGroup(ctx context.Context, id string) (*auth.Group, error)
}

// SyncResult counts what SyncManagedAgents did.
type SyncResult struct {
	Created, Updated, Unchanged, Released int
}

// NewID returns a fresh agent id: `agent_` and 21 URL-safe random characters.
func NewID() string { return ident.New("agent_") }
