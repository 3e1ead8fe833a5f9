package owner

import (
	"context"
	"time"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/store"
)

// Migrate applies the schema migrations up to target (0: the newest) under
// exclusive offline ownership: refused while a gateway serves the home
// (ErrGatewayRunning), else it waits up to lockTimeout for the owner lock,
// resolves the engine as an owner does and migrates it.
func Migrate(ctx context.Context, h Home, lockTimeout time.Duration, target int) (store.MigrateResult, error) {
	lock, err := AcquireExclusive(ctx, h, lockTimeout)
	if err != nil {
		return store.MigrateResult{}, err
	}
	defer lock.Release()
	cfg, err := config.Load(h.Dir)
	if err != nil {
		return store.MigrateResult{}, err
	}
	e, err := ResolveEngine(h, cfg)
	if err != nil {
		return store.MigrateResult{}, err
	}
	return store.Migrate(ctx, e, target)
}
