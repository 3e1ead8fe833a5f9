package store

import (
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
)

// EngineFor picks the engine configured for a home (database.engine).
func EngineFor(home string, cfg *config.Config) (Engine, error) {
	switch name := cfg.String("database.engine"); name {
	case "", "sqlite":
		return SQLite{Path: filepath.Join(home, DBFileName)}, nil
	case "postgres":
		return nil, errs.Failed("engine_unsupported", "database.engine postgres is not available in this build yet").
			WithHint("unset it with 'clawkit config unset database.engine' to use the embedded SQLite store")
	default:
		return nil, errs.Failed("engine_unsupported", "unknown database.engine %q", name).
			WithHint("use sqlite (the default)")
	}
}
