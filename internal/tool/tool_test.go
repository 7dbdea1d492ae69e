package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/tool"
)

func TestResults(t *testing.T) {
	if d := cmp.Diff(tool.Result{Text: "done"}, tool.Text("done")); d != "" {
		t.Errorf("Text (-want +got):\n%s", d)
	}
	if d := cmp.Diff(tool.Result{Text: `key "x" is 3 long`, IsError: true}, tool.Errorf("key %q is %d long", "x", 3)); d != "" {
		t.Errorf("Errorf (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		r    tool.Result
		want string
	}{
		{tool.Text("ok"), `{"text":"ok"}`},
		{tool.Errorf("bad"), `{"text":"bad","is_error":true}`},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil || string(b) != tc.want {
			t.Errorf("json of %+v = %s, %v; want %s", tc.r, b, err, tc.want)
		}
	}
}
