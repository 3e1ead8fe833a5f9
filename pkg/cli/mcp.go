package cli

// MCPCmd is the command group; its subcommands are added by the issue that owns it.
type MCPCmd struct{}
