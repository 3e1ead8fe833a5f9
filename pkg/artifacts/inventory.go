package artifacts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/jslex"
)

// The worker bundle inventory is defined by each OpenClaw release in its
// compiled code, and it changes between releases (2026.8 stages 2 files of
// dist/worker/ from a list named WORKER_DEPLOY_ARTIFACT_PATHS, 2026.9.5
// stages 3, 2026.9.6 stages 7 from WORKER_BUNDLE_ARTIFACT_PATHS, imported
// from another chunk). OpenClaw's producer builds its bundle in
// collectWorkerBundleManifest by looping over that list and staging each
// name from dist/worker/ with stageWorkerDeployArtifact. ReadInventory finds
// that loop in the installation's own modules and follows the list's
// identifiers to their string constants, across imports, without running
// anything. Whatever it cannot establish exactly is refused, naming the
// release: a wrong inventory would give a bundle a real worker rejects.

// Inventory is the worker bundle inventory of one installation.
type Inventory struct {
	// Files are the dist/worker/ names in the producer's order, which is
	// byte order (checked).
	Files []string `json:"files"`
	// Source is the package-relative module that defines the producer, and
	// Symbol the list its loop iterates.
	Source string `json:"source"`
	Symbol string `json:"symbol"`
	// DefinedIn lists, for each identifier followed, the module that holds
	// its constant ("NAME dist/x.mjs").
	DefinedIn []string `json:"definedIn"`
}

// String is the one-line form qualify and inspect print.
func (v *Inventory) String() string {
	return fmt.Sprintf("%s in %s", v.Symbol, v.Source)
}

const (
	producerFunc  = "collectWorkerBundleManifest"
	stageFunc     = "stageWorkerDeployArtifact"
	hashFunc      = "hashWorkerBundleManifest"
	maxModuleSize = 8 << 20
	maxImportHops = 16
)

