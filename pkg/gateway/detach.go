package gateway

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
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
	// A home file: never through a link, never blocking on a FIFO, and
	// only a regular file (README, "The home").
	err := fsx.RegularIfExists(h.Log())
	var logf *os.File
	if err == nil {
		logf, err = os.OpenFile(h.Log(), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	}
	if err == nil {
		if st, serr := logf.Stat(); serr != nil || !st.Mode().IsRegular() {
			logf.Close()
			err = fmt.Errorf("not a regular file")
		}
	}
	if err != nil {
		return nil, errs.Failed(errs.CodeDetachFailed, "cannot open %s: %v", h.Log(), err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, io.SeekEnd)
	// The start report: a pipe the child writes its start error to (and
	// closes once it serves), so a failure it cannot log — a full disk
	// refuses the log's bytes too — still reaches the user.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, errs.Failed(errs.CodeDetachFailed, "cannot create the start pipe: %v", err)
	}
	defer pr.Close()
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), EnvStartFD+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, errs.Failed(errs.CodeDetachFailed, "cannot start the gateway: %v", err)
	}
	pw.Close()
	report := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(pr, 4096))
		report <- strings.TrimSpace(string(b))
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(o.StartTimeout)
	for {
		if rec, st := owner.LiveGateway(ctx, h); st != nil && rec.PID == cmd.Process.Pid {
			return rec, nil
		}
		select {
		case err := <-exited:
			// The child has exited, so its end of the pipe is closed and the
			// report is complete.
			why := <-report
			if why == "" {
				why = logTail(h.Log(), start)
			}
			if why == "" {
				why = "it reported nothing"
			}
			return nil, errs.Failed(CodeGatewayStartFailed, "the gateway exited during start (%v): %s", err, why).
				WithHint("see %s", h.Log())
		case <-deadline:
			cmd.Process.Signal(syscall.SIGTERM)
			return nil, errs.Unavailable(CodeGatewayStartTimeout, "the gateway did not start serving within %s", o.StartTimeout).
				WithHint("see %s", h.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func logTail(path string, from int64) string {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}

// EnvStartFD names the file descriptor on which a detached gateway reports
// its start: the error that ended it before it served, or nothing (the
// descriptor is closed once it serves).
const EnvStartFD = "CLAWKIT_GATEWAY_START_FD"

// StartReport is the child's side of the start report; the zero value (no
// report asked for) does nothing.
type StartReport struct{ f *os.File }

// OpenStartReport takes the start report descriptor named by EnvStartFD,
// if any, and removes the variable so nothing the gateway starts inherits
// it.
func OpenStartReport() StartReport {
	v := os.Getenv(EnvStartFD)
	os.Unsetenv(EnvStartFD)
	if v != "3" {
		return StartReport{}
	}
	syscall.CloseOnExec(3) // never inherited by a hook the gateway runs
	return StartReport{f: os.NewFile(3, "start-report")}
}

// Serving closes the report: the gateway serves.
func (r *StartReport) Serving() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// Failed writes the error that ended the start (its message and hint) and
// closes the report.
func (r *StartReport) Failed(err error) {
	if r.f == nil || err == nil {
		return
	}
	msg := err.Error()
	if e := errs.As(err); e != nil && e.Hint != "" {
		msg += " (hint: " + e.Hint + ")"
	}
	_, _ = r.f.WriteString(msg + "\n")
	r.Serving()
}
