package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// ResearchCmd is `clawkit research …` (google.research.v1, docs/research.md).
type ResearchCmd struct {
	Describe ResearchDescribeCmd `cmd:"" help:"Describe the managed research service (no credentials, no network)."`
	Start    ResearchStartCmd    `cmd:"" help:"Submit a research question; prints the job id and provider handle."`
	Poll     ResearchPollCmd     `cmd:"" help:"Poll a job once; publishes the report when it has ended."`
	Wait     ResearchWaitCmd     `cmd:"" help:"Poll a job with backoff until it ends (or --timeout)."`
	Cancel   ResearchCancelCmd   `cmd:"" help:"Ask the provider to cancel a job; confirmed only by a later status."`
	Approve  ResearchApproveCmd  `cmd:"" help:"Approve a proposed research plan (a new billed turn, sent once)."`
	Reject   ResearchRejectCmd   `cmd:"" help:"Reject a proposed research plan; the job ends cancelled without a provider call."`
	FollowUp ResearchFollowUpCmd `cmd:"" name:"follow-up" help:"Ask a follow-up question on a completed job, in its context (a new job)."`
	List     ResearchListCmd     `cmd:"" help:"List research jobs, newest first."`
	Show     ResearchShowCmd     `cmd:"" help:"Show one research job."`
	Recover  ResearchRecoverCmd  `cmd:"" help:"Recover after a crash: unreceipted submissions become indeterminate, running jobs are polled."`
	RPC      ResearchRPCCmd      `cmd:"" name:"rpc" help:"Read one google.research.v1 RPC request on stdin, print the response envelope."`
}

// researchIdentity is the custody identity flags of stateful research
// commands.
type researchIdentity struct {
	Agent   string `help:"Agent id the job belongs to." env:"CLAWKIT_AGENT" default:"main"`
	Session string `help:"Session key the job belongs to." env:"CLAWKIT_SESSION" default:"cli"`
}

func (r researchIdentity) caller() research.Caller {
	return research.Caller{AgentID: r.Agent, SessionKey: r.Session}
}

func absOut(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", errs.Usage(errs.CodeInvalidOut, "cannot resolve --out %s: %v", p, err)
	}
	return a, nil
}

// ResearchDescribeCmd is `clawkit research describe`.
type ResearchDescribeCmd struct {
	researchIdentity
}

// Run runs `clawkit research describe`.
func (c *ResearchDescribeCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	// A read-only routed call: the session access policy applies, nothing
	// is created, no credential is loaded and nothing is sent.
	d, err := research.OpDescribe.Call(ctx, env, research.DescribeParams{Caller: c.caller()})
	if err != nil {
		return err
	}
	return out.Result(d, func(w *Printer) {
		fmt.Fprintf(w, "service:     %s (managed deep research by %s, agent %s)\n", d.Service, d.Provider, d.Agent)
		fmt.Fprintf(w, "kind:        %s — a long-running research agent, not single-call search grounding\n", d.Kind)
		fmt.Fprintf(w, "enabled:     %v\n", d.Enabled)
		if d.ProfileID != "" {
			fmt.Fprintf(w, "profile:     %s\n", d.ProfileID)
		}
		fmt.Fprintf(w, "constraints: outputFormat=%s maxReportBytes<=%d\n", strings.Join(d.Constraints.OutputFormats, ","), d.Constraints.MaxReportBytes)
		c := d.Constraints
		fmt.Fprintf(w, "plan:        %v (research start --plan, then approve or reject)\n", c.Plan)
		fmt.Fprintf(w, "follow-up:   %v (research follow-up JOB QUESTION)\n", c.FollowUp)
		fmt.Fprintf(w, "inputs:      %s; at most %d files, %d bytes each (inline up to %d each, %d in all; larger ones uploaded)\n", strings.Join(c.Inputs.MimeTypes, ","), c.Inputs.MaxFiles, c.Inputs.MaxFileBytes, c.Inputs.MaxInlineFileBytes, c.Inputs.MaxInlineTotalBytes)
		fmt.Fprintf(w, "tools:       %s\n", strings.Join(c.Tools, ","))
		fmt.Fprintf(w, "charts:      visualization=%s; at most %d figures (%s)\n", strings.Join(c.Visualization, "|"), c.Figures.MaxCount, strings.Join(c.Figures.MimeTypes, ","))
		fmt.Fprintf(w, "unsupported: %s\n", strings.Join(d.Unsupported, ", "))
		for _, k := range d.Contracts {
			fmt.Fprintf(w, "contract:    %s (version %d: %s)\n", k.Service, k.Version, strings.Join(k.Actions, ", "))
		}
		for _, p := range d.Problems {
			fmt.Fprintf(w, "problem:     %s\n", p)
		}
	})
}

