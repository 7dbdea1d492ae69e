package mcp

// ToolsChanges is how many times the tools of the app-scoped server have been
// noted as changed (notifications/tools/list_changed), for tests to wait on.
func ToolsChanges(m *Manager, server string) uint64 {
	c, err := m.conn(server, nil)
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.toolsGen
}
