package store

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

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
	// A row is the store's, but a broken one is an error, never a panic nor
	// a heap of memory: a text put back is a copy of the data's own bytes.
	small := []byte(`{"text":"0123456789"}`)
	doubling := []int{}
	for i, n := 0, len(small)-2; i < 22; i, n = i+1, n*2 {
		doubling = append(doubling, len(small)-2, 0, n)
	}
	for _, bad := range [][]int{{1, 2}, {5, 0, 10}, {0, -1, 3}, {len(cut) + 1, 0, 1}, {10, 0, 3, 5, 0, 3},
		{0, 1, math.MaxInt}, {5, math.MaxInt - 2, 10}, {5, 1, math.MinInt}, doubling} {
		if out, err := restoreRepeats(small, bad); err == nil {
			t.Errorf("restoreRepeats accepted %v (%d bytes)", bad, len(out))
		}
	}
	// Data whose offsets would not hold in the row read back is kept whole:
	// invalid UTF-8 is stored replaced, spaces before the data are dropped.
	long := strings.Repeat("z", 300)
	for _, data := range []string{
		`{"a":"` + "\xff\xfe" + `","text":"` + long + `","b":{"text":"` + long + `"}}`,
		` {"text":"` + long + `","b":{"text":"` + long + `"}}`,
	} {
		if got, same := cutRepeats([]byte(data)); same != nil || string(got) != data {
			t.Errorf("cutRepeats cut %q: %v", data, same)
		}
	}
}

// Every event comes back as it was given, or as the store keeps any text
// (invalid UTF-8 replaced), the text repeated in it or not.
func TestBatchedEventsRoundTrip(t *testing.T) {
	long := strings.Repeat("z", 300)
	for _, data := range []string{
		string(finishedSample(long)),
		`{"a":"` + "\xff\xfe" + `","text":"` + long + `","b":{"text":"` + long + `"}}`,
		`{"text":"` + long + `","b":{"text":"` + long + `"},"c":[{"text":"` + long + `"}]}`,
	} {
		e := run.Event{RunID: "run_1", Seq: 1, Type: run.EventRunFinished, Data: json.RawMessage(data), CreatedAt: time.UnixMicro(1)}
		row := storableJSON(string(append(appendBatchedEvent([]byte{'['}, &e), ']')))
		evs, err := appendBatched(nil, "run_1", []byte(row), 0)
		if err != nil || len(evs) != 1 {
			t.Fatalf("reading back %q: %v, %v", data, evs, err)
		}
		if want := storableJSON(data); string(evs[0].Data) != want {
			t.Errorf("event data %q read back as %q", want, evs[0].Data)
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
