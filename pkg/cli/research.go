package cli

// ResearchCmd is the command group; its subcommands are added by the issue that owns it.
type ResearchCmd struct{}
