package clidoc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/clawkit/clawkit/pkg/errs"
)

// exitCodes are the documented exit codes (README, "Exit codes"): the
// kinds of pkg/errs, whose number is the code.
var exitCodes = []struct {
	kind    errs.Kind
	meaning string
}{
	{0, "success"},
	{errs.KindFailed, "failed: a definitive failure, nothing half-done (includes verification mismatches and invalid content)"},
	{errs.KindUsage, "usage: bad flags, arguments or request shape"},
	{errs.KindRefused, "refused: authority, ownership, policy or a foreign or stale owner; no effect was attempted"},
	{errs.KindUnknown, "outcome unknown: a mutation may have happened; inspect before retrying"},
	{errs.KindUnavailable, "temporarily unavailable: retry later"},
}

// Regenerate is the command that rewrites the committed pages.
const Regenerate = "make docs-cli"

// Markdown renders the CLI reference: "clawkit.md" (the global flags, the
// commands at the root and an index of the groups) and one
// "clawkit_<group>.md" per command group holding every command below it.
func Markdown(root *kong.Node) map[string][]byte {
	files := map[string][]byte{}
	var idx bytes.Buffer
	header(&idx)
	fmt.Fprintf(&idx, "# clawkit\n\n%s\n\n", md(root.Help))
	fmt.Fprintf(&idx, "```\n%s\n```\n\n", usage(root))
	idx.WriteString("## Global flags\n\nEvery command accepts these.\n\n")
	mdFlags(&idx, ownFlags(root))
	idx.WriteString("## Commands\n\n")
	var rootLeaves []*kong.Node
	for _, ch := range Walk(root)[0].Groups {
		if leafOf(ch) {
			fmt.Fprintf(&idx, "- [`%s`](#%s): %s\n", path(ch), anchor(path(ch)), md(ch.Help))
			rootLeaves = append(rootLeaves, ch)
			continue
		}
		fmt.Fprintf(&idx, "- [`%s`](clawkit_%s.md): %s\n", path(ch), ch.Name, md(ch.Help))
		var b bytes.Buffer
		header(&b)
		for i, c := range Walk(ch) {
			mdCommand(&b, c, i == 0)
		}
		files["clawkit_"+ch.Name+".md"] = b.Bytes()
	}
	idx.WriteString("\n## Exit codes\n\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&idx, "- `%d`: %s\n", int(e.kind), md(e.meaning))
	}
	idx.WriteString("\n")
	for _, n := range rootLeaves {
		mdCommand(&idx, Command{Path: path(n), Node: n, Leaf: true}, false)
	}
	files["clawkit.md"] = bytes.TrimRight(idx.Bytes(), "\n")
	files["clawkit.md"] = append(files["clawkit.md"], '\n')
	return files
}

func header(b *bytes.Buffer) {
	fmt.Fprintf(b, "<!-- Generated from the command model by %s; do not edit. -->\n\n", Regenerate)
}

func mdCommand(b *bytes.Buffer, c Command, top bool) {
	level := "##"
	if top {
		level = "#"
	}
	fmt.Fprintf(b, "%s %s\n\n%s\n\n", level, c.Path, md(description(c.Node)))
	fmt.Fprintf(b, "```\n%s\n```\n\n", usage(c.Node))
	if len(c.Node.Positional) > 0 {
		b.WriteString("Arguments:\n\n")
		for _, p := range c.Node.Positional {
			fmt.Fprintf(b, "- `%s`: %s\n", p.Summary(), md(strings.Join(append([]string{p.Help}, flagFacts(p, nil)...), " ")))
		}
		b.WriteString("\n")
	}
	if fl := ownFlags(c.Node); len(fl) > 0 {
		b.WriteString("Flags:\n\n")
		mdFlags(b, fl)
	}
	if !c.Leaf {
		b.WriteString("Commands:\n\n")
		for _, ch := range c.Groups {
			fmt.Fprintf(b, "- [`%s`](#%s): %s\n", path(ch), anchor(path(ch)), md(ch.Help))
		}
		b.WriteString("\n")
	}
}