var (
	moduleNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(mjs|js)$`) })
	workerNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })
	// the per-entry line of the openclaw-worker-bundle-v1 formula as OpenClaw
	// writes it (a template literal; \0 is NUL).
	hashEntryTemplate = "`${entry.path}\\0${entry.mode.toString(8)}\\0${entry.size}\\0${entry.sha256}\\0`"
	hashHeadRe        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^`\\$\\{([A-Za-z_$][A-Za-z0-9_$]*)\\}\\\\0`$") })
)

// inventoryReader resolves identifiers across one installation's dist/
// modules, each parsed at most once.
type inventoryReader struct {
	root, version string
	mods          map[string]*jslex.Module
	trace         []string
}

func (r *inventoryReader) uncertain(format string, args ...any) error {
	return errs.Failed(CodeWorkerInventoryUnknown, "openclaw %s: cannot determine the worker bundle inventory: %s", r.version, fmt.Sprintf(format, args...)).
		WithHint("this release's compiled code does not define the inventory in a form clawkit can read exactly; export from a published release (2026.8 or newer) or report the release")
}

// load parses dist/<name> (name is a plain module file name).
func (r *inventoryReader) load(name string) (*jslex.Module, error) {
	if m, ok := r.mods[name]; ok {
		return m, nil
	}
	b, err := fsx.ReadRegular(filepath.Join(r.root, "dist", name), maxModuleSize)
	if err != nil {
		return nil, r.uncertain("dist/%s cannot be read: %v", name, unwrapPathErr(err))
	}
	m, err := jslex.ParseModule(string(b))
	if err != nil {
		return nil, r.uncertain("dist/%s cannot be parsed: %v", name, err)
	}
	r.mods[name] = m
	return m, nil
}

// spec turns an import specifier of a dist/ module into a dist/ file name;
// only "./<plain name>" stays inside dist/ and is followed.
func (r *inventoryReader) spec(from, s string) (string, error) {
	name, ok := strings.CutPrefix(s, "./")
	if !ok || !moduleNameRe().MatchString(name) || path.Clean(name) != name {
		return "", r.uncertain("dist/%s imports from %q, which is not a module beside it", from, s)
	}
	return name, nil
}

// lookup finds the single static declaration of name as seen from module
// file, following imports and re-exports.
func (r *inventoryReader) lookup(file, name string, hops int) (jslex.Decl, string, error) {
	if hops > maxImportHops {
		return jslex.Decl{}, "", r.uncertain("%s: more than %d imports to follow", name, maxImportHops)
	}
	m, err := r.load(file)
	if err != nil {
		return jslex.Decl{}, "", err
	}
	decls := m.Decls[name]
	imp, imported := m.Imports[name]
	switch {
	case len(decls) > 1 || len(decls) == 1 && imported:
		return jslex.Decl{}, "", r.uncertain("%s is declared more than once in dist/%s", name, file)
	case len(decls) == 1:
		if !decls[0].Static {
			return jslex.Decl{}, "", r.uncertain("%s in dist/%s is not a constant string or list of strings", name, file)
		}
		return decls[0], file, nil
	case !imported:
		return jslex.Decl{}, "", r.uncertain("%s is not defined in dist/%s", name, file)
	case imp.Name == "*" || imp.Name == "default":
		return jslex.Decl{}, "", r.uncertain("%s is a namespace or default import in dist/%s", name, file)
	}
	target, err := r.spec(file, imp.From)
	if err != nil {
		return jslex.Decl{}, "", err
	}
	return r.lookupExport(target, imp.Name, name, hops+1)
}

// lookupExport resolves the export called exported of module file.
func (r *inventoryReader) lookupExport(file, exported, want string, hops int) (jslex.Decl, string, error) {
	if hops > maxImportHops {
		return jslex.Decl{}, "", r.uncertain("%s: more than %d imports to follow", want, maxImportHops)
	}
	m, err := r.load(file)
	if err != nil {
		return jslex.Decl{}, "", err
	}
	exps := m.Exports[exported]
	if len(exps) != 1 {
		return jslex.Decl{}, "", r.uncertain("dist/%s exports %q %d times (needed for %s)", file, exported, len(exps), want)
	}
	e := exps[0]
	if e.From != "" {
		target, err := r.spec(file, e.From)
		if err != nil {
			return jslex.Decl{}, "", err
		}
		return r.lookupExport(target, e.Local, want, hops+1)
	}
	return r.lookup(file, e.Local, hops)
}

// stringOf resolves name to a string constant.
func (r *inventoryReader) stringOf(file, name string) (string, error) {
	d, where, err := r.lookup(file, name, 0)
	if err != nil {
		return "", err
	}
	if d.Str == nil {
		return "", r.uncertain("%s in dist/%s is not a string constant", name, where)
	}
	r.trace = append(r.trace, name+" dist/"+where)
	return *d.Str, nil
}

// ReadInventory determines the worker bundle inventory of the installation
// at root (a real path) whose package.json names version.
func ReadInventory(root, version string) (*Inventory, error) {
	r := &inventoryReader{root: root, version: version, mods: map[string]*jslex.Module{}}
	producer, err := r.findProducer()
	if err != nil {
		return nil, err
	}
	m, err := r.load(producer)
	if err != nil {
		return nil, err
	}

	bodies := m.FunctionBodies(producerFunc)
	if len(bodies) != 1 {
		return nil, r.uncertain("dist/%s defines %s %d times", producer, producerFunc, len(bodies))
	}
	lists := loopLists(bodies[0], stageFunc)
	if len(lists) != 1 {
		return nil, r.uncertain("%s in dist/%s has %d loops that stage worker files, want exactly 1", producerFunc, producer, len(lists))
	}
	symbol := lists[0]
	if err := r.checkStage(m, producer); err != nil {
		return nil, err
	}
	if err := r.checkHash(m, producer); err != nil {
		return nil, err
	}
	r.trace = nil

	d, where, err := r.lookup(producer, symbol, 0)
	if err != nil {
		return nil, err
	}
	if !d.IsArr {
		return nil, r.uncertain("%s in dist/%s is not a list", symbol, where)
	}
	if len(d.Elems) == 0 {
		return nil, r.uncertain("%s in dist/%s is empty", symbol, where)
	}
	r.trace = append(r.trace, symbol+" dist/"+where)
	inv := &Inventory{Source: "dist/" + producer, Symbol: symbol}
	for _, e := range d.Elems {
		var s string
		if e.Str != nil {
			s = *e.Str
		} else if s, err = r.stringOf(where, e.Ident); err != nil {
			return nil, err
		}
		if !workerNameRe().MatchString(s) || s == "." || s == ".." || strings.Contains(s, "\\") {
			return nil, r.uncertain("%s names %q, which is not a plain file name of dist/worker/", symbol, s)
		}
		inv.Files = append(inv.Files, s)
	}
	if !sort.StringsAreSorted(inv.Files) {
		// OpenClaw's producer hashes in list order while its consumer sorts;
		// an unsorted list would make a bundle no worker accepts.
		return nil, r.uncertain("%s is not in byte order (%s)", symbol, strings.Join(inv.Files, ", "))
	}
	for i := 1; i < len(inv.Files); i++ {
		if inv.Files[i] == inv.Files[i-1] {
			return nil, r.uncertain("%s names %s twice", symbol, inv.Files[i])
		}
	}
	sort.Strings(r.trace)
	inv.DefinedIn = dedupe(r.trace)
	for _, f := range inv.Files {
		p := filepath.Join(root, "dist", "worker", f)
		st, err := os.Lstat(p)
		switch {
		case err != nil:
			return nil, errs.Failed(CodeWorkerArtifactMissing, "openclaw %s: worker artifact dist/worker/%s is missing (named by %s in %s)", version, f, symbol, inv.Source).
				WithHint("the installation is incomplete; reinstall or rebuild the package")
		case st.Mode()&fs.ModeSymlink != 0:
			return nil, errs.Failed(CodeSymlinkRefused, "worker artifact dist/worker/%s is a symbolic link", f).
				WithHint("replace the link with the file itself; worker artifacts must be regular files")
		case !st.Mode().IsRegular():
			return nil, errs.Failed(CodeWorkerArtifactMissing, "openclaw %s: worker artifact dist/worker/%s is not a regular file", version, f).
				WithHint("the installation is incomplete; reinstall or rebuild the package")
		}
	}
	return inv, nil
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// findProducer returns the dist/ module file that defines the producer's
// collect function. The bundler names the chunk after its first module
// (bootstrap-<hash>), so those files are read first; only when none of them
// defines it is every top-level module of dist/ read. More than one
// definition is ambiguous.
func (r *inventoryReader) findProducer() (string, error) {
	ents, err := os.ReadDir(filepath.Join(r.root, "dist"))
	if err != nil {
		return "", r.uncertain("dist/ cannot be listed: %v", unwrapPathErr(err))
	}
	var first, rest []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !moduleNameRe().MatchString(n) {
			continue
		}
		if strings.HasPrefix(n, "bootstrap-") {
			first = append(first, n)
		} else {
			rest = append(rest, n)
		}
	}
	needle := []byte("function " + producerFunc + "(")
	scan := func(names []string) ([]string, error) {
		var found []string
		for _, n := range names {
			b, err := fsx.ReadRegular(filepath.Join(r.root, "dist", n), maxModuleSize)
			if err != nil {
				if errors.Is(err, fsx.ErrTooLarge) {
					continue // not a module the bundler would emit for the producer
				}
				return nil, r.uncertain("dist/%s cannot be read: %v", n, unwrapPathErr(err))
			}
			if bytes.Contains(b, needle) {
				found = append(found, n)
			}
		}
		return found, nil
	}
	found, err := scan(first)
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		if found, err = scan(rest); err != nil {
			return "", err
		}
	}
	switch len(found) {
	case 0:
		if _, err := os.Lstat(filepath.Join(r.root, "dist", "worker")); errors.Is(err, fs.ErrNotExist) {
			return "", errs.Failed(CodeWorkerBundleUnsupported, "openclaw %s ships no worker bundle producer (no dist/worker/ and no %s in dist/)", r.version, producerFunc).
				WithHint("export from an OpenClaw release that ships a worker bundle producer (dist/worker/), such as 2026.8.1 or newer")
		}
		return "", r.uncertain("no module in dist/ defines %s", producerFunc)
	case 1:
		return found[0], nil
	}
	return "", r.uncertain("%d modules define %s (%s)", len(found), producerFunc, strings.Join(found, ", "))
}

// loopLists returns the list identifier of every `for (const x of LIST)`
// loop in body whose statement calls call.
func loopLists(body []jslex.Token, call string) []string {
	var out []string
	for i := 0; i+6 < len(body); i++ {
		t := body[i]
		if t.Kind != jslex.Ident || t.Val != "for" || body[i+1].Val != "(" || (body[i+2].Val != "const" && body[i+2].Val != "let") ||
			body[i+3].Kind != jslex.Ident || body[i+4].Val != "of" || body[i+5].Kind != jslex.Ident || body[i+6].Val != ")" {
			continue
		}
		list := body[i+5].Val
		depth := t.Depth
		// The statement: a block, or everything up to the ";" at the loop's depth.
		j := i + 7
		parens := 0
		calls := false
		for ; j < len(body); j++ {
			b := body[j]
			if b.Kind == jslex.Ident && b.Val == call {
				calls = true
			}
			if b.Kind != jslex.Punct {
				continue
			}
			switch b.Val {
			case "(", "[":
				parens++
			case ")", "]":
				parens--
			}
			if j == i+7 && b.Val == "{" {
				continue
			}
			if b.Depth == depth && parens == 0 && (b.Val == ";" || b.Val == "}") {
				break
			}
		}
		if calls {
			out = append(out, list)
		}
	}
	return out
}

// checkStage makes sure the staging function takes its files from
// dist/worker/ and records them with mode 448 (0700), as the bundle hash
// assumes.
func (r *inventoryReader) checkStage(m *jslex.Module, file string) error {
	bodies := m.FunctionBodies(stageFunc)
	if len(bodies) != 1 {
		return r.uncertain("dist/%s defines %s %d times", file, stageFunc, len(bodies))
	}
	if !jslex.HasTemplate(bodies[0], "`dist/worker/${") {
		return r.uncertain("%s in dist/%s does not read from dist/worker/", stageFunc, file)
	}
	b := bodies[0]
	for i := 0; i+2 < len(b); i++ {
		if b[i].Kind == jslex.Ident && b[i].Val == "mode" && b[i+1].Val == ":" && b[i+2].Kind == jslex.Number && b[i+2].Val != "448" {
			return r.uncertain("%s in dist/%s records mode %s, not 448 (0700)", stageFunc, file, b[i+2].Val)
		}
	}
	return nil
}

