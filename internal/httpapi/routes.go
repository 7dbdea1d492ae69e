package httpapi

import (
	"net/http"

	"github.com/relay-ai/relay/internal/telemetry"
)

// access is what a route asks of its caller (docs/api.md "Authentication").
type access int

const (
	// keyOrSession routes take an API key or the session cookie (authed).
	keyOrSession access = iota
	// public routes take no authentication: the probes, the OpenAPI
	// document, the sign-in page's status, and the callbacks of single
	// sign-on and MCP authorizations.
	public
	// sameOriginOnly routes take no authentication but refuse requests that a
	// browser sent from another site (sameOrigin): signing in and out, and
	// the first setup.
	sameOriginOnly
)

// route is one operation of the API: the method and path of its ServeMux
// pattern, what it asks of its caller, and its handler.
type route struct {
	method, path string
	access       access
	handler      http.HandlerFunc
}

// table is the whole API of Relay, in one place: the mux is built from it,
// and openapi.json documents each of its routes and nothing else (a test
// checks both).
func (s *Server) table() []route {
	return []route{
		// Probes: no authentication.
		{"GET", "/healthz", public, s.healthz},
		{"GET", "/readyz", public, s.readyz},
		// This API's OpenAPI document (docs/api.md "OpenAPI"), public like the probes.
		{"GET", "/api/openapi.json", public, s.openapi},

		// Agents (docs/api.md "Agents").
		{"GET", "/api/agents", keyOrSession, s.listAgents},
		{"POST", "/api/agents", keyOrSession, s.createAgent},
		{"GET", "/api/agents/{id}", keyOrSession, s.getAgent},
		{"PATCH", "/api/agents/{id}", keyOrSession, s.patchAgent},
		{"DELETE", "/api/agents/{id}", keyOrSession, s.deleteAgent},
		{"GET", "/api/agents/{id}/versions", keyOrSession, s.agentVersions},
		{"POST", "/api/agents/{id}/versions/{version}/restore", keyOrSession, s.restoreVersion},
		{"GET", "/api/agents/{id}/shares", keyOrSession, s.agentShares},
		{"PUT", "/api/agents/{id}/shares", keyOrSession, s.setAgentShares},
		{"POST", "/api/agents/{id}/prompt", keyOrSession, s.previewPrompt},
		{"GET", "/api/agents/{id}/graph", keyOrSession, s.agentGraph},

		// Groups and the principals agents are shared with (docs/api.md "Sharing").
		{"GET", "/api/groups", keyOrSession, s.listGroups},
		{"POST", "/api/groups", keyOrSession, s.createGroup},
		{"GET", "/api/groups/{id}", keyOrSession, s.getGroup},
		{"PATCH", "/api/groups/{id}", keyOrSession, s.patchGroup},
		{"DELETE", "/api/groups/{id}", keyOrSession, s.deleteGroup},
		{"GET", "/api/principals", keyOrSession, s.searchPrincipals},

		// Memories: what Relay remembers about the calling user.
		{"GET", "/api/memories", keyOrSession, s.listMemories},
		{"GET", "/api/memories/{key}", keyOrSession, s.getMemory},
		{"PUT", "/api/memories/{key}", keyOrSession, s.putMemory},
		{"DELETE", "/api/memories/{key}", keyOrSession, s.deleteMemory},

		// Files: uploads of the calling user, ingested in the background (docs/api.md).
		{"POST", "/api/files", keyOrSession, s.uploadFile},
		{"GET", "/api/files", keyOrSession, s.listFiles},
		{"GET", "/api/files/{id}", keyOrSession, s.getFile},
		{"DELETE", "/api/files/{id}", keyOrSession, s.deleteFile},

		// Chat and runs (docs/api.md).
		{"POST", "/api/chat", keyOrSession, s.chat},
		{"GET", "/api/runs", keyOrSession, s.listRuns},
		{"GET", "/api/runs/{id}", keyOrSession, s.getRun},
		{"GET", "/api/runs/{id}/events", keyOrSession, s.runEvents},
		{"POST", "/api/runs/{id}/abort", keyOrSession, s.abortRun},
		{"POST", "/api/runs/{id}/elicitations/{eid}", keyOrSession, s.answerElicitation},
		{"GET", "/api/export/ragas", keyOrSession, s.exportRagas},
		{"GET", "/api/conversations", keyOrSession, s.listConversations},
		{"GET", "/api/conversations/{id}", keyOrSession, s.getConversation},
		{"PATCH", "/api/conversations/{id}", keyOrSession, s.renameConversation},
		{"DELETE", "/api/conversations/{id}", keyOrSession, s.deleteConversation},

		// OpenAI-compatible: any OpenAI client talks to Relay's agents.
		{"POST", "/v1/chat/completions", keyOrSession, s.completions},
		{"GET", "/v1/chat/completions/{id}", keyOrSession, s.storedCompletion},
		{"GET", "/v1/models", keyOrSession, s.models},
		{"GET", "/v1/models/{id}", keyOrSession, s.model},

		// Scheduled agents (docs/api.md "Schedules").
		{"GET", "/api/schedules", keyOrSession, s.listSchedules},
		{"POST", "/api/schedules", keyOrSession, s.createSchedule},
		{"GET", "/api/schedules/preview", keyOrSession, s.previewSchedule},
		{"GET", "/api/schedules/{id}", keyOrSession, s.getSchedule},
		{"PATCH", "/api/schedules/{id}", keyOrSession, s.patchSchedule},
		{"DELETE", "/api/schedules/{id}", keyOrSession, s.deleteSchedule},
		{"POST", "/api/schedules/{id}/run", keyOrSession, s.runSchedule},
		{"GET", "/api/schedules/{id}/runs", keyOrSession, s.scheduleRuns},

		// MCP servers (docs/api.md "MCP tools").
		{"GET", "/api/mcp/servers", keyOrSession, s.mcpServers},
		{"GET", "/api/mcp/servers/{name}/tools", keyOrSession, s.mcpServerTools},
		{"POST", "/api/mcp/servers/{name}/reconnect", keyOrSession, s.mcpReconnect},
		{"POST", "/api/mcp/tools/{key}/call", keyOrSession, s.mcpCallTool},
		// Each user's own accounts at MCP servers (docs/api.md "MCP accounts").
		{"GET", "/api/mcp/accounts", keyOrSession, s.listAccounts},
		{"GET", "/api/mcp/servers/{name}/account", keyOrSession, s.getAccount},
		{"PUT", "/api/mcp/servers/{name}/vars", keyOrSession, s.setVars},
		{"DELETE", "/api/mcp/servers/{name}/vars", keyOrSession, s.deleteVars},
		{"POST", "/api/mcp/servers/{name}/oauth", keyOrSession, s.startOAuth},
		{"DELETE", "/api/mcp/servers/{name}/oauth", keyOrSession, s.disconnectOAuth},
		{"GET", "/api/mcp/oauth/callback", public, s.oauthCallback},

		// Who am I: the user behind the API key or session.
		{"GET", "/api/me", keyOrSession, s.me},
		{"PUT", "/api/me/password", keyOrSession, s.changePassword},

		// The caller's own keys and base URLs for the endpoints that take them
		// from each user (docs/api.md "Endpoint keys").
		{"GET", "/api/endpoints/keys", keyOrSession, s.listEndpointKeys},
		{"PUT", "/api/endpoints/{name}/key", keyOrSession, s.putEndpointKey},
		{"DELETE", "/api/endpoints/{name}/key", keyOrSession, s.deleteEndpointKey},

		// What the configuration offers to build agents with (docs/api.md).
		{"GET", "/api/config", keyOrSession, s.config},

		// Signing in to the web UI (docs/api.md "Authentication"): no
		// authentication, and never from another site.
		{"GET", "/api/auth/status", public, s.authStatus},
		{"POST", "/api/auth/login", sameOriginOnly, s.login},
		{"POST", "/api/auth/logout", sameOriginOnly, s.logout},
		{"POST", "/api/auth/logout-all", keyOrSession, s.logoutAll},
		{"POST", "/api/auth/setup", sameOriginOnly, s.setup},
		{"GET", "/api/auth/oidc/login", public, s.oidcLogin},
		{"GET", "/api/auth/oidc/callback", public, s.oidcCallback},

		// Users (admins) and API keys (docs/api.md "Users", "API keys").
		{"GET", "/api/users", keyOrSession, s.admin("list users", s.listUsers)},
		{"POST", "/api/users", keyOrSession, s.admin("create users", s.createUser)},
		{"GET", "/api/users/{id}", keyOrSession, s.admin("read users", s.getUser)},
		{"PATCH", "/api/users/{id}", keyOrSession, s.admin("change users", s.patchUser)},
		{"GET", "/api/keys", keyOrSession, s.listKeys},
		{"POST", "/api/keys", keyOrSession, s.createKey},
		{"DELETE", "/api/keys/{id}", keyOrSession, s.deleteKey},
	}
}

// routes is the whole HTTP surface of Relay: the API's table, then the web UI.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.table() {
		mux.Handle(rt.method+" "+rt.path, s.guard(rt))
	}
	// The web UI (docs/ui.md): every other GET is a file of its build or
	// its index.html. Anything else is a JSON 404, as is an unknown path
	// under /api/ or /v1/ (in OpenAI's shape there).
	mux.HandleFunc("GET /", s.ui())
	mux.HandleFunc("/", s.notFound)

	return s.recoverPanics(s.logRequests(s.cors(s.limitClients(s.capBodies(telemetry.Routed(mux))))))
}

// guard wraps a route's handler in the check its access asks for.
func (s *Server) guard(rt route) http.Handler {
	switch rt.access {
	case public:
		return rt.handler
	case sameOriginOnly:
		return s.sameOrigin(rt.handler)
	}
	return s.authed(rt.handler)
}
