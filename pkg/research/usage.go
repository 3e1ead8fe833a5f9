package research

import (
	"context"
	"encoding/json"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// MaxTokenBudget is the largest --max-tokens / maxTokens accepted: far
// above any Deep Research job's use, small enough that sums never overflow.
const MaxTokenBudget = 1 << 40

// codeTokenBudget is the job error code of a cancellation for the token
// budget, as wall_clock_budget_exceeded is for the wall clock.
const codeTokenBudget = "token_budget_exceeded"

// maxUsageTurns bounds the interactions whose usage a job keeps (a job
// has at most two: its plan turn and its run).
const maxUsageTurns = 4

func checkMaxTokens(n int64) error {
	if n < 0 || n > MaxTokenBudget {
		return errs.Usage(errs.CodeInvalidLimit, "--max-tokens %d is out of range (1..%d, or 0 for no token budget)", n, int64(MaxTokenBudget)).
			WithHint("give the most tokens the job may use, such as --max-tokens 2000000")
	}
	return nil
}

// recordUsage keeps the usage an observation of interaction id reports
// (absent usage keeps what was known) and reports its growth to the
// gateway's metrics (clawkit_research_tokens_total).
func (j *Job) recordUsage(ctx context.Context, id string, raw json.RawMessage) {
	u, ok := google.ParseUsage(raw)
	if !ok {
		return
	}
	j.recordParsedUsage(ctx, id, u)
}

// recordParsedUsage is recordUsage of usage already read (a stream
// event's, gatewaystreams.go). It reports whether the job's usage changed.
// An interaction's usage only grows: a view with fewer tokens than the
// one recorded is older (a poll behind the stream) and is ignored, so
// that the metrics never count growth twice.
func (j *Job) recordParsedUsage(ctx context.Context, id string, u google.Usage) bool {
	if id == "" {
		return false
	}
	old, known := j.TurnUsage[id]
	if (!known && len(j.TurnUsage) >= maxUsageTurns) || (known && u.Tokens() < old.Tokens()) {
		return false
	}
	if j.TurnUsage == nil {
		j.TurnUsage = map[string]google.Usage{}
	}
	j.TurnUsage[id] = u
	j.sumUsage()
	grow := func(n, was int64) int64 { return max(n-was, 0) }
	owner.TelemetryFrom(ctx).ResearchUsage(map[string]int64{
		"total": grow(u.Tokens(), old.Tokens()), "input": grow(u.Input, old.Input), "output": grow(u.Output, old.Output),
		"thought": grow(u.Thought, old.Thought), "tool_use": grow(u.ToolUse, old.ToolUse), "cached": grow(u.Cached, old.Cached),
	}, grow(u.GroundingToolCalls, old.GroundingToolCalls))
	return true
}

// sumUsage sets Usage to the sum over the job's interactions.
func (j *Job) sumUsage() {
	j.Usage = nil
	if len(j.TurnUsage) == 0 {
		return
	}
	var sum google.Usage
	for _, u := range j.TurnUsage {
		sum = sum.Add(u)
	}
	j.Usage = &sum
}

// overTokenBudget reports whether the job's reported usage passed its
// token budget.
func (j *Job) overTokenBudget() bool {
	return j.Options != nil && j.Options.MaxTokens > 0 && j.Usage != nil && j.Usage.Tokens() > j.Options.MaxTokens
}

func encodeUsage(m map[string]google.Usage) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func decodeUsage(s string) (map[string]google.Usage, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]google.Usage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, storeErr("read the research job's usage", err)
	}
	return m, nil
}

// chainUsage sums the usage of j and of the jobs it follows up (its
// parent, the parent's parent, …): the cost of the whole conversation.
// It is nil when no job of the chain reported usage.
func chainUsage(ctx context.Context, js jobStore, j *Job) (*google.Usage, error) {
	var sum *google.Usage
	seen := map[string]bool{}
	for cur := j; cur != nil && !seen[cur.ID]; {
		seen[cur.ID] = true
		if cur.Usage != nil {
			s := cur.Usage.Add(google.Usage{})
			if sum != nil {
				s = sum.Add(*cur.Usage)
			}
			sum = &s
		}
		if cur.ParentJob == "" {
			break
		}
		next, err := js.get(ctx, cur.ParentJob)
		if err != nil {
			if errs.CodeOf(err) == CodeJobNotFound {
				break
			}
			return nil, err
		}
		cur = next
	}
	return sum, nil
}

// TokenUsage is a job's normalised token use (google.Usage).
type TokenUsage = google.Usage
