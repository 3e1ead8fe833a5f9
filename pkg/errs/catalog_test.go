package errs_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The error catalog. Codes are public (scripts match them), so each one is
// declared once, as an exported errs.Code constant in a codes.go, and
// documented in docs/errors.md with the exit codes it is used with. A code
// raised by one package is declared in that package's codes.go; a code
// raised by several is declared in pkg/errs/codes.go. Every call site names
// the constant. This test reads the source: a literal code at a call site,
// a code declared in the wrong place (or twice, or not at all), a declared
// code nothing references, and a code missing from (or wrongly described
// in) the docs table all fail it, each with what to write instead.
//
// After a merge brings new codes or literal call sites, run
//
//	CLAWKIT_UPDATE_CATALOG=1 go test ./pkg/errs -run TestCatalog
//
// to move the declarations to their one place, add the missing constants,
// replace each literal at a call site with its constant and add rows to
// docs/errors.md (with the first use's message as the meaning, to be
// edited), then review the diff: every new row is a new public code.

const updateEnv = "CLAWKIT_UPDATE_CATALOG"

var kindNames = map[string]string{
	"Failed": "1", "Usage": "2", "Refused": "3", "Unknown": "4", "Unavailable": "5",
	"KindFailed": "1", "KindUsage": "2", "KindRefused": "3", "KindUnknown": "4", "KindUnavailable": "5",
}

var exitWords = map[string]string{"1": "failed", "2": "usage", "3": "refused", "4": "outcome unknown", "5": "unavailable"}

// use is one place a code is given.
type use struct {
	code, kind, msg, pos string
	// file, start and end locate the code argument in the source; lit is
	// set when it is written as a literal ("x" or errs.Code("x")), else
	// from is the package whose constant it names.
	file       string
	start, end int
	lit        bool
	from       string
	constName  string
}

// wrapper is a package function that passes its parameter codeArg on as an
// error code (research's invalid, mcp's unavailable, ...).
type wrapper struct {
	codeArg, msgArg int
	kind            string // fixed exit code(s), or ""
	kindArg         int    // else the argument naming the kind (-1: none)
}

type pkgInfo struct {
	dir, importPath string
	files           []*ast.File
	names           []string
	consts          map[string]string // const name → string value
	codes           map[string]string // Code* const value → name
	inCodesGo       map[string]bool   // Code* const values declared in codes.go
	untyped         map[string]bool   // codes.go constants declared without the type errs.Code
	refs            map[string]bool   // identifiers this package references (pkg.Name or Name)
	paths           []string          // absolute paths of files
	wrappers        map[string]wrapper
	codeParams      map[string][]int // functions' parameters of type errs.Code: a literal there is a code
}

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

func loadPackages(t testing.TB, root string) (map[string]*pkgInfo, *token.FileSet) {
	fset := token.NewFileSet()
	pkgs := map[string]*pkgInfo{}
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || (path != filepath.Join(root, top) && (strings.HasSuffix(n, "test") || strings.HasSuffix(n, "fake"))) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Dir(path)
			p := pkgs[dir]
			if p == nil {
				rel, _ := filepath.Rel(root, dir)
				p = &pkgInfo{dir: rel, importPath: "github.com/clawkit/clawkit/" + filepath.ToSlash(rel), consts: map[string]string{}, codes: map[string]string{}, inCodesGo: map[string]bool{}, untyped: map[string]bool{}, refs: map[string]bool{}, wrappers: map[string]wrapper{}, codeParams: map[string][]int{}}
				pkgs[dir] = p
			}
			p.files = append(p.files, f)
			rel, _ := filepath.Rel(root, path)
			p.names = append(p.names, rel)
			p.paths = append(p.paths, path)
			return nil
		})
		// A tree without cmd (the rules' test fixtures) is fine.
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	for _, p := range pkgs {
		for fi, f := range p.files {
			isCodes := filepath.Base(p.names[fi]) == "codes.go"
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						if v, ok := stringLit(vs.Values[i]); ok {
							p.consts[name.Name] = v
							if strings.HasPrefix(name.Name, "Code") && snake.MatchString(v) {
								p.codes[v] = name.Name
								if isCodes {
									p.inCodesGo[v] = true
									if !isCodeType(vs.Type) {
										p.untyped[name.Name] = true
									}
								}
							}
						}
					}
				}
			}
		}
		findWrappers(p)
		for fi, f := range p.files {
			if filepath.Base(p.names[fi]) == "codes.go" {
				continue
			}
			imports := importsOf(f)
			ast.Inspect(f, func(n ast.Node) bool {
				switch v := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := v.X.(*ast.Ident); ok {
						if path, ok := imports[x.Name]; ok {
							p.refs[path+"."+v.Sel.Name] = true
						}
					}
				case *ast.Ident:
					p.refs[p.importPath+"."+v.Name] = true
				}
				return true
			})
		}
	}
	return pkgs, fset
}

