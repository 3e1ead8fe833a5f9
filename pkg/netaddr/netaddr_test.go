package netaddr

import (
	"net"
	"strconv"
	"testing"
)

func TestCheckTCPListen(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:65535", ":8080", "[::1]:9464", "localhost:1", "0.0.0.0:00080"} {
		if err := CheckTCPListen(addr); err != nil {
			t.Errorf("%q refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:70000", "127.0.0.1:-1", "127.0.0.1:65536", "127.0.0.1:+1", "127.0.0.1:http", "127.0.0.1:",
		"unix:/tmp/s.sock", "unix:s", "127.0.0.1", "[::1", "a/b:80", "127.0.0.1:99999999999999999999", "127.0.0.1: 80"} {
		if err := CheckTCPListen(addr); err == nil {
			t.Errorf("%q accepted", addr)
		}
	}
}

func FuzzCheckTCPListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:0", "[::1]:65535", "unix:/x", "h:70000", ":-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		if CheckTCPListen(addr) != nil {
			return
		}
		// Whatever is accepted has a port a TCP listener takes.
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("%q accepted but does not split: %v", addr, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			t.Fatalf("%q accepted with port %q", addr, port)
		}
	})
}
