package research

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

func (f *fixture) planJob(q string) *Job {
	f.t.Helper()
	res, err := f.startChecked(context.Background(), f.env(), StartParams{Question: q, Plan: true})
	if err != nil {
		f.t.Fatal(err)
	}
	_, err = f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
	if errs.CodeOf(err) != "plan_proposed" || errs.KindOf(err) != errs.KindUnavailable {
		f.t.Fatalf("wait on a plan turn: %v", err)
	}
	return f.job(res.Job)
}

func TestPlanApproveChain(t *testing.T) {
	f := newFixture(t)
	j := f.planJob("why is the sky blue")
	if j.State != StatePlanProposed || j.PlanHandle != j.Handle || j.PlanProposedAt == 0 {
		t.Fatalf("%+v", j)
	}
	plan, err := os.ReadFile(filepath.Join(jobDir(f.home, j.ID), PlanFile))
	if err != nil || string(plan) != fakeapi.PlanText {
		t.Fatalf("plan.md %q %v", plan, err)
	}
	if _, err := os.Stat(filepath.Join(jobDir(f.home, j.ID), ResultFile)); !os.IsNotExist(err) {
		t.Fatal("a proposed plan is not a published result")
	}
	// Waiting returns at once: no poll is made while the plan waits.
	polls := f.fake.Count("GET /interactions/*")
	_, err = f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: j.ID})})
	wantCode(t, err, errs.KindUnavailable, "plan_proposed")
	if f.fake.Count("GET /interactions/*") != polls {
		t.Fatal("wait polled a plan-proposed job")
	}
	// A foreign caller may not approve, and nothing is sent.
	creates := f.fake.Count("POST /interactions")
	_, err = f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Caller: Caller{SessionKey: "other"}, Job: j.ID})})
	wantCode(t, err, errs.KindRefused, "foreign_owner")
	if f.fake.Count("POST /interactions") != creates {
		t.Fatal("a refused approve sent a create")
	}
	res, err := f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID}), Revise: "Focus on sunsets."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Handle == j.PlanHandle || res.State != StateRunning {
		t.Fatalf("%+v", res)
	}
	last := f.fake.Requests()[len(f.fake.Requests())-1]
	if last.Previous != j.PlanHandle || last.Turn != "confirm" || !strings.Contains(string(last.Body), "Focus on sunsets.") {
		t.Fatalf("confirming turn %+v", last)
	}
	pr, err := f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: j.ID})})
	if err != nil || pr.State != StateCompleted || pr.PlanHandle != j.PlanHandle {
		t.Fatalf("%+v %v", pr, err)
	}
	// Budgets cover the whole chain: the polls of both turns.
	if pr.PollCount != 4 {
		t.Fatalf("%d polls over the chain", pr.PollCount)
	}
	// A second approve is refused with a hint, and sends nothing.
	creates = f.fake.Count("POST /interactions")
	_, err = f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})})
	wantCode(t, err, errs.KindFailed, "not_awaiting_review")
	if f.fake.Count("POST /interactions") != creates {
		t.Fatal("a second approve sent a create")
	}
}

// TestConcurrentApprovesCreateOnce: many approves of one plan at once make
// exactly one create; the others are refused.
func TestConcurrentApprovesCreateOnce(t *testing.T) {
	f := newFixture(t)
	j := f.planJob("q")
	creates := f.fake.Count("POST /interactions")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				return
			}
			if c := errs.CodeOf(err); c != "not_awaiting_review" && c != "approve_in_progress" {
				t.Errorf("approve: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || f.fake.Count("POST /interactions")-creates != 1 {
		t.Fatalf("%d approves succeeded, %d creates", ok, f.fake.Count("POST /interactions")-creates)
	}
}

// TestApproveNotSentKeepsThePlan: a confirming turn the provider refused
// (nothing billed) leaves the plan to approve again; one that may have
// been accepted is indeterminate, never resent.
func TestApproveOutcomes(t *testing.T) {
	f := newFixture(t)
	j := f.planJob("q fake:confirm-create-429")
	_, err := f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})})
	wantCode(t, err, errs.KindUnavailable, "provider_busy")
	if got := f.job(j.ID); got.State != StatePlanProposed || got.Handle != j.PlanHandle || got.ErrorCode != "provider_busy" {
		t.Fatalf("%+v", got)
	}

	j = f.planJob("q fake:confirm-create-500")
	_, err = f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})})
	wantCode(t, err, errs.KindUnknown, "create_outcome_unknown")
	got := f.job(j.ID)
	if got.State != StateIndeterminate || got.PlanHandle != j.PlanHandle || got.Handle != "" {
		t.Fatalf("%+v", got)
	}
	creates := f.fake.Count("POST /interactions")
	_, err = f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})})
	wantCode(t, err, errs.KindFailed, "not_awaiting_review")
	if !strings.Contains(errs.As(err).Hint, "never resent") || f.fake.Count("POST /interactions") != creates {
		t.Fatalf("second approve: %v", errs.As(err))
	}
}

