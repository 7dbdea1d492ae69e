package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/run"
)

// finishedSample is the data of a run.finished event whose answer is text
// long enough to be stored once: the message's text and its text part.
func finishedSample(text string) []byte {
	return run.Encode(run.RunFinished{Status: run.StatusSucceeded, Message: &run.Message{
		ID: "msg_1", ConversationID: "conv_1", Role: run.RoleAssistant, AgentID: "regulatory-search", Text: text,
		Parts: []run.Part{{Type: run.PartText, AgentID: "regulatory-search", Text: text}},
	}})
}

// The answer's text, twice in run.finished, is stored once, and the data comes
// back byte for byte, still JSON in between.
func TestCutRepeats(t *testing.T) {
	text := strings.Repeat(`The threshold is «5» \ "quoted" `, 40)
	data := finishedSample(text)
	cut, same := cutRepeats(data)
	if len(same) != 3 {
		t.Fatalf("cutRepeats found %d numbers, want one repeat (3)", len(same))
	}
	if n := bytes.Count(cut, []byte("threshold")); n != 40 {
		t.Errorf("the text is %d/40 times in what is stored, want once", n)
	}
	if !json.Valid(cut) {
		t.Errorf("what is stored is not JSON: %s", cut)
	}
	back, err := restoreRepeats(cut, same)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("restoreRepeats = %s, %v; want the data back", back, err)
	}
	short := finishedSample("The sum is 5.")
	if got, same := cutRepeats(short); same != nil || !bytes.Equal(got, short) {
		t.Errorf("a short answer's data was changed: %s, %v", got, same)
	}
	for _, bad := range [][]int{{1, 2}, {5, 0, 10}, {0, -1, 3}, {len(cut) + 1, 0, 1}, {10, 0, 3, 5, 0, 3}} {
		if _, err := restoreRepeats(cut, bad); err == nil {
			t.Errorf("restoreRepeats accepted %v", bad)
		}
	}
}

func FuzzCutRepeats(f *testing.F) {
	f.Add(finishedSample(strings.Repeat("x", repeatMin)))
	f.Add(finishedSample(strings.Repeat(`\"`, repeatMin)))
	f.Add([]byte(`{"text":"` + strings.Repeat("a", 300) + `","b":{"text":"` + strings.Repeat("a", 300) + `"},"c":{"text":"` + strings.Repeat("a", 300) + `"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cut, same := cutRepeats(data)
		if same == nil {
			if !bytes.Equal(cut, data) {
				t.Fatalf("no repeats, but the data changed")
			}
			return
		}
		if json.Valid(data) && !json.Valid(cut) {
			t.Fatalf("JSON %q stored as %q, not JSON", data, cut)
		}
		back, err := restoreRepeats(cut, same)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("restoreRepeats(cutRepeats(%q)) = %q, %v", data, back, err)
		}
	})
}
