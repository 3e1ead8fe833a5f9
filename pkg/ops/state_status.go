package ops

import (
	"context"
	"encoding/json"

	"github.com/clawkit/clawkit/pkg/owner"
)

// state.status: the schema, river's migration version and the live owner
// leases, read through whoever owns the state (read-only).
func init() {
	domains = append(domains, func(r *owner.Registry) {
		r.Register(owner.Method{Name: "state.status", Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
			return env.Store.Status(ctx)
		}})
	})
}
