//go:build !linux

package store

import (
	"syscall"
	"time"
)

// setUserTimeout is Linux's TCP_USER_TIMEOUT; elsewhere keepalives alone
// bound a dead connection.
func setUserTimeout(syscall.RawConn, time.Duration) error { return nil }
