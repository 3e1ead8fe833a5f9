package cli

// CrabboxCmd is the command group; its subcommands are added by the issue that owns it.
type CrabboxCmd struct{}
