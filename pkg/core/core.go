// Package core holds the core operations on a home's own state: sessions
// (session.*), credentials (auth.*), config (config.*) and the database
// as a whole (state.*). Like every domain it declares each operation's
// handle beside its Op; pkg/ops only assembles the registry
// (docs/architecture.md).
package core

import (
	"bytes"
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

// AuthRemoveParams names the profile to remove.
type AuthRemoveParams struct {
	ID string `json:"id"`
}

// None is the parameters of an operation that takes none.
type None struct{}

// The core operations' handles: each names its operation with its types;
// Register registers each Op through its handle, so the name is written
// once and the compiler holds the handle's types to the Op's.
var (
	OpSessionCreate     = owner.Handle[SessionParams, store.Session]{Name: "session.create"}
	OpSessionShow       = owner.Handle[SessionParams, store.Session]{Name: "session.show"}
	OpSessionList       = owner.Handle[SessionParams, []store.Session]{Name: "session.list"}
	OpSessionReset      = owner.Handle[SessionParams, store.Session]{Name: "session.reset"}
	OpSessionRevoke     = owner.Handle[SessionParams, store.Session]{Name: "session.revoke"}
	OpSessionRefreshing = owner.Handle[SessionParams, store.Session]{Name: "session.refreshing"}
	OpSessionActivate   = owner.Handle[SessionParams, store.Session]{Name: "session.activate"}
	OpAuthAdd           = owner.Handle[AuthAddParams, auth.Public]{Name: "auth.add"}
	OpAuthList          = owner.Handle[None, []auth.Public]{Name: "auth.list"}
	OpAuthRemove        = owner.Handle[AuthRemoveParams, auth.Public]{Name: "auth.remove"}
	OpConfigSet         = owner.Handle[ConfigParams, map[string]any]{Name: "config.set"}
	OpConfigUnset       = owner.Handle[ConfigParams, map[string]any]{Name: "config.unset"}
	OpStateBackup       = owner.Handle[BackupParams, BackupResult]{Name: "state.backup"}
	OpStateStatus       = owner.Handle[None, *store.Status]{Name: "state.status"}
)

func checkAuthAdd(p AuthAddParams) error {
	switch p.Provider {
	case "google":
	case "postgres":
		// The PostgreSQL engine's password: one profile, the one the
		// engine reads, and only a password (an api-key kind secret).
		if p.ID != owner.DatabaseProfile || p.Kind != auth.KindAPIKey {
			return errs.Usage(CodeBadDatabaseProfile, "a postgres profile is the database password: its id is %q and its kind api-key", owner.DatabaseProfile).
				WithHint("clawkit auth add %s --provider postgres --api-key-env PGPW", owner.DatabaseProfile)
		}
	case "mcp":
		// An MCP server's HTTP header value, read by mcp's --header
		// (docs/mcp.md, "Over HTTP") and a research job's --mcp-header
		// (docs/research.md, "Tools"): only the header kinds, and those
		// only for provider mcp.
		if !auth.IsHeaderKind(p.Kind) {
			return errs.Usage(CodeUnknownKind, "an mcp profile holds an HTTP header's value: its kind is header (the value as is) or bearer (a token, sent as Bearer TOKEN), not %q", p.Kind).
				WithHint("clawkit auth add %s --provider mcp --kind header --api-key-env VAR (or --kind bearer for a token)", p.ID)
		}
		return auth.CheckNew(p.ID, p.Secret)
	default:
		return errs.Usage(CodeUnknownProvider, "unknown provider %q", p.Provider).WithHint("supported: google, postgres (the database password), mcp (an MCP server's header value)")
	}
	if p.Kind != auth.KindAPIKey && p.Kind != auth.KindOAuth {
		return errs.Usage(CodeUnknownKind, "unknown credential kind %q", p.Kind).WithHint("use api-key or oauth")
	}
	return auth.CheckNew(p.ID, p.Secret)
}

func checkBackup(p BackupParams) error {
	if !filepath.IsAbs(p.Path) {
		return errs.Usage(errs.CodeInvalidParams, "backup path must be absolute")
	}
	return nil
}

// admitBackup refuses a backup into a folder that does not exist: it reads
// the file system and changes nothing, so it runs before the home exists.
func admitBackup(_ owner.Pre, p BackupParams) error {
	if fi, err := os.Stat(filepath.Dir(p.Path)); err != nil || !fi.IsDir() {
		return errs.Failed(CodeBackupDirMissing, "the folder of %s does not exist", p.Path).WithHint("create it first")
	}
	return nil
}

func checkConfigPath(p ConfigParams) error {
	_, err := config.SplitPath(p.Path)
	return err
}

// checkConfigSet also needs a value that is one JSON document.
func checkConfigSet(p ConfigParams) error {
	if err := checkConfigPath(p); err != nil {
		return err
	}
	v, err := configValue(p)
	if err != nil {
		return err
	}
	return config.CheckValue(p.Path, v)
}

func configValue(p ConfigParams) (any, error) {
	// Numbers stay as written (1e999 is a JSON number the file can hold),
	// as config.ParseValue and config.Load read them.
	var v any
	dec := json.NewDecoder(bytes.NewReader(p.Value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, errs.Usage(errs.CodeInvalidParams, "malformed value: %v", err)
	}
	return v, nil
}

// admitConfigSet applies the change to the config as read for routing and
// refuses what Set would refuse (a value that does not fit, a database
// setting the engine cannot use), before anything is created. The
// operation applies it again under the config's edit lock.
func admitConfigSet(pre owner.Pre, p ConfigParams) error {
	if pre.ConfigErr != nil {
		return pre.ConfigErr
	}
	v, err := configValue(p)
	if err != nil {
		return err
	}
	c := &config.Config{Path: pre.Config.Path, Root: cloneJSON(pre.Config.Root)}
	if err := c.Set(p.Path, v); err != nil {
		return err
	}
	_, err = c.Encode() // the file it would make must be readable back
	return err
}

// cloneJSON copies a decoded JSON tree, so a trial edit leaves the
// original untouched.
func cloneJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneJSON(sub)
		}
		out[k] = v
	}
	return out
}

