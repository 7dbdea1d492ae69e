package mcptest

import (
	"encoding/json"
	"testing"

	"github.com/relay-ai/relay/internal/mcp"
)

func TestLiftParams(t *testing.T) {
	for _, tc := range []struct {
		name, params, xUser, want string
	}{
		{"nothing to lift", `{"name":"echo","arguments":{}}`, "", `{"name":"echo","arguments":{}}`},
		{"userId", `{"name":"echo","userId":"u1"}`, "", `{"_meta":{"relay.test/userId":"u1"},"name":"echo","userId":"u1"}`},
		{"kept meta", `{"name":"echo","userId":7,"_meta":{"progressToken":3}}`, "ann", `{"_meta":{"progressToken":3,"relay.test/userId":7,"relay.test/xUser":"ann"},"name":"echo","userId":7}`},
		{"header only", `{"name":"echo"}`, "ann", `{"_meta":{"relay.test/xUser":"ann"},"name":"echo"}`},
		{"not an object", `[1,2]`, "ann", `[1,2]`},
		{"meta not an object", `{"userId":"u1","_meta":5}`, "", `{"userId":"u1","_meta":5}`},
		{"absent", ``, "ann", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(liftParams(json.RawMessage(tc.params), tc.xUser)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestLiftBody(t *testing.T) {
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","userId":"u1"}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`
	got, ok := liftBody([]byte(body), "")
	if !ok {
		t.Fatal("nothing lifted")
	}
	msgs, err := mcp.DecodeMessages(got)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("%s: %v", got, err)
	}
	if _, ok := liftBody([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), ""); ok {
		t.Error("a body with nothing to lift was rewritten")
	}
	if _, ok := liftBody([]byte(`not json`), "ann"); ok {
		t.Error("a body that is not JSON-RPC was rewritten")
	}
}
