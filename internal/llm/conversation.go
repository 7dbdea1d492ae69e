package llm

import "context"

// Conversation names what a model request is for: the conversation, the
// user's message the run answers and the message before that one. An
// endpoint's headers may quote them ({{LIBRECHAT_BODY_CONVERSATIONID}},
// {{LIBRECHAT_BODY_MESSAGEID}}, {{LIBRECHAT_BODY_PARENTMESSAGEID}};
// docs/config.md, "Headers that name the conversation").
type Conversation struct {
	ID, MessageID, ParentMessageID string
}

type conversationKey struct{}

// WithConversation returns ctx carrying c for the model requests made with it.
func WithConversation(ctx context.Context, c Conversation) context.Context {
	return context.WithValue(ctx, conversationKey{}, c)
}

// ConversationOf returns the conversation ctx carries; zero when none.
func ConversationOf(ctx context.Context) Conversation {
	c, _ := ctx.Value(conversationKey{}).(Conversation)
	return c
}