func checkSession(p SessionParams) error { return store.ValidateIDs(p.AgentID, p.SessionKey) }

// Register adds the core operations to r.
func Register(r *owner.Registry) {
	registerOAuth(r)
	OpSessionCreate.Register(r, owner.Op[SessionParams, store.Session]{Write: true, Check: owner.Refusals(checkSession),
		Run: func(ctx context.Context, env *owner.OpEnv, p SessionParams) (store.Session, error) {
			if err := env.Fence.AssertCurrent(); err != nil {
				return store.Session{}, err
			}
			return env.Writer().CreateSession(ctx, p.AgentID, p.SessionKey, env.Now())
		}})
	OpSessionShow.Register(r, owner.Op[SessionParams, store.Session]{Check: owner.Refusals(checkSession),
		Run: func(ctx context.Context, env *owner.OpEnv, p SessionParams) (store.Session, error) {
			return env.Store.GetSession(ctx, p.AgentID, p.SessionKey)
		}})
	OpSessionList.Register(r, owner.Op[SessionParams, []store.Session]{
		Run: func(ctx context.Context, env *owner.OpEnv, p SessionParams) ([]store.Session, error) {
			return env.Store.ListSessions(ctx, p.AgentID)
		}})
	for h, action := range map[owner.Handle[SessionParams, store.Session]]string{OpSessionReset: "reset", OpSessionRevoke: "revoke", OpSessionRefreshing: "refreshing", OpSessionActivate: "activate"} {
		h.Register(r, owner.Op[SessionParams, store.Session]{Write: true, Check: owner.Refusals(checkSession),
			Run: func(ctx context.Context, env *owner.OpEnv, p SessionParams) (store.Session, error) {
				if err := env.Fence.AssertCurrent(); err != nil {
					return store.Session{}, err
				}
				return env.Writer().UpdateSession(ctx, p.AgentID, p.SessionKey, action, p.RetryAfterMs, env.Now())
			}})
	}

	OpAuthAdd.Register(r, owner.Op[AuthAddParams, auth.Public]{Write: true, FilesOnly: true, Check: owner.Refusals(checkAuthAdd),
		Run: func(ctx context.Context, env *owner.OpEnv, p AuthAddParams) (auth.Public, error) {
			prof := auth.Profile{ID: p.ID, Provider: p.Provider, Kind: p.Kind, Secret: p.Secret, CreatedAt: env.Now().UTC().Truncate(time.Second)}
			return editCredentials(env, func(s *auth.Store) (auth.Public, error) {
				return prof.Public(), s.Add(prof, p.Replace)
			})
		}})
	OpAuthList.Register(r, owner.Op[None, []auth.Public]{FilesOnly: true,
		Run: func(ctx context.Context, env *owner.OpEnv, _ None) ([]auth.Public, error) {
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
	OpAuthRemove.Register(r, owner.Op[AuthRemoveParams, auth.Public]{Write: true, FilesOnly: true,
		Check: owner.Refusals(func(p AuthRemoveParams) error {
			if p.ID == "" {
				return errs.Usage(errs.CodeInvalidParams, "no profile id given")
			}
			return nil
		}),
		Admit: admitAuthRemove,
		Run: func(ctx context.Context, env *owner.OpEnv, p AuthRemoveParams) (auth.Public, error) {
			return editCredentials(env, func(s *auth.Store) (auth.Public, error) {
				prof, _ := s.Get(p.ID)
				return prof.Public(), s.Remove(p.ID)
			})
		}})

	OpConfigSet.Register(r, owner.Op[ConfigParams, map[string]any]{Write: true, FilesOnly: true, Check: owner.Refusals(checkConfigSet), Admit: admitConfigSet,
		Run: func(ctx context.Context, env *owner.OpEnv, p ConfigParams) (map[string]any, error) {
			v, err := configValue(p)
			if err != nil {
				return nil, err
			}
			return editConfig(env, func(cfg *config.Config) (map[string]any, bool, error) {
				return map[string]any{"path": p.Path, "value": v}, true, cfg.Set(p.Path, v)
			})
		}})
	OpConfigUnset.Register(r, owner.Op[ConfigParams, map[string]any]{Write: true, FilesOnly: true, Check: owner.Refusals(checkConfigPath),
		Run: func(ctx context.Context, env *owner.OpEnv, p ConfigParams) (map[string]any, error) {
			// Unset reads a config over the bounds too, so the key that
			// made it unreadable can be removed (config.LoadForRepair).
			return editConfigWith(env, config.LoadForRepair, func(cfg *config.Config) (map[string]any, bool, error) {
				removed, err := cfg.Unset(p.Path)
				return map[string]any{"path": p.Path, "removed": removed}, removed, err
			})
		}})

	OpStateBackup.Register(r, owner.Op[BackupParams, BackupResult]{Write: true, Check: owner.Refusals(checkBackup), Admit: admitBackup,
		Run: func(ctx context.Context, env *owner.OpEnv, p BackupParams) (BackupResult, error) {
			if err := admitBackup(owner.Pre{}, p); err != nil {
				return BackupResult{}, err
			}
			if err := env.Fence.AssertCurrent(); err != nil {
				return BackupResult{}, err
			}
			// The write fence runs inside Backup, immediately before the copy
			// is published (its checks before that are refusals before any
			// effect).
			if err := env.Store.Engine().Backup(ctx, env.Store.DB(), p.Path, env.BeginWrite); err != nil {
				return BackupResult{}, err
			}
			fi, err := os.Stat(p.Path)
			if err != nil {
				return BackupResult{}, errs.Failed(errs.CodeBackupFailed, "backup vanished: %v", err)
			}
			v, _ := env.Store.SchemaVersion(ctx)
			return BackupResult{Path: p.Path, Bytes: fi.Size(), SchemaVersion: v, Engine: env.Store.Engine().Name()}, nil
		}})

	// state.status: the schema, river's migration version and the live
	// owner leases, read through whoever owns the state (read-only).
	OpStateStatus.Register(r, owner.Op[None, *store.Status]{
		Run: func(ctx context.Context, env *owner.OpEnv, _ None) (*store.Status, error) {
			return env.Store.Status(ctx)
		}})
}

// admitAuthRemove refuses removing a profile that does not exist before the
// home is created (reading credentials.json changes nothing).
func admitAuthRemove(pre owner.Pre, p AuthRemoveParams) error {
	s, err := auth.Load(pre.Home)
	if err != nil {
		return err
	}
	if _, ok := s.Get(p.ID); !ok {
		return s.Remove(p.ID) // the store's own refusal, unchanged
	}
	return nil
}

// editCredentials loads the credentials file, applies change, checks the
// owner fence right before the file is replaced, and saves it — all under
// the file's edit lock, so concurrent handlers never lose each other's
// profiles.
func editCredentials(env *owner.OpEnv, change func(*auth.Store) (auth.Public, error)) (res auth.Public, err error) {
	defer func() { err = classifyEdit(err, auth.WriteFailed, filepath.Join(env.Home, auth.FileName)) }()
	err = fsx.EditLocked(filepath.Join(env.Home, auth.FileName), func() error {
		s, err := auth.Load(env.Home)
		if err != nil {
			return err
		}
		pub, err := change(s)
		if err != nil {
			return err
		}
		if err := env.Fence.AssertCurrent(); err != nil {
			return err
		}
		if err := env.BeginWrite(); err != nil { // the write fence, right before the file is replaced
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
func editConfig(env *owner.OpEnv, change func(*config.Config) (res map[string]any, changed bool, err error)) (res map[string]any, err error) {
	return editConfigWith(env, config.Load, change)
}

// editConfigWith is editConfig reading the config with load.
func editConfigWith(env *owner.OpEnv, load func(home string) (*config.Config, error), change func(*config.Config) (res map[string]any, changed bool, err error)) (res map[string]any, err error) {
	defer func() { err = classifyEdit(err, config.WriteFailed, filepath.Join(env.Home, config.FileName)) }()
	err = fsx.EditLocked(filepath.Join(env.Home, config.FileName), func() error {
		cfg, err := load(env.Home)
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
		if err := env.Fence.AssertCurrent(); err != nil {
			res = nil
			return err
		}
		if err := env.BeginWrite(); err != nil { // the write fence, right before the file is replaced
			res = nil
			return err
		}
		return cfg.Save()
	})
	return res, err
}

// classifyEdit gives an edit's unclassified failure (its edit lock could
// not be taken or created: a FIFO or a link in its place, a read-only
// home, a stale temp that cannot be removed) the file's own write-failure
// code, so no error reaches the user without a catalogued code.
func classifyEdit(err error, failed func(path string, err error) error, path string) error {
	if err == nil || errs.As(err) != nil {
		return err
	}
	return failed(path, err)
}
