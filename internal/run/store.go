package run

import (
	"context"
	"encoding/json"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/turn"
)

// Conversation is a thread of messages between a user and an agent.
type Conversation struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	AgentID   string    `json:"agent_id"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Role is who wrote a stored message.
type Role string

// The roles of stored messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PartType is the kind of a stored content part.
type PartType string

// The kinds of content parts of an assistant message.
const (
	PartText     PartType = "text"
	PartToolCall PartType = "tool_call"
	PartError    PartType = "error"
	// PartFile is a file attached to a user's message; Text is its name.
	PartFile PartType = "file"
	// PartImage is an image sent with a user's message.
	PartImage PartType = "image"
)

// Part is one piece of a message's content, saying which agent produced it.
type Part struct {
	Type    PartType         `json:"type"`
	AgentID string           `json:"agent_id,omitempty"`
	Text    string           `json:"text,omitempty"`
	Tool    *turn.ToolRecord `json:"tool,omitempty"`
	FileID  string           `json:"file_id,omitempty"`
	// MIMEType and Data (base64) are an image part's picture.
	MIMEType string `json:"mime_type,omitempty"`
	Data     string `json:"data,omitempty"`
}

// Message is one stored message. Messages form a tree through ParentID: editing
// a message or regenerating an answer adds a sibling, a new branch.
type Message struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	ParentID       string    `json:"parent_message_id,omitempty"`
	Role           Role      `json:"role"`
	AgentID        string    `json:"agent_id,omitempty"`
	Text           string    `json:"text"`
	Parts          []Part    `json:"parts,omitempty"`
	RunID          string    `json:"run_id,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// Sources are what the answer's tool calls cited (file passages, web
	// pages), in order; they are kept in Parts and listed here for display.
	Sources []tool.Source `json:"sources,omitempty"`
	// RunStatus is how the run that wrote an answer ended when it did not
	// succeed: StatusCancelled (stopped by its user) or StatusFailed (an
	// error, or its process gone). It is empty for a whole answer and for a
	// user's message, so that a cut-off answer read again is never taken for
	// a whole one (docs/api.md "Runs and conversations"). It is read with the
	// message, from its run; it is not stored with the message.
	RunStatus Status `json:"run_status,omitempty"`
}

// Status is where a run stands.
type Status string

// The statuses of a run.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Run is one execution of an agent (and the agents it reaches) for one message.
type Run struct {
	ID             string `json:"id"`
	UserID         string `json:"user_id"`
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id"`
	// UserMessageID is the message the run answers; ResponseMessageID its answer.
	UserMessageID     string     `json:"user_message_id"`
	ResponseMessageID string     `json:"response_message_id,omitempty"`
	Status            Status     `json:"status"`
	Error             string     `json:"error,omitempty"`
	Usage             llm.Usage  `json:"usage"`
	CreatedAt         time.Time  `json:"created_at"`
	StartedAt         *time.Time `json:"started_at,omitempty"`
	FinishedAt        *time.Time `json:"finished_at,omitempty"`
}

