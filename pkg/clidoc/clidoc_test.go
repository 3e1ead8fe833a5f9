package clidoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

type leafCmd struct {
	Name   string `arg:"" help:"A <name> with *stars*."`
	Out    string `help:"Where to write." placeholder:"FILE" env:"T_OUT"`
	Mode   string `help:"A mode." enum:"b,a" default:"a"`
	Quiet  bool   `help:"Say less."`
	Secret string `hidden:"" help:"Never shown."`
}

func (leafCmd) Run() error { return nil }

type groupCmd struct {
	Leaf leafCmd `cmd:"" help:"A leaf — with an em dash; .dot and \\back."`
}

type testCLI struct {
	Home  string   `help:"State folder." placeholder:"DIR"`
	Top   leafCmd  `cmd:"" help:"A root-level command."`
	Group groupCmd `cmd:"" help:"A group."`
	Gen   leafCmd  `cmd:"" hidden:"" help:"Hidden tool."`
}

func model(t *testing.T) *kong.Node {
	t.Helper()
	var c testCLI
	k, err := kong.New(&c, kong.Name("clawkit"), kong.Description("Test tree."))
	if err != nil {
		t.Fatal(err)
	}
	return k.Model.Node
}

func TestMarkdown(t *testing.T) {
	files := Markdown(model(t))
	if len(files) != 2 || files["clawkit.md"] == nil || files["clawkit_group.md"] == nil {
		t.Fatalf("files: %v", keys(files))
	}
	idx, grp := string(files["clawkit.md"]), string(files["clawkit_group.md"])
	for _, want := range []string{
		"- `--home DIR`: State folder.",
		"- [`clawkit top`](#clawkit-top): A root-level command.",
		"- [`clawkit group`](clawkit_group.md): A group.",
		"## clawkit top",
		"- `<name>`: A &lt;name&gt; with \\*stars\\*. Required.",
		"- `--out FILE`: Where to write. Environment: T\\_OUT.",
		"- `--mode MODE`: A mode. One of: a, b. Default: a.",
		"- `--quiet`: Say less.",
		"- `2`: usage: bad flags",
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("clawkit.md lacks %q:\n%s", want, idx)
		}
	}
	if !strings.Contains(grp, "# clawkit group\n") || !strings.Contains(grp, "## clawkit group leaf\n") || !strings.Contains(grp, "clawkit group leaf <name> [flags]") {
		t.Errorf("clawkit_group.md:\n%s", grp)
	}
	for name, b := range files {
		if strings.Contains(string(b), "Hidden tool") || strings.Contains(string(b), "secret") || strings.Contains(string(b), "Never shown") {
			t.Errorf("%s shows a hidden command or flag", name)
		}
	}
}

func TestMan(t *testing.T) {
	man := string(Man(model(t)))
	for _, want := range []string{
		".TH CLAWKIT 1 \"\"",
		".SS clawkit group leaf\n",
		".B \\-\\-out FILE\n",
		`A leaf \[u2014] with an em dash; .dot and \eback.`,
		".SH EXIT STATUS",
		".B 4\n",
	} {
		if !strings.Contains(man, want) {
			t.Errorf("man page lacks %q:\n%s", want, man)
		}
	}
	if strings.Contains(man, "Hidden tool") {
		t.Error("the man page shows a hidden command")
	}
	for i, l := range strings.Split(man, "\n") {
		for _, r := range l {
			if r > 0x7e {
				t.Fatalf("line %d holds a non-ASCII character: %q", i+1, l)
			}
		}
	}
	if got := roff(".starts with a dot"); got != `\&.starts with a dot` {
		t.Errorf("roff = %q", got)
	}
}

func TestWriteAndStale(t *testing.T) {
	root := model(t)
	dir := t.TempDir()
	man, md := filepath.Join(dir, "man"), filepath.Join(dir, "cli")
	if s := Stale(root, man, md); len(s) != 3 {
		t.Fatalf("nothing written yet, stale = %v", s)
	}
	must(t, os.MkdirAll(md, 0o755))
	must(t, os.WriteFile(filepath.Join(md, "clawkit_removed.md"), []byte("old"), 0o644))
	must(t, os.WriteFile(filepath.Join(md, "notes.md"), []byte("mine"), 0o644))
	written, err := Write(root, man, md)
	if err != nil || len(written) != 3 {
		t.Fatalf("Write = %v %v", written, err)
	}
	if s := Stale(root, man, md); len(s) != 0 {
		t.Fatalf("fresh, stale = %v", s)
	}
	if _, err := os.Stat(filepath.Join(md, "clawkit_removed.md")); !os.IsNotExist(err) {
		t.Errorf("a removed group's page survived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(md, "notes.md")); err != nil {
		t.Errorf("a page that is not generated was removed: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(man, ManName), []byte("edited"), 0o644))
	if s := Stale(root, man, md); len(s) != 1 || filepath.Base(s[0]) != ManName {
		t.Fatalf("edited man page, stale = %v", s)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
