package cli

import (
	"fmt"

	"github.com/clawkit/clawkit/pkg/buildinfo"
)

// ReadBuildInfo is the running binary's version (pkg/buildinfo).
func ReadBuildInfo() buildinfo.Info { return buildinfo.Read() }

// versionString is the human line of `clawkit version` and --version.
func versionString() string { return buildinfo.Read().String() }

// VersionCmd prints the version.
type VersionCmd struct{}

// Run runs `clawkit version`.
func (VersionCmd) Run(env *Env) error {
	bi := buildinfo.Read()
	return env.Out.Result(bi, func(w *Printer) { fmt.Fprintln(w, bi.String()) })
}
