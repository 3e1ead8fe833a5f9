//go:build !linux

package mcpstdio

// watchPeerEpoll is Linux only: elsewhere watchPeerClosed polls.
func watchPeerEpoll(fd int, gone chan struct{}, done <-chan struct{}) bool { return false }
