package ops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// allowed is docs/architecture.md's "what may import what": for each
// package (its path below the module), the clawkit packages it may
// import. A package not listed may import only the leaves.
var allowed = map[string][]string{
	"cmd/clawkit":                 {"pkg/cli"},
	"cmd/fakegoogle":              {"pkg/research/google/fakeapi"},
	"pkg/cli":                     {"*"},
	"pkg/ops":                     {"pkg/owner", "pkg/core", "pkg/research", "pkg/research/riversched", "pkg/skills"},
	"pkg/core":                    {"pkg/owner", "pkg/store", "pkg/config", "pkg/auth", "pkg/oauth"},
	"pkg/gateway":                 {"pkg/owner", "pkg/store"},
	"pkg/owner":                   {"pkg/store", "pkg/config", "pkg/auth"},
	"pkg/research":                {"pkg/owner", "pkg/store", "pkg/config", "pkg/auth", "pkg/research/google"},
	"pkg/research/riversched":     {"pkg/owner", "pkg/store", "pkg/research"},
	"pkg/skills":                  {"pkg/owner", "pkg/store", "pkg/config", "pkg/auth", "pkg/skilllint", "pkg/pluginmanifest"},
	"pkg/skilllint":               {},
	"pkg/pluginmanifest":          {"pkg/skilllint"},
	"pkg/store":                   {"pkg/config"},
	"pkg/crabbox":                 {"pkg/artifacts", "pkg/archive"},
	"pkg/artifacts":               {"pkg/archive", "pkg/jslex", "pkg/pluginmanifest"},
	"pkg/crabbox/crabboxtest":     {"pkg/artifacts", "pkg/archive", "pkg/archive/archivetest", "pkg/artifacts/artifactstest"},
	"pkg/research/google/fakeapi": {},
	"pkg/research/officetest":     {},
	"pkg/artifacts/artifactstest": {},
	"pkg/archive/archivetest":     {},
	"pkg/research/google":         {},
	"pkg/mcp":                     {},
	"pkg/mcp/mcpstdio":            {"pkg/mcp"},
	"pkg/mcp/mcphttp":             {"pkg/mcp", "pkg/mcp/mcpstdio", "pkg/mcp/mcphttp/sse", "pkg/oauth"},
	"pkg/oauth":                   {"pkg/auth"},
	"pkg/mcp/mcphttp/sse":         {},
	"pkg/mcp/mcpfake":             {},
	"pkg/store/pgtest":            {},
	"pkg/archive":                 {},
	"pkg/auth":                    {},
	"pkg/jslex":                   {},
	"pkg/config":                  {},
	"pkg/errs":                    {"-"},
	"pkg/clidoc":                  {},
}

// leaves anyone may import.
var leaves = []string{"pkg/errs", "pkg/fsx", "pkg/json5", "pkg/strictjson", "pkg/termsafe", "pkg/redact", "pkg/buildinfo", "pkg/netaddr"}

// TestLayers checks the import rules of docs/architecture.md against the
// source (non-test files): nothing imports pkg/cli, no domain imports
// another unless listed, pkg/errs imports no clawkit package.
func TestLayers(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	const mod = "github.com/clawkit/clawkit/"
	imports := map[string]map[string]bool{}
	err := walkSource(root, parser.ImportsOnly, func(rel string, f *ast.File) error {
		if imports[rel] == nil {
			imports[rel] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if q, ok := strings.CutPrefix(p, mod); ok {
				imports[rel][q] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		rules, listed := allowed[p]
		if !listed && !contains(leaves, p) {
			t.Errorf("%s is not in docs/architecture.md's import rules: add it there and to 'allowed' in pkg/ops/layers_test.go", p)
			continue
		}
		for q := range imports[p] {
			switch {
			case q == "pkg/cli" && p != "cmd/clawkit":
				t.Errorf("%s imports pkg/cli: nothing but cmd/clawkit may", p)
			case contains(rules, "-"):
				t.Errorf("%s imports %s: it may import no clawkit package", p, q)
			case contains(rules, "*"), contains(rules, q):
			case contains(leaves, q) && p != q:
			default:
				t.Errorf("%s imports %s, which docs/architecture.md does not allow", p, q)
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// walkSource parses every non-test Go file under pkg/ and cmd/ (testdata
// aside) with mode and hands it to f with its package's directory below
// root, slash-separated: the source the layer and check tables read.
func walkSource(root string, mode parser.Mode, f func(pkg string, file *ast.File) error) error {
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
				return err
			}
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, mode)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			return f(filepath.ToSlash(rel), file)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