// ResearchStartCmd is `clawkit research start`.
type ResearchStartCmd struct {
	researchIdentity
	Question       string        `arg:"" help:"The research question."`
	OutputFormat   string        `help:"Report format (only markdown)." default:"markdown" placeholder:"FORMAT"`
	MaxReportBytes int64         `help:"Bound the published report; longer reports are cut at a character boundary and flagged truncated." placeholder:"N"`
	AsOf           string        `help:"Not supported by the provider: a start with it fails explicitly." name:"as-of" placeholder:"DATE"`
	IdempotencyKey string        `help:"Return the recorded job when this key was used before (per agent and session)." placeholder:"KEY"`
	Wait           bool          `help:"Wait for the job to end after starting it."`
	Timeout        time.Duration `help:"With --wait: how long to wait (0 = the job's own budget)."`
	Out            string        `help:"With --wait: also publish the report to FILE." placeholder:"FILE"`
	Plan           bool          `help:"Ask for a research plan first: the job stops plan-proposed (plan.md) until 'research approve' or 'research reject'."`
	File           []string      `help:"Send a document (PDF, CSV, Word, Excel, PowerPoint, OpenDocument) or image; its type is read from its content. Inline within the inline limits, else uploaded through the Files API. Repeatable." placeholder:"PATH"`
	Pages          []string      `help:"Send only these pages of a --file document (N, N-M, N-, -M); FILE= may be left out with one --file. Repeatable." placeholder:"[FILE=]RANGE"`
	Sheet          []string      `help:"Send only this sheet of a --file spreadsheet, from 1, optionally its cells (2!A1:D10); FILE= may be left out with one --file. Repeatable." placeholder:"[FILE=]N[!CELLS]"`
	Layers         []string      `sep:"none" help:"The content layers to extract from a --file: page_image, page_text (paginated documents) or visual, data, formulas (spreadsheets), comma-separated; FILE= may be left out with one --file. Repeatable." placeholder:"[FILE=]LAYER,..."`
	Resolution     []string      `help:"The media resolution a --file is read at: low, medium, high or ultra_high; FILE= may be left out with one --file. Repeatable." placeholder:"[FILE=]RES"`
	KeepUploads    bool          `name:"keep-uploads" help:"Keep the files uploaded through the Files API when the job ends (they are deleted by default)."`
	researchToolFlags
	MaxTokens int64 `name:"max-tokens" help:"Token budget: cancel the job once the usage the provider reports passes N tokens (0 = none)." placeholder:"N"`
	streamFlags
}

// researchToolFlags are the tools and the visualization a create may
// carry: a start's, and a follow-up's of its own (the API's create takes
// them with previous_interaction_id as without; docs/research.md,
// "Follow-ups").
type researchToolFlags struct {
	FileSearch    []string `name:"file-search" help:"Let the agent search this file search store. Repeatable." placeholder:"STORE"`
	URLContext    bool     `name:"url-context" help:"Let the agent read the URLs the question names."`
	MCPServer     []string `name:"mcp-server" help:"Let the agent call this MCP server. Repeatable." placeholder:"NAME=URL"`
	MCPHeader     []string `name:"mcp-header" help:"A header for an MCP server, its value from an auth profile of kind header. Repeatable." placeholder:"NAME:HEADER=@PROFILE"`
	Visualization string   `help:"auto: save the report's charts and images under figures/ (off: none)." placeholder:"auto|off"`
}

// tools maps the tool flags to the operation's (the rules on them are
// its Check).
func (t researchToolFlags) tools() (*research.Tools, error) {
	return research.ToolsFromFlags(t.FileSearch, t.URLContext, t.MCPServer, t.MCPHeader)
}

