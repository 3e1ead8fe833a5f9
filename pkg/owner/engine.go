package owner

import (
	"os"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/store"
)

// DatabaseProfile is the credentials.json entry whose secret is the
// PostgreSQL password (used only when the URL, PGPASSWORD and the libpq
// password file give none).
const DatabaseProfile = "database"

// ResolveEngine picks the home's engine. Only an owner calls it: the
// offline executor once it holds the owner lock, the gateway once it owns
// the home, `state migrate` under exclusive ownership. A command routed to
// a gateway never gets here, so it never reads database settings or needs
// database credentials. The result is kept for the whole operation: a
// config change meanwhile does not switch engines under it.
func ResolveEngine(h Home, cfg *config.Config) (store.Engine, error) {
	return store.EngineForEnv(h.Dir, cfg, os.Getenv, func() (string, error) {
		s, err := auth.Load(h.Dir)
		if err != nil {
			return "", err
		}
		p, ok := s.Get(DatabaseProfile)
		if !ok {
			return "", nil
		}
		return p.Secret, nil
	})
}
