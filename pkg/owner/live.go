package owner

import (
	"context"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// StatusProbeTimeout bounds the status probe of LiveGateway.
const StatusProbeTimeout = 2 * time.Second

// LiveGateway is the one test for "a gateway owns this home": its record
// names a live process and that process answers a status probe on the
// record's socket within StatusProbeTimeout. The record is returned
// whenever one could be read (a stale one too), the status only when the
// gateway answered.
func LiveGateway(ctx context.Context, h Home) (*Record, *Status) {
	rec, _ := ReadRecord(h)
	if rec == nil || !rec.Alive() {
		return rec, nil
	}
	sctx, cancel := context.WithTimeout(ctx, StatusProbeTimeout)
	defer cancel()
	c := NewClient(rec.Socket)
	defer c.Close()
	st, err := c.Status(sctx)
	if err != nil {
		return rec, nil
	}
	return rec, st
}

// ErrGatewayRunning is the one refusal of a command that needs the home to
// itself while a gateway owns it (exit 3).
func ErrGatewayRunning(h Home, rec *Record) error {
	return errs.Refused(CodeGatewayRunning, "a gateway (pid %d) already owns the state in %s", rec.PID, h.Dir).
		WithHint("stop it first with 'clawkit gateway stop' if this command needs the state to itself; every other command uses it as is")
}
