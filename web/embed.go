// Package web holds Relay's web UI: its source (src/, a Svelte + Vite +
// TypeScript app) and its built output (dist/), which is committed and
// embedded in the binary so that `relay serve` needs no Node. CI rebuilds
// dist/ with `npm ci && npm run build` and fails when it differs from the
// committed files (docs/ui.md).
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist returns the built UI: index.html at its root, assets under assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; Sub of a valid name cannot fail
	}
	return sub
}