// params maps the flags to the operation's parameters (the rules on them
// are the operation's Check).
func (c *ResearchStartCmd) params() (research.StartParams, error) {
	o, err := absOut(c.Out)
	if err != nil {
		return research.StartParams{}, err
	}
	if o != "" && !c.Wait {
		return research.StartParams{}, errs.Usage(CodeUsage, "--out needs --wait (or use 'research wait JOB --out FILE')")
	}
	if c.Timeout != 0 && !c.Wait {
		return research.StartParams{}, errs.Usage(errs.CodeInvalidTimeout, "--timeout needs --wait").WithHint("'clawkit research start --wait --timeout D QUESTION'")
	}
	tools, err := c.tools()
	if err != nil {
		return research.StartParams{}, err
	}
	inputs, err := inputsFromFlags(c.File, c.Pages, c.Sheet, c.Layers, c.Resolution)
	if err != nil {
		return research.StartParams{}, err
	}
	p := research.StartParams{Caller: c.caller(), Question: c.Question, OutputFormat: c.OutputFormat,
		MaxReportBytes: c.MaxReportBytes, AsOf: c.AsOf, IdempotencyKey: c.IdempotencyKey,
		Plan: c.Plan, Inputs: inputs, KeepUploads: c.KeepUploads, Tools: tools, Visualization: c.Visualization, MaxTokens: c.MaxTokens}
	if c.Wait {
		// One routed call: the start and its wait run under one owner.
		ms, err := research.WaitTimeoutMs(c.Timeout)
		if err != nil {
			return research.StartParams{}, err
		}
		p.Wait = &research.StartWait{TimeoutMs: ms, Out: o}
	}
	if (c.Events || c.NoStream) && !c.Wait {
		return research.StartParams{}, errs.Usage(CodeUsage, "--events and --no-stream need --wait").WithHint("'clawkit research start --wait --events QUESTION', or 'clawkit research wait JOB --events'")
	}
	return p, nil
}

// Run runs `clawkit research start`.
func (c *ResearchStartCmd) Run(env *Env) error {
	p, err := c.params()
	if err != nil {
		return err
	}
	if p.Wait != nil {
		c.apply(env.Out, &p.Wait.Events, &p.Wait.NoStream)
	}
	res, err := research.OpStart.Call(env.Ctx, env, p)
	return printStarted(env.Out, res, err)
}

// printStarted prints a start's (or an approve's) job: the waited-for
// outcome when the call waited, the job and its handle otherwise.
func printStarted(out *Output, res *research.StartResult, err error) error {
	if err != nil {
		return err
	}
	if res.Waited != nil {
		return printJob(out, res.Waited)
	}
	return out.Result(res, func(w *Printer) {
		existing := ""
		if res.Existing {
			existing = " (existing job for this idempotency key)"
		}
		fmt.Fprintf(w, "%s %s handle %s%s\n", res.Job, res.State, termsafe.Text(res.Handle), existing)
	})
}

func printJob(out *Output, res *research.PollResult) error {
	return out.Result(res, func(w *Printer) {
		j := res.Job
		status := j.ProviderStatus
		if status == "" {
			status = "-"
		}
		// Status and reason are the provider's text: escaped for the
		// terminal (docs/research.md, "Text from outside").
		fmt.Fprintf(w, "%s %s (provider status %s, %d polls)\n", j.ID, j.State, termsafe.Text(status), j.PollCount)
		if j.ErrorCode != "" {
			fmt.Fprintf(w, "reason: %s: %s\n", j.ErrorCode, termsafe.Text(j.ErrorMessage))
		}
		if res.ReportDir != "" {
			flags := ""
			if j.Partial {
				flags += " partial"
			}
			fmt.Fprintf(w, "report: %s (%d bytes, %d citations, %d dropped)%s\n", filepath.Join(res.ReportDir, research.ReportFile), j.ReportBytes, j.CitationCount, j.DroppedCitations, flags)
		}
		if res.PlanFile != "" {
			fmt.Fprintf(w, "plan: %s\n", res.PlanFile)
		}
	})
}

