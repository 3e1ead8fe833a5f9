package skills

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/pluginmanifest"
)

// A plugin names only its own skills (issue 15 item 8). `--plugin ID`
// selects a *registered* plugin (config plugins.entries.<id> or
// <home>/plugins/<id>/ with a manifest whose id matches); what the plugin
// may touch is decided by its manifest, never by the caller. Two registered
// plugins whose skills folders for an agent are the same folder, or one
// inside the other, would let either name the other's skills, so every call
// is refused for both until their manifests are fixed.
//
// What authenticates the caller: offline, whoever can run clawkit against
// the home (created 0700) and take its owner lock; with a gateway, whoever
// can connect to its socket inside that home (same permissions). Neither
// proves which plugin is calling: the plugin's identity is its registration
// and manifest, and --plugin only selects among registered plugins.

// registeredPluginIDs lists the plugin ids the home knows: keys of config
// plugins.entries (in the call's config snapshot) and folders under
// <home>/plugins.
func registeredPluginIDs(home string, cfg *config.Config) []string {
	seen := map[string]bool{}
	if cfg != nil {
		if entries, ok := cfg.Get("plugins.entries"); ok {
			if m, ok := entries.(map[string]any); ok {
				for id := range m {
					seen[id] = true
				}
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(home, "plugins")); err == nil {
		for _, e := range ents {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				seen[e.Name()] = true
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// checkRootOwner refuses a call whose skills root is also (or overlaps)
// another registered, usable plugin's skills root for the same agent.
func checkRootOwner(home string, cfg *config.Config, pl *Plugin, agent, root string) error {
	mine := filepath.Clean(root)
	for _, id := range registeredPluginIDs(home, cfg) {
		if id == pl.ID {
			continue
		}
		pid, err := checkPluginID(id)
		if err != nil {
			continue // a folder or entry that is no plain name names no plugin
		}
		other, err := resolvePlugin(home, cfg, pid)
		if err != nil || other.Manifest.AgentSkillsDir == "" {
			continue // a plugin that cannot act owns nothing
		}
		theirs, err := other.SkillsRoot(home, agent)
		if err != nil {
			continue
		}
		theirs = filepath.Clean(theirs)
		if mine == theirs || strings.HasPrefix(mine, theirs+string(filepath.Separator)) || strings.HasPrefix(theirs, mine+string(filepath.Separator)) {
			return errs.Refused(CodeSkillsRootConflict, "plugin %s's skills folder %s overlaps plugin %s's (%s); a plugin may name only its own skills", pl.ID, mine, id, theirs).
				WithHint("give each plugin its own agentSkillsDir in its %s", pluginmanifest.File)
		}
	}
	return nil
}
