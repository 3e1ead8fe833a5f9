package jslex

import (
	"testing"

	"github.com/clawkit/clawkit/pkg/artifacts/artifactstest"
)

func TestLexJSTemplatesAndRegexps(t *testing.T) {
	src := "const a = `x ${ {b: `y ${1}`}.b } z`;\nconst r = /[/`'\"]/u;\nconst s = 'it\\'s';\nif (a) { const inner = \"n\"; }\nconst t = x / 2 / 3;\n"
	m, err := ParseModule(src)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Decls["s"]; len(d) != 1 || d[0].Str == nil {
		t.Fatalf("s: %+v", d)
	}
	if _, ok := m.Decls["inner"]; ok {
		t.Fatal("a block-scoped const was taken for a top-level one")
	}
	if d := m.Decls["a"]; len(d) != 1 || d[0].Static {
		t.Fatalf("a: %+v", d)
	}
}

func FuzzParseJSModule(f *testing.F) {
	for _, b := range artifactstest.Modules(artifactstest.Inventory96, artifactstest.Exported) {
		f.Add(string(b))
	}
	f.Add("const a = `${`${x}`}`; /re/.test(a);")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ParseModule(src)
		if err != nil {
			return
		}
		for name := range m.Decls {
			_ = m.FunctionBodies(name)
		}
	})
}
