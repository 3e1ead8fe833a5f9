package ops

import (
	"encoding/json"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/skills"
	"github.com/clawkit/clawkit/pkg/store"
)

// The typed handles of every registered operation: a call site writes
// ops.ResearchStart.Call(ctx, env, p) and gets the operation's result
// type back (docs/architecture.md). TestHandles checks that each handle's
// types are its operation's and that every operation has one.
var (
	SessionCreate     = owner.Handle[SessionParams, store.Session]{Name: MethodSessionCreate}
	SessionShow       = owner.Handle[SessionParams, store.Session]{Name: MethodSessionShow}
	SessionList       = owner.Handle[SessionParams, []store.Session]{Name: MethodSessionList}
	SessionReset      = owner.Handle[SessionParams, store.Session]{Name: MethodSessionReset}
	SessionRevoke     = owner.Handle[SessionParams, store.Session]{Name: MethodSessionRevoke}
	SessionRefreshing = owner.Handle[SessionParams, store.Session]{Name: MethodSessionRefreshing}
	SessionActivate   = owner.Handle[SessionParams, store.Session]{Name: MethodSessionActivate}
	AuthAdd           = owner.Handle[AuthAddParams, auth.Public]{Name: MethodAuthAdd}
	AuthList          = owner.Handle[None, []auth.Public]{Name: MethodAuthList}
	AuthRemove        = owner.Handle[AuthRemoveParams, auth.Public]{Name: MethodAuthRemove}
	OAuthSave         = owner.Handle[OAuthSaveParams, OAuthProfile]{Name: MethodOAuthSave}
	OAuthRenew        = owner.Handle[OAuthRenewParams, OAuthProfile]{Name: MethodOAuthRenew}
	OAuthLogout       = owner.Handle[OAuthLogoutParams, []auth.Public]{Name: MethodOAuthLogout}
	ConfigSet         = owner.Handle[ConfigParams, map[string]any]{Name: MethodConfigSet}
	ConfigUnset       = owner.Handle[ConfigParams, map[string]any]{Name: MethodConfigUnset}
	StateBackup       = owner.Handle[BackupParams, BackupResult]{Name: MethodStateBackup}
	StateStatus       = owner.Handle[None, *store.Status]{Name: MethodStateStatus}

	ResearchStart    = owner.Handle[research.StartParams, *research.StartResult]{Name: research.MethodStart}
	ResearchPoll     = owner.Handle[research.JobParams, *research.PollResult]{Name: research.MethodPoll}
	ResearchWait     = owner.Handle[research.WaitParams, *research.PollResult]{Name: research.MethodWait}
	ResearchCancel   = owner.Handle[research.JobParams, *research.PollResult]{Name: research.MethodCancel}
	ResearchApprove  = owner.Handle[research.ApproveParams, *research.StartResult]{Name: research.MethodApprove}
	ResearchReject   = owner.Handle[research.JobParams, *research.PollResult]{Name: research.MethodReject}
	ResearchList     = owner.Handle[research.ListParams, []*research.Job]{Name: research.MethodList}
	ResearchShow     = owner.Handle[research.JobParams, *research.PollResult]{Name: research.MethodShow}
	ResearchDescribe = owner.Handle[research.DescribeParams, *research.Describe]{Name: research.MethodDescribe}
	ResearchRecover  = owner.Handle[research.RecoverParams, *research.RecoverResult]{Name: research.MethodRecover}
	ResearchRPC      = owner.Handle[json.RawMessage, research.Response]{Name: research.MethodRPC}

	SkillRoot    = owner.Handle[skills.Target, skills.RootResult]{Name: skills.MethodRoot}
	SkillList    = owner.Handle[skills.Target, skills.ListResult]{Name: skills.MethodList}
	SkillFiles   = owner.Handle[skills.FilesParams, skills.FilesResult]{Name: skills.MethodFiles}
	SkillRead    = owner.Handle[skills.FileParams, skills.ReadResult]{Name: skills.MethodRead}
	SkillEvents  = owner.Handle[skills.EventsParams, []skills.EventRecord]{Name: skills.MethodEvents}
	SkillWrite   = owner.Handle[skills.WriteParams, *skills.CommitResult]{Name: skills.MethodWrite}
	SkillRemove  = owner.Handle[skills.FileParams, *skills.CommitResult]{Name: skills.MethodRemove}
	SkillInstall = owner.Handle[skills.InstallParams, *skills.CommitResult]{Name: skills.MethodInstall}
	SkillBundle  = owner.Handle[skills.BundleParams, *skills.BundleResult]{Name: skills.MethodBundle}
	SkillWatch   = owner.Handle[skills.Target, skills.WatchPlan]{Name: skills.MethodWatch}
)
