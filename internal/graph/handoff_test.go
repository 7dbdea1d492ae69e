package graph

import "testing"

func TestHandoffValue(t *testing.T) {
	for _, tt := range []struct {
		args, key, want string
	}{
		{`{"order":"ORD-9"}`, "order", "ORD-9"},
		{`{"order":12345}`, "order", "12345"},
		{`{"order":{"id": 7, "lines": [1, 2]}}`, "order", `{"id":7,"lines":[1,2]}`},
		{`{"order":true}`, "order", "true"},
		{`{"order":null,"note":"see above"}`, "order", "see above"},
		{`{"ord":"ORD-9"}`, "order", "ORD-9"},             // under another name
		{`{"count":3,"ord":"ORD-9"}`, "order", "ORD-9"},   // a string before any other value
		{`{"b":"second","a":"first"}`, "order", "second"}, // the first, in the order sent
		{`{"n":3}`, "order", "3"},                         // no string at all
		{`{"instructions":"go"}`, "", "go"},               // the default key
		{`{"order":"","x":"y"}`, "order", "y"},            // an empty value is none
		{`{}`, "order", ""},
		{`not json`, "order", ""},
		{`["a"]`, "order", ""},
		{`{"order":"ok", "broken": }`, "order", "ok"},
	} {
		if got := handoffValue(tt.args, tt.key); got != tt.want {
			t.Errorf("handoffValue(%s, %q) = %q, want %q", tt.args, tt.key, got, tt.want)
		}
	}
}
