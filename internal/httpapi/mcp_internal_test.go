package httpapi

import (
	"errors"
	"testing"
)

// An unavailable MCP server is named once, whether or not the manager's
// error names it already.
func TestServerUnavailable(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{`server "leaky": calling "initialize": EOF`, `MCP server "leaky": calling "initialize": EOF`},
		{`server "leaky" is unavailable (EOF); next retry 10:00:00`, `MCP server "leaky" is unavailable (EOF); next retry 10:00:00`},
		{`no answer from "leaky" within 3s (timeout)`, `MCP server "leaky": no answer from "leaky" within 3s (timeout)`},
		{`MCP server "leaky" needs you to connect your account: not yet`, `MCP server "leaky" needs you to connect your account: not yet`},
	} {
		if got := serverUnavailable("leaky", errors.New(tc.err)).Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.err, got, tc.want)
		}
	}
}
