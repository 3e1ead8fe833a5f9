package skills

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/pluginmanifest"
)

// `clawkit plugins inspect ID` (docs/skills.md, "plugins inspect") shows a registered
// plugin's shape as its manifest and the home's config declare it: the
// id, the kind of entry that registers it, the plugin kinds and contracts
// its manifest declares, its agentSkillsDir and whether it is enabled. It
// is stateless: it reads config.json and the manifest (never blocking,
// bounded), takes no lock and creates nothing. It never runs the plugin,
// so the shape OpenClaw derives from what a plugin registers at run time
// is not claimed here; the manifest's declarations are.

// Entry kinds: how a plugin is registered.
const (
	EntryConfigPath = "config-path" // plugins.entries.<id>.path names its folder
	EntryHomeFolder = "home-folder" // <home>/plugins/<id>/
)

// Plugin statuses, as OpenClaw's own inspect labels them.
const (
	PluginEnabled  = "enabled"
	PluginDisabled = "disabled"
	PluginError    = "error"
)

// PluginInfo is what `plugins inspect` reports.
type PluginInfo struct {
	ID string `json:"id"`
	// Entry is EntryConfigPath or EntryHomeFolder; ConfigEntry says
	// whether config holds plugins.entries.<id> at all (it may only
	// enable or disable a home-folder plugin).
	Entry       string `json:"entry"`
	ConfigEntry bool   `json:"configEntry"`
	Dir         string `json:"dir"`
	Manifest    string `json:"manifest"`
	Status      string `json:"status"`
	Enabled     bool   `json:"enabled"`
	Name        string `json:"name,omitempty"`
	Version     string `json:"version,omitempty"`
	// Kinds are the manifest's "kind" values (memory, context-engine).
	Kinds []string `json:"kinds"`
	// Contracts are the manifest's "contracts", each key with its ids.
	Contracts      map[string][]string `json:"contracts"`
	AgentSkillsDir string              `json:"agentSkillsDir"`
	// Shape is the plugin's shape as OpenClaw names it (plain-capability,
	// hybrid-capability, hook-only, non-capability), derived from the
	// manifest, or "unknown" with ShapeReason when that needs the plugin
	// to run (pluginmanifest.Shape); Capabilities are the capability
	// types the manifest declares.
	Shape        string                      `json:"shape"`
	ShapeReason  string                      `json:"shapeReason,omitempty"`
	Capabilities []pluginmanifest.Capability `json:"capabilities"`
	// Problem says why Status is error (the manifest is missing or
	// unusable, or names another id).
	Problem string `json:"problem,omitempty"`
	// Warnings are parts of the manifest or the config entry that are not
	// of the documented shape; they do not make the plugin unusable.
	Warnings []string `json:"warnings"`
}

// InspectPlugin reports plugin id of the home. An id that is not a plain
// name is invalid_plugin_id (exit 2); an id neither config nor the home's
// plugins folder registers is not_found (exit 1). A registered plugin
// whose manifest is missing or unusable is reported with status error,
// not refused: inspecting it is how one finds out why.
func InspectPlugin(home, id string) (*PluginInfo, error) {
	if _, err := checkPluginID(id); err != nil {
		return nil, err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	info := &PluginInfo{ID: id, Entry: EntryHomeFolder, Dir: filepath.Join(home, "plugins", id), Enabled: true,
		Kinds: []string{}, Contracts: map[string][]string{}, Warnings: []string{}, Capabilities: []pluginmanifest.Capability{}}
	var entry map[string]any
	if entries, ok := cfg.Get("plugins.entries"); ok {
		if m, ok := entries.(map[string]any); ok {
			raw, present := m[id]
			info.ConfigEntry = present
			entry, _ = raw.(map[string]any)
			if present && entry == nil {
				info.Warnings = append(info.Warnings, "config plugins.entries."+id+" is not an object; it is ignored")
			}
		}
	}
	if entry != nil {
		switch en := entry["enabled"].(type) {
		case nil:
		case bool:
			info.Enabled = en
		default:
			info.Warnings = append(info.Warnings, "config plugins.entries."+id+".enabled is not true or false; the plugin is taken as enabled")
		}
		if p, ok := entry["path"].(string); ok && p != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(home, p)
			}
			info.Entry, info.Dir = EntryConfigPath, p
		}
	}
	info.Manifest = filepath.Join(info.Dir, pluginmanifest.File)
	if !info.ConfigEntry {
		if st, err := os.Stat(info.Dir); err != nil || !st.IsDir() {
			return nil, errs.Failed(errs.CodeNotFound, "no plugin %s in this home: config has no plugins.entries.%s and %s is not a folder", id, id, info.Dir).WithResource("plugin", id).
				WithHint("%s", registeredHint(home, cfg))
		}
	}
	info.Status = PluginDisabled
	if info.Enabled {
		info.Status = PluginEnabled
	}
	m, _, err := readManifest(info.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		info.Status, info.Problem = PluginError, "the manifest "+info.Manifest+" does not exist"
	case err != nil:
		info.Status, info.Problem = PluginError, "the manifest is unusable: "+err.Error()
	case m.ID != id:
		info.Status, info.Problem = PluginError, "the manifest's id is "+m.ID+", not "+id
	}
	if m != nil {
		info.Name, info.Version, info.AgentSkillsDir = m.Name, m.Version, m.AgentSkillsDir
		if m.Kinds != nil {
			info.Kinds = m.Kinds
		}
		for k, v := range m.Contracts {
			sort.Strings(v)
			info.Contracts[k] = v
		}
		info.Warnings = append(info.Warnings, m.Problems...)
	}
	if info.Status == PluginError {
		info.Shape, info.ShapeReason = pluginmanifest.ShapeUnknown, "the manifest cannot be read as this plugin's: "+info.Problem
	} else {
		info.Shape, info.ShapeReason = m.Shape()
		if caps := m.Capabilities(); caps != nil {
			info.Capabilities = caps
		}
	}
	sort.Strings(info.Warnings)
	return info, nil
}

// registeredHint lists the plugins the home registers, for a not_found.
func registeredHint(home string, cfg *config.Config) string {
	seen := map[string]bool{}
	if entries, ok := cfg.Get("plugins.entries"); ok {
		if m, ok := entries.(map[string]any); ok {
			for k := range m {
				seen[k] = true
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(home, "plugins")); err == nil {
		for _, e := range ents {
			if e.IsDir() && pluginmanifest.ValidID(e.Name()) {
				seen[e.Name()] = true
			}
		}
	}
	if len(seen) == 0 {
		return "this home registers no plugin: add plugins.entries.<id>.path to config, or a folder <home>/plugins/<id>/"
	}
	ids := make([]string, 0, len(seen))
	for k := range seen {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	if len(ids) > 20 {
		ids = append(ids[:20], "…")
	}
	return "registered plugins: " + strings.Join(ids, ", ")
}

// ContractKeys are the info's contract names, sorted.
func (p *PluginInfo) ContractKeys() []string {
	keys := make([]string, 0, len(p.Contracts))
	for k := range p.Contracts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
