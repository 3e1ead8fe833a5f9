// Delivery: copying a published report to the caller's --out path (the
// result files themselves are results.go).

package research

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
)

// deliver copies a published report to out (an absolute path) under the
// caller's authority. A job without a published report has nothing to
// deliver.
func (s *Service) deliver(ctx context.Context, env *owner.OpEnv, j *Job, out string, assert func() error) error {
	if out == "" {
		return nil
	}
	// out is absolute: the operation's Check refused anything else before
	// the create (checkOut).
	if !j.Published || j.ReportBytes == 0 {
		if Pollable(j.State) || j.State == StatePlanProposed {
			return nil
		}
		// An empty report is no report: --out is never written with
		// nothing (docs/research.md, Results).
		return noReport(j, out)
	}
	data, err := os.ReadFile(filepath.Join(jobDir(env.Home, j.ID), ReportFile))
	if err != nil {
		return errs.Failed(CodeReportMissing, "the published report of %s cannot be read: %v", j.ID, err)
	}
	if err := assert(); err != nil {
		return err
	}
	if fi, err := os.Lstat(out); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return errs.Refused(CodeOutIsLink, "%s is a symbolic link; it is not followed", out).WithHint("choose another --out path")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.Failed(CodeOutFailed, "cannot inspect %s: %v", out, err)
	}
	if len(data) == 0 {
		return noReport(j, out)
	}
	if err := fsx.WriteFile(out, data, 0o644); err != nil {
		return errs.Failed(CodeOutFailed, "cannot write %s: %v", out, err).WithHint("check that the folder exists and is writable")
	}
	return nil
}

// endedErr is the error of a job that ended without report text: poll,
// wait and start --wait exit 0 only for a job still running or one with a
// report, never for nothing (docs/research.md, Results). The job's own
// reason is in the message; a failed submission keeps its own error
// (jobOutcomeErr).
func (s *Service) endedErr(j *Job) error {
	if err := s.jobOutcomeErr(j); err != nil {
		return err
	}
	if !TerminalState(j.State) || (j.Published && j.ReportBytes > 0) {
		return nil
	}
	return noReport(j, "")
}

// noReport is no_report for j; out, when set, is the --out path that was
// not written.
func noReport(j *Job, out string) *errs.Error {
	msg := fmt.Sprintf("research job %s ended %s without a report", j.ID, j.State)
	if j.ErrorCode != "" {
		msg += fmt.Sprintf(" (%s: %s)", j.ErrorCode, j.ErrorMessage)
	}
	if out != "" {
		msg += fmt.Sprintf("; %s was not written", out)
	}
	return errs.Failed(CodeNoReport, "%s", msg).
		WithHint("'clawkit research show %s' shows the job; start the question again as a new job", j.ID)
}
