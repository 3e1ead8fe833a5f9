package mcpstdio

import "syscall"

// dieWithParent makes the child receive SIGKILL when clawkit ends (spawn.go
// says why it is forked from one locked thread). Go's fork checks, after
// setting it, that the parent is still there, so a clawkit killed during
// the fork cannot leave the child behind either.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