// isCodeType reports whether a constant's declared type is errs.Code (or
// Code, inside pkg/errs).
func isCodeType(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "Code"
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		return ok && x.Name == "errs" && t.Sel.Name == "Code"
	}
	return false
}

func importsOf(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(path)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = path
	}
	return imports
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

// errsCall reports whether call is errs.Failed/Usage/... and which kind.
func errsCall(call *ast.CallExpr) (string, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "errs" {
		return "", false
	}
	k, ok := kindNames[sel.Sel.Name]
	return k, ok && !strings.HasPrefix(sel.Sel.Name, "Kind")
}

func findWrappers(p *pkgInfo) {
	for _, f := range p.files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			params := map[string]int{}
			i := 0
			for _, field := range fd.Type.Params.List {
				for _, n := range field.Names {
					params[n.Name] = i
					if isCodeType(field.Type) {
						p.codeParams[fd.Name.Name] = append(p.codeParams[fd.Name.Name], i)
					}
					i++
				}
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if k, ok := errsCall(n); ok && len(n.Args) >= 2 {
						if id, ok := n.Args[0].(*ast.Ident); ok {
							if idx, ok := params[id.Name]; ok {
								w := wrapper{codeArg: idx, msgArg: -1, kind: k, kindArg: -1}
								if m, ok := n.Args[1].(*ast.Ident); ok {
									if mi, ok := params[m.Name]; ok {
										w.msgArg = mi
									}
								}
								p.wrappers[fd.Name.Name] = w
							}
						}
					}
				case *ast.CompositeLit:
					code, kind, kindArg, msgArg, ok := compositeCode(n, params)
					if ok && code >= 0 {
						p.wrappers[fd.Name.Name] = wrapper{codeArg: code, msgArg: msgArg, kind: kind, kindArg: kindArg}
					}
				}
				return true
			})
		}
	}
}

// codeLiteral names the struct literals whose Code field is an error
// code: errs.Error, pkg/mcp's CallError, and a skill lint Finding (the code
// `skill validate` fails with, exit 1, when the finding is an error).
var codeLiteral = map[string]bool{"Error": true, "CallError": true, "Finding": true}

var codeLiteralKind = map[string]string{"Finding": "1"}

