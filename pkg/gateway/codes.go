package gateway

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeBadRequest: (see the message)
	CodeBadRequest errs.Code = "bad_request"
	// CodeGatewayStopFailed: the gateway (pid …) did not accept the stop: …
	CodeGatewayStopFailed errs.Code = "gateway_stop_failed"
	// CodeGatewayStopTimeout: the gateway (pid …) is still draining after …
	CodeGatewayStopTimeout errs.Code = "gateway_stop_timeout"
	// CodeInternal: (see the message)
	CodeInternal errs.Code = "internal"
	// CodeOwnerMismatch: (see the message)
	CodeOwnerMismatch errs.Code = "owner_mismatch"
	// CodeRecordFailed: cannot write …: …
	CodeRecordFailed errs.Code = "record_failed"
	// CodeScopeMissing: (see the message)
	CodeScopeMissing errs.Code = "scope_missing"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeGatewayStartFailed: the gateway exited during start (…): …
	CodeGatewayStartFailed errs.Code = "gateway_start_failed"
	// CodeGatewayStartTimeout: the gateway did not start serving within …
	CodeGatewayStartTimeout errs.Code = "gateway_start_timeout"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeOwnerLeaseLost: gateway … lost its owner lease (incarnation …) and retired
	CodeOwnerLeaseLost errs.Code = "owner_lease_lost"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeGatewayNotReady: the gateway (pid …) serves but is not ready: …
	CodeGatewayNotReady errs.Code = "gateway_not_ready"
	// CodeInvalidLogFormat: invalid log format …
	CodeInvalidLogFormat errs.Code = "invalid_log_format"
	// CodeInvalidLogLevel: invalid log level …
	CodeInvalidLogLevel errs.Code = "invalid_log_level"
	// CodeInvalidMetricsListen: invalid --metrics-listen address …: …
	CodeInvalidMetricsListen errs.Code = "invalid_metrics_listen"
	// CodeMetricsListenFailed: cannot listen on … for metrics: …
	CodeMetricsListenFailed errs.Code = "metrics_listen_failed"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeGatewayNotRunning: no gateway serves this home (or answers at --gateway)
	CodeGatewayNotRunning errs.Code = "gateway_not_running"
)
