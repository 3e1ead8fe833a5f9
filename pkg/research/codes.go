package research

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeCancelOutcomeUnknown: …; the provider may or may not have received the cancellation of research job …
	CodeCancelOutcomeUnknown errs.Code = "cancel_outcome_unknown"
	// CodeCreateOutcomeUnknown: …; research job … may or may not have been submitted
	CodeCreateOutcomeUnknown errs.Code = "create_outcome_unknown"
	// CodeCredentialSubstituted: profile … now holds a different credential (account …) than the one research job … was submitted with (…)
	CodeCredentialSubstituted errs.Code = "credential_substituted"
	// CodeDuplicateField: duplicate field …
	CodeDuplicateField errs.Code = "duplicate_field"
	// CodeEndpointChanged: research job … was submitted to …; the configured endpoint is now …
	CodeEndpointChanged errs.Code = "endpoint_changed"
	// CodeEnvelopeTooLarge: request is … bytes; the limit is …
	CodeEnvelopeTooLarge errs.Code = "envelope_too_large"
	// CodeForeignOwner: research job … belongs to session … of agent …, not … of …
	CodeForeignOwner errs.Code = "foreign_owner"
	// CodeIdempotencyKeyReused: idempotency key … was used for research job … with a different question
	CodeIdempotencyKeyReused errs.Code = "idempotency_key_reused"
	// CodeInteractionNotFound: (see the message)
	CodeInteractionNotFound errs.Code = "interaction_not_found"
	// CodeInvalidField: output.format must be a string
	CodeInvalidField errs.Code = "invalid_field"
	// CodeInvalidHandle: invalid handle: …
	CodeInvalidHandle errs.Code = "invalid_handle"
	// CodeInvalidIdempotencyKey: the idempotency key must be 1–128 printable characters without spaces
	CodeInvalidIdempotencyKey errs.Code = "invalid_idempotency_key"
	// CodeInvalidJobID: … is not a research job id (rj_ and 16 letters or digits 2-7)
	CodeInvalidJobID errs.Code = "invalid_job_id"
	// CodeInvalidJSON: invalid JSON: …
	CodeInvalidJSON errs.Code = "invalid_json"
	// CodeInvalidQuestion: the question is empty
	CodeInvalidQuestion errs.Code = "invalid_question"
	// CodeInvalidShape: expected a JSON object
	CodeInvalidShape errs.Code = "invalid_shape"
	// CodeInvalidState: unknown job state …
	CodeInvalidState errs.Code = "invalid_state"
	// CodeJobBusy: research job … changed while cancelling
	CodeJobBusy errs.Code = "job_busy"
	// CodeJobFinished: research job … already ended (…)
	CodeJobFinished errs.Code = "job_finished"
	// CodeJobNotFound: no research job …
	CodeJobNotFound errs.Code = "job_not_found"
	// CodeMissingField: the RPC wrapper has no "request"
	CodeMissingField errs.Code = "missing_field"
	// CodeNoHandle: research job … has no provider handle (state …); there is nothing to cancel
	CodeNoHandle errs.Code = "no_handle"
	// CodeNoReport: research job … ended … without a report; … was not written
	CodeNoReport errs.Code = "no_report"
	// CodeNotSent: …; research job … was not submitted
	CodeNotSent errs.Code = "not_sent"
	// CodeOauthProfileRejected: auth profile … is a … credential; managed research needs an API key
	CodeOauthProfileRejected errs.Code = "oauth_profile_rejected"
	// CodeOutFailed: cannot inspect …: …
	CodeOutFailed errs.Code = "out_failed"
	// CodeOutIsLink: … is a symbolic link; it is not followed
	CodeOutIsLink errs.Code = "out_is_link"
	// CodePollBudgetExhausted: research job … reached its poll budget (… polls) without a confirmed end
	CodePollBudgetExhausted errs.Code = "poll_budget_exhausted"
	// CodePollFailed: poll of research job … failed: …
	CodePollFailed errs.Code = "poll_failed"
	// CodeProfileMissing: auth profile … does not exist
	CodeProfileMissing errs.Code = "profile_missing"
	// CodeProfileNotConfigured: no auth profile is configured for Google research
	CodeProfileNotConfigured errs.Code = "profile_not_configured"
	// CodeProfileSubstituted: research job … is pinned to profile …; the configured profile is now …
	CodeProfileSubstituted errs.Code = "profile_substituted"
	// CodeProfileWrongProvider: auth profile … is for provider …, not google
	CodeProfileWrongProvider errs.Code = "profile_wrong_provider"
	// CodeProviderBusy: …; research job … was not submitted
	CodeProviderBusy errs.Code = "provider_busy"
	// CodeProviderRefusedCredential: (see the message)
	CodeProviderRefusedCredential errs.Code = "provider_refused_credential"
	// CodeProviderUnavailable: (see the message)
	CodeProviderUnavailable errs.Code = "provider_unavailable"
	// CodePublishFailed: cannot create …: …
	CodePublishFailed errs.Code = "publish_failed"
	// CodeReceiptNotRecorded: the provider accepted research job … as interaction …, but recording the receipt failed: …
	CodeReceiptNotRecorded errs.Code = "receipt_not_recorded"
	// CodeReportMissing: the published report of … cannot be read: …
	CodeReportMissing errs.Code = "report_missing"
	// CodeResearchDisabled: Google research is not enabled
	CodeResearchDisabled errs.Code = "research_disabled"
	// CodeStaleOwner: research job … was started in incarnation … of session …; the session is now at …
	CodeStaleOwner errs.Code = "stale_owner"
	// CodeSubmissionInProgress: research job … is being submitted right now; it has no receipt yet
	CodeSubmissionInProgress errs.Code = "submission_in_progress"
	// CodeSubmissionInterrupted: research job … was being submitted by an owner that is gone; no receipt was recorded, so whether the provider accepted it is unknown
	CodeSubmissionInterrupted errs.Code = "submission_interrupted"
	// CodeUnknownField: unknown field … in the RPC wrapper
	CodeUnknownField errs.Code = "unknown_field"
	// CodeUnknownHandle: no research job of this home has handle …
	CodeUnknownHandle errs.Code = "unknown_handle"
	// CodeUnsupportedAction: unsupported action …; expected describe, start, poll or cancel
	CodeUnsupportedAction errs.Code = "unsupported_action"
	// CodeUnsupportedConstraint: unsupported output constraint …; supported: format, maxReportBytes
	CodeUnsupportedConstraint errs.Code = "unsupported_constraint"
	// CodeUnsupportedService: unsupported service …; this is …
	CodeUnsupportedService errs.Code = "unsupported_service"
	// CodeUnsupportedVersion: unsupported request version …; this clawkit speaks version 1
	CodeUnsupportedVersion errs.Code = "unsupported_version"
	// CodeWaitInterrupted: waiting for research job … was interrupted
	CodeWaitInterrupted errs.Code = "wait_interrupted"
	// CodeWaitTimeout: research job … is still … after …
	CodeWaitTimeout errs.Code = "wait_timeout"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeResponseTooLarge: …; research job … ends failed and is not polled again
	CodeResponseTooLarge errs.Code = "response_too_large"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeApproveInProgress: research job … is being submitted right now
	CodeApproveInProgress errs.Code = "approve_in_progress"
	// CodeHeaderProfileMissing: MCP server …: header … names auth profile …, which does not exist
	CodeHeaderProfileMissing errs.Code = "header_profile_missing"
	// CodeHeaderProfileWrongKind: MCP server …: auth profile … is of kind …, not header or bearer
	CodeHeaderProfileWrongKind errs.Code = "header_profile_wrong_kind"
	// CodeHeaderValueLiteral: --mcp-header …:… gives a value; a header's value comes only from an auth profile of kind header
	CodeHeaderValueLiteral errs.Code = "header_value_literal"
	// CodeInputTooLarge: input … is … bytes; the limit is … per file
	CodeInputTooLarge errs.Code = "input_too_large"
	// CodeInputUnreadable: input … does not exist
	CodeInputUnreadable errs.Code = "input_unreadable"
	// CodeInvalidFollowUp: a follow-up names its parent job by id or by handle
	CodeInvalidFollowUp errs.Code = "invalid_follow_up"
	// CodeInvalidRange: input …: … is not a page number (1, 2, …)
	CodeInvalidRange errs.Code = "invalid_range"
	// CodeRangeNotApplicable: input … is …, which has …; … does not apply
	CodeRangeNotApplicable errs.Code = "range_not_applicable"
	// CodeInputChanged: input … changed while it was being read
	CodeInputChanged errs.Code = "input_changed"
	// CodeUploadInterrupted: interrupted while uploading its inputs; the create was never sent
	CodeUploadInterrupted errs.Code = "upload_interrupted"
	// CodeUploadFailed: uploading input … failed: …
	CodeUploadFailed errs.Code = "upload_failed"
	// CodeInputProcessingFailed: the provider could not process input … (…): its state is FAILED
	CodeInputProcessingFailed errs.Code = "input_processing_failed"
	// CodeInvalidContentLayer: input …: content layer … is not one of … (pages) or … (sheets)
	CodeInvalidContentLayer errs.Code = "invalid_content_layer"
	// CodeInvalidResolution: input …: resolution … is not one of …
	CodeInvalidResolution errs.Code = "invalid_resolution"
	// CodeInputNotReady: input … (…) is still being processed by the provider after …
	CodeInputNotReady errs.Code = "input_not_ready"
	// CodeInvalidTool: … file search stores; at most …
	CodeInvalidTool errs.Code = "invalid_tool"
	// CodeInvalidVisualization: visualization … is not one of auto, off
	CodeInvalidVisualization errs.Code = "invalid_visualization"
	// CodeNotAwaitingReview: research job … has no plan to review: the confirming turn of plan … may or may not have been accepted
	CodeNotAwaitingReview errs.Code = "not_awaiting_review"
	// CodeParentNotCompleted: research job … is …; only a completed job can be followed up
	CodeParentNotCompleted errs.Code = "parent_not_completed"
	// CodePlanProposed: research job … proposed a research plan (plan.md in its folder, see 'clawkit research show …') and waits for its review
	CodePlanProposed errs.Code = "plan_proposed"
	// CodePollBudgetExceeded: research job … spent its poll budget (… polls) on its plan
	CodePollBudgetExceeded errs.Code = "poll_budget_exceeded"
	// CodeSecretInURL: MCP server …: the URL carries a credential (…)
	CodeSecretInURL errs.Code = "secret_in_url"
	// CodeTooManyInputs: … input files; at most … may be sent
	CodeTooManyInputs errs.Code = "too_many_inputs"
	// CodeUnsupportedInputType: input … is not a PDF, a CSV table or an image of a type the provider accepts (by its content: …)
	CodeUnsupportedInputType errs.Code = "unsupported_input_type"
)
