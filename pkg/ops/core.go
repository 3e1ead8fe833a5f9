package ops

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// SessionParams names a session.
type SessionParams struct {
	AgentID      string `json:"agentId"`
	SessionKey   string `json:"sessionKey"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
}

// AuthAddParams adds a profile. The secret travels only over the private
// socket (or stays in-process) and is never logged.
type AuthAddParams struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Secret   string `json:"secret"`
	Replace  bool   `json:"replace"`
}

// ConfigParams changes one config path.
type ConfigParams struct {
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// BackupParams names the backup file (absolute).
type BackupParams struct {
	Path string `json:"path"`
}

// BackupResult describes a finished backup.
type BackupResult struct {
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`
	SchemaVersion int    `json:"schemaVersion"`
	Engine        string `json:"engine"`
}

func decode[T any](params json.RawMessage) (T, error) {
	var v T
	dec := json.NewDecoder(bytesReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, errs.Usage("bad_params", "malformed parameters: %v", err)
	}
	return v, nil
}

// admitWith turns a parameter check into a Method.Admit.
func admitWith[T any](check func(T) error) func(string, json.RawMessage) error {
	return func(_ string, raw json.RawMessage) error {
		p, err := decode[T](raw)
		if err != nil {
			return err
		}
		return check(p)
	}
}

func checkAuthAdd(p AuthAddParams) error {
	switch p.Provider {
	case "google":
	case "postgres":
		// The PostgreSQL engine's password: one profile, the one the
		// engine reads, and only a password (an api-key kind secret).
		if p.ID != owner.DatabaseProfile || p.Kind != auth.KindAPIKey {
			return errs.Usage("bad_database_profile", "a postgres profile is the database password: its id is %q and its kind api-key", owner.DatabaseProfile).
				WithHint("clawkit auth add %s --provider postgres --api-key-env PGPW", owner.DatabaseProfile)
		}
	default:
		return errs.Usage("unknown_provider", "unknown provider %q", p.Provider).WithHint("supported: google, postgres (the database password)")
	}
	if p.Kind != auth.KindAPIKey && p.Kind != auth.KindOAuth {
		return errs.Usage("unknown_kind", "unknown credential kind %q", p.Kind).WithHint("use api-key or oauth")
	}
	return auth.CheckNew(p.ID, p.Secret)
}

func checkBackup(p BackupParams) error {
	if !filepath.IsAbs(p.Path) {
		return errs.Usage("bad_params", "backup path must be absolute")
	}
	if fi, err := os.Stat(filepath.Dir(p.Path)); err != nil || !fi.IsDir() {
		return errs.Failed("backup_dir_missing", "the folder of %s does not exist", p.Path).WithHint("create it first")
	}
	return nil
}

func checkConfigPath(p ConfigParams) error {
	_, err := config.SplitPath(p.Path)
	return err
}

