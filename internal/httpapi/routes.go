package httpapi

import "net/http"

// routes is the whole HTTP surface of Relay, in one place.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()

	// Probes: no authentication.
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)

	// Agents (docs/api.md "Agents").
	mux.Handle("GET /api/agents", s.authed(s.listAgents))
	mux.Handle("POST /api/agents", s.authed(s.createAgent))
	mux.Handle("GET /api/agents/{id}", s.authed(s.getAgent))
	mux.Handle("PATCH /api/agents/{id}", s.authed(s.patchAgent))
	mux.Handle("DELETE /api/agents/{id}", s.authed(s.deleteAgent))
	mux.Handle("GET /api/agents/{id}/versions", s.authed(s.agentVersions))
	mux.Handle("POST /api/agents/{id}/versions/{version}/restore", s.authed(s.restoreVersion))
	mux.Handle("GET /api/agents/{id}/shares", s.authed(s.agentShares))
	mux.Handle("PUT /api/agents/{id}/shares", s.authed(s.setAgentShares))
	mux.Handle("POST /api/agents/{id}/prompt", s.authed(s.previewPrompt))
	mux.Handle("GET /api/agents/{id}/graph", s.authed(s.agentGraph))

	// Groups and the principals agents are shared with (docs/api.md "Sharing").
	mux.Handle("GET /api/groups", s.authed(s.listGroups))
	mux.Handle("POST /api/groups", s.authed(s.createGroup))
	mux.Handle("GET /api/groups/{id}", s.authed(s.getGroup))
	mux.Handle("PATCH /api/groups/{id}", s.authed(s.patchGroup))
	mux.Handle("DELETE /api/groups/{id}", s.authed(s.deleteGroup))
	mux.Handle("GET /api/principals", s.authed(s.searchPrincipals))

	// Memories: what Relay remembers about the calling user.
	mux.Handle("GET /api/memories", s.authed(s.listMemories))
	mux.Handle("GET /api/memories/{key}", s.authed(s.getMemory))
	mux.Handle("PUT /api/memories/{key}", s.authed(s.putMemory))
	mux.Handle("DELETE /api/memories/{key}", s.authed(s.deleteMemory))

	// Files: uploads of the calling user, ingested in the background (docs/api.md).
	mux.Handle("POST /api/files", s.authed(s.uploadFile))
	mux.Handle("GET /api/files", s.authed(s.listFiles))
	mux.Handle("GET /api/files/{id}", s.authed(s.getFile))
	mux.Handle("DELETE /api/files/{id}", s.authed(s.deleteFile))

	// Chat and runs (docs/api.md).
	mux.Handle("POST /api/chat", s.authed(s.chat))
	mux.Handle("GET /api/runs", s.authed(s.listRuns))
	mux.Handle("GET /api/runs/{id}", s.authed(s.getRun))
	mux.Handle("GET /api/runs/{id}/events", s.authed(s.runEvents))
	mux.Handle("POST /api/runs/{id}/abort", s.authed(s.abortRun))
	mux.Handle("POST /api/runs/{id}/elicitations/{eid}", s.authed(s.answerElicitation))
	mux.Handle("GET /api/export/ragas", s.authed(s.exportRagas))
	mux.Handle("GET /api/conversations", s.authed(s.listConversations))
	mux.Handle("GET /api/conversations/{id}", s.authed(s.getConversation))
	mux.Handle("PATCH /api/conversations/{id}", s.authed(s.renameConversation))
	mux.Handle("DELETE /api/conversations/{id}", s.authed(s.deleteConversation))

	// OpenAI-compatible: any OpenAI client talks to Relay's agents.
	mux.Handle("POST /v1/chat/completions", s.authed(s.completions))
	mux.Handle("GET /v1/chat/completions/{id}", s.authed(s.storedCompletion))
	mux.Handle("GET /v1/models", s.authed(s.models))
	mux.Handle("GET /v1/models/{id}", s.authed(s.model))

	// Scheduled agents (docs/api.md "Schedules").
	mux.Handle("GET /api/schedules", s.authed(s.listSchedules))
	mux.Handle("POST /api/schedules", s.authed(s.createSchedule))
	mux.Handle("GET /api/schedules/preview", s.authed(s.previewSchedule))
	mux.Handle("GET /api/schedules/{id}", s.authed(s.getSchedule))
	mux.Handle("PATCH /api/schedules/{id}", s.authed(s.patchSchedule))
	mux.Handle("DELETE /api/schedules/{id}", s.authed(s.deleteSchedule))
	mux.Handle("POST /api/schedules/{id}/run", s.authed(s.runSchedule))
	mux.Handle("GET /api/schedules/{id}/runs", s.authed(s.scheduleRuns))

	// MCP servers (docs/api.md "MCP tools").
	mux.Handle("GET /api/mcp/servers", s.authed(s.mcpServers))
	mux.Handle("GET /api/mcp/servers/{name}/tools", s.authed(s.mcpServerTools))
	mux.Handle("POST /api/mcp/servers/{name}/reconnect", s.authed(s.mcpReconnect))
	mux.Handle("POST /api/mcp/tools/{key}/call", s.authed(s.mcpCallTool))
	// Each user's own accounts at MCP servers (docs/api.md "MCP accounts").
	mux.Handle("GET /api/mcp/accounts", s.authed(s.listAccounts))
	mux.Handle("GET /api/mcp/servers/{name}/account", s.authed(s.getAccount))
	mux.Handle("PUT /api/mcp/servers/{name}/vars", s.authed(s.setVars))
	mux.Handle("DELETE /api/mcp/servers/{name}/vars", s.authed(s.deleteVars))
	mux.Handle("POST /api/mcp/servers/{name}/oauth", s.authed(s.startOAuth))
	mux.Handle("DELETE /api/mcp/servers/{name}/oauth", s.authed(s.disconnectOAuth))
	mux.HandleFunc("GET /api/mcp/oauth/callback", s.oauthCallback)

	// Who am I: the user behind the API key or session.
	mux.Handle("GET /api/me", s.authed(s.me))
	mux.Handle("PUT /api/me/password", s.authed(s.changePassword))

	// The caller's own keys and base URLs for the endpoints that take them
	// from each user (docs/api.md "Endpoint keys").
	mux.Handle("GET /api/endpoints/keys", s.authed(s.listEndpointKeys))
	mux.Handle("PUT /api/endpoints/{name}/key", s.authed(s.putEndpointKey))
	mux.Handle("DELETE /api/endpoints/{name}/key", s.authed(s.deleteEndpointKey))

	// What the configuration offers to build agents with (docs/api.md).
	mux.Handle("GET /api/config", s.authed(s.config))

	// Signing in to the web UI (docs/api.md "Authentication"): no
	// authentication, and never from another site.
	mux.HandleFunc("GET /api/auth/status", s.authStatus)
	mux.Handle("POST /api/auth/login", s.sameOrigin(s.login))
	mux.Handle("POST /api/auth/logout", s.sameOrigin(s.logout))
	mux.Handle("POST /api/auth/logout-all", s.authed(s.logoutAll))
	mux.Handle("POST /api/auth/setup", s.sameOrigin(s.setup))
	mux.HandleFunc("GET /api/auth/oidc/login", s.oidcLogin)
	mux.HandleFunc("GET /api/auth/oidc/callback", s.oidcCallback)

	// Users (admins) and API keys (docs/api.md "Users", "API keys").
	mux.Handle("GET /api/users", s.authed(s.admin("list users", s.listUsers)))
	mux.Handle("POST /api/users", s.authed(s.admin("create users", s.createUser)))
	mux.Handle("GET /api/users/{id}", s.authed(s.admin("read users", s.getUser)))
	mux.Handle("PATCH /api/users/{id}", s.authed(s.admin("change users", s.patchUser)))
	mux.Handle("GET /api/keys", s.authed(s.listKeys))
	mux.Handle("POST /api/keys", s.authed(s.createKey))
	mux.Handle("DELETE /api/keys/{id}", s.authed(s.deleteKey))

	// The web UI (docs/ui.md): every other GET is a file of its build or
	// its index.html. Anything else is a JSON 404 (or 405), as is an
	// unknown path under /api/ or /v1/.
	mux.HandleFunc("GET /", s.ui())
	mux.HandleFunc("/", s.notFound)

	return s.recoverPanics(s.logRequests(s.cors(s.limitClients(s.capBodies(mux)))))
}
