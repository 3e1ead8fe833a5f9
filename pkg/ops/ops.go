// Package ops assembles the one registry of stateful operations that both
// executors (the offline router and the gateway) run. Each domain adds its
// operations here, explicitly, so no domain imports another and pkg/cli
// only needs this package (docs/architecture.md).
package ops

import (
	"sync"

	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/research/riversched"
	"github.com/clawkit/clawkit/pkg/skills"
)

var registry = sync.OnceValue(func() *owner.Registry {
	r := owner.NewRegistry()
	registerCore(r)
	registerOAuth(r)
	// On PostgreSQL, research's background work runs on river (shared by
	// every gateway on the database); SQLite keeps research's own poller.
	(&research.Service{Shared: riversched.New()}).Register(r)
	skills.Register(r)
	return r
})

// Registry returns the process-wide registry with every domain's
// operations, built on first use.
func Registry() *owner.Registry { return registry() }
