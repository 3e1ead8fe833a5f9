package gateway

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The systemd notification protocol (sd_notify(3)), in the few lines it
// takes: one datagram per state change to the unix socket named by
// NOTIFY_SOCKET ("@name" is an abstract address). Written here rather than
// taken from coreos/go-systemd's daemon package: that package's notify is
// these same lines, and its watchdog helper reads the environment the same
// way; owning them keeps the variables' removal (below) and the message
// order in one place, with no new module for ~40 lines.
type notifier struct {
	addr string
	// watchdog is half of WATCHDOG_USEC (0: no watchdog asked for).
	watchdog time.Duration

	// mu orders the messages; once STOPPING=1 is sent no watchdog ping
	// follows it.
	mu       sync.Mutex
	stopping bool
}

// takeNotifier reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID and
// removes them from the environment, so nothing the gateway starts (a
// hook, an MCP server) notifies systemd in its name. nil when the
// gateway does not run under a Type=notify service.
func takeNotifier() *notifier {
	addr := os.Getenv("NOTIFY_SOCKET")
	usec := os.Getenv("WATCHDOG_USEC")
	wpid := os.Getenv("WATCHDOG_PID")
	for _, k := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		_ = os.Unsetenv(k) // fails only for a name holding '=' or NUL
	}
	if addr == "" {
		return nil
	}
	n := &notifier{addr: addr}
	if us, err := strconv.ParseInt(usec, 10, 64); err == nil && us > 0 {
		// WATCHDOG_PID, when set, names the process the watchdog is for.
		if p, err := strconv.Atoi(wpid); wpid == "" || (err == nil && p == os.Getpid()) {
			n.watchdog = time.Duration(us) * time.Microsecond / 2
		}
	}
	return n
}

// send writes one notification; errors are ignored as sd_notify's callers
// do (systemd may be gone while we stop).
func (n *notifier) send(state string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping && state == "WATCHDOG=1" {
		return
	}
	if strings.HasPrefix(state, "STOPPING=1") {
		n.stopping = true
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return
	}
	defer func() { _ = c.Close() }() // a datagram: sent or not by Write
	_, _ = c.Write([]byte(state))
}
