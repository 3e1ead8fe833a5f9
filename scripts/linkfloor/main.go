// Command linkfloor is the start-up floor of clawkit's own code: it links
// every package `clawkit` links (through pkg/cli), so the Go runtime and
// every package initialiser run as they do for clawkit, and then it prints
// a line without parsing a command line. scripts/bench-core.sh times it
// between scripts/depsfloor (the dependencies alone) and `clawkit
// version`: the step from depsfloor to linkfloor is what the size of
// clawkit's code costs before main runs (the runtime registers every
// interface table at start, and more code means more of them; package
// variables), the step from linkfloor to version is what clawkit's main
// does (docs/architecture.md, "Start-up").
package main

import (
	"os"

	"github.com/clawkit/clawkit/pkg/cli"
)

// main references cli.Main behind a condition the command line never
// meets, so the linker keeps all of clawkit without running any of it.
func main() {
	if len(os.Args) > 1 && os.Args[1] == "--run-clawkit" {
		os.Exit(cli.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if _, err := os.Stdout.WriteString("hello\n"); err != nil {
		os.Exit(1)
	}
}
