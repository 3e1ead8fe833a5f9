//go:build !linux

package mcpstdio

import "syscall"

// dieWithParent: no parent-death signal outside Linux; only the process
// group is owned there (docs/mcp.md).
func dieWithParent(*syscall.SysProcAttr) {}
