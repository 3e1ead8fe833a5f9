//go:build linux

package owner

// maxSocketPath is the longest path a unix socket address holds on Linux
// (sun_path is 108 bytes including the terminating NUL).
const maxSocketPath = 107