// ResearchPollCmd is `clawkit research poll`.
type ResearchPollCmd struct {
	researchIdentity
	Job string `arg:"" help:"Job id (rj_…)."`
	Out string `help:"When the job has ended, also publish the report to FILE." placeholder:"FILE"`
}

// Run runs `clawkit research poll`.
func (c *ResearchPollCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	o, err := absOut(c.Out)
	if err != nil {
		return err
	}
	res, err := research.OpPoll.Call(ctx, env, research.JobParams{Caller: c.caller(), Job: c.Job, Out: o})
	if err != nil {
		return err
	}
	return printJob(out, res)
}

// ResearchWaitCmd is `clawkit research wait`.
type ResearchWaitCmd struct {
	researchIdentity
	Job     string        `arg:"" help:"Job id (rj_…)."`
	Timeout time.Duration `help:"Give up waiting after this long (exit 5; the job keeps running). 0 waits for the job's own budget."`
	Out     string        `help:"Also publish the report to FILE." placeholder:"FILE"`
	streamFlags
}

// streamFlags choose how a wait follows a job (docs/research.md, "Live
// progress").
type streamFlags struct {
	// --events needs the stream, so the two exclude each other (kong's xor).
	Events   bool `help:"Progress on stderr as NDJSON, one stream event per line (thought summaries, step changes, status, usage), for scripts; stdout is unchanged." xor:"stream"`
	NoStream bool `name:"no-stream" help:"Wait by polling alone, without following the interaction's stream." xor:"stream"`
}

// apply sets the wait's stream options; --events shows progress whether
// or not stderr is a terminal.
func (f streamFlags) apply(out *Output, events, noStream *bool) {
	*events, *noStream = f.Events, f.NoStream
	if f.Events {
		out.Progress = "always"
	}
}

// Run runs `clawkit research wait`.
func (c *ResearchWaitCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	o, err := absOut(c.Out)
	if err != nil {
		return err
	}
	ms, err := research.WaitTimeoutMs(c.Timeout)
	if err != nil {
		return err
	}
	p := research.WaitParams{JobParams: research.JobParams{Caller: c.caller(), Job: c.Job, Out: o}, TimeoutMs: ms}
	c.apply(out, &p.Events, &p.NoStream)
	res, err := research.OpWait.Call(ctx, env, p)
	if err != nil {
		return err
	}
	return printJob(out, res)
}

// ResearchCancelCmd is `clawkit research cancel`.
type ResearchCancelCmd struct {
	researchIdentity
	Job string `arg:"" help:"Job id (rj_…)."`
}

// Run runs `clawkit research cancel`.
func (c *ResearchCancelCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	res, err := research.OpCancel.Call(ctx, env, research.JobParams{Caller: c.caller(), Job: c.Job})
	if err != nil {
		return err
	}
	return printJob(out, res)
}

// ResearchListCmd is `clawkit research list`.
type ResearchListCmd struct {
	Agent   string `help:"Only jobs of this agent." placeholder:"ID"`
	Session string `help:"Only jobs of this session." placeholder:"KEY"`
	State   string `help:"Only jobs in this state." placeholder:"STATE"`
}

