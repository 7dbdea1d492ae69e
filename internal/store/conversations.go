package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
)

// DefaultConversationLimit is how many conversations ListConversations and
// ConversationPage return when no limit is given; MaxListLimit caps it.
const DefaultConversationLimit = 50

const conversationColumns = `id, user_id, agent_id, title, created_at, updated_at`

func scanConversation(r rowScanner) (*run.Conversation, error) {
	var c run.Conversation
	if err := r.Scan(&c.ID, &c.UserID, &c.AgentID, &c.Title, timeDest{&c.CreatedAt}, timeDest{&c.UpdatedAt}); err != nil {
		return nil, err
	}
	return &c, nil
}

// CreateConversation inserts c. A zero CreatedAt is the current time and a zero
// UpdatedAt is CreatedAt; both are written back to c in stored form. A taken id
// is fault.Conflict; a missing user fault.NotFound.
func (db *DB) CreateConversation(ctx context.Context, c *run.Conversation) error {
	return db.createConversation(ctx, db.write, c)
}

// conversationTimes are the times createConversation stores for c and
// writes back: its UpdatedAt is its CreatedAt unless set.
func (db *DB) conversationTimes(c *run.Conversation) (created, updated time.Time) {
	created = db.stamp(c.CreatedAt)
	updated = created
	if !c.UpdatedAt.IsZero() {
		updated = utc(c.UpdatedAt)
	}
	return created, updated
}

func (db *DB) createConversation(ctx context.Context, q querier, c *run.Conversation) error {
	if c.ID == "" {
		return fault.New(fault.Invalid, "conversation id is required")
	}
	created, updated := db.conversationTimes(c)
	_, err := db.exec(ctx, q,
		`INSERT INTO conversations (`+conversationColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		c.ID, c.UserID, c.AgentID, c.Title, db.timeArg(created), db.timeArg(updated))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "conversation %q already exists", c.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user of conversation %q: user %q not found", c.ID, c.UserID)
	default:
		return fmt.Errorf("creating conversation %q: %w", c.ID, err)
	}
	c.CreatedAt, c.UpdatedAt = created, updated
	return nil
}

// GetConversation returns the conversation with that id.
func (db *DB) GetConversation(ctx context.Context, id string) (*run.Conversation, error) {
	c, err := scanConversation(db.queryRow(ctx, db.read,
		`SELECT `+conversationColumns+` FROM conversations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "conversation %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting conversation %q: %w", id, err)
	}
	return c, nil
}

// ListConversations returns up to limit of a user's conversations, most recently
// updated first (ties by id, last first). A limit below 1 means
// DefaultConversationLimit, and one above MaxListLimit is MaxListLimit. An
// unknown user has none.
func (db *DB) ListConversations(ctx context.Context, userID string, limit int) ([]*run.Conversation, error) {
	page, err := db.ConversationPage(ctx, run.ConversationQuery{UserID: userID, Limit: limit})
	if err != nil {
		return nil, err
	}
	return page.Conversations, nil
}

// ConversationPage lists one page of a user's conversations, most recently
// updated first (ties by id, last first), those whose title contains q.Title
// ignoring case when it is set. It pages as FiringPage does: the cursor is
// the UpdatedAt and id of the last conversation of the previous page, so a
// conversation updated while the pages are read moves to the first page and
// is not listed again. A limit below 1 means DefaultConversationLimit, and one
// above MaxListLimit is MaxListLimit. An unknown user has none; a bad cursor
// is fault.Invalid.
func (db *DB) ConversationPage(ctx context.Context, q run.ConversationQuery) (*run.ConversationPage, error) {
	limit := q.Limit
	switch {
	case limit < 1:
		limit = DefaultConversationLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	query := `SELECT ` + conversationColumns + ` FROM conversations WHERE user_id = ?`
	args := []any{q.UserID}
	if q.Cursor != "" {
		at, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		// updated_at <= ? lets both engines walk the conversations_user_updated
		// index (user_id, updated_at, id); the pair compares the id as well, as
		// the order does.
		query += ` AND updated_at <= ? AND (updated_at, id) < (?, ?)`
		args = append(args, db.timeArg(at), db.timeArg(at), id)
	}
	if q.Title != "" {
		query += ` AND LOWER(title) LIKE ? ESCAPE '\'`
		args = append(args, likePattern(q.Title))
	}
	query += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1) // one more tells whether a next page exists
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing conversations of user %q: %w", q.UserID, err)
	}
	defer rows.Close()
	page := &run.ConversationPage{Conversations: []*run.Conversation{}}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("listing conversations of user %q: %w", q.UserID, err)
		}
		page.Conversations = append(page.Conversations, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing conversations of user %q: %w", q.UserID, err)
	}
	if len(page.Conversations) > limit {
		page.Conversations = page.Conversations[:limit]
		last := page.Conversations[limit-1]
		page.NextCursor = encodeCursor(last.UpdatedAt, last.ID)
	}
	return page, nil
}

