package skills

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/pluginmanifest"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// Plugin is a resolved plugin: its folder, manifest and the identity of the
// manifest file when it was read, so a replacement during a call is seen.
type Plugin struct {
	ID       string
	Dir      string
	Manifest *pluginmanifest.Manifest
	ident    manifestIdent
}

type manifestIdent struct {
	dev, ino uint64
	size     int64
	mtimeNs  int64
	digest   [32]byte
}

// ResolvePlugin finds plugin id: config plugins.entries.<id>.path (relative
// paths are taken from the home), else <home>/plugins/<id>/. A plugin
// disabled in config, missing, or with an unreadable or invalid manifest is
// plugin_unavailable (exit 3): nothing is attempted. It reads the current
// config; operations resolve against their call's config snapshot
// (resolvePlugin).
func ResolvePlugin(home, id string) (*Plugin, error) {
	pid, err := checkPluginID(id)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	return resolvePlugin(home, cfg, pid)
}

// pluginID is a plugin id checkPluginID accepted. checkPluginID is the
// only place that makes one, so what takes a pluginID (resolvePlugin and
// everything after it) never checks the shape again; the zero value is
// "not checked" and resolvePlugin refuses it as a programming error.
type pluginID struct{ id string }

// skillName is a skill name checkSkillName accepted, the same way: only
// Check makes one (on each side of a gateway's socket; it is not on the
// wire), so a commit and everything after it never checks the name again.
type skillName struct{ name string }

// checkSkillName is an operation's one check of a skill name
// (skilllint.CheckSkillName, the rule).
func checkSkillName(name string) (skillName, error) {
	if err := skilllint.CheckSkillName(name); err != nil {
		return skillName{}, err
	}
	return skillName{name}, nil
}

// checkPluginID is the one check of a plugin id's shape.
func checkPluginID(id string) (pluginID, error) {
	if !pluginmanifest.ValidID(id) {
		return pluginID{}, errs.Usage(CodeInvalidPluginID, "plugin id %q is not a plain name", id).
			WithHint("pass the plugin's id as in its openclaw.plugin.json, e.g. --plugin my-plugin")
	}
	return pluginID{id}, nil
}

// resolvePlugin is ResolvePlugin against a given config (an operation's
// config snapshot).
func resolvePlugin(home string, cfg *config.Config, pid pluginID) (*Plugin, error) {
	if pid.id == "" {
		panic("skills: resolvePlugin called with a plugin id checkPluginID did not make")
	}
	id := pid.id
	var entry map[string]any
	if entries, ok := cfg.Get("plugins.entries"); ok {
		if m, ok := entries.(map[string]any); ok {
			entry, _ = m[id].(map[string]any)
		}
	}
	if entry != nil {
		if en, ok := entry["enabled"].(bool); ok && !en {
			return nil, unavailable(id, "is disabled in config (plugins.entries.%s.enabled is false)", id).
				WithHint("enable it with: clawkit config set plugins.entries.%s.enabled true", id)
		}
	}
	dir := filepath.Join(home, "plugins", id)
	if entry != nil {
		if p, ok := entry["path"].(string); ok && p != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(home, p)
			}
			dir = p
		}
	}
	pl := &Plugin{ID: id, Dir: dir}
	m, ident, err := readManifest(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, unavailable(id, "is not installed: %s not found", filepath.Join(dir, pluginmanifest.File)).
				WithHint("install the plugin in %s, or point plugins.entries.%s.path at its folder", filepath.Join(home, "plugins", id), id)
		}
		return nil, unavailable(id, "has an unusable manifest %s: %v", filepath.Join(dir, pluginmanifest.File), err).
			WithHint("fix the plugin's %s (JSON5, at most 256 KiB, with a string \"id\")", pluginmanifest.File)
	}
	if m.ID != id {
		return nil, unavailable(id, "is not what %s holds (its id is %q)", dir, m.ID).
			WithHint("point plugins.entries.%s.path at the folder of plugin %s", id, id)
	}
	pl.Manifest, pl.ident = m, ident
	return pl, nil
}

// SkillsRoot is <home>/agents/<agent>/<agentSkillsDir>, or no_skills_root.
func (p *Plugin) SkillsRoot(home, agent string) (string, error) {
	if p.Manifest.AgentSkillsDir == "" {
		return "", errs.Refused(CodeNoSkillsRoot, "plugin %s declares no agentSkillsDir, so it has no skills folder", p.ID).
			WithHint("add \"agentSkillsDir\": \"skills\" to %s if the plugin authors skills", filepath.Join(p.Dir, pluginmanifest.File))
	}
	return filepath.Join(home, "agents", agent, filepath.FromSlash(p.Manifest.AgentSkillsDir)), nil
}

// Recheck fails with plugin_unavailable when the plugin was disabled,
// removed or its manifest replaced since it was resolved. It reads the
// current config and manifest, not the call's snapshot: an authority
// check, it can only refuse an effect, never change what the call does.
func (p *Plugin) Recheck(home string) error {
	cur, err := ResolvePlugin(home, p.ID)
	if err != nil {
		return unavailable(p.ID, "changed during the call: %s", err.Error()).
			WithHint("nothing was committed; run the command again")
	}
	if cur.Dir != p.Dir || cur.ident != p.ident {
		return unavailable(p.ID, "was replaced during the call (its manifest changed)").
			WithHint("nothing was committed; run the command again")
	}
	return nil
}

func unavailable(id, format string, args ...any) *errs.Error {
	return errs.Refused(CodePluginUnavailable, "plugin %s "+format, append([]any{id}, args...)...).WithResource("plugin", id)
}

func readManifest(dir string) (*pluginmanifest.Manifest, manifestIdent, error) {
	var id manifestIdent
	// Never blocks: a FIFO in place of the manifest is refused at once.
	f, err := fsx.OpenRegularFollow(filepath.Join(dir, pluginmanifest.File))
	if err != nil {
		return nil, id, err
	}
	defer fsx.CloseRead(f)
	st, err := f.Stat()
	if err != nil {
		return nil, id, err
	}
	data, err := io.ReadAll(io.LimitReader(f, pluginmanifest.MaxBytes+1))
	if err != nil {
		return nil, id, err
	}
	if len(data) > pluginmanifest.MaxBytes {
		return nil, id, fmt.Errorf("larger than %d bytes", pluginmanifest.MaxBytes)
	}
	m, err := pluginmanifest.Parse(data)
	if err != nil {
		return nil, id, err
	}
	id.size = st.Size()
	id.mtimeNs = st.ModTime().UnixNano()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	id.digest = sha256.Sum256(data)
	return m, id, nil
}