// Run runs `clawkit research list`.
func (c *ResearchListCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	jobs, err := research.OpList.Call(ctx, env, research.ListParams{AgentID: c.Agent, SessionKey: c.Session, State: c.State})
	if err != nil {
		return err
	}
	if jobs == nil {
		jobs = []*research.Job{}
	}
	return out.Result(jobs, func(w *Printer) {
		tw := w.Table(2, 4, 2)
		fmt.Fprintln(tw, "JOB\tSTATE\tSTATUS\tPOLLS\tAGENT/SESSION\tCREATED\tQUESTION")
		for _, j := range jobs {
			q := strings.Join(strings.Fields(j.Question), " ")
			if len(q) > 48 {
				q = strings.ToValidUTF8(q[:48], "") + "…"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s/%s\t%s\t%s\n", j.ID, j.State, termsafe.Text(dash(j.ProviderStatus)), j.PollCount, j.AgentID, j.SessionKey,
				time.UnixMilli(j.CreatedAt).UTC().Format(time.RFC3339), termsafe.Text(q))
		}
		tw.Flush()
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ResearchShowCmd is `clawkit research show`.
type ResearchShowCmd struct {
	Job string `arg:"" help:"Job id (rj_…)."`
}

// Run runs `clawkit research show`.
func (c *ResearchShowCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	res, err := research.OpShow.Call(ctx, env, research.JobParams{Job: c.Job})
	if err != nil {
		return err
	}
	return out.Result(res, func(w *Printer) {
		j := res.Job
		tw := w.Table(2, 4, 2)
		row := func(k, v string) {
			if v != "" {
				// Status, handle, reason and question may be outside text.
				fmt.Fprintf(tw, "%s:\t%s\n", k, termsafe.Text(v))
			}
		}
		row("job", j.ID)
		row("state", j.State)
		row("status", j.ProviderStatus)
		row("handle", j.Handle)
		row("agent/session", fmt.Sprintf("%s/%s (incarnation %d)", j.AgentID, j.SessionKey, j.SessionIncarnation))
		row("profile", fmt.Sprintf("%s (account %s)", j.ProfileID, j.CredentialAccount))
		row("endpoint", j.BaseURL)
		row("question", termsafe.Text(j.Question))
		row("parent job", j.ParentJob)
		row("plan handle", j.PlanHandle)
		row("plan", res.PlanFile)
		if o := j.Options; o != nil {
			if o.Plan {
				row("review", "plan first (collaborative planning)")
			}
			row("revision", termsafe.Text(o.Revision))
			row("visualization", o.Visualization)
			if o.MaxTokens > 0 {
				row("token budget", fmt.Sprint(o.MaxTokens))
			}
			for _, in := range o.Inputs {
				line := fmt.Sprintf("%s (%s, %d bytes, sha256 %s)", termsafe.Text(in.Name), in.MimeType, in.Size, in.SHA256)
				switch {
				case in.Pages != "":
					line += " pages " + termsafe.Text(in.Pages)
				case in.Sheet != "":
					line += " sheet " + termsafe.Text(in.Sheet)
				}
				if len(in.Layers) > 0 {
					line += " layers " + termsafe.Text(strings.Join(in.Layers, ","))
				}
				if in.Resolution != "" {
					line += " resolution " + termsafe.Text(in.Resolution)
				}
				switch {
				case in.Upload && in.File == "" && in.Progress != nil:
					line += fmt.Sprintf(" uploading, %d bytes confirmed", in.Progress.Offset)
				case in.Upload && in.Deleted:
					line += " uploaded as " + termsafe.Text(in.File) + ", deleted"
				case in.Upload && in.File != "":
					line += " uploaded as " + termsafe.Text(in.File)
				}
				row("input", line)
			}
			if t := o.Tools; t != nil {
				for _, st := range t.FileSearch {
					row("tool", "file_search "+termsafe.Text(st))
				}
				if t.URLContext {
					row("tool", "url_context")
				}
				for _, m := range t.MCPServers {
					hs := ""
					for _, h := range m.Headers {
						hs += fmt.Sprintf(" %s=@%s", h.Header, h.Profile)
					}
					row("tool", termsafe.Text(fmt.Sprintf("mcp_server %s %s%s", m.Name, m.URL, hs)))
				}
			}
		}
		row("polls", fmt.Sprint(j.PollCount))
		if j.Usage != nil {
			row("tokens", usageLine(*j.Usage))
		}
		if j.ChainUsage != nil && j.ParentJob != "" {
			row("tokens (chain)", usageLine(*j.ChainUsage))
		}
		row("created", time.UnixMilli(j.CreatedAt).UTC().Format(time.RFC3339))
		if j.FinishedAt != 0 {
			row("finished", time.UnixMilli(j.FinishedAt).UTC().Format(time.RFC3339))
		}
		if j.ErrorCode != "" {
			row("reason", j.ErrorCode+": "+j.ErrorMessage)
		}
		if res.ReportDir != "" {
			row("report", filepath.Join(res.ReportDir, research.ReportFile))
			row("citations", fmt.Sprintf("%d (%d dropped)", j.CitationCount, j.DroppedCitations))
			if j.Partial {
				row("partial", "true")
			}
		}
		tw.Flush()
	})
}

// ResearchRecoverCmd is `clawkit research recover`.
type ResearchRecoverCmd struct{}

// Run runs `clawkit research recover`.
func (c *ResearchRecoverCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	res, err := research.OpRecover.Call(ctx, env, struct{}{})
	if err != nil {
		return err
	}
	return out.Result(res, func(w *Printer) {
		for _, id := range res.Indeterminate {
			fmt.Fprintf(w, "%s indeterminate: no receipt was recorded for its create; inspect the provider account (never resubmitted)\n", id)
		}
		for _, id := range res.NotSent {
			fmt.Fprintf(w, "%s not-sent: interrupted while uploading its inputs; no create was sent\n", id)
		}
		for _, id := range res.Resumed {
			fmt.Fprintf(w, "%s running: polled, still in progress\n", id)
		}
		for _, id := range res.Finished {
			fmt.Fprintf(w, "%s ended: report published\n", id)
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(w, "%s skipped: %s: %s\n", s.Job, s.Code, termsafe.Text(s.Reason))
		}
		if len(res.Indeterminate)+len(res.NotSent)+len(res.Resumed)+len(res.Finished)+len(res.Skipped) == 0 {
			fmt.Fprintln(w, "nothing to recover")
		}
	})
}

// ResearchRPCCmd is `clawkit research rpc`: the contract itself. It always
// prints exactly one response envelope on stdout and exits 0 when it did;
// the outcome is in the envelope (ok, state, reason).
type ResearchRPCCmd struct{}

// Run runs `clawkit research rpc`.
func (c *ResearchRPCCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	data, err := io.ReadAll(io.LimitReader(env.Stdin, research.MaxEnvelopeBytes+1))
	if err != nil {
		return errs.Failed(CodeStdinUnreadable, "cannot read the request from stdin: %v", err)
	}
	return out.PrintJSON(research.AnswerRPC(ctx, env, data))
}

// startWait is the wait of an approve or a follow-up run in the same call
// (nil without --wait), with the rules of start's --wait, --timeout and
// --out (ResearchStartCmd.params).
func startWait(wait bool, timeout time.Duration, out string) (*research.StartWait, error) {
	o, err := absOut(out)
	if err != nil {
		return nil, err
	}
	if o != "" && !wait {
		return nil, errs.Usage(CodeUsage, "--out needs --wait (or use 'research wait JOB --out FILE')")
	}
	if timeout != 0 && !wait {
		return nil, errs.Usage(errs.CodeInvalidTimeout, "--timeout needs --wait")
	}
	if !wait {
		return nil, nil
	}
	ms, err := research.WaitTimeoutMs(timeout)
	if err != nil {
		return nil, err
	}
	return &research.StartWait{TimeoutMs: ms, Out: o}, nil
}

// ResearchApproveCmd is `clawkit research approve`.
type ResearchApproveCmd struct {
	researchIdentity
	Job     string        `arg:"" help:"Job id (rj_…) of a plan-proposed job."`
	Revise  string        `help:"Approve with these changes: sent as the confirming turn instead of a plain approval." placeholder:"TEXT"`
	Wait    bool          `help:"Wait for the research to end after approving."`
	Timeout time.Duration `help:"With --wait: how long to wait (0 = the job's own budget)."`
	Out     string        `help:"With --wait: also publish the report to FILE." placeholder:"FILE"`
}

// Run runs `clawkit research approve`.
func (c *ResearchApproveCmd) Run(env *Env) error {
	sw, err := startWait(c.Wait, c.Timeout, c.Out)
	if err != nil {
		return err
	}
	p := research.ApproveParams{JobParams: research.JobParams{Caller: c.caller(), Job: c.Job}, Revise: c.Revise, Wait: sw}
	res, err := research.OpApprove.Call(env.Ctx, env, p)
	return printStarted(env.Out, res, err)
}

// ResearchRejectCmd is `clawkit research reject`.
type ResearchRejectCmd struct {
	researchIdentity
	Job string `arg:"" help:"Job id (rj_…) of a plan-proposed job."`
}

// Run runs `clawkit research reject`.
func (c *ResearchRejectCmd) Run(env *Env) error {
	res, err := research.OpReject.Call(env.Ctx, env, research.JobParams{Caller: c.caller(), Job: c.Job})
	if err != nil {
		return err
	}
	return printJob(env.Out, res)
}

// ResearchFollowUpCmd is `clawkit research follow-up`.
type ResearchFollowUpCmd struct {
	researchIdentity
	Job            string        `arg:"" help:"Job id (rj_…) of the completed job to follow up."`
	Question       string        `arg:"" help:"The follow-up question."`
	MaxReportBytes int64         `help:"Bound the published report." placeholder:"N"`
	IdempotencyKey string        `help:"Return the recorded job when this key was used before (per agent and session)." placeholder:"KEY"`
	Wait           bool          `help:"Wait for the follow-up to end."`
	Timeout        time.Duration `help:"With --wait: how long to wait (0 = the job's own budget)."`
	Out            string        `help:"With --wait: also publish the report to FILE." placeholder:"FILE"`
	MaxTokens      int64         `name:"max-tokens" help:"Token budget of the follow-up: cancel it once its reported usage passes N tokens (0 = none)." placeholder:"N"`
	File           []string      `help:"Send a document or image with the follow-up, as research start --file. Repeatable." placeholder:"PATH"`
	Pages          []string      `help:"Send only these pages of a --file document, as research start --pages. Repeatable." placeholder:"[FILE=]RANGE"`
	Sheet          []string      `help:"Send only this sheet of a --file spreadsheet, as research start --sheet. Repeatable." placeholder:"[FILE=]N[!CELLS]"`
	Layers         []string      `sep:"none" help:"The content layers to extract from a --file, as research start --layers. Repeatable." placeholder:"[FILE=]LAYER,..."`
	Resolution     []string      `help:"The media resolution a --file is read at, as research start --resolution. Repeatable." placeholder:"[FILE=]RES"`
	KeepUploads    bool          `name:"keep-uploads" help:"Keep the files uploaded through the Files API when the follow-up ends."`
	researchToolFlags
}

// inputsFromFlags resolves --file paths and reads --pages and --sheet
// (the rules on them are the start's Check).
func inputsFromFlags(files, pages, sheets, layers, resolutions []string) (research.InputList, error) {
	var abs []string
	for _, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			return research.InputList{}, errs.Usage(errs.CodeInvalidInput, "cannot resolve --file %s: %v", f, err)
		}
		abs = append(abs, a)
	}
	return research.InputsFromFlags(abs, pages, sheets, layers, resolutions, filepath.Abs)
}

// Run runs `clawkit research follow-up`.
func (c *ResearchFollowUpCmd) Run(env *Env) error {
	sw, err := startWait(c.Wait, c.Timeout, c.Out)
	if err != nil {
		return err
	}
	inputs, err := inputsFromFlags(c.File, c.Pages, c.Sheet, c.Layers, c.Resolution)
	if err != nil {
		return err
	}
	tools, err := c.tools()
	if err != nil {
		return err
	}
	p := research.StartParams{Caller: c.caller(), Question: c.Question, MaxReportBytes: c.MaxReportBytes,
		IdempotencyKey: c.IdempotencyKey, FollowUp: &research.JobRef{Job: c.Job}, Wait: sw, MaxTokens: c.MaxTokens,
		Inputs: inputs, KeepUploads: c.KeepUploads, Tools: tools, Visualization: c.Visualization}
	res, err := research.OpStart.Call(env.Ctx, env, p)
	return printStarted(env.Out, res, err)
}

// usageLine is a job's token use on one line: the total, then each part
// the provider reported.
func usageLine(u research.TokenUsage) string {
	line := fmt.Sprintf("%d total (input %d, output %d, thought %d, tool use %d, cached %d)", u.Total, u.Input, u.Output, u.Thought, u.ToolUse, u.Cached)
	if u.GroundingToolCalls > 0 {
		parts := make([]string, 0, len(u.GroundingByTool))
		for _, k := range u.GroundingTools() {
			parts = append(parts, fmt.Sprintf("%s %d", k, u.GroundingByTool[k]))
		}
		line += fmt.Sprintf("; %d grounding tool calls", u.GroundingToolCalls)
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, ", ") + ")"
		}
	}
	return line
}
