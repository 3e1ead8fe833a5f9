//go:build !linux

package mcpstdio

import "io"

// pollRelay is Linux only (see pollrelay_linux.go); elsewhere the proxy
// relays with one goroutine per direction.
type pollRelay struct {
	downEnd relayEnd
}

func newPollRelay(io.Reader, *Process, io.Writer, int, func([]byte) bool, func([]byte) bool) (*pollRelay, bool) {
	return nil, false
}

func (l *pollRelay) run()                  {}
func (l *pollRelay) stop()                 {}
func (l *pollRelay) startUp() <-chan error { return nil }