func TestRejectEndsWithoutProviderCall(t *testing.T) {
	f := newFixture(t)
	j := f.planJob("q")
	n := len(f.fake.Requests())
	pr, err := f.svc.Reject(context.Background(), f.env(), jobp(JobParams{Job: j.ID}))
	if err != nil || pr.State != StateCancelled {
		t.Fatalf("%+v %v", pr, err)
	}
	if len(f.fake.Requests()) != n {
		t.Fatal("reject called the provider")
	}
	_, err = f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})})
	wantCode(t, err, errs.KindFailed, "not_awaiting_review")
	// A job without a plan has nothing to reject.
	res, _ := f.start("plain")
	_, err = f.svc.Reject(context.Background(), f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindFailed, "not_awaiting_review")
}

func TestFollowUpCustody(t *testing.T) {
	f := newFixture(t)
	res, _ := f.start("parent")
	// The parent must be completed.
	_, err := f.startChecked(context.Background(), f.env(), StartParams{Question: "more", FollowUp: &JobRef{Job: res.Job}})
	wantCode(t, err, errs.KindFailed, "parent_not_completed")
	if _, err := f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})}); err != nil {
		t.Fatal(err)
	}
	parent := f.job(res.Job)
	creates := f.fake.Count("POST /interactions")
	// A foreign caller, a stale incarnation and a substituted key are
	// refused before HTTP.
	_, err = f.startChecked(context.Background(), f.env(), StartParams{Caller: Caller{AgentID: "other"}, Question: "more", FollowUp: &JobRef{Job: res.Job}})
	wantCode(t, err, errs.KindRefused, "foreign_owner")
	f.addProfile("google:default", auth.KindAPIKey, "key-two")
	_, err = f.startChecked(context.Background(), f.env(), StartParams{Question: "more", FollowUp: &JobRef{Job: res.Job}})
	wantCode(t, err, errs.KindRefused, "credential_substituted")
	f.addProfile("google:default", auth.KindAPIKey, "key-one")
	if _, err := f.st.UpdateSession(context.Background(), "main", "cli", "reset", 0, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = f.startChecked(context.Background(), f.env(), StartParams{Question: "more", FollowUp: &JobRef{Job: res.Job}})
	wantCode(t, err, errs.KindRefused, "stale_owner")
	if f.fake.Count("POST /interactions") != creates {
		t.Fatal("a refused follow-up sent a create")
	}
	// The owner of the new incarnation has no custody of the parent; a
	// job of its own can be followed up.
	res2, _ := f.start("parent two")
	if _, err := f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: res2.Job})}); err != nil {
		t.Fatal(err)
	}
	fu, err := f.startChecked(context.Background(), f.env(), StartParams{Question: "more", FollowUp: &JobRef{Job: res2.Job}})
	if err != nil {
		t.Fatal(err)
	}
	child := f.job(fu.Job)
	if child.ParentJob != res2.Job {
		t.Fatalf("parent %q", child.ParentJob)
	}
	last := f.fake.Requests()[len(f.fake.Requests())-1]
	if last.Previous != f.job(res2.Job).Handle || last.Turn != "follow-up" {
		t.Fatalf("follow-up create %+v", last)
	}
	_ = parent
}

// TestReviewTimeIsNotBudget: the wall clock covers both turns but not the
// time a plan waits for its review; the poll budget goes on.
func TestReviewTimeIsNotBudget(t *testing.T) {
	f := newFixture(t)
	j := f.planJob("q")
	review := 2 * time.Hour // longer than the 65 min wall clock
	if err := f.clk.Sleep(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j.ID})}); err != nil {
		t.Fatal(err)
	}
	got := f.job(j.ID)
	if got.DeadlineAt != j.DeadlineAt+review.Milliseconds() || got.PollCount != j.PollCount {
		t.Fatalf("deadline moved by %d ms, polls %d → %d", got.DeadlineAt-j.DeadlineAt, j.PollCount, got.PollCount)
	}
	pr, err := f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: j.ID})})
	if err != nil || pr.State != StateCompleted || pr.ErrorCode != "" {
		t.Fatalf("%+v %v", pr, err)
	}
	// A plan whose turn spent the poll budget cannot be approved.
	f.svc.Budgets.MaxPolls = 2
	j2 := f.planJob("q2")
	_, err = f.svc.Approve(context.Background(), f.env(), ApproveParams{JobParams: jobp(JobParams{Job: j2.ID})})
	wantCode(t, err, errs.KindFailed, "poll_budget_exceeded")
}
