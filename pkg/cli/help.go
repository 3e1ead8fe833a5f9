package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/clawkit/clawkit/pkg/errs"
)

// HelpCmd is `clawkit help [CMD...]`: the same text as `CMD --help`.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to describe."`
}

func (h HelpCmd) Run(env *Env) error {
	kctx, out := env.Kong, env.Out
	args := append(append([]string{}, h.Command...), "--help")
	if out.JSON {
		args = append(args, "--json")
	}
	var c CLI
	parser, err := newParser(&c, args, false, kctx.Stdout, kctx.Stderr, kctx.Exit)
	if err != nil {
		return err
	}
	_, err = parser.Parse(args)
	if err != nil {
		return errs.Usage(CodeUsage, "%v", err).WithHint("run 'clawkit --help' for the list of commands")
	}
	return nil
}

// CompletionCmd prints a script that makes the shell ask clawkit itself for
// completions (COMP_LINE protocol), so completions always match the binary.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

func (c CompletionCmd) Run(env *Env) error {
	out := env.Out
	var s string
	switch c.Shell {
	case "bash":
		s = "complete -o default -C clawkit clawkit\n"
	case "zsh":
		s = "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C clawkit clawkit\n"
	case "fish":
		s = "function __clawkit_complete\n    set -lx COMP_LINE (commandline -cp)\n    clawkit\nend\ncomplete -c clawkit -f -a '(__clawkit_complete)'\n"
	}
	if out.JSON {
		return out.PrintJSON(map[string]string{"shell": c.Shell, "script": s})
	}
	_, err := io.WriteString(out.Stdout, s)
	if err != nil {
		return fmt.Errorf("write completion script: %w", err)
	}
	return nil
}

// helpDoc is `--help --json`: the help text and the command tree below the
// command, so scripts can discover commands without parsing prose.
type helpDoc struct {
	Command     string       `json:"command"`
	Help        string       `json:"help"`
	Subcommands []helpSubcmd `json:"subcommands"`
	Text        string       `json:"text"`
}

type helpSubcmd struct {
	Name string `json:"name"`
	Help string `json:"help"`
}

// helpPrinter prints kong's help, or with --json one JSON document holding
// the same text and the subcommands.
func helpPrinter(asJSON bool) kong.HelpPrinter {
	return func(options kong.HelpOptions, ctx *kong.Context) error {
		if !asJSON {
			return kong.DefaultHelpPrinter(options, ctx)
		}
		var buf bytes.Buffer
		stdout := ctx.Stdout
		ctx.Stdout = &buf
		err := kong.DefaultHelpPrinter(options, ctx)
		ctx.Stdout = stdout
		if err != nil {
			return err
		}
		node := ctx.Selected()
		if node == nil {
			node = ctx.Model.Node
		}
		doc := helpDoc{Command: strings.TrimSpace(node.FullPath()), Help: node.Help, Text: buf.String(), Subcommands: []helpSubcmd{}}
		for _, c := range node.Leaves(false) {
			if c == node || c.Hidden {
				continue
			}
			doc.Subcommands = append(doc.Subcommands, helpSubcmd{Name: strings.TrimSpace(c.FullPath()), Help: c.Help})
		}
		return writeJSON(stdout, doc, "", "  ")
	}
}
