package mcpstdio

import (
	"bytes"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Descendants that leave the process group.
//
// A server's child may call setsid (or setpgid) and so leave the group that
// Stop signals; if its parent then exits, it is re-parented. Stop finds the
// tree by parent links in /proc, from the server's pid and from every
// member of its group, and signals each member outside the group by pid,
// besides the group; it is confirmed only when none of them is alive.
//
// With ProcessSpec.Subreaper (the CLI sets it: it runs nothing but its one
// server), the first StartProcess makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): orphans of the server's tree are re-parented to
// us rather than to init, stay findable, are claimed by the one running
// server, and are reaped once they end.
//
// What is guaranteed, on Linux: while this process lives, every
// descendant of the server whose parent chain leads back to it (setsid or
// not) is signalled and confirmed gone; with Subreaper, so is every
// descendant at all, whatever it does with sessions, groups and parents.
// Without Subreaper, a descendant that setsid()s and whose parent exits
// goes to init and is not found. Not guaranteed anywhere: if this process
// itself is killed (SIGKILL), the servers' trees are left to init. Without
// /proc (not Linux) only the process group is owned.

var subreaperOnce sync.Once

// becomeSubreaper makes orphaned descendants ours (see above). A failure
// (an old kernel) leaves us with the group and parent links only.
func becomeSubreaper() {
	subreaperOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// procInfo is what Stop needs of one /proc entry.
type procInfo struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // start time in clock ticks: tells a reused pid apart
}

func (p procInfo) live() bool { return p.state != 'Z' && p.state != 'X' }

// readProcs lists every process. ok is false when /proc cannot be read.
func readProcs() (procs []procInfo, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer func() { _ = d.Close() }() // a folder read only
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // it just ended
		}
		pi, ok := parseStatInfo(b)
		if !ok {
			continue
		}
		pi.pid = pid
		procs = append(procs, pi)
	}
	return procs, true
}

// groupHasLiveMember scans /proc for a process of group pgid that is not a
// zombie (state Z) or dead (X). kill(-pgid, 0) alone cannot tell a zombie
// from a running process.
func groupHasLiveMember(pgid int) bool {
	procs, ok := readProcs()
	if !ok {
		return true // cannot tell: assume alive, the caller escalates
	}
	for _, p := range procs {
		if p.pgrp == pgid && p.live() {
			return true
		}
	}
	return false
}

// parseStatInfo reads state, ppid, pgrp and starttime from /proc/PID/stat.
// The command name in parentheses may itself contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseStatInfo(b []byte) (pi procInfo, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return pi, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0]=state f[1]=ppid f[2]=pgrp … f[19]=starttime (field 22)
	if len(f) < 3 || len(f[0]) != 1 {
		return pi, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pg, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return pi, false
	}
	pi.state, pi.ppid, pi.pgrp = f[0][0], ppid, pg
	if len(f) > 19 {
		pi.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	}
	return pi, true
}

// reapOrphan collects an orphan of ours that has ended, so it does not
// stay a zombie for our whole life. Only that pid is waited for: a wait
// for any child would steal exit statuses that os/exec waits for.
func reapOrphan(pid int) {
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
}

// pipeEmpty reports whether the reader of the pipe f has taken everything
// written to it (FIONREAD, TIOCINQ on Linux, counts the bytes still in a
// pipe from either end). When that cannot be told it says true. Fd() is
// not used: it would put the pipe in blocking mode and lose deadlines.
func pipeEmpty(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	n := 0
	cerr := rc.Control(func(fd uintptr) {
		n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	})
	return cerr != nil || err != nil || n == 0
}
