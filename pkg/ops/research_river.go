package ops

import (
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/research/riversched"
)

// On PostgreSQL, research's background work runs on river (shared by every
// gateway on the database); SQLite keeps research's own poller.
func init() { research.UseSharedScheduler(riversched.New()) }
