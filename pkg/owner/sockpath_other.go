//go:build !linux

package owner

// maxSocketPath is the longest path a unix socket address holds on macOS
// and the BSDs (sun_path is 104 bytes including the terminating NUL).
const maxSocketPath = 103
