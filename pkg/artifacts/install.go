package artifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/json5"
	"github.com/clawkit/clawkit/pkg/pluginmanifest"
)

const (
	// maxPackageJSONBytes bounds any package.json we read.
	maxPackageJSONBytes = 4 << 20
	// maxConfigBytes bounds the config file qualify reads.
	maxConfigBytes = 4 << 20
)

// PackageJSON is the part of package.json the exporter reads.
type PackageJSON struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Dependencies         map[string]string `json:"dependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	PeerDependencies     map[string]string `json:"peerDependencies"`
	BundleDependencies   json.RawMessage   `json:"bundleDependencies"`
	BundledDependencies  json.RawMessage   `json:"bundledDependencies"`
	OpenClaw             *struct {
		Extensions        []string `json:"extensions"`
		RuntimeExtensions []string `json:"runtimeExtensions"`
	} `json:"openclaw"`
}

// Installation is a built OpenClaw package root, read but never modified.
type Installation struct {
	// Root is the real (symlink-free) path of the package root.
	Root    string
	Package PackageJSON
	BuildID string // from dist/build-info.json, "" when absent
	Plugins []Plugin
	// Inventory is the worker bundle inventory the installation defines.
	Inventory *Inventory
}

// Plugin is one bundled plugin (dist/extensions/<dir>/openclaw.plugin.json).
type Plugin struct {
	ID                   string            `json:"id"`
	Name                 string            `json:"name,omitempty"`
	Version              string            `json:"version,omitempty"`
	Dir                  string            `json:"dir"`     // package-relative
	Entries              []string          `json:"entries"` // package-relative built entry points
	Qualified            bool              `json:"qualified"`
	Reason               string            `json:"reason,omitempty"` // why not qualified
	Enabled              bool              `json:"enabled"`          // false when the config disables it
	Missing              []string          `json:"missingDependencies,omitempty"`
	Dependencies         map[string]string `json:"-"`
	OptionalDependencies map[string]string `json:"-"`
}

var packageNameRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9._~-][a-z0-9._~-]*$`)
})

// validPackageName accepts npm package names that are also safe single (or,
// when scoped, double) path segments.
func validPackageName(n string) bool {
	if len(n) > 214 || !packageNameRe().MatchString(strings.ToLower(n)) {
		return false
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == "." || seg == ".." || seg == "" || seg == "node_modules" {
			return false
		}
	}
	return true
}

func readPackageJSON(dir string) (*PackageJSON, error) {
	b, err := fsx.ReadRegular(filepath.Join(dir, "package.json"), maxPackageJSONBytes)
	if err != nil {
		return nil, err
	}
	var p PackageJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("package.json: %v", err)
	}
	return &p, nil
}

// OpenInstallation reads the package root: package.json (name and exact
// version), the worker bundle inventory its compiled code defines (each
// file present) and the bundled plugins. It writes
// nothing and follows no configured external path.
func OpenInstallation(root string) (*Installation, error) {
	if root == "" {
		return nil, errs.Usage(CodePackageRootRequired, "no package root given").WithHint("pass --package-root DIR, e.g. node_modules/openclaw")
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, errs.Usage(CodePackageRootMissing, "package root %s does not exist", root).
			WithHint("pass the folder of an installed OpenClaw package, e.g. node_modules/openclaw").Wrap(err)
	}
	real, _ = filepath.Abs(real)
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, errs.Usage(CodePackageRootNotDir, "package root %s is not a folder", root).
			WithHint("pass the folder of an installed OpenClaw package, e.g. node_modules/openclaw")
	}
	pj, err := readPackageJSON(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errs.Failed(CodePackageJsonMissing, "%s has no package.json", root).
				WithHint("pass the folder of an installed OpenClaw package (it holds package.json and dist/)").Wrap(err)
		}
		return nil, errs.Failed(CodePackageJsonInvalid, "cannot read %s/package.json: %v", root, err).
			WithHint("reinstall the package; its package.json is damaged").Wrap(err)
	}
	if pj.Name != "openclaw" {
		return nil, errs.Failed(CodeNotOpenclaw, "%s is package %q, not openclaw", root, pj.Name).
			WithHint("pass the folder of the openclaw package, e.g. node_modules/openclaw")
	}
	if !exactVersionRe().MatchString(pj.Version) {
		return nil, errs.Failed(CodePackageJsonInvalid, "%s/package.json has no exact version (%q)", root, pj.Version).
			WithHint("export an installed release; its package.json names an exact version")
	}
	in := &Installation{Root: real, Package: *pj}
	if st, err := os.Lstat(filepath.Join(real, "dist")); err != nil || !st.IsDir() {
		return nil, errs.Failed(CodeNotBuilt, "%s has no dist/ folder: not a built installation", root).
			WithHint("install a published release (npm install openclaw) or build the package first")
	}
	inv, err := ReadInventory(real, pj.Version)
	if err != nil {
		return nil, err
	}
	in.Inventory = inv
	if b, err := fsx.ReadRegular(filepath.Join(real, "dist", "build-info.json"), 64<<10); err == nil {
		var bi struct {
			BuildID string `json:"buildId"`
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &bi) == nil && ValidBuildID(bi.BuildID) && (bi.Version == "" || bi.Version == pj.Version) {
			in.BuildID = bi.BuildID
		}
	}
	plugins, err := readPlugins(real)
	if err != nil {
		return nil, err
	}
	in.Plugins = plugins
	return in, nil
}

var exactVersionRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
})

func readPlugins(root string) ([]Plugin, error) {
	extDir := filepath.Join(root, "dist", "extensions")
	ents, err := os.ReadDir(extDir)
	if errors.Is(err, fs.ErrNotExist) {
		return []Plugin{}, nil
	}
	if err != nil {
		return nil, errs.Failed(CodeUnreadable, "cannot list dist/extensions: %v", err).Wrap(err)
	}
	out := []Plugin{}
	seen := map[string]string{}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(extDir, e.Name())
		rel := "dist/extensions/" + e.Name()
		raw, err := fsx.ReadRegular(filepath.Join(dir, pluginmanifest.File), pluginmanifest.MaxBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a plugin (e.g. a shared helper folder)
		}
		if err != nil {
			return nil, errs.Failed(CodePluginManifestInvalid, "%s/openclaw.plugin.json: %v", rel, err).
				WithHint("plugin manifests must be regular files of at most %d bytes", pluginmanifest.MaxBytes)
		}
		man, err := pluginmanifest.Parse(raw)
		if err != nil {
			return nil, errs.Failed(CodePluginManifestInvalid, "%s/openclaw.plugin.json: %v", rel, err).
				WithHint("fix or remove the plugin's manifest: it needs an \"id\" that is one plain name")
		}
		if prev, ok := seen[man.ID]; ok {
			return nil, errs.Failed(CodePluginManifestInvalid, "plugin id %q is declared by both %s and %s", man.ID, prev, rel).
				WithHint("each bundled plugin needs a distinct id")
		}
		seen[man.ID] = rel
		p := Plugin{ID: man.ID, Name: man.Name, Version: man.Version, Dir: rel, Enabled: true, Entries: []string{}}
		qualifyPlugin(dir, rel, installBase(root), &p)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// qualifyPlugin finds the plugin's built entry points, preferring
// openclaw.runtimeExtensions over openclaw.extensions and built .js over
// .ts sources (a published package ships only the built files), and falls
// back to index.js when the plugin has no package.json.
//
// A plugin whose own production dependencies are not installed does not
// qualify (a published package installs some plugins' dependencies on
// demand); "workspace:" dependencies are built into the package and need
// nothing installed.
func qualifyPlugin(dir, rel, base string, p *Plugin) {
	var entries []string
	pj, err := readPackageJSON(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		entries = []string{"index.js"}
	case err != nil:
		p.Reason = fmt.Sprintf("package.json unreadable: %v", err)
		return
	default:
		if p.Version == "" {
			p.Version = pj.Version
		}
		p.Dependencies, p.OptionalDependencies = map[string]string{}, map[string]string{}
		var missing []string
		for _, n := range sortedKeys(pj.Dependencies) {
			if strings.HasPrefix(pj.Dependencies[n], "workspace:") {
				continue
			}
			p.Dependencies[n] = pj.Dependencies[n]
			if !validPackageName(n) {
				p.Reason = fmt.Sprintf("dependency %q is not a valid package name", n)
				return
			}
			if d, err := resolveDep(dir, base, n); err != nil || d == "" {
				missing = append(missing, n)
			}
		}
		for n, v := range pj.OptionalDependencies {
			if !strings.HasPrefix(v, "workspace:") {
				p.OptionalDependencies[n] = v
			}
		}
		if len(missing) > 0 {
			p.Missing = missing
			p.Reason = "dependencies not installed: " + strings.Join(missing, ", ")
			return
		}
		if pj.OpenClaw != nil {
			entries = pj.OpenClaw.RuntimeExtensions
			if len(entries) == 0 {
				entries = pj.OpenClaw.Extensions
			}
		}
		if len(entries) == 0 {
			entries = []string{"index.js"}
		}
	}
	for _, e := range entries {
		e = strings.TrimPrefix(e, "./")
		if strings.HasSuffix(e, ".ts") && !strings.HasSuffix(e, ".d.ts") {
			e = strings.TrimSuffix(e, ".ts") + ".js"
		}
		if fsx.CheckRel(e) != nil {
			p.Reason = fmt.Sprintf("entry %q is not a relative path inside the plugin", e)
			return
		}
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e)))
		if err != nil || !st.Mode().IsRegular() {
			p.Reason = fmt.Sprintf("built entry %s is missing", e)
			return
		}
		p.Entries = append(p.Entries, rel+"/"+e)
	}
	p.Qualified = true
}

