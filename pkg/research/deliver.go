// Delivery: copying a published report to the caller's --out path (the
// result files themselves are results.go).

package research

import (
	"context"
	"errors"
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
	if !j.Published {
		if Pollable(j.State) {
			return nil
		}
		return errs.Failed(CodeNoReport, "research job %s ended %s without a report; %s was not written", j.ID, j.State, out)
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
	if err := fsx.WriteFile(out, data, 0o644); err != nil {
		return errs.Failed(CodeOutFailed, "cannot write %s: %v", out, err).WithHint("check that the folder exists and is writable")
	}
	return nil
}
