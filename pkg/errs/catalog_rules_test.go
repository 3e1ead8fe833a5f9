package errs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// recorder collects what checkCatalog reports instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The catalog's rules on a small tree: a literal code at a call site, a
// shared code declared in one of its packages, an unused constant, an
// undeclared code and stale docs each fail with what to write; the update
// mode writes exactly that, after which nothing is left to report.
func TestCatalogRules(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"pkg/errs/errs.go":  "package errs\n\ntype Code string\n\nfunc CodeOf() Code { return CodeFailed }\n",
		"pkg/errs/codes.go": "package errs\n\nconst (\n\t// CodeFailed: the default\n\tCodeFailed Code = \"failed\"\n)\n",
		"pkg/a/codes.go": `package a

import "github.com/clawkit/clawkit/pkg/errs"

const (
	// CodeOwn: own
	CodeOwn errs.Code = "own"
	// CodeUnusedOne: nobody
	CodeUnusedOne errs.Code = "unused_one"
	// CodeShared: both
	CodeShared errs.Code = "shared"
)
`,
		"pkg/a/a.go": `package a

import "github.com/clawkit/clawkit/pkg/errs"

func f() error { return errs.Usage("own", "a literal") }

func g() error { return errs.Failed(CodeOwn, "named") }

func h() error { return errs.Refused(CodeShared, "shared in a") }
`,
		"pkg/b/b.go": `package b

import (
	"fmt"

	"github.com/clawkit/clawkit/pkg/errs"
)

func f() error { return errs.Refused(errs.Code("shared"), "shared in b") }

func g() error { return fmt.Errorf("%w", errs.Usage("brand_new", "brand new %s", "x")) }
`,
		"docs/errors.md": "# Error codes\n\n| Code | Exit | Meaning | Raised in |\n| --- | --- | --- | --- |\n| `own` | 1 failed, 2 usage | own | a |\n| `gone` | 1 failed | gone | a |\n",
	})
	rec := &recorder{TB: t}
	checkCatalog(rec, root, false)
	want := []string{
		`pkg/a declares CodeShared = "shared", but the code is raised in pkg/a, pkg/b: its one place is pkg/errs/codes.go`,
		`pkg/a declares CodeUnusedOne = "unused_one" but nothing uses it`,
		`code "brand_new" (used in pkg/b/b.go:11, exit 2 usage) is not declared: add` + "\n\tCodeBrandNew errs.Code = \"brand_new\"\nto pkg/b/codes.go",
		`code "shared" (used in pkg/a/a.go:9, exit 3 refused) is not declared: add` + "\n\tCodeShared Code = \"shared\"\nto pkg/errs/codes.go",
		`pkg/a/a.go:5: literal code "own": write CodeOwn (declared in pkg/a/codes.go) instead`,
		`pkg/a/a.go:9: code "shared" names CodeShared of pkg/a: write errs.CodeShared (its one place is pkg/errs/codes.go)`,
		`pkg/b/b.go:9: literal code "shared": write errs.CodeShared (declared in pkg/errs/codes.go) instead`,
		`pkg/b/b.go:11: literal code "brand_new": write CodeBrandNew (declared in pkg/b/codes.go) instead`,
		"docs/errors.md lists `gone`, which no code uses",
		`code "brand_new" (used in pkg/b/b.go:11) is not in docs/errors.md`,
		`code "shared" (used in pkg/a/a.go:9) is not in docs/errors.md`,
	}
	got := strings.Join(rec.errors, "\n---\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing report %q in:\n%s", w, got)
		}
	}
	if len(rec.errors) != len(want) {
		t.Errorf("%d reports, want %d:\n%s", len(rec.errors), len(want), got)
	}

	// The update writes the fixes; the tree then passes.
	checkCatalog(&recorder{TB: t}, root, true)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, patterns := range map[string][]string{
		"pkg/a/a.go":        {`errs\.Usage\(CodeOwn, "a literal"\)`, `errs\.Refused\(errs\.CodeShared, "shared in a"\)`},
		"pkg/b/b.go":        {`errs\.Refused\(errs\.CodeShared, "shared in b"\)`, `errs\.Usage\(CodeBrandNew, "brand new`},
		"pkg/b/codes.go":    {`CodeBrandNew errs\.Code = "brand_new"`},
		"pkg/errs/codes.go": {`CodeShared Code = "shared"`},
		"docs/errors.md":    {"\\| `brand_new` \\| 2 usage \\| brand new … \\| b \\|", "\\| `shared` \\| 3 refused \\| shared in a \\| a, b \\|"},
	} {
		body := read(name)
		for _, p := range patterns {
			if !regexp.MustCompile(p).MatchString(body) {
				t.Errorf("%s does not match %q:\n%s", name, p, body)
			}
		}
	}
	if body := read("pkg/a/codes.go"); strings.Contains(body, "CodeShared") || strings.Contains(body, "CodeUnusedOne") || !strings.Contains(body, "CodeOwn") {
		t.Errorf("pkg/a/codes.go after the update:\n%s", body)
	}
	after := &recorder{TB: t}
	checkCatalog(after, root, false)
	sort.Strings(after.errors)
	if len(after.errors) != 0 {
		t.Errorf("after the update:\n%s", strings.Join(after.errors, "\n"))
	}
}
