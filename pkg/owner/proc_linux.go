package owner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcessStartTime returns a process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat).
func ProcessStartTime(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// The command name (field 2) may contain spaces; fields resume after ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("malformed stat")
	}
	return strconv.ParseInt(f[19], 10, 64)
}

// isZombie reports whether pid has exited but not been reaped (Z), or is
// being torn down (X).
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}
