package store

import (
	"encoding/json"
	"testing"
)

var jsonSamples = []struct {
	data string
	fast bool // recognised without json.Valid
}{
	{`{"agent_id":"calc","text":"The sum is 5."}`, true},
	{`{"agent_id":"calc","text":"tab\tquote\" slash\\ \/ \b\f\n\r é \u00e9 \ud83d\ude00 \uD83D"}`, true},
	{"{\"text\":\"raw \xff byte\"}", true},
	{`{}`, true},
	{`{"a":""}`, true},
	{`{"a":"1","b":"2","c":"3"}`, true},
	{`{"a":"1", "b":"2"}`, false},
	{`{"a":1}`, false},
	{`{"a":{"b":"c"}}`, false},
	{`{"a":"1"} `, false},
	{`[]`, false},
	{`"s"`, false},
	{`null`, false},
	{`{"a":"1",}`, false},
	{`{"a":"1"`, false},
	{`{"a":"1""b":"2"}`, false},
	{`{"a"}`, false},
	{`{"a":"\x"}`, false},
	{`{"a":"\u12"}`, false},
	{`{"a":"\u12G4"}`, false},
	{"{\"a\":\"new\nline\"}", false},
	{`{"a":"unterminated}`, false},
	{`{"a":"1"}}`, false},
	{`{`, false},
	{``, false},
}

func TestValidJSONIsJSONValid(t *testing.T) {
	for _, s := range jsonSamples {
		b := []byte(s.data)
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", s.data, got, want)
		}
		if fast := stringObject(b); fast != s.fast {
			t.Errorf("stringObject(%q) = %v, want %v", s.data, fast, s.fast)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add([]byte(s.data))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if stringObject(b) && !json.Valid(b) {
			t.Fatalf("stringObject(%q) but json.Valid refuses it", b)
		}
		if validJSON(b) != json.Valid(b) {
			t.Fatalf("validJSON(%q) = %v, json.Valid differs", b, validJSON(b))
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	data := []byte(`{"agent_id":"regulatory-search","text":" the applicable threshold"}`)
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(data)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(data)
		}
	})
}
