package cli

import (
	"fmt"

	"github.com/clawkit/clawkit/pkg/clidoc"
	"github.com/clawkit/clawkit/pkg/errs"
)

// GenDocsCmd writes the man page and the Markdown CLI reference from this
// binary's own command model (pkg/clidoc). Hidden: it is `make docs-cli`'s
// and `make release`'s tool, not a user command.
type GenDocsCmd struct {
	Man      string `help:"Folder for clawkit.1." placeholder:"DIR"`
	Markdown string `help:"Folder for the Markdown reference." placeholder:"DIR"`
}

// GenDocsResult lists the files gen-docs wrote.
type GenDocsResult struct {
	Written []string `json:"written"`
}

// Run runs `clawkit gen-docs`.
func (c GenDocsCmd) Run(env *Env) error {
	if c.Man == "" && c.Markdown == "" {
		return errs.Usage(CodeUsage, "gen-docs needs --man DIR, --markdown DIR or both").
			WithHint("make docs-cli runs: clawkit gen-docs --man docs/man --markdown docs/cli")
	}
	written, err := clidoc.Write(env.Kong.Model.Node, c.Man, c.Markdown)
	if err != nil {
		return errs.Failed(errs.CodeWriteFailed, "cannot write the CLI reference: %v", err).
			WithHint("give folders that can be created and written")
	}
	return env.Out.Result(GenDocsResult{Written: written}, func(w *Printer) {
		for _, p := range written {
			fmt.Fprintln(w, p)
		}
	})
}
