package skills

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeInvalidPluginID: plugin id … is not a plain name
	CodeInvalidPluginID errs.Code = "invalid_plugin_id"
	// CodeMissingPlugin: no plugin named
	CodeMissingPlugin errs.Code = "missing_plugin"
	// CodeNoSkillsRoot: plugin … declares no agentSkillsDir, so it has no skills folder
	CodeNoSkillsRoot errs.Code = "no_skills_root"
	// CodeNotAFolder: the skills root … is not a folder
	CodeNotAFolder errs.Code = "not_a_folder"
	// CodeNotASkill: … is not a folder
	CodeNotASkill errs.Code = "not_a_skill"
	// CodeNotAFile: cannot write …: it is a folder of skill … holding … files (…); a file cannot replace it
	CodeNotAFile errs.Code = "not_a_file"
	// CodePluginUnavailable: (see the message)
	CodePluginUnavailable errs.Code = "plugin_unavailable"
	// CodeRemoveFailed: cannot remove skill …: …
	CodeRemoveFailed errs.Code = "remove_failed"
	// CodeSkillCommittedUndelivered: the skill change was applied but authority was lost before its skill_changed event could be dispatched: …
	CodeSkillCommittedUndelivered errs.Code = "skill_committed_undelivered"
	// CodeSkillEventUnrecorded: the skill change was applied but its event could not be recorded: …
	CodeSkillEventUnrecorded errs.Code = "skill_event_unrecorded"
	// CodeSkillIndexFailed: the skill change was applied but the skill index could not be refreshed: …
	CodeSkillIndexFailed errs.Code = "skill_index_failed"
	// CodeSkillMdRequired: SKILL.md is not removed on its own: a skill without SKILL.md is not a skill
	CodeSkillMdRequired errs.Code = "skill_md_required"
	// CodeSkillsRootConflict: plugin …'s skills folder … overlaps plugin …'s (…); a plugin may name only its own skills
	CodeSkillsRootConflict errs.Code = "skills_root_conflict"
)

// Bundle error codes.
const (
	// CodeInvalidBundle: the bundle is not a tar this package reads
	CodeInvalidBundle errs.Code = "invalid_bundle"
	// CodeChangedDuring: a skill changed while it was read
	CodeChangedDuring errs.Code = "skill_changed_during_read"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeWatchDisabled: watching skills is turned off (config skills.load.watch is false): no subscription and no polling
	CodeWatchDisabled errs.Code = "watch_disabled"
	// CodeSkippedReference: SKILL.md refers to a file the install left out (a finding)
	CodeSkippedReference errs.Code = "skipped_reference"
)
