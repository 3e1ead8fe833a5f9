// Package netaddr checks the HOST:PORT addresses clawkit listens on
// (`gateway run --metrics-listen`, `mcp proxy --listen`) before anything
// binds, so a bad address is a usage error (exit 2) rather than a failed
// bind (exit 1). docs/errors.md lists the codes each caller gives it.
package netaddr

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// CheckTCPListen accepts HOST:PORT as a TCP listener takes it, with PORT a
// decimal number from 0 (any free port) to 65535; HOST may be empty (every
// interface), a name or an IP ([::1] for IPv6). Service names ("http") and
// other networks ("unix:/path") are refused: the flags take TCP ports only.
func CheckTCPListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("expected HOST:PORT: %w", err)
	}
	if strings.ContainsAny(host, "/") || host == "unix" || host == "unixpacket" {
		return fmt.Errorf("%q is not a host name or IP address (only TCP addresses are served)", host)
	}
	if port == "" || strings.TrimLeft(port, "0123456789") != "" {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if n, err := strconv.ParseUint(port, 10, 32); err != nil || n > 65535 {
		return fmt.Errorf("port %s is out of range (0 to 65535)", port)
	}
	return nil
}