// compositeCode reads an Error{...} or CallError{...} literal: the
// parameter (or -1) its Code comes from, and its kind.
func compositeCode(cl *ast.CompositeLit, params map[string]int) (code int, kind string, kindArg, msgArg int, ok bool) {
	name := ""
	switch t := cl.Type.(type) {
	case *ast.Ident:
		name = t.Name
	case *ast.SelectorExpr:
		name = t.Sel.Name
	}
	if !codeLiteral[name] {
		return -1, "", -1, -1, false
	}
	code, kindArg, msgArg = -1, -1, -1
	kind = codeLiteralKind[name]
	for _, elt := range cl.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		switch key.Name {
		case "Code":
			if id, ok := kv.Value.(*ast.Ident); ok {
				if i, ok := params[id.Name]; ok {
					code = i
				}
			}
		case "Message":
			if id, ok := kv.Value.(*ast.Ident); ok {
				if i, ok := params[id.Name]; ok {
					msgArg = i
				}
			}
		case "Kind":
			kind, kindArg = kindOf(kv.Value, params)
		case "Class":
			// pkg/mcp's client errors: a protocol error exits 1, an
			// unavailable one 5, or 4 when the request was delivered.
			if id, ok := kv.Value.(*ast.Ident); ok {
				switch id.Name {
				case "ClassProtocol":
					kind = "1"
				case "ClassUnavailable":
					kind = "4,5"
				}
			}
		}
	}
	return code, kind, kindArg, msgArg, true
}

func kindOf(e ast.Expr, params map[string]int) (string, int) {
	if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 { // int(kind)
		e = c.Args[0]
	}
	switch v := e.(type) {
	case *ast.SelectorExpr:
		return kindNames[v.Sel.Name], -1
	case *ast.Ident:
		if i, ok := params[v.Name]; ok {
			return "", i
		}
	}
	return "", -1
}

// ref is what a code argument names: the code, and either lit (a string
// literal, or a conversion errs.Code("x")) or the package and name of the
// constant.
type ref struct {
	code, from, name string
	lit              bool
}

// resolveRef reads a code argument: a literal, or a constant of this
// package or an imported one.
func resolveRef(e ast.Expr, p *pkgInfo, byImport map[string]*pkgInfo, imports map[string]string) (ref, bool) {
	if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 && isCodeType(c.Fun) {
		e = c.Args[0]
	}
	if s, ok := stringLit(e); ok {
		return ref{code: s, lit: true}, true
	}
	switch v := e.(type) {
	case *ast.Ident:
		s, ok := p.consts[v.Name]
		return ref{code: s, from: p.dir, name: v.Name}, ok
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok {
			if q := byImport[imports[x.Name]]; q != nil {
				s, ok := q.consts[v.Sel.Name]
				return ref{code: s, from: q.dir, name: v.Sel.Name}, ok
			}
		}
	}
	return ref{}, false
}

