// Observation: folding what the provider reports about an interaction
// into its job (progress, budget, the terminal state), and publishing the
// result files (results.go) when it has finished.

package research

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// apply folds one interaction observation into the job: progress for a
// running one, publication and the terminal state for a finished one, and
// budget enforcement. An observation older than the recorded one is
// ignored, and a job that changed meanwhile is never overwritten.
func (s *Service) apply(ctx context.Context, env *owner.OpEnv, j *Job, it *google.Interaction, cred credential, assert func() error) (*Job, error) {
	js := jobsOf(env)
	now := env.Now()
	wctx := context.WithoutCancel(ctx)
	if it.Updated != "" && j.ProviderUpdated != "" && olderStamp(it.Updated, j.ProviderUpdated) {
		// An older view of the interaction than one already applied.
		j.NextPollAt = ms(now.Add(s.interval(now, j.SubmittedAt, 0)))
		if err := js.update(wctx, j, now); err != nil && !errors.Is(err, errStale) {
			return nil, err
		}
		return js.get(wctx, j.ID)
	}
	j.ProviderStatus = it.Status
	if it.Updated != "" {
		j.ProviderUpdated = it.Updated
	}
	j.recordUsage(ctx, it.ID, it.Usage)
	if !budgetCode(j.ErrorCode) {
		// A successful poll clears the last transient error; the reason of
		// a budget cancellation stays until the job ends.
		j.ErrorCode, j.ErrorMessage = "", ""
	}
	if !google.Terminal(it.Status) {
		j.NextPollAt = ms(now.Add(s.pollInterval(now, j)))
		b := s.budgets()
		overTime := now.UnixMilli() >= j.DeadlineAt
		overPolls := j.PollCount >= b.MaxPolls
		overTokens := j.overTokenBudget()
		if j.State == StateRunning && (overTime || overPolls || overTokens) {
			code := "wall_clock_budget_exceeded"
			switch {
			case overTime:
			case overTokens:
				code = codeTokenBudget
			default:
				code = "poll_budget_exceeded"
			}
			return s.budgetCancel(ctx, env, j, cred, assert, code)
		}
		if err := js.update(wctx, j, now); err != nil {
			if errors.Is(err, errStale) {
				return js.get(wctx, j.ID)
			}
			return nil, err
		}
		return j, nil
	}
	if isBackground(ctx) && s.sharedFor(env) != nil {
		// A queued poll saw the end: record the observation and queue the
		// publication with it; the publication job reads the interaction
		// again (an idempotent GET) and publishes under its own checks.
		j.NextPollAt = 0
		err := s.updateWith(wctx, env, js, j, func(sc SharedScheduler, tx *sql.Tx) error {
			return sc.EnqueuePublishTx(wctx, env, tx, j.ID)
		})
		if errors.Is(err, errStale) {
			return js.get(wctx, j.ID)
		}
		if err != nil {
			return nil, err
		}
		return j, nil
	}
	if j.inPlanTurn() && it.Status == google.StatusCompleted {
		// The plan turn ended with a plan: it is proposed for review, not
		// published as a report (a plan turn without text ends the job
		// below, as an empty report).
		if plan := google.PlanText(it, j.MaxReportBytes); plan != "" {
			return s.proposePlan(ctx, env, j, plan, assert)
		}
	}
	// Terminal: publish first (idempotent), then record the state, so a
	// crash in between leaves a pollable job that publishes again.
	rep := google.ExtractReport(it, google.Bounds{MaxReportBytes: j.MaxReportBytes, MaxCitations: s.budgets().MaxCitations})
	j.State = terminalState(it.Status)
	j.Partial = it.Status != google.StatusCompleted && rep.Text != ""
	j.FinishedAt = ms(now)
	j.NextPollAt = 0
	j.ReportBytes, j.CitationCount, j.DroppedCitations = int64(len(rep.Text)), len(rep.Citations), rep.DroppedCitations
	reasons := it.Reasons()
	if len(reasons) > 0 && !budgetCode(j.ErrorCode) {
		// The provider's reason (errors[] and model_output step errors):
		// shown by research show and kept in result.json with its code.
		j.ErrorCode = "provider_error"
		j.ErrorMessage = truncate(reasonText(reasons), 500)
	}
	if it.Status == google.StatusBudgetExceeded {
		j.ErrorCode = "provider_budget_exceeded"
	}
	if it.Status == google.StatusCompleted && rep.Text == "" && len(reasons) == 0 {
		// Completed without output text (steps missing or empty): the
		// handle stays, the job ends with a clear reason, never exit 0
		// with an empty report.
		j.State = StateFailed
		j.ErrorCode = "empty_report"
		j.ErrorMessage = "the provider reported interaction " + j.Handle + " completed but sent no report text (its steps are missing or hold no model output)"
	}
	if err := assert(); err != nil {
		return nil, err
	}
	if err := publish(env.Home, j, &rep, it, reasons); err != nil {
		return nil, err
	}
	j.Published = true
	// The job has ended: the files it uploaded go (uploads.go), recorded
	// with its final state.
	s.deleteUploads(wctx, j, cred)
	if err := js.update(wctx, j, now); err != nil {
		if errors.Is(err, errStale) {
			return js.get(wctx, j.ID)
		}
		return nil, err
	}
	return j, nil
}

// reasonText is the provider's reasons as one line: "code: message",
// joined by "; ".
func reasonText(rs []google.ProviderError) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		switch {
		case r.Code != "" && r.Message != "":
			parts = append(parts, r.Code+": "+r.Message)
		default:
			parts = append(parts, r.Code+r.Message)
		}
	}
	return strings.Join(parts, "; ")
}

func budgetCode(c string) bool {
	return c == "wall_clock_budget_exceeded" || c == "poll_budget_exceeded" || c == codeTokenBudget
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// olderStamp reports whether RFC 3339 time a is strictly before b; if
// either does not parse, nothing is considered older.
func olderStamp(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	return err1 == nil && err2 == nil && ta.Before(tb)
}

func terminalState(status string) string {
	switch status {
	case google.StatusCompleted:
		return StateCompleted
	case google.StatusCancelled:
		return StateCancelled
	case google.StatusIncomplete, google.StatusBudgetExceeded:
		return StateIncomplete
	}
	return StateFailed
}
