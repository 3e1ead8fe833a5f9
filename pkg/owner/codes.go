package owner

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeBadHome: invalid home …: …
	CodeBadHome errs.Code = "bad_home"
	// CodeGatewayOutdated: the running gateway does not offer operation … that this clawkit needs
	CodeGatewayOutdated errs.Code = "gateway_outdated"
	// CodeGatewayRunning: a gateway (pid …) owns the state in …
	CodeGatewayRunning errs.Code = "gateway_running"
	// CodeGatewayUnavailable: the gateway went away before the call was sent: …
	CodeGatewayUnavailable errs.Code = "gateway_unavailable"
	// CodeHomeNotDir: home … is not a folder
	CodeHomeNotDir errs.Code = "home_not_dir"
	// CodeHomeParentMissing: cannot create home …: its parent folder … does not exist
	CodeHomeParentMissing errs.Code = "home_parent_missing"
	// CodeHomeUnusable: cannot use home …: …
	CodeHomeUnusable errs.Code = "home_unusable"
	// CodeInvalidGateway: invalid gateway address …
	CodeInvalidGateway errs.Code = "invalid_gateway"
	// CodeNoHome: cannot find a home folder for clawkit
	CodeNoHome errs.Code = "no_home"
	// CodeOutcomeUnknown: …: outcome unknown: …
	CodeOutcomeUnknown errs.Code = "outcome_unknown"
	// CodeOwnerBusy: the clawkit state in … is owned by … (waited … for the owner lock)
	CodeOwnerBusy errs.Code = "owner_busy"
	// CodeOwnerChanged: the state owner changed before dispatch
	CodeOwnerChanged errs.Code = "owner_changed"
	// CodeOwnerRetired: … no longer holds its owner lease (incarnation …): …
	CodeOwnerRetired errs.Code = "owner_retired"
	// CodeSessionStale: session … of agent … was reset (incarnation …, now …)
	CodeSessionStale errs.Code = "session_stale"
	// CodeSocketPath: cannot create … for the gateway socket: …
	CodeSocketPath errs.Code = "socket_path"
)