func collectUses(t testing.TB, pkgs map[string]*pkgInfo, fset *token.FileSet) map[*pkgInfo][]use {
	byImport := map[string]*pkgInfo{}
	for _, p := range pkgs {
		byImport[p.importPath] = p
	}
	out := map[*pkgInfo][]use{}
	for _, p := range pkgs {
		if p.dir == "pkg/errs" {
			continue
		}
		for fi, f := range p.files {
			imports := importsOf(f)
			src := p.names[fi]
			add := func(e ast.Expr, kind, msg string) {
				r, ok := resolveRef(e, p, byImport, imports)
				if !ok || !snake.MatchString(r.code) {
					return
				}
				pos := fset.Position(e.Pos())
				out[p] = append(out[p], use{code: r.code, kind: kind, msg: msg, pos: fmt.Sprintf("%s:%d", src, pos.Line),
					file: p.paths[fi], start: pos.Offset, end: fset.Position(e.End()).Offset, lit: r.lit, from: r.from, constName: r.name})
			}
			arg := func(call *ast.CallExpr, i int) ast.Expr {
				if i >= 0 && i < len(call.Args) {
					return call.Args[i]
				}
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if k, ok := errsCall(n); ok && len(n.Args) >= 1 {
						msg, _ := stringLit(arg(n, 1))
						add(n.Args[0], k, msg)
						return true
					}
					var w wrapper
					var found bool
					var codeParams []int
					switch fn := n.Fun.(type) {
					case *ast.Ident:
						w, found = p.wrappers[fn.Name]
						codeParams = p.codeParams[fn.Name]
					case *ast.SelectorExpr:
						if x, ok := fn.X.(*ast.Ident); ok {
							if q := byImport[imports[x.Name]]; q != nil {
								w, found = q.wrappers[fn.Sel.Name]
								codeParams = q.codeParams[fn.Sel.Name]
							}
						}
					}
					// Any other argument a helper takes as an errs.Code
					// (a default code, say) is a code too.
					for _, i := range codeParams {
						if e := arg(n, i); e != nil && (!found || i != w.codeArg) {
							add(e, "", "")
						}
					}
					if !found {
						return true
					}
					e := arg(n, w.codeArg)
					if e == nil {
						return true
					}
					kind := w.kind
					if kind == "" && w.kindArg >= 0 {
						kind, _ = kindOf(arg(n, w.kindArg), nil)
					}
					msg, _ := stringLit(arg(n, w.msgArg))
					add(e, kind, msg)
				case *ast.CompositeLit:
					name := ""
					switch t := n.Type.(type) {
					case *ast.Ident:
						name = t.Name
					case *ast.SelectorExpr:
						name = t.Sel.Name
					}
					if !codeLiteral[name] {
						return true
					}
					var code ast.Expr
					var msg string
					kind := codeLiteralKind[name]
					for _, elt := range n.Elts {
						kv, ok := elt.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						key, _ := kv.Key.(*ast.Ident)
						if key == nil {
							continue
						}
						switch key.Name {
						case "Code":
							code = kv.Value
						case "Message":
							msg, _ = stringLit(kv.Value)
						case "Kind":
							kind, _ = kindOf(kv.Value, nil)
						}
					}
					if code != nil {
						add(code, kind, msg)
					}
				}
				return true
			})
		}
	}
	return out
}

// docRow is one row of docs/errors.md's table.
type docRow struct{ exit, meaning, where string }

var rowRE = regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| ([^|]*) \\| ([^|]*) \\| ([^|]*) \\|$")

func readDocs(t testing.TB, path string) (map[string]docRow, []string) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	rows := map[string]docRow{}
	var head []string
	inTable := false
	for _, line := range strings.Split(string(b), "\n") {
		if m := rowRE.FindStringSubmatch(line); m != nil {
			rows[m[1]] = docRow{strings.TrimSpace(m[2]), strings.TrimSpace(m[3]), strings.TrimSpace(m[4])}
			inTable = true
			continue
		}
		if !inTable {
			head = append(head, line)
		}
	}
	return rows, head
}

func exitText(kinds map[string]bool) string {
	var ks []string
	for k := range kinds {
		for _, one := range strings.Split(k, ",") {
			if one != "" && !contains(ks, one) {
				ks = append(ks, one)
			}
		}
	}
	if len(ks) == 0 {
		ks = []string{"1"}
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, k+" "+exitWords[k])
	}
	return strings.Join(parts, ", ")
}

// raisedByMCP: the MCP client's errors (pkg/mcp and below) get their
// exit code at run time (mcp.Coded: delivered or not, definitive or not),
// which this static reading cannot follow; for them the row may list more
// exits than the call sites show, and the end-to-end check
// (testscript/errortable_test.go) holds each exit a test produces to the
// row.
func raisedByMCP(where map[string]bool) bool {
	for w := range where {
		if w == "pkg/mcp" || strings.HasPrefix(w, "pkg/mcp/") {
			return true
		}
	}
	return false
}

