package skills

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeInvalidConfig: config hooks.skill_changed must be a list of commands, each a list of strings (argv, run without a shell)
	CodeInvalidConfig errs.Code = "invalid_config"
	// CodeInvalidConfigValue: config skills.load.watch is null; null is not taken as unset
	CodeInvalidConfigValue errs.Code = "invalid_config_value"
	// CodeInvalidFrontmatter: skill … has no SKILL.md; every skill starts with one
	CodeInvalidFrontmatter errs.Code = "invalid_frontmatter"
	// CodeInvalidLimit: --poll … is below the minimum of …
	CodeInvalidLimit errs.Code = "invalid_limit"
	// CodeInvalidParams: file … is given twice
	CodeInvalidParams errs.Code = "invalid_params"
	// CodeInvalidPath: skill … holds … the skill authoring contract does not allow (nothing was bundled)
	CodeInvalidPath errs.Code = "invalid_path"
	// CodeInvalidPluginId: plugin id … is not a plain name
	CodeInvalidPluginId errs.Code = "invalid_plugin_id"
	// CodeLockFailed: cannot create …: …
	CodeLockFailed errs.Code = "lock_failed"
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
	// CodeNotFound: --from-dir …: …
	CodeNotFound errs.Code = "not_found"
	// CodeNotRegularFile: …; only regular files (or - for stdin) are read
	CodeNotRegularFile errs.Code = "not_regular_file"
	// CodePathEscape: … leads outside … through a link; links are refused
	CodePathEscape errs.Code = "path_escape"
	// CodePluginUnavailable: (see the message)
	CodePluginUnavailable errs.Code = "plugin_unavailable"
	// CodeReadFailed: cannot read …: …
	CodeReadFailed errs.Code = "read_failed"
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
	// CodeStoreError: cannot read skill events: …
	CodeStoreError errs.Code = "store_error"
	// CodeTooLarge: the bundle is larger than … bytes; a skill holds at most … bytes
	CodeTooLarge errs.Code = "too_large"
	// CodeWriteFailed: cannot create the skills root …: …
	CodeWriteFailed errs.Code = "write_failed"
)
