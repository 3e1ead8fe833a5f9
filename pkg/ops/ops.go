// Package ops assembles the one registry of stateful operations that both
// executors (the offline router and the gateway) run. Each domain adds its
// methods from a file of its own here (an init appending to domains), so no
// domain imports another and pkg/cli only needs this package.
package ops

import (
	"sync"

	"github.com/clawkit/clawkit/pkg/owner"
)

var (
	domains []func(*owner.Registry)
	once    sync.Once
	reg     *owner.Registry
)

// Registry returns the process-wide registry with every domain's methods.
func Registry() *owner.Registry {
	once.Do(func() {
		reg = owner.NewRegistry()
		registerCore(reg)
		for _, d := range domains {
			d(reg)
		}
	})
	return reg
}
