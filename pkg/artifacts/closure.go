package artifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// Limits applied while planning an export; the same numbers bound every
// archive reader (docs/runtime-artifacts.md), so an export never produces what a reader
// would refuse.
const (
	MaxEntries       = 250_000
	MaxExpandedBytes = 2 << 30
	MaxArchiveBytes  = 512 << 20
	MaxPathBytes     = 1024
	MaxRatio         = 64
	maxDepth         = 64
)

// excludedDirs are never exported, at any depth of any package: tests,
// VCS metadata and caches are not part of a runtime (docs/runtime-artifacts.md).
// node_modules is never walked as files: dependencies enter the archive
// only through the resolved closure.
var excludedDirs = map[string]bool{
	"node_modules": true,
	".git":         true,
	".cache":       true,
	"test":         true,
	"tests":        true,
	"__tests__":    true,
}

// rootExcluded are package-relative paths of the openclaw package that the
// node bootstrap leaves out: dist/worker/ travels in the worker bundle (as in
// OpenClaw's own node distribution), and worker-artifacts/ is where an
// installed worker archive lands, never part of the source.
var rootExcluded = map[string]bool{
	"dist/worker":      true,
	"worker-artifacts": true,
}

// pkgDir is one package of the closure.
type pkgDir struct {
	Name   string // "openclaw" for the root
	Dir    string // real path
	Prefix string // archive path prefix, e.g. "node_modules/zod"
}

// plannedFile is one file of the node bootstrap.
type plannedFile struct {
	Arch string // archive path
	Src  string // file to read
	Size int64  // size when planned: files of a size no other file has cannot be duplicates
}

// installBase is the folder whose node_modules holds the package (Node's
// resolution stops there: anything above is not part of this installation),
// or the package root itself for a standalone package folder.
func installBase(root string) string {
	parent := filepath.Dir(root)
	if filepath.Base(parent) == "node_modules" {
		return filepath.Dir(parent)
	}
	return root
}

// resolveDep finds package name as Node does from a module in dir: look in
// dir/node_modules, then in each ancestor's node_modules (skipping folders
// that are themselves node_modules), stopping at base. It returns "" when
// the package is not installed.
func resolveDep(dir, base, name string) (string, error) {
	for {
		if filepath.Base(dir) != "node_modules" {
			cand := filepath.Join(dir, "node_modules", filepath.FromSlash(name))
			st, err := os.Lstat(cand)
			if err == nil {
				if st.Mode()&fs.ModeSymlink != 0 {
					return "", linkError(base, cand)
				}
				if st.IsDir() {
					if _, err := os.Lstat(filepath.Join(cand, "package.json")); err == nil {
						return cand, nil
					}
				}
			}
		}
		if dir == base || !fsx.Within(base, dir) {
			return "", nil
		}
		next := filepath.Dir(dir)
		if next == dir {
			return "", nil
		}
		dir = next
	}
}

// linkError describes the refusal of a symbolic link. Decision (documented
// in docs/runtime-artifacts.md): links are never exported nor followed. One
// that points outside the installation would smuggle foreign bytes into the
// archive; one that points inside would be extracted as a link that a safe
// reader refuses, or duplicated silently.
func linkError(base, p string) error {
	target, _ := os.Readlink(p)
	where := "inside the installation"
	if real, err := filepath.EvalSymlinks(p); err != nil {
		where = "to a missing target"
	} else if !fsx.Within(base, real) {
		where = "outside the installation"
	}
	return errs.Failed(CodeSymlinkRefused, "%s is a symbolic link (-> %s) pointing %s; links are not exported", p, target, where).
		WithHint("replace the link with the files it points to (npm install without --install-links, or copy them), then export again")
}

