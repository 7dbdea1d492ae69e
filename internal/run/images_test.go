package run_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
)

const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// Images sent with a message reach the model as parts of the user's message,
// are stored with it, and stay in the conversation for later turns.
func TestImagesInAMessage(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"A red dot."}}, llmtest.Turn{Text: []string{"Still red."}})
	b := setup(t, model)
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is this?", Images: []run.Image{{MIMEType: "image/png", Data: pixel}}})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	want := []llm.Part{{Type: llm.PartText, Text: "What is this?"}, {Type: llm.PartImage, MIMEType: "image/png", Data: pixel}}
	reqs := model.Requests()
	msgs := reqs[0].Messages
	if diff := cmp.Diff(want, msgs[len(msgs)-1].Parts); diff != "" {
		t.Errorf("the model's user message (-want +got):\n%s", diff)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]run.Part{{Type: run.PartImage, MIMEType: "image/png", Data: pixel}}, th.Messages[0].Parts); diff != "" {
		t.Errorf("stored user message parts (-want +got):\n%s", diff)
	}
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "And now?", ConversationID: d.ConversationID, ParentMessageID: th.Messages[1].ID})
	reqs = model.Requests()
	if msgs := reqs[len(reqs)-1].Messages; len(msgs) != 4 || cmp.Diff(want, msgs[1].Parts) != "" || len(msgs[3].Parts) != 0 {
		t.Errorf("follow-up messages: %+v", msgs)
	}
}

func TestBadImages(t *testing.T) {
	b := setup(t, llmtest.New())
	for _, img := range []run.Image{{MIMEType: "image/tiff", Data: pixel}, {MIMEType: "image/png", Data: "not base64!"}, {MIMEType: "image/png"}} {
		_, err := b.svc.Start(context.Background(), b.user, run.ChatRequest{AgentID: "calc", Text: "x", Images: []run.Image{img}})
		var fe *fault.Error
		if !fault.Is(err, fault.Invalid) || !errorsAs(err, &fe) || len(fe.Fields) != 1 {
			t.Errorf("image %.30v: %v, want one invalid field", img, err)
		}
	}
	cs, err := b.svc.Conversations(context.Background(), b.user, run.ConversationQuery{Limit: 10})
	if err != nil || len(cs.Conversations) != 0 {
		t.Errorf("refused messages left conversations %v (%v)", cs, err)
	}
}

func errorsAs(err error, target **fault.Error) bool {
	fe, ok := err.(*fault.Error)
	if ok {
		*target = fe
	}
	return ok
}

// An image the model produces is streamed as message.image and saved as an
// image part of the answer, naming its agent.
func TestImagesFromTheModel(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"Here it is."}, Images: []llm.Image{{MIMEType: "image/png", Data: pixel}}})
	b := setup(t, model)
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "Draw a dot"})
	var got []string
	for _, e := range d.Events {
		if e.Type == run.EventMessageImage {
			got = append(got, string(e.Data))
		}
	}
	if want := `{"agent_id":"calc","data":"` + pixel + `","mime_type":"image/png"}`; len(got) != 1 || got[0] != want {
		t.Errorf("message.image events %v, want %s", got, want)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	want := []run.Part{{Type: run.PartText, AgentID: "calc", Text: "Here it is."}, {Type: run.PartImage, AgentID: "calc", MIMEType: "image/png", Data: pixel}}
	if diff := cmp.Diff(want, th.Messages[1].Parts); diff != "" {
		t.Errorf("answer parts (-want +got):\n%s", diff)
	}
}
