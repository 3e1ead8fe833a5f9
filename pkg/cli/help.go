package cli

import (
	"fmt"
	"io"

	"github.com/alecthomas/kong"

	"github.com/clawkit/clawkit/pkg/errs"
)

// HelpCmd is `clawkit help [CMD...]`: the same text as `CMD --help`.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to describe."`
}

func (h HelpCmd) Run(kctx *kong.Context) error {
	args := append(append([]string{}, h.Command...), "--help")
	var c CLI
	parser, err := newParser(&c, args, false, kctx.Stdout, kctx.Stderr, kctx.Exit)
	if err != nil {
		return err
	}
	_, err = parser.Parse(args)
	if err != nil {
		return errs.Usage("usage", "%v", err).WithHint("run 'clawkit --help' for the list of commands")
	}
	return nil
}

// CompletionCmd prints a script that makes the shell ask clawkit itself for
// completions (COMP_LINE protocol), so completions always match the binary.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

func (c CompletionCmd) Run(out *Output) error {
	var s string
	switch c.Shell {
	case "bash":
		s = "complete -o default -C clawkit clawkit\n"
	case "zsh":
		s = "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C clawkit clawkit\n"
	case "fish":
		s = "function __clawkit_complete\n    set -lx COMP_LINE (commandline -cp)\n    clawkit\nend\ncomplete -c clawkit -f -a '(__clawkit_complete)'\n"
	}
	_, err := io.WriteString(out.Stdout, s)
	if err != nil {
		return fmt.Errorf("write completion script: %w", err)
	}
	return nil
}
