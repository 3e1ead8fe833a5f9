package mcpstdio

import (
	"os/exec"
	"runtime"
	"sync"
)

// Servers die with clawkit, however it ends (docs/mcp.md, "Process
// cleanup"): on Linux each server is started with a parent-death signal
// (SIGKILL, pdeathsig_linux.go), so a SIGKILLed clawkit cannot leave one
// running. The kernel sends that signal when the *thread* that forked the
// child exits, not the process, and the Go runtime may end threads; so
// every server is forked from one goroutine locked to its own OS thread
// for the life of the process (it never returns, so its thread never
// exits).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startCmd starts cmd from the spawner's thread.
func startCmd(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as we do
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd, done}
	return <-done
}
