//go:build !linux

package mcp

// watchPeerEpoll is Linux only: elsewhere watchPeerClosed polls.
func watchPeerEpoll(fd int, gone chan struct{}, done <-chan struct{}) bool { return false }
