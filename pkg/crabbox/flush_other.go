//go:build !linux

package crabbox

import (
	"math"
	"time"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// startFlusher without syncfs(2): no background flushes (the ticker never
// fires), and finish fsyncs every file and folder of the staged tree
// (fsx.SyncTree). As durable, slower: one fsync per file where Linux makes
// one call (docs/release.md, "Platforms").
func startFlusher(dir string) (*flusher, error) {
	return startFlusherWith(dir, time.Duration(math.MaxInt64), func(int) error { return fsx.SyncTree(dir) })
}
