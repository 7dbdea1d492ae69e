package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
)

func (s *Server) mcpServers(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	var who *mcp.User
	if !u.IsAdmin() {
		who = run.MCPUser(u) // admins see every user's connections summed up
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": s.opts.MCP.Status(who)})
}

// serverUnavailable is the error of an MCP server that could not be reached,
// named once: the manager's errors mostly start with it already.
func serverUnavailable(name string, err error) error {
	msg := err.Error()
	if strings.HasPrefix(msg, fmt.Sprintf("MCP server %q ", name)) {
		// Already names it (a user's missing settings or account).
		return fault.Wrap(fault.Unavailable, nil, "%s", msg)
	}
	if rest, ok := strings.CutPrefix(msg, fmt.Sprintf("server %q", name)); ok {
		return fault.Wrap(fault.Unavailable, nil, "MCP server %q%s", name, rest)
	}
	return fault.Wrap(fault.Unavailable, nil, "MCP server %q: %s", name, msg)
}

func (s *Server) mcpServerTools(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.opts.MCP.Server(name); !ok {
		s.writeError(w, r, fault.New(fault.NotFound, "no MCP server %q", name))
		return
	}
	tools, err := s.opts.MCP.Tools(r.Context(), name, run.MCPUser(userFrom(r.Context())))
	if err != nil {
		s.writeError(w, r, serverUnavailable(name, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": tools})
}

func (s *Server) mcpReconnect(w http.ResponseWriter, r *http.Request) {
	if !userFrom(r.Context()).IsAdmin() {
		s.writeError(w, r, fault.New(fault.Forbidden, "only admins may reconnect MCP servers"))
		return
	}
	name := r.PathValue("name")
	if _, ok := s.opts.MCP.Server(name); !ok {
		s.writeError(w, r, fault.New(fault.NotFound, "no MCP server %q", name))
		return
	}
	if err := s.opts.MCP.Reconnect(r.Context(), name); err != nil {
		s.writeError(w, r, serverUnavailable(name, err))
		return
	}
	for _, st := range s.opts.MCP.Status(nil) {
		if st.Name == name {
			writeJSON(w, http.StatusOK, st)
			return
		}
	}
}

// mcpCallTool calls one MCP tool for the caller, as an agent's call would run
// it, and answers its result as the model would read it: {"text", "is_error"}.
// A failure the model would read (bad arguments, a timeout, a server that
// needs the caller to connect their account) is a 200 with is_error.
func (s *Server) mcpCallTool(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	key := r.PathValue("key")
	u := run.MCPUser(userFrom(r.Context()))
	if _, _, err := s.opts.MCP.ResolveFor(r.Context(), u, key); err != nil {
		s.writeError(w, r, fault.New(fault.NotFound, "no MCP tool %q", key))
		return
	}
	if len(in.Arguments) == 0 || string(in.Arguments) == "null" {
		in.Arguments = json.RawMessage("{}")
	}
	res, err := s.opts.MCP.Call(r.Context(), u, key, in.Arguments)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"text": mcp.FailureText(key, err), "is_error": true})
		return
	}
	out := mcp.Format(res, mcp.FamilyText)
	writeJSON(w, http.StatusOK, map[string]any{"text": out.Text, "is_error": out.IsError})
}