// resolveClosure returns the root package and its production dependency
// closure: dependencies (required), optionalDependencies and
// peerDependencies (when installed), bundleDependencies, and the
// dependencies of the selected plugins resolved from the plugin's folder.
// devDependencies are never followed.
func resolveClosure(in *Installation, plugins []Plugin) ([]pkgDir, error) {
	base := installBase(in.Root)
	rootPkg := pkgDir{Name: "openclaw", Dir: in.Root, Prefix: PackagePath}
	out := []pkgDir{rootPkg}
	seen := map[string]bool{in.Root: true}
	type job struct {
		from string // folder resolution starts from
		by   string // who asks, for messages
		deps []depReq
	}
	queue := []job{{from: in.Root, by: "openclaw", deps: packageDeps(&in.Package)}}
	for _, p := range plugins {
		var reqs []depReq
		for _, n := range sortedKeys(p.Dependencies) {
			reqs = append(reqs, depReq{n, true})
		}
		for _, n := range sortedKeys(p.OptionalDependencies) {
			reqs = append(reqs, depReq{n, false})
		}
		queue = append(queue, job{from: filepath.Join(in.Root, filepath.FromSlash(p.Dir)), by: "plugin " + p.ID, deps: reqs})
	}
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		for _, d := range j.deps {
			if !validPackageName(d.name) {
				return nil, errs.Failed(CodePackageJsonInvalid, "%s depends on %q, which is not a valid package name", j.by, d.name).
					WithHint("fix the dependency name in its package.json")
			}
			dir, err := resolveDep(j.from, base, d.name)
			if err != nil {
				return nil, err
			}
			if dir == "" {
				if d.required {
					return nil, errs.Failed(CodeDependencyMissing, "%s needs %s, which is not installed under %s", j.by, d.name, base).
						WithHint("run npm install (without --omit for production dependencies) in the installation, then export again")
				}
				continue
			}
			if seen[dir] {
				continue
			}
			seen[dir] = true
			rel, err := filepath.Rel(base, dir)
			if err != nil || strings.HasPrefix(rel, "..") {
				return nil, fmt.Errorf("dependency %s resolved outside the installation: %s", d.name, dir)
			}
			prefix := filepath.ToSlash(rel)
			if fsx.Within(in.Root, dir) {
				r, _ := filepath.Rel(in.Root, dir)
				prefix = PackagePath + "/" + filepath.ToSlash(r)
			}
			pj, err := readPackageJSON(dir)
			if err != nil {
				return nil, errs.Failed(CodePackageJsonInvalid, "cannot read the package.json of dependency %s (%s): %v", d.name, dir, err).
					WithHint("reinstall the dependency")
			}
			out = append(out, pkgDir{Name: d.name, Dir: dir, Prefix: prefix})
			queue = append(queue, job{from: dir, by: d.name, deps: packageDeps(pj)})
		}
	}
	// Two different folders must never land at one archive path.
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	for i := 1; i < len(out); i++ {
		if out[i].Prefix == out[i-1].Prefix {
			return nil, errs.Failed(CodeLayoutConflict, "%s and %s would both be archived at %s", out[i-1].Dir, out[i].Dir, out[i].Prefix).
				WithHint("reinstall so that each package has one folder")
		}
	}
	return out, nil
}

type depReq struct {
	name     string
	required bool
}

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

func packageDeps(p *PackageJSON) []depReq {
	var r []depReq
	for _, n := range sortedKeys(p.Dependencies) {
		r = append(r, depReq{n, true})
	}
	for _, n := range sortedKeys(p.OptionalDependencies) {
		if _, dup := p.Dependencies[n]; !dup {
			r = append(r, depReq{n, false})
		}
	}
	for _, n := range sortedKeys(p.PeerDependencies) {
		r = append(r, depReq{n, false})
	}
	for _, raw := range [][]byte{p.BundleDependencies, p.BundledDependencies} {
		var names []string
		if len(raw) > 0 && raw[0] == '[' {
			_ = json.Unmarshal(raw, &names)
		}
		for _, n := range names {
			r = append(r, depReq{n, true})
		}
	}
	return r
}

