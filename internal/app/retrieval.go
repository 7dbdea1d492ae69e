package app

import (
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
)

// Retrieval reports whether a tool's results are retrieved contexts, for the
// Ragas export: file_search, and the tools of MCP servers marked
// `retrieval: true`.
func (a *App) Retrieval() func(toolName string) bool {
	cfg := a.Config
	return func(name string) bool {
		if name == prompt.FileSearch {
			return true
		}
		_, server, ok := mcp.SplitKey(name)
		if !ok {
			return false
		}
		for n, s := range cfg.MCPServers {
			if s.Retrieval && mcp.NamedBy(n, server) {
				return true
			}
		}
		return false
	}
}
