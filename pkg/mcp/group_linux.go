package mcp

import (
	"bytes"
	"os"
	"strconv"
)

// groupHasLiveMember scans /proc for a process of group pgid that is not a
// zombie (state Z) or dead (X). kill(-pgid, 0) alone cannot tell a zombie
// from a running process.
func groupHasLiveMember(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return true // cannot tell: assume alive, the caller escalates
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // it just ended
		}
		state, pg, ok := parseStat(b)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat reads state and pgrp from /proc/PID/stat. The command name in
// parentheses may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0]=state f[1]=ppid f[2]=pgrp
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}