func mdFlags(b *bytes.Buffer, fl []*kong.Flag) {
	for _, f := range fl {
		fmt.Fprintf(b, "- `%s`: %s\n", flagTerm(f), md(strings.Join(append([]string{f.Help}, flagFacts(f.Value, f.Envs)...), " ")))
	}
	b.WriteString("\n")
}

// anchor is GitHub's heading anchor for a command path.
func anchor(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "-") }

// md escapes what Markdown would take for markup in prose: angle brackets
// (an HTML tag would vanish) and the characters of emphasis and tables.
func md(s string) string {
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "|", `\|`, "`", "\\`")
	return r.Replace(s)
}

// Man renders clawkit.1: every visible command of the tree in one page.
func Man(root *kong.Node) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, ".\\\" Generated from the command model by %s; do not edit.\n", Regenerate)
	b.WriteString(".TH CLAWKIT 1 \"\" \"clawkit\" \"User Commands\"\n")
	b.WriteString(".SH NAME\nclawkit \\- " + roff(lowerFirst(strings.TrimSuffix(root.Help, "."))) + "\n")
	b.WriteString(".SH SYNOPSIS\n.B clawkit\n.I command\n[\\fIflags\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n" + roff(root.Help) + "\n.PP\nRun \\fBclawkit help\\fR \\fIcommand\\fR for the same text as this page's section of that command.\n")
	b.WriteString(".SH GLOBAL FLAGS\n")
	manFlags(&b, ownFlags(root))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range Walk(root)[1:] {
		fmt.Fprintf(&b, ".SS %s\n", roff(c.Path))
		fmt.Fprintf(&b, ".nf\n%s\n.fi\n", roff(usage(c.Node)))
		fmt.Fprintf(&b, ".PP\n%s\n", roffText(description(c.Node)))
		if len(c.Node.Positional) > 0 {
			b.WriteString(".PP\nArguments:\n")
			for _, p := range c.Node.Positional {
				fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(p.Summary()), roffText(strings.Join(append([]string{p.Help}, flagFacts(p, nil)...), " ")))
			}
		}
		if fl := ownFlags(c.Node); len(fl) > 0 {
			b.WriteString(".PP\nFlags:\n")
			manFlags(&b, fl)
		}
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", int(e.kind), roff(e.meaning))
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, f := range ownFlags(root) {
		for _, env := range f.Envs {
			fmt.Fprintf(&b, ".TP\n.B %s\nAs \\fB%s\\fR.\n", roff(env), roff("--"+f.Name))
		}
	}
	b.WriteString(".SH SEE ALSO\nThe Markdown reference in docs/cli/ of the source repository holds the same text.\n")
	return b.Bytes()
}

func manFlags(b *bytes.Buffer, fl []*kong.Flag) {
	for _, f := range fl {
		fmt.Fprintf(b, ".TP\n.B %s\n%s\n", roff(flagTerm(f)), roffText(strings.Join(append([]string{f.Help}, flagFacts(f.Value, f.Envs)...), " ")))
	}
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// roff escapes text for one line of a man page: backslashes, hyphens (a
// plain "-" may be typeset as a hyphen, not the minus a flag needs),
// characters outside printable ASCII and a leading control character.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`, "\n", " ").Replace(s)
	var b strings.Builder
	for _, r := range s {
		if r > 0x7e || (r < 0x20 && r != '\t') {
			// groff reads ASCII: any other character by its code point.
			fmt.Fprintf(&b, `\[u%04X]`, r)
			continue
		}
		b.WriteRune(r)
	}
	s = b.String()
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText is roff for prose that may hold paragraphs (blank lines).
func roffText(s string) string {
	paras := strings.Split(s, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		for j, l := range lines {
			lines[j] = roff(l)
		}
		paras[i] = strings.Join(lines, "\n")
	}
	return strings.Join(paras, "\n.PP\n")
}
