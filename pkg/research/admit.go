package research

import (
	"encoding/json"

	"github.com/clawkit/clawkit/pkg/owner"
)

// Admission (owner.Op.Check and Admit): the parts of each operation's
// validation that need no state run as Check, before anything exists; a
// start's research settings and credential, which only read config.json
// and credentials.json, run as Admit, before the offline executor creates
// the home or the database. A start with research disabled, or a poll of
// a malformed job id, is refused without leaving a home behind. The
// operations repeat every check themselves.

// admitStart checks the provider authority of a start against the config
// the router read for routing (owner.Pre): no second read.
func (s *Service) admitStart(pre owner.Pre, p StartParams) error {
	getenv := pre.Getenv
	if s.Getenv != nil || getenv == nil {
		getenv = s.getenv
	}
	_, _, err := s.authority(pre.Home, func() (Settings, error) {
		if pre.ConfigErr != nil {
			return Settings{}, pre.ConfigErr
		}
		return SettingsFrom(pre.Config, getenv)
	})
	if err != nil {
		return err
	}
	// Inputs and header profiles are refused before the home exists:
	// each input by its metadata and first bytes (Start reads it once,
	// whole), each header profile by its presence and kind.
	if err := probeInputs(p.Inputs); err != nil {
		return err
	}
	_, _, err = resolveTools(pre.Home, p.Tools)
	return err
}

// rpcStart is the start an envelope asks for.
func rpcStart(c Caller, req Request) StartParams {
	p := StartParams{Caller: c, Question: req.Question, AsOf: req.AsOf, Plan: req.Plan, Tools: req.Tools, Visualization: req.Visualization, MaxTokens: req.MaxTokens}
	if req.FollowUp != nil {
		p.FollowUp = &JobRef{Handle: req.FollowUp.Handle}
	}
	var specs []InputSpec
	for _, in := range req.Inputs {
		specs = append(specs, InputSpec(in))
	}
	p.Inputs, p.KeepUploads = AskInputs(specs...), req.KeepUploads
	if req.Output != nil {
		p.OutputFormat, p.MaxReportBytes = req.Output.Format, req.Output.MaxReportBytes
	}
	return p
}

// admitRPC gives an envelope's start, poll and cancel the Admit of the
// operations they stand for, so a refused envelope creates no home either.
// A malformed envelope passes: the operation answers it in its envelope
// (the CLI has already decoded it by then).
func (s *Service) admitRPC(pre owner.Pre, raw json.RawMessage) error {
	rpc, err := DecodeRPC(raw)
	if err != nil {
		return nil
	}
	c := Caller{AgentID: rpc.AgentID, SessionKey: rpc.SessionKey}
	switch rpc.Request.Action {
	case ActionStart:
		// Admission reads only what Check returned (the checked input
		// list); a start Check refuses is answered by the operation.
		p, err := checkStartParams(rpcStart(c, rpc.Request))
		if err != nil {
			return nil
		}
		return s.admitStart(pre, p)
	case ActionPoll, ActionCancel, ActionApprove, ActionReject:
		_, err := checkJobRef(JobParams{Caller: c, Handle: rpc.Request.Handle})
		return err
	}
	return nil
}

// checkJobRef validates the caller, the job id or handle and the report
// destination of a call, and returns them with the caller's defaults.
func checkJobRef(p JobParams) (JobParams, error) {
	if err := p.defaults(); err != nil {
		return p, err
	}
	if err := checkOut(p.Out); err != nil {
		return p, err
	}
	var err error
	p.ref, err = checkRef(p.Job, p.Handle)
	return p, err
}

// checkWait is a wait's checkJobRef and its timeout.
func checkWait(p WaitParams) (WaitParams, error) {
	var err error
	if p.JobParams, err = checkJobRef(p.JobParams); err != nil {
		return p, err
	}
	return p, checkWaitTimeout(p.TimeoutMs)
}