// checkHash makes sure the producer's hash function is the
// openclaw-worker-bundle-v1 formula.
func (r *inventoryReader) checkHash(m *jslex.Module, file string) error {
	where := file
	fn := hashFunc
	if imp, ok := m.Imports[hashFunc]; ok {
		target, err := r.spec(file, imp.From)
		if err != nil {
			return err
		}
		tm, err := r.load(target)
		if err != nil {
			return err
		}
		exps := tm.Exports[imp.Name]
		if len(exps) != 1 || exps[0].From != "" {
			return r.uncertain("dist/%s does not export %s itself", target, hashFunc)
		}
		where, fn, m = target, exps[0].Local, tm
	}
	bodies := m.FunctionBodies(fn)
	if len(bodies) != 1 {
		return r.uncertain("dist/%s defines %s %d times", where, fn, len(bodies))
	}
	if !jslex.HasTemplate(bodies[0], hashEntryTemplate) {
		return r.uncertain("%s in dist/%s is not the %s formula clawkit implements", fn, where, BundleHashVersion)
	}
	for _, t := range bodies[0] {
		if t.Kind != jslex.Template {
			continue
		}
		if sm := hashHeadRe().FindStringSubmatch(t.Val); sm != nil {
			v, err := r.stringOf(where, sm[1])
			if err != nil {
				return err
			}
			if v != BundleHashVersion {
				return r.uncertain("%s in dist/%s hashes with version %q, not %q", fn, where, v, BundleHashVersion)
			}
			return nil
		}
	}
	return r.uncertain("%s in dist/%s has no version prefix clawkit recognises", fn, where)
}