// QualifyReport is what `qualify` prints.
type QualifyReport struct {
	PackageRoot string   `json:"packageRoot"`
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	BuildID     string   `json:"buildId,omitempty"`
	Worker      []string `json:"workerArtifacts"`
	// WorkerInventory says where Worker was read from.
	WorkerInventory *Inventory `json:"workerInventory"`
	Plugins         []Plugin   `json:"plugins"`
	// Ignored lists configured external plugin paths, reported but never
	// loaded.
	Ignored []IgnoredPlugin `json:"ignoredExternal"`
}

// IgnoredPlugin is a configured plugin path qualify did not load.
type IgnoredPlugin struct {
	ID     string `json:"id,omitempty"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Qualify lists the installation's bundled plugins. With configPath it reads
// (never writes) an OpenClaw config: plugins.entries.<id>.enabled:false marks
// a plugin disabled, and configured external paths (plugins.entries.<id>.path,
// plugins.load.paths) are listed as ignored without being opened.
func Qualify(root, configPath string) (*QualifyReport, error) {
	in, err := OpenInstallation(root)
	if err != nil {
		return nil, err
	}
	rep := &QualifyReport{PackageRoot: in.Root, Name: in.Package.Name, Version: in.Package.Version,
		BuildID: in.BuildID, Worker: in.Inventory.Files, WorkerInventory: in.Inventory, Plugins: in.Plugins, Ignored: []IgnoredPlugin{}}
	if configPath == "" {
		return rep, nil
	}
	ignored, err := applyConfig(rep.Plugins, configPath)
	if err != nil {
		return nil, err
	}
	rep.Ignored = ignored
	return rep, nil
}

// applyConfig reads (never writes) an OpenClaw config and applies it to
// plugins: plugins.entries.<id>.enabled:false marks a plugin disabled, and
// configured external paths (plugins.entries.<id>.path, plugins.load.paths)
// are returned as ignored without being opened.
func applyConfig(plugins []Plugin, configPath string) ([]IgnoredPlugin, error) {
	ignored := []IgnoredPlugin{}
	raw, err := fsx.ReadRegular(configPath, maxConfigBytes)
	if err != nil {
		return nil, errs.Usage(errs.CodeConfigUnreadable, "cannot read config %s: %v", configPath, unwrapPathErr(err)).
			WithHint("pass an OpenClaw config file (JSON5) with --config, or omit it")
	}
	var cfg struct {
		Plugins struct {
			Entries map[string]struct {
				Enabled *bool  `json:"enabled"`
				Path    string `json:"path"`
			} `json:"entries"`
			Load struct {
				Paths []string `json:"paths"`
			} `json:"load"`
		} `json:"plugins"`
	}
	if err := json5.Decode(raw, &cfg); err != nil {
		return nil, errs.Usage(CodeConfigInvalid, "config %s is not valid: %v", configPath, err).
			WithHint("fix the config's plugins section (JSON5)")
	}
	byID := map[string]*Plugin{}
	for i := range plugins {
		byID[plugins[i].ID] = &plugins[i]
	}
	ids := make([]string, 0, len(cfg.Plugins.Entries))
	for id := range cfg.Plugins.Entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := cfg.Plugins.Entries[id]
		if p := byID[id]; p != nil && e.Enabled != nil && !*e.Enabled {
			p.Enabled = false
		}
		if e.Path != "" {
			ignored = append(ignored, IgnoredPlugin{ID: id, Path: e.Path, Reason: "external plugin path not loaded; only bundled plugins qualify"})
		}
	}
	for _, p := range cfg.Plugins.Load.Paths {
		ignored = append(ignored, IgnoredPlugin{Path: p, Reason: "external plugin path not loaded; only bundled plugins qualify"})
	}
	return ignored, nil
}