// planFiles walks every package of the closure and returns the node
// bootstrap's files in archive order (see archiveOrder). It refuses links and special
// files and enforces the archive limits before anything is written.
func planFiles(base string, pkgs []pkgDir) ([]plannedFile, int64, error) {
	var files []plannedFile
	var total int64
	for _, p := range pkgs {
		isRoot := p.Prefix == PackagePath
		var walk func(dir, rel string, depth int) error
		walk = func(dir, rel string, depth int) error {
			if depth > maxDepth {
				return errs.Failed(CodeTooDeep, "%s is nested deeper than %d folders", dir, maxDepth).
					WithHint("flatten the package; archive readers refuse deeper trees")
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				return unreadable(dir, err)
			}
			for _, e := range ents {
				name := e.Name()
				childRel := name
				if rel != "" {
					childRel = rel + "/" + name
				}
				full := filepath.Join(dir, name)
				t := e.Type()
				switch {
				case t&fs.ModeSymlink != 0:
					return linkError(base, full)
				case t.IsDir():
					if excludedDirs[name] || (isRoot && rootExcluded[childRel]) {
						continue
					}
					if err := walk(full, childRel, depth+1); err != nil {
						return err
					}
				case t.IsRegular():
					if isRoot && rootExcluded[childRel] {
						continue
					}
					arch := p.Prefix + "/" + childRel
					if len(arch) > MaxPathBytes || fsx.CheckRel(arch) != nil || strings.ContainsRune(arch, '\\') {
						return errs.Failed(CodeUnsafePath, "%s cannot be archived: its path %q is longer than %d bytes or not a plain relative path", full, arch, MaxPathBytes).
							WithHint("rename the file")
					}
					info, err := e.Info()
					if err != nil {
						return unreadable(full, err)
					}
					total += info.Size()
					files = append(files, plannedFile{Arch: arch, Src: full, Size: info.Size()})
				default:
					return errs.Failed(CodeUnsupportedFile, "%s is not a regular file or folder (%s)", full, t.Type()).
						WithHint("remove it from the installation; only regular files are exported")
				}
			}
			return nil
		}
		if err := walk(p.Dir, "", 0); err != nil {
			return nil, 0, err
		}
		if len(files) > MaxEntries {
			return nil, 0, errs.Failed(CodeTooManyFiles, "the node bootstrap would hold more than %d files", MaxEntries).
				WithHint("archive readers refuse more entries; remove unneeded packages")
		}
	}
	if total > MaxExpandedBytes {
		return nil, 0, errs.Failed(errs.CodeTooLarge, "the node bootstrap would expand to %d bytes, more than %d", total, int64(MaxExpandedBytes)).
			WithHint("archive readers refuse larger archives; remove unneeded packages")
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Arch < files[j].Arch })
	for i := 1; i < len(files); i++ {
		if files[i].Arch == files[i-1].Arch {
			return nil, 0, errs.Failed(CodeLayoutConflict, "two files would be archived at %s", files[i].Arch).
				WithHint("reinstall so that each package has one folder")
		}
	}
	archiveOrder(files)
	return files, total, nil
}

// archiveOrder sorts the bootstrap's files by extension, then base name,
// then archive path (all byte order): a total order on distinct paths, so
// the archive stays deterministic. It is for compression: deflate only
// finds repeats within 32 KiB, and path order interleaves unlike content
// (a package's .js, .d.ts, .map and README), while this order puts the
// same kind of file side by side and the copies of a file that several
// packages vendor (same name, often the same or almost the same bytes)
// next to each other. On OpenClaw 2026.9.6's bootstrap it makes the
// archive about 1% smaller at the same level (see
// docs/runtime-artifacts.md, Benchmarks). Extraction does not depend on
// the order: there are no folder entries, and a hard link always follows
// the file it names (writeNodeBootstrap links only to earlier entries).
func archiveOrder(files []plannedFile) {
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i].Arch, files[j].Arch
		ab, bb := a[strings.LastIndexByte(a, '/')+1:], b[strings.LastIndexByte(b, '/')+1:]
		if ae, be := path.Ext(ab), path.Ext(bb); ae != be {
			return ae < be
		}
		if ab != bb {
			return ab < bb
		}
		return a < b
	})
}

func unreadable(p string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return errs.Failed(CodeUnreadable, "cannot read %s: permission denied", p).
			WithHint("give the exporting user read access to the whole installation").Wrap(err)
	}
	return errs.Failed(CodeUnreadable, "cannot read %s: %v", p, unwrapPathErr(err)).
		WithHint("check that the installation is complete and not changing during the export").Wrap(err)
}