// exitsCover reports whether the row's exit text lists every exit of the
// static one ("4 outcome unknown, 5 unavailable" covers "5 unavailable").
func exitsCover(row, static string) bool {
	for _, part := range strings.Split(static, ", ") {
		if !strings.Contains(", "+row+",", ", "+part+",") {
			return false
		}
	}
	return true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// meaningOf turns a message format into a table cell.
func meaningOf(msg string) string {
	m := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`).ReplaceAllString(msg, "…")
	m = strings.ReplaceAll(m, "|", "/")
	m = strings.ReplaceAll(m, "\n", " ")
	if m == "" || m == "…" {
		return "(see the message)"
	}
	return m
}

var initialisms = map[string]bool{"API": true, "HTTP": true, "ID": true, "JSON": true, "MCP": true, "RPC": true, "SQL": true, "TLS": true, "URL": true, "UTF8": true}

func constName(code string) string {
	var b strings.Builder
	b.WriteString("Code")
	for _, part := range strings.Split(code, "_") {
		if part == "" {
			continue
		}
		// Initialisms are upper case (revive's var-naming).
		if up := strings.ToUpper(part); initialisms[up] {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// errsDir is the one place of the codes several packages raise.
const errsDir = "pkg/errs"

// qualified is how a file of package from names the constant name of
// package home.
func qualified(from, home, name string) string {
	if from == home {
		return name
	}
	return filepath.Base(home) + "." + name
}

func TestCatalog(t *testing.T) {
	checkCatalog(t, repoRoot(t), os.Getenv(updateEnv) == "1")
}

// checkCatalog reports every departure of the source under root from the
// catalog's rules as t.Errorf; with update it makes the edits instead.
func checkCatalog(t testing.TB, root string, update bool) {
	pkgs, fset := loadPackages(t, root)
	uses := collectUses(t, pkgs, fset)
	docsPath := filepath.Join(root, "docs", "errors.md")
	rows, head := readDocs(t, docsPath)

	type codeInfo struct {
		kinds map[string]bool
		where map[string]bool
		first use
	}
	all := map[string]*codeInfo{}
	var dirs []*pkgInfo
	byDir := map[string]*pkgInfo{}
	for _, p := range pkgs {
		dirs = append(dirs, p)
		byDir[p.dir] = p
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].dir < dirs[j].dir })
	for _, p := range dirs {
		for _, u := range uses[p] {
			ci := all[u.code]
			if ci == nil {
				ci = &codeInfo{kinds: map[string]bool{}, where: map[string]bool{}, first: u}
				all[u.code] = ci
			}
			if u.kind != "" {
				ci.kinds[u.kind] = true
			}
			ci.where[p.dir] = true
			if ci.first.msg == "" {
				ci.first = u
			}
		}
	}
	// home is the one codes.go a code belongs in: its package's, or
	// pkg/errs's when several packages raise it.
	home := func(code string) string {
		ci := all[code]
		if ci == nil {
			return ""
		}
		if len(ci.where) > 1 {
			return errsDir
		}
		for w := range ci.where {
			return w
		}
		return ""
	}
	// name is the constant a code has (or is to have) in its home.
	name := func(code string) string {
		h := byDir[home(code)]
		if n, ok := h.codes[code]; ok && h.inCodesGo[code] {
			return n
		}
		n := constName(code)
		if v, taken := h.consts[n]; taken && v != code {
			n += "Code"
		}
		return n
	}

	// Declarations: once, in the code's home, typed, and referenced.
	drop := map[*pkgInfo][]string{}
	add := map[*pkgInfo]map[string]use{}
	for _, p := range dirs {
		var declared []string
		for code := range p.inCodesGo {
			declared = append(declared, code)
		}
		sort.Strings(declared)
		for _, code := range declared {
			n := p.codes[code]
			h := home(code)
			switch {
			case h == "" && !referenced(pkgs, p, n):
				if update {
					drop[p] = append(drop[p], n)
					continue
				}
				t.Errorf("%s declares %s = %q but nothing uses it: remove the constant (or use it)", p.dir, n, code)
			case h != "" && h != p.dir:
				if update {
					drop[p] = append(drop[p], n)
					continue
				}
				var where []string
				for w := range all[code].where {
					where = append(where, w)
				}
				sort.Strings(where)
				t.Errorf("%s declares %s = %q, but the code is raised in %s: its one place is %s/codes.go (move the constant there)", p.dir, n, code, strings.Join(where, ", "), h)
			case p.untyped[n]:
				t.Errorf("%s/codes.go declares %s without its type: write %s errs.Code = %q", p.dir, n, n, code)
			}
		}
	}
	var codes []string
	for c := range all {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		h := byDir[home(c)]
		if h.inCodesGo[c] {
			continue
		}
		if update {
			if add[h] == nil {
				add[h] = map[string]use{}
			}
			add[h][c] = all[c].first
			continue
		}
		typ := "errs.Code"
		if h.dir == errsDir {
			typ = "Code"
		}
		t.Errorf("code %q (used in %s, exit %s) is not declared: add\n\t%s %s = %q\nto %s/codes.go (or run %s=1 go test ./pkg/errs -run TestCatalog)", c, all[c].first.pos, exitText(all[c].kinds), name(c), typ, c, h.dir, updateEnv)
	}

	// Call sites: each names the constant in the code's home.
	edits := map[string][]edit{}
	for _, p := range dirs {
		for _, u := range uses[p] {
			h := home(u.code)
			want := qualified(p.dir, h, name(u.code))
			switch {
			case u.lit:
				if !update {
					t.Errorf("%s: literal code %q: write %s (declared in %s/codes.go) instead", u.pos, u.code, want, h)
				}
			case u.from != h || u.constName != name(u.code):
				if !update {
					t.Errorf("%s: code %q names %s of %s: write %s (its one place is %s/codes.go)", u.pos, u.code, u.constName, u.from, want, h)
				}
			default:
				continue
			}
			edits[u.file] = append(edits[u.file], edit{u.start, u.end, want})
		}
	}

	for c := range rows {
		if all[c] == nil {
			if !update {
				t.Errorf("docs/errors.md lists `%s`, which no code uses: remove its row", c)
			}
		}
	}
	var table bytes.Buffer
	for _, c := range codes {
		ci := all[c]
		exit := exitText(ci.kinds)
		var where []string
		for w := range ci.where {
			where = append(where, strings.TrimPrefix(w, "pkg/"))
		}
		sort.Strings(where)
		row, ok := rows[c]
		meaning := row.meaning
		if !ok || meaning == "" {
			meaning = meaningOf(ci.first.msg)
		}
		rowExit := exit
		if ok && raisedByMCP(ci.where) && exitsCover(row.exit, exit) {
			// The update keeps the run-time exits the end-to-end check
			// (testscript/errortable_test.go) put in an MCP row.
			rowExit = row.exit
		}
		fmt.Fprintf(&table, "| `%s` | %s | %s | %s |\n", c, rowExit, meaning, strings.Join(where, ", "))
		if update {
			continue
		}
		switch {
		case !ok:
			t.Errorf("code %q (used in %s) is not in docs/errors.md: add the row\n\t| `%s` | %s | %s | %s |\n(or run %s=1 go test ./pkg/errs -run TestCatalog)", c, ci.first.pos, c, exit, meaning, strings.Join(where, ", "), updateEnv)
		case row.exit != exit && !(raisedByMCP(ci.where) && exitsCover(row.exit, exit)):
			t.Errorf("docs/errors.md gives `%s` exit %q, but the code uses it with exit %q: fix the row", c, row.exit, exit)
		case row.where != strings.Join(where, ", "):
			t.Errorf("docs/errors.md says `%s` is used in %q, but it is used in %q: fix the row", c, row.where, strings.Join(where, ", "))
		}
	}
	if update {
		for p, names := range drop {
			for _, n := range names {
				dropCode(t, root, p, n)
			}
		}
		for p, first := range add {
			var cs []string
			for c := range first {
				cs = append(cs, c)
			}
			sort.Strings(cs)
			writeCodes(t, root, p, cs, first, name)
		}
		for file, es := range edits {
			rewrite(t, file, es)
		}
		var doc bytes.Buffer
		for len(head) > 0 && head[len(head)-1] == "" {
			head = head[:len(head)-1]
		}
		doc.WriteString(strings.Join(head, "\n"))
		doc.WriteString("\n")
		doc.Write(table.Bytes())
		if err := os.WriteFile(docsPath, doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d codes, %d uses", len(all), func() int {
		n := 0
		for _, u := range uses {
			n += len(u)
		}
		return n
	}())
}

// referenced reports whether any package's source (outside codes.go)
// names p's constant n: a code compared against (errs.CodeOf(err) ==
// CodeX) is in use even where no error is built with it.
func referenced(pkgs map[string]*pkgInfo, p *pkgInfo, n string) bool {
	for _, q := range pkgs {
		if q.refs[p.importPath+"."+n] {
			return true
		}
	}
	return false
}

// edit replaces the source between two offsets with text.
type edit struct {
	start, end int
	text       string
}

// rewrite replaces code arguments in file (offsets of the parsed source)
// and adds the pkg/errs import when a replacement names errs.
func rewrite(t testing.TB, file string, es []edit) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].start > es[j].start })
	needErrs := false
	for _, e := range es {
		b = append(b[:e.start:e.start], append([]byte(e.text), b[e.end:]...)...)
		needErrs = needErrs || strings.HasPrefix(e.text, "errs.")
	}
	const imp = "\"github.com/clawkit/clawkit/pkg/errs\""
	if needErrs && !bytes.Contains(b, []byte(imp)) {
		if i := bytes.Index(b, []byte("\nimport (\n")); i >= 0 {
			at := i + len("\nimport (\n")
			b = append(b[:at:at], append([]byte("\t"+imp+"\n"), b[at:]...)...)
		} else if i := bytes.Index(b, []byte("\nimport ")); i >= 0 {
			b = append(b[:i+1:i+1], append([]byte("import "+imp+"\n"), b[i+1:]...)...)
		}
	}
	out, err := format.Source(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeCodes appends the missing declarations to p's codes.go.
func writeCodes(t testing.TB, root string, p *pkgInfo, codes []string, first map[string]use, constOf func(string) string) {
	path := filepath.Join(root, p.dir, "codes.go")
	b, err := os.ReadFile(path)
	pkgName := p.files[0].Name.Name
	if os.IsNotExist(err) {
		b = []byte(fmt.Sprintf("package %s\n\nimport \"github.com/clawkit/clawkit/pkg/errs\"\n", pkgName))
		if p.dir == errsDir {
			b = []byte(fmt.Sprintf("package %s\n", pkgName))
		}
	} else if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(b)
	// The group's doc comment sits right above "const (": revive's
	// exported rule then takes it as the doc of every constant in the
	// group, whose own "// CodeX: message" lines it does not check.
	buf.WriteString("\n// Error codes of this package: public and stable (docs/errors.md lists\n// them all with their exit codes).\nconst (\n")
	typ := "errs.Code"
	if p.dir == errsDir {
		typ = "Code"
	}
	for _, c := range codes {
		name := constOf(c)
		fmt.Fprintf(&buf, "\t// %s: %s\n\t%s %s = %q\n", name, meaningOf(first[c].msg), name, typ, c)
	}
	buf.WriteString(")\n")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropCode removes an unused declaration (and its comment line) from p's
// codes.go.
func dropCode(t testing.TB, root string, p *pkgInfo, name string) {
	path := filepath.Join(root, p.dir, "codes.go")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\t// ` + regexp.QuoteMeta(name) + `:.*\n)?\t` + regexp.QuoteMeta(name) + ` (errs\.)?Code = .*\n`)
	if !re.Match(b) {
		t.Errorf("%s declares %s but not in the generated form: remove it by hand", p.dir, name)
		return
	}
	b = re.ReplaceAll(b, nil)
	b = regexp.MustCompile(`\n+const \(\n\)\n`).ReplaceAll(b, []byte("\n"))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
