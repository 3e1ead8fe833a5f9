package gateway

import (
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
)

// DetachOptions start a gateway in the background.
type DetachOptions struct {
	Home owner.Home
	// Command is the gateway's own command line (the clawkit binary and
	// `gateway run` with its options); it runs in a new session, with
	// its output appended to the home's gateway log.
	Command []string
	// StartTimeout bounds the wait for the gateway to serve.
	StartTimeout time.Duration
}

// Detach starts a gateway in the background and returns its record once
// it serves (owner.LiveGateway answers with its pid). A gateway already
// serving the home is refused (owner.ErrGatewayRunning); a child that
// exits during start is reported with the tail of what it logged.
func Detach(ctx context.Context, o DetachOptions) (*owner.Record, error) {
	h := o.Home
	if err := h.Ensure(); err != nil {
		return nil, err
	}
	if rec, st := owner.LiveGateway(ctx, h); st != nil {
		return nil, owner.ErrGatewayRunning(h, rec)
	}
	logf, err := os.OpenFile(h.Log(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, errs.Failed("detach_failed", "cannot open %s: %v", h.Log(), err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, errs.Failed("detach_failed", "cannot start the gateway: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(o.StartTimeout)
	for {
		if rec, st := owner.LiveGateway(ctx, h); st != nil && rec.PID == cmd.Process.Pid {
			return rec, nil
		}
		select {
		case err := <-exited:
			tail := logTail(h.Log(), start)
			return nil, errs.Failed("gateway_start_failed", "the gateway exited during start (%v): %s", err, tail).
				WithHint("see %s", h.Log())
		case <-deadline:
			cmd.Process.Signal(syscall.SIGTERM)
			return nil, errs.Unavailable("gateway_start_timeout", "the gateway did not start serving within %s", o.StartTimeout).
				WithHint("see %s", h.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func logTail(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || from > int64(len(b)) {
		return ""
	}
	b = b[from:]
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}