func registerCore(r *owner.Registry) {
	sess := func(name string, write bool, f func(ctx context.Context, env *owner.Env, p SessionParams) (any, error)) {
		check := func(p SessionParams) error {
			if name == "session.list" {
				return nil
			}
			return store.ValidateIDs(p.AgentID, p.SessionKey)
		}
		r.Register(owner.Method{Name: name, Write: write, Admit: admitWith(check), Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
			p, err := decode[SessionParams](raw)
			if err != nil {
				return nil, err
			}
			if err := check(p); err != nil {
				return nil, err
			}
			return f(ctx, env, p)
		}})
	}
	sess("session.create", true, func(ctx context.Context, env *owner.Env, p SessionParams) (any, error) {
		if err := env.Scope.AssertCurrent(); err != nil {
			return nil, err
		}
		return env.Writer().CreateSession(ctx, p.AgentID, p.SessionKey, env.Now())
	})
	sess("session.show", false, func(ctx context.Context, env *owner.Env, p SessionParams) (any, error) {
		return env.Store.GetSession(ctx, p.AgentID, p.SessionKey)
	})
	sess("session.list", false, func(ctx context.Context, env *owner.Env, p SessionParams) (any, error) {
		return env.Store.ListSessions(ctx, p.AgentID)
	})
	for _, action := range []string{"reset", "revoke", "refreshing", "activate"} {
		sess("session."+action, true, func(ctx context.Context, env *owner.Env, p SessionParams) (any, error) {
			if err := env.Scope.AssertCurrent(); err != nil {
				return nil, err
			}
			return env.Writer().UpdateSession(ctx, p.AgentID, p.SessionKey, action, p.RetryAfterMs, env.Now())
		})
	}

	r.Register(owner.Method{Name: "auth.add", Write: true, FilesOnly: true, Admit: admitWith(checkAuthAdd), Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
		p, err := decode[AuthAddParams](raw)
		if err != nil {
			return nil, err
		}
		if err := checkAuthAdd(p); err != nil {
			return nil, err
		}
		prof := auth.Profile{ID: p.ID, Provider: p.Provider, Kind: p.Kind, Secret: p.Secret, CreatedAt: env.Now().UTC().Truncate(time.Second)}
		return editCredentials(env, func(s *auth.Store) (auth.Public, error) {
			return prof.Public(), s.Add(prof, p.Replace)
		})
	}})
	r.Register(owner.Method{Name: "auth.list", FilesOnly: true, Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
		s, err := auth.Load(env.Home)
		if err != nil {
			return nil, err
		}
		out := []auth.Public{}
		for _, p := range s.List() {
			out = append(out, p.Public())
		}
		return out, nil
	}})
	r.Register(owner.Method{Name: "auth.remove", Write: true, FilesOnly: true, Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
		p, err := decode[struct {
			ID string `json:"id"`
		}](raw)
		if err != nil {
			return nil, err
		}
		return editCredentials(env, func(s *auth.Store) (auth.Public, error) {
			prof, _ := s.Get(p.ID)
			return prof.Public(), s.Remove(p.ID)
		})
	}})

	r.Register(owner.Method{Name: "config.set", Write: true, FilesOnly: true, Admit: admitWith(checkConfigPath), Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
		p, err := decode[ConfigParams](raw)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return nil, errs.Usage("bad_params", "malformed value: %v", err)
		}
		return editConfig(env, func(cfg *config.Config) (any, bool, error) {
			return map[string]any{"path": p.Path, "value": v}, true, cfg.Set(p.Path, v)
		})
	}})
	r.Register(owner.Method{Name: "config.unset", Write: true, FilesOnly: true, Admit: admitWith(checkConfigPath), Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
		p, err := decode[ConfigParams](raw)
		if err != nil {
			return nil, err
		}
		return editConfig(env, func(cfg *config.Config) (any, bool, error) {
			removed, err := cfg.Unset(p.Path)
			return map[string]any{"path": p.Path, "removed": removed}, removed, err
		})
	}})

	r.Register(owner.Method{Name: "state.backup", Write: true, Admit: admitWith(checkBackup), Handler: func(ctx context.Context, env *owner.Env, raw json.RawMessage) (any, error) {
		p, err := decode[BackupParams](raw)
		if err != nil {
			return nil, err
		}
		if err := checkBackup(p); err != nil {
			return nil, err
		}
		if err := env.Scope.AssertCurrent(); err != nil {
			return nil, err
		}
		// Writer admission runs inside Backup, immediately before the copy
		// is published (its checks before that are refusals before any
		// effect).
		if err := env.Store.Engine().Backup(ctx, env.Store.DB(), p.Path, env.Admit); err != nil {
			return nil, err
		}
		fi, err := os.Stat(p.Path)
		if err != nil {
			return nil, errs.Failed("backup_failed", "backup vanished: %v", err)
		}
		v, _ := env.Store.SchemaVersion(ctx)
		return BackupResult{Path: p.Path, Bytes: fi.Size(), SchemaVersion: v, Engine: env.Store.Engine().Name()}, nil
	}})
}

// editCredentials loads the credentials file, applies change, checks the
// owner fence right before the file is replaced, and saves it — all under
// the file's edit lock, so concurrent handlers never lose each other's
// profiles.
func editCredentials(env *owner.Env, change func(*auth.Store) (auth.Public, error)) (res any, err error) {
	err = fsx.EditLocked(filepath.Join(env.Home, auth.FileName), func() error {
		s, err := auth.Load(env.Home)
		if err != nil {
			return err
		}
		pub, err := change(s)
		if err != nil {
			return err
		}
		if err := env.Scope.AssertCurrent(); err != nil {
			return err
		}
		if err := env.Admit(); err != nil { // writer admission, right before the file is replaced
			return err
		}
		if err := s.Save(); err != nil {
			return err
		}
		res = pub
		return nil
	})
	return res, err
}

// editConfig loads the config, applies change, and — when it changed
// something — checks the owner fence right before the file is replaced.
// The whole load-change-save runs under the config's edit lock: without
// it, 20 concurrent `config set` calls through one gateway kept only some
// of their keys while all of them exited 0.
func editConfig(env *owner.Env, change func(*config.Config) (res any, changed bool, err error)) (res any, err error) {
	err = fsx.EditLocked(filepath.Join(env.Home, config.FileName), func() error {
		cfg, err := config.Load(env.Home)
		if err != nil {
			return err
		}
		r, changed, err := change(cfg)
		if err != nil {
			return err
		}
		res = r
		if !changed {
			return nil
		}
		if err := env.Scope.AssertCurrent(); err != nil {
			res = nil
			return err
		}
		if err := env.Admit(); err != nil { // writer admission, right before the file is replaced
			res = nil
			return err
		}
		return cfg.Save()
	})
	return res, err
}
