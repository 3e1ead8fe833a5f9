// Command clawkit implements the OpenClaw plugin runtime contracts for the
// shell and CI. All logic lives in pkg/; see pkg/cli for the command tree.
package main

import (
	"os"

	"github.com/clawkit/clawkit/pkg/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
