// Package store is Relay's storage contract. The engines live below it: sqlite/
// (the embedded default) and postgres/; storetest/ is the one conformance suite
// that both must pass. Domain packages declare the small interfaces they need
// (agent.Store, auth.Store, memory.Store, file.Store, vault.Store, …); Store is their union plus the engine's lifecycle.
//
// This package also holds what the SQL engines share: DB, which implements Store
// with every query written once, a Dialect for what differs between engines, and
// the runner of each engine's numbered migrations.
package store

import (
	"context"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/vault"
)

// Store is everything Relay keeps, behind one engine.
type Store interface {
	auth.Store
	auth.GroupStore
	agent.Store
	memory.Store
	file.Storage
	run.Store
	schedule.Store
	schedule.NodeStore
	vault.Store
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Engine names the engine: "sqlite" or "postgres".
	Engine() string
	// Close releases the database; it waits for nothing in flight.
	Close() error
}