// UpdateConversation stores c's title, agent and UpdatedAt (the current time when
// zero, written back to c). The user and CreatedAt never change.
func (db *DB) UpdateConversation(ctx context.Context, c *run.Conversation) error {
	return db.updateConversation(ctx, db.write, c)
}

func (db *DB) updateConversation(ctx context.Context, q querier, c *run.Conversation) error {
	updated := db.stamp(c.UpdatedAt)
	res, err := db.exec(ctx, q,
		`UPDATE conversations SET agent_id = ?, title = ?, updated_at = ? WHERE id = ?`,
		c.AgentID, c.Title, db.timeArg(updated), c.ID)
	if err != nil {
		return fmt.Errorf("updating conversation %q: %w", c.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating conversation %q: %w", c.ID, err)
	} else if !ok {
		return fault.New(fault.NotFound, "conversation %q not found", c.ID)
	}
	c.UpdatedAt = updated
	return nil
}

// touchConversation stores c's agent and UpdatedAt (the current time when
// zero, written back to c) for a run that continues it. Its title is left as
// stored: a rename or a title made in the background while the run started
// is kept.
func (db *DB) touchConversation(ctx context.Context, q querier, c *run.Conversation) error {
	updated := db.stamp(c.UpdatedAt)
	res, err := db.exec(ctx, q, `UPDATE conversations SET agent_id = ?, updated_at = ? WHERE id = ?`,
		c.AgentID, db.timeArg(updated), c.ID)
	if err != nil {
		return fmt.Errorf("updating conversation %q: %w", c.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating conversation %q: %w", c.ID, err)
	} else if !ok {
		return fault.New(fault.NotFound, "conversation %q not found", c.ID)
	}
	c.UpdatedAt = updated
	return nil
}

// RenameConversation sets a conversation's title and nothing else: its
// UpdatedAt, which orders the list by activity, stays. With from set, the
// title changes only while it is still *from, and a conversation whose title
// is another is fault.Conflict; a missing one is fault.NotFound.
func (db *DB) RenameConversation(ctx context.Context, id, title string, from *string) error {
	q, args := `UPDATE conversations SET title = ? WHERE id = ?`, []any{title, id}
	if from != nil {
		q, args = q+` AND title = ?`, append(args, *from)
	}
	res, err := db.exec(ctx, db.write, q, args...)
	if err != nil {
		return fmt.Errorf("renaming conversation %q: %w", id, err)
	}
	ok, err := affected(res)
	switch {
	case err != nil:
		return fmt.Errorf("renaming conversation %q: %w", id, err)
	case ok:
		return nil
	}
	if _, err := db.GetConversation(ctx, id); err != nil {
		return err
	}
	return fault.New(fault.Conflict, "conversation %q was renamed meanwhile", id)
}

// DeleteConversation deletes a conversation. Its messages and runs, and the runs'
// events, model requests and tool calls, go with it through the foreign keys'
// cascades, in the same statement. A conversation with a run still going is
// not deleted (Conflict, naming the run): the run would go on, out of reach
// of an abort, and fail to store its answer.
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	return db.inTx(ctx, "DeleteConversation", func(tx *sql.Tx) error {
		// The conversation's row first, as StartRun takes it: a run started
		// meanwhile is then seen below, never deleted with its conversation.
		if _, err := db.exec(ctx, tx, `UPDATE conversations SET id = id WHERE id = ?`, id); err != nil {
			return fmt.Errorf("deleting conversation %q: %w", id, err)
		}
		going, err := db.goingRun(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("deleting conversation %q: %w", id, err)
		}
		if going != "" {
			return fault.New(fault.Conflict, "conversation %q has a run going (%s): abort it (POST /api/runs/%s/abort) or let it end first", id, going, going)
		}
		res, err := db.exec(ctx, tx, `DELETE FROM conversations WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("deleting conversation %q: %w", id, err)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("deleting conversation %q: %w", id, err)
		} else if !ok {
			return fault.New(fault.NotFound, "conversation %q not found", id)
		}
		return nil
	})
}

const messageColumns = `id, conversation_id, parent_id, role, agent_id, text, parts, run_id, created_at`

// messageSelect reads messages (m) as scanMessage takes them: with the status
// of the run that wrote each (r), joined rather than asked for message by
// message, for run.Message.RunStatus.
const messageSelect = `SELECT m.id, m.conversation_id, m.parent_id, m.role, m.agent_id, m.text, m.parts, m.run_id,
	m.created_at, r.status FROM messages m LEFT JOIN runs r ON r.id = m.run_id`

func scanMessage(r rowScanner) (*run.Message, error) {
	var (
		m         run.Message
		parts     []byte
		runStatus string
	)
	err := r.Scan(&m.ID, &m.ConversationID, nullStringDest{&m.ParentID}, &m.Role, nullStringDest{&m.AgentID},
		&m.Text, &parts, nullStringDest{&m.RunID}, timeDest{&m.CreatedAt}, nullStringDest{&runStatus})
	if err != nil {
		return nil, err
	}
	// A run that succeeded, or one still going (failRuns reads the answer of
	// a run it is about to fail), says nothing about its answer.
	if s := run.Status(runStatus); s == run.StatusCancelled || s == run.StatusFailed {
		m.RunStatus = s
	}
	if parts != nil {
		var stored []storedPart
		if err := json.Unmarshal(parts, &stored); err != nil {
			return nil, fmt.Errorf("decoding parts of message %q: %w", m.ID, err)
		}
		m.Parts = make([]run.Part, len(stored))
		for i, p := range stored {
			if p.TextOfMessage {
				p.Text = m.Text
			}
			m.Parts[i] = p.Part
		}
		m.Sources = run.Sources(m.Parts)
	}
	return &m, nil
}

// storedPart is a part of a message as stored. A text part whose text is the
// message's whole text, as the one part of most answers is, is stored without
// it (TextOfMessage): the text is kept once, in the message's text column.
type storedPart struct {
	run.Part
	TextOfMessage bool `json:"text_of_message,omitempty"`
}

// storedParts returns the parts of m as stored (storedPart).
func storedParts(m *run.Message) []storedPart {
	out := make([]storedPart, len(m.Parts))
	for i, p := range m.Parts {
		out[i].Part = p
		if p.Type == run.PartText && p.Text != "" && p.Text == m.Text {
			out[i].Text, out[i].TextOfMessage = "", true
		}
	}
	return out
}

// AddMessage inserts m and writes its CreatedAt back in stored form (the current
// time when zero). A parent must be a message of the same conversation: a
// missing one is fault.NotFound, one elsewhere fault.Invalid. A missing
// conversation is fault.NotFound; a taken id fault.Conflict.
func (db *DB) AddMessage(ctx context.Context, m *run.Message) error {
	return db.inTx(ctx, "AddMessage", func(tx *sql.Tx) error { return db.addMessage(ctx, tx, m) })
}

// addMessage is AddMessage in the transaction tx.
func (db *DB) addMessage(ctx context.Context, tx *sql.Tx, m *run.Message) error {
	switch {
	case m.ID == "":
		return fault.New(fault.Invalid, "message id is required")
	case m.Role == "":
		return fault.New(fault.Invalid, "role of message %q is required", m.ID)
	}
	var parts any
	if len(m.Parts) > 0 {
		b, err := json.Marshal(storedParts(m))
		if err != nil {
			return fault.Wrap(fault.Invalid, err, "parts of message %q cannot be stored as JSON", m.ID)
		}
		parts = jsonValue(b)
	}
	created := db.stamp(m.CreatedAt)
	if m.ParentID != "" {
		var conv string
		err := db.queryRow(ctx, tx, `SELECT conversation_id FROM messages WHERE id = ?`, m.ParentID).Scan(&conv)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fault.New(fault.NotFound, "parent of message %q: message %q not found", m.ID, m.ParentID)
		case err != nil:
			return fmt.Errorf("adding message %q: reading its parent: %w", m.ID, err)
		case conv != m.ConversationID:
			return fault.New(fault.Invalid, "parent of message %q: message %q is not in conversation %q", m.ID, m.ParentID, m.ConversationID)
		}
	}
	_, err := db.exec(ctx, tx,
		`INSERT INTO messages (`+messageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.ConversationID, nullString(m.ParentID), string(m.Role), nullString(m.AgentID),
		m.Text, parts, nullString(m.RunID), db.timeArg(created))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "message %q already exists", m.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "conversation of message %q: conversation %q not found", m.ID, m.ConversationID)
	default:
		return fmt.Errorf("adding message %q: %w", m.ID, err)
	}
	m.CreatedAt = created
	return nil
}

// GetMessage returns the message with that id.
func (db *DB) GetMessage(ctx context.Context, id string) (*run.Message, error) {
	m, err := scanMessage(db.queryRow(ctx, db.read, messageSelect+` WHERE m.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "message %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting message %q: %w", id, err)
	}
	return m, nil
}

// ListMessages returns every message of a conversation, every branch of its
// tree, oldest first and then by id; none for an unknown conversation.
func (db *DB) ListMessages(ctx context.Context, conversationID string) ([]*run.Message, error) {
	rows, err := db.query(ctx, db.read,
		messageSelect+` WHERE m.conversation_id = ? ORDER BY m.created_at, m.id`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("listing messages of conversation %q: %w", conversationID, err)
	}
	defer rows.Close()
	msgs := []*run.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("listing messages of conversation %q: %w", conversationID, err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing messages of conversation %q: %w", conversationID, err)
	}
	return msgs, nil
}