// ModelRequest is one request body sent to a provider during a run.
type ModelRequest struct {
	RunID   string          `json:"run_id"`
	Seq     int             `json:"seq"`
	AgentID string          `json:"agent_id"`
	Body    json.RawMessage `json:"body"`
	// SentAt is when the request was sent; FinishedAt when the provider's
	// answer ended, or the request failed (absent for requests of runs
	// stored before Relay kept it).
	SentAt     time.Time  `json:"sent_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Usage is the tokens of this model turn, as the provider reported them.
	Usage llm.Usage `json:"usage"`
	// Purpose is what the request was for: empty for a turn of the agent,
	// PurposeSummary for the summary of the turns its request dropped to fit
	// the context window (docs/config.md "summarization").
	Purpose string `json:"purpose,omitempty"`
}

// PurposeSummary is the Purpose of a summary request.
const PurposeSummary = "summary"

// ToolCall is one tool call made during a run, with its result.
type ToolCall struct {
	RunID   string `json:"run_id"`
	AgentID string `json:"agent_id"`
	turn.ToolRecord
	CreatedAt time.Time `json:"created_at"`
}

// RunFilter selects runs; empty fields match everything.
type RunFilter struct {
	UserID  string
	AgentID string
	Status  Status
	// Since keeps runs created at or after it.
	Since time.Time
}

// RunQuery selects one page of runs for a list, newest first.
type RunQuery struct {
	UserID  string // "" for every user's
	AgentID string
	Status  Status
	// Limit is the page size; the store treats values < 1 as 50.
	Limit int
	// Cursor is the NextCursor of the previous page, or empty for the first.
	Cursor string
}

// RunItem is a run as a list shows it (docs/api.md "GET /api/runs").
type RunItem struct {
	ID             string `json:"id"`
	UserID         string `json:"user_id"`
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id"`
	Status         Status `json:"status"`
	Error          string `json:"error,omitempty"`
	// Text is the first words of the user's message (as a conversation's
	// first title is made); the store gives its first characters.
	Text string `json:"text"`
	// ScheduleID names the schedule whose firing started the run, if one did.
	ScheduleID string     `json:"schedule_id,omitempty"`
	Usage      llm.Usage  `json:"usage"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// RunPage is one page of a run list, newest first.
type RunPage struct {
	Runs []RunItem `json:"data"`
	// NextCursor fetches the following page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ConversationQuery selects one page of a user's conversations, most
// recently updated first.
type ConversationQuery struct {
	UserID string
	// Title keeps the conversations whose title contains it, ignoring case;
	// empty keeps all.
	Title string
	// Limit is the page size; the store treats values < 1 as its default.
	Limit int
	// Cursor is the NextCursor of the previous page, or empty for the first.
	Cursor string
}

// ConversationPage is one page of a user's conversations, most recently
// updated first.
type ConversationPage struct {
	Conversations []*Conversation `json:"data"`
	// NextCursor fetches the following (less recently updated) page; empty
	// on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// RunStart is what begins a run, stored together by Store.StartRun.
type RunStart struct {
	// Conversation is created when NewConversation is set; otherwise its
	// agent and UpdatedAt are saved and its stored title is kept.
	Conversation    *Conversation
	NewConversation bool
	// Message is the user's message that the run answers.
	Message *Message
	Run     *Run
}

// Batch is what the runs of a process produced since the last batch, stored
// together by Store.WriteBatch in this order: events, tool calls, model
// requests, new messages, then updated runs.
type Batch struct {
	Events    []Event
	ToolCalls []*ToolCall
	Requests  []*ModelRequest
	Messages  []*Message
	Runs      []*Run
}

// Store is what runs and conversations need from storage. Missing rows are
// fault.NotFound; lists are oldest first.
type Store interface {
	CreateConversation(ctx context.Context, c *Conversation) error
	GetConversation(ctx context.Context, id string) (*Conversation, error)
	// ListConversations lists a user's conversations, most recently updated first.
	ListConversations(ctx context.Context, userID string, limit int) ([]*Conversation, error)
	// ConversationPage lists one page of the conversations q selects, most
	// recently updated first (then by id); a bad cursor is fault.Invalid.
	ConversationPage(ctx context.Context, q ConversationQuery) (*ConversationPage, error)
	UpdateConversation(ctx context.Context, c *Conversation) error
	// RenameConversation sets a conversation's title, leaving UpdatedAt;
	// with from set, only while its title is still *from (fault.Conflict
	// otherwise).
	RenameConversation(ctx context.Context, id, title string, from *string) error
	// DeleteConversation deletes a conversation with its messages, runs, events,
	// model requests and tool calls.
	DeleteConversation(ctx context.Context, id string) error

	AddMessage(ctx context.Context, m *Message) error
	GetMessage(ctx context.Context, id string) (*Message, error)
	ListMessages(ctx context.Context, conversationID string) ([]*Message, error)

	CreateRun(ctx context.Context, r *Run) error
	UpdateRun(ctx context.Context, r *Run) error
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns lists finished runs matching f, oldest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// RunPage lists one page of the runs q selects, newest first (by
	// creation, then id); a bad cursor is fault.Invalid.
	RunPage(ctx context.Context, q RunQuery) (*RunPage, error)
	// RequestAbort asks the process running a run to abort it; a run that
	// has ended, or that no node's process runs, is fault.Conflict.
	RequestAbort(ctx context.Context, runID string) error
	// AbortRequests returns the runs of this process's node still going
	// whose abort another process asked for.
	AbortRequests(ctx context.Context) ([]string, error)
	// FailStaleRuns marks runs still queued or running that started before
	// cutoff as failed with reason, and returns how many it marked.
	FailStaleRuns(ctx context.Context, cutoff time.Time, reason string) (int, error)

	// StartRun stores what begins a run in one transaction: its conversation
	// (created when s.NewConversation, else updated), the user's message and
	// the run.
	StartRun(ctx context.Context, s *RunStart) error
	// WriteBatch stores b in one transaction: all of it or, on error, none.
	WriteBatch(ctx context.Context, b *Batch) error

	// AppendEvents stores events, which carry their Seq already.
	AppendEvents(ctx context.Context, events []Event) error
	// ListEvents returns a run's events with Seq > after.
	ListEvents(ctx context.Context, runID string, after int64) ([]Event, error)

	AddModelRequest(ctx context.Context, r *ModelRequest) error
	ListModelRequests(ctx context.Context, runID string) ([]ModelRequest, error)
	AddToolCall(ctx context.Context, c *ToolCall) error
	ListToolCalls(ctx context.Context, runID string) ([]ToolCall, error)

	// CreateElicitation stores a new pending question; a missing run is
	// fault.NotFound.
	CreateElicitation(ctx context.Context, e *Elicitation) error
	GetElicitation(ctx context.Context, id string) (*Elicitation, error)
	// SettleElicitation ends a pending question with status (answered,
	// expired or cancelled), the answer's action and content, at a time. A
	// question no longer pending is fault.Conflict: the first settles it.
	SettleElicitation(ctx context.Context, id string, status ElicitationStatus, action string, content json.RawMessage, at time.Time) error
}

// ElicitationStatus is where a question of an MCP server stands.
type ElicitationStatus string

// The states of a question (docs/api.md "Questions").
const (
	ElicitationPending   ElicitationStatus = "pending"
	ElicitationAnswered  ElicitationStatus = "answered"
	ElicitationExpired   ElicitationStatus = "expired"
	ElicitationCancelled ElicitationStatus = "cancelled"
)

// Elicitation is a question an MCP server asked a run's user during a tool
// call (docs/mcp.md "Questions"), with its answer once there is one.
type Elicitation struct {
	ID         string `json:"id"`
	RunID      string `json:"run_id"`
	UserID     string `json:"-"`
	Server     string `json:"server"`
	ToolCallID string `json:"tool_call_id"`
	// Mode is "form" (RequestedSchema to fill in) or "url" (URL to open).
	Mode            string            `json:"mode"`
	Message         string            `json:"message"`
	RequestedSchema json.RawMessage   `json:"requested_schema,omitempty"`
	URL             string            `json:"url,omitempty"`
	Status          ElicitationStatus `json:"status"`
	Action          string            `json:"action,omitempty"`
	Content         json.RawMessage   `json:"content,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	ExpiresAt       time.Time         `json:"expires_at"`
	AnsweredAt      *time.Time        `json:"answered_at,omitempty"`
}
