// Package research implements the google.research.v1 contract: the request
// and response envelopes, logical research jobs with their custody binding,
// polling budgets, recovery and publication of reports.
//
// The provider itself (the Gemini Interactions API) lives in
// pkg/research/google; this package decides what may be sent, when, and by
// whom, and records what happened.
package research

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/strictjson"
)

// ServiceID is the seed's contract: describe, start (question, output,
// asOf), poll and cancel, exactly as DESIGN.md section 6 defines them.
const ServiceID = "google.research.v1"

// ServiceIDV2 is the grown contract: version 1 plus plan review (approve,
// reject), follow-ups, inputs, tools, visualization and a token budget
// (docs/research.md, "The contract").
const ServiceIDV2 = "google.research.v2"

// ContractVersion is the seed's envelope version; ContractVersion2 the
// grown one. A response carries the version of its request.
const (
	ContractVersion  = 1
	ContractVersion2 = 2
)

// Contracts lists the contract versions served, for describe.
var Contracts = []ContractInfo{
	{Service: ServiceID, Version: ContractVersion, Actions: []string{ActionDescribe, ActionStart, ActionPoll, ActionCancel}},
	{Service: ServiceIDV2, Version: ContractVersion2, Actions: []string{ActionDescribe, ActionStart, ActionPoll, ActionCancel, ActionApprove, ActionReject}},
}

// ContractInfo names one served contract version and its actions.
type ContractInfo struct {
	Service string   `json:"service"`
	Version int      `json:"version"`
	Actions []string `json:"actions"`
}

// v2StartFields are the start fields version 2 added to the seed's.
var v2StartFields = []string{"plan", "followUp", "inputs", "tools", "visualization", "maxTokens", "keepUploads"}

// Limits on untrusted envelope input. They are generous for a question and
// small enough that a hostile stdin cannot make us allocate without bound.
const (
	MaxEnvelopeBytes   = 1 << 20
	MaxQuestionBytes   = 64 << 10
	MaxHandleBytes     = 512
	MaxIDBytes         = 128
	DefaultReportMax   = 4 << 20
	HardReportMax      = 16 << 20
	DefaultCitationMax = 2000
)

// Action names of the v1 envelope.
const (
	ActionDescribe = "describe"
	ActionStart    = "start"
	ActionPoll     = "poll"
	ActionCancel   = "cancel"
	// ActionApprove and ActionReject review a proposed plan (a job
	// started with "plan": true), by handle.
	ActionApprove = "approve"
	ActionReject  = "reject"
)

// Output is the optional output constraint of a start request.
type Output struct {
	// Format of the report; only "markdown" is supported.
	Format string `json:"format,omitempty"`
	// MaxReportBytes bounds the published report; longer reports are cut at
	// a rune boundary and flagged truncated.
	MaxReportBytes int64 `json:"maxReportBytes,omitempty"`
}

// Request is one decoded google.research.v1 request envelope.
type Request struct {
	Version  int     `json:"version"`
	Action   string  `json:"action"`
	Service  string  `json:"service,omitempty"`
	Question string  `json:"question,omitempty"`
	Output   *Output `json:"output,omitempty"`
	AsOf     string  `json:"asOf,omitempty"`
	Handle   string  `json:"handle,omitempty"`
	// The start options (docs/research.md, "The contract"): each one a
	// declared field, decoded as strictly as the rest.
	Plan          bool         `json:"plan,omitempty"`
	FollowUp      *FollowUpRef `json:"followUp,omitempty"`
	Inputs        []InputRef   `json:"inputs,omitempty"`
	Tools         *Tools       `json:"tools,omitempty"`
	Visualization string       `json:"visualization,omitempty"`
	// MaxTokens is a version 2 start's token budget (0: none).
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// KeepUploads keeps the files a version 2 start uploads after the
	// job ends.
	KeepUploads bool `json:"keepUploads,omitempty"`
	// Revise is an approve's revision text.
	Revise string `json:"revise,omitempty"`
}

// FollowUpRef names the finished job a follow-up continues, by handle.
type FollowUpRef struct {
	Handle string `json:"handle"`
}

// InputRef names an input file by absolute path (the owner reads it),
// with a page range or a sheet for a document that has them.
type InputRef struct {
	Path       string   `json:"path"`
	Pages      string   `json:"pages,omitempty"`
	Sheet      string   `json:"sheet,omitempty"`
	Layers     []string `json:"layers,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
}

// RPC is the wrapper `research rpc` reads: the request plus the caller's
// identity, which custody checks compare with the job's binding.
type RPC struct {
	Request    Request `json:"request"`
	SessionKey string  `json:"sessionKey"`
	AgentID    string  `json:"agentId"`
}

// Response is the v1 response envelope. Exactly one of Value (ok) or
// State/Reason (not ok) is meaningful.
type Response struct {
	Version      int    `json:"version"`
	OK           bool   `json:"ok"`
	Value        any    `json:"value,omitempty"`
	State        string `json:"state,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
}

// OKResponse wraps a value.
func OKResponse(v any) Response { return Response{Version: ContractVersion, OK: true, Value: v} }

// WithVersion answers in the envelope version of the request (1 when the
// request's version could not be read).
func (r Response) WithVersion(v int) Response {
	if v == ContractVersion2 {
		r.Version = v
	}
	return r
}

// EnvelopeVersion reads the request version of a raw RPC wrapper without
// judging anything else: an error answer is given in the version asked
// for when it is one served (else 1).
func EnvelopeVersion(data []byte) int {
	var w struct {
		Request struct {
			Version json.RawMessage `json:"version"`
		} `json:"request"`
	}
	if json.Unmarshal(data, &w) == nil && string(bytes.TrimSpace(w.Request.Version)) == "2" {
		return ContractVersion2
	}
	return ContractVersion
}

// ErrorResponse turns a classified error into the ok:false envelope. State
// is the job state when the failure fixed one (not-sent, indeterminate),
// else the error class; Reason is the stable code.
func ErrorResponse(err error) Response {
	e := errs.As(err)
	r := Response{Version: ContractVersion, OK: false, State: "failed", Reason: "failed", Message: err.Error()}
	if e == nil {
		return r
	}
	r.Reason = string(e.Code)
	switch e.Kind {
	case errs.KindUsage:
		r.State = "invalid"
	case errs.KindRefused:
		r.State = "refused"
	case errs.KindUnknown:
		r.State = StateIndeterminate
	case errs.KindUnavailable:
		r.State = "unavailable"
		r.RetryAfterMs = e.RetryAfterMs
	}
	var js *JobStateError
	if errors.As(err, &js) && js.State != "" {
		r.State = js.State
	}
	return r
}

// JobStateError marks an error that fixed a job's state (for example a
// create refused before acceptance makes the job not-sent).
type JobStateError struct {
	State string
	Err   error
}

func (e *JobStateError) Error() string { return e.Err.Error() }
func (e *JobStateError) Unwrap() error { return e.Err }

func invalid(code errs.Code, format string, args ...any) *errs.Error {
	return errs.Usage(code, format, args...).WithHint("see 'clawkit research rpc --help' and docs/research.md for the google.research.v1 envelope")
}

// DecodeRPC strictly decodes one RPC request: one JSON object, no trailing
// data, no duplicate or unknown keys, a known version, service and action,
// and only the fields that action takes. Every violation is a usage error
// with a stable code; nothing is silently ignored.
func DecodeRPC(data []byte) (*RPC, error) {
	if len(data) > MaxEnvelopeBytes {
		return nil, invalid(CodeEnvelopeTooLarge, "request is %d bytes; the limit is %d", len(data), MaxEnvelopeBytes)
	}
	obj, err := strictObject(data)
	if err != nil {
		return nil, err
	}
	var rpc RPC
	for k := range obj {
		switch k {
		case "request", "sessionKey", "agentId":
		default:
			return nil, invalid(CodeUnknownField, "unknown field %q in the RPC wrapper", k)
		}
	}
	raw, ok := obj["request"]
	if !ok {
		return nil, invalid(CodeMissingField, "the RPC wrapper has no \"request\"")
	}
	if rpc.SessionKey, err = stringField(obj, "sessionKey", true, MaxIDBytes); err != nil {
		return nil, err
	}
	if rpc.AgentID, err = stringField(obj, "agentId", true, MaxIDBytes); err != nil {
		return nil, err
	}
	req, err := DecodeRequest(raw)
	if err != nil {
		return nil, err
	}
	rpc.Request = *req
	return &rpc, nil
}

// DecodeRequest strictly decodes one request envelope (see DecodeRPC).
func DecodeRequest(data []byte) (*Request, error) {
	obj, err := strictObject(data)
	if err != nil {
		return nil, err
	}
	var req Request
	vraw, ok := obj["version"]
	if !ok {
		return nil, invalid(CodeMissingField, "the request has no \"version\"")
	}
	switch string(bytes.TrimSpace(vraw)) {
	case "1":
		req.Version = ContractVersion
	case "2":
		req.Version = ContractVersion2
	default:
		return nil, invalid(CodeUnsupportedVersion, "unsupported request version %s; this clawkit speaks version 1 (%s) and 2 (%s)", string(bytes.TrimSpace(vraw)), ServiceID, ServiceIDV2)
	}
	v2 := req.Version == ContractVersion2
	service := ServiceID
	if v2 {
		service = ServiceIDV2
	}
	if req.Action, err = stringField(obj, "action", true, 32); err != nil {
		return nil, err
	}
	if req.Service, err = stringField(obj, "service", false, 128); err != nil {
		return nil, err
	}
	if req.Service != "" && req.Service != service {
		return nil, invalid(CodeUnsupportedService, "unsupported service %q for version %d; version %d is %s", req.Service, req.Version, req.Version, service)
	}
	allowed := map[string]bool{"version": true, "action": true, "service": true}
	switch req.Action {
	case ActionDescribe:
	case ActionStart:
		allowed["question"], allowed["output"], allowed["asOf"] = true, true, true
		if v2 {
			for _, k := range v2StartFields {
				allowed[k] = true
			}
		}
	case ActionPoll, ActionCancel:
		allowed["handle"] = true
	case ActionReject, ActionApprove:
		if !v2 {
			return nil, errs.Usage(CodeUnsupportedAction, "action %q is not part of %s; it is part of %s", req.Action, ServiceID, ServiceIDV2).
				WithHint(`send the request as version 2: "version":2 (docs/research.md, "The contract")`)
		}
		allowed["handle"] = true
		if req.Action == ActionApprove {
			allowed["revise"] = true
		}
	default:
		acts := "describe, start, poll or cancel"
		if v2 {
			acts = "describe, start, poll, cancel, approve or reject"
		}
		return nil, invalid(CodeUnsupportedAction, "unsupported action %q; expected %s", req.Action, acts)
	}
	for k := range obj {
		if allowed[k] {
			continue
		}
		if req.Action == ActionStart && !v2 && slices.Contains(v2StartFields, k) {
			return nil, errs.Usage(CodeUnknownField, "field %q is not part of a %s start request; it is part of %s", k, ServiceID, ServiceIDV2).
				WithHint(`send the request as version 2: "version":2 (docs/research.md, "The contract")`)
		}
		return nil, invalid(CodeUnknownField, "field %q is not part of a %s request", k, req.Action)
	}
	switch req.Action {
	case ActionStart:
		if req.Question, err = stringField(obj, "question", true, MaxQuestionBytes); err != nil {
			return nil, err
		}
		if strings.TrimSpace(req.Question) == "" {
			return nil, invalid(CodeInvalidQuestion, "the question is empty")
		}
		if raw, ok := obj["output"]; ok {
			out, err := decodeOutput(raw)
			if err != nil {
				return nil, err
			}
			req.Output = out
		}
		if _, ok := obj["asOf"]; ok {
			if req.AsOf, err = stringField(obj, "asOf", true, 64); err != nil {
				return nil, err
			}
		}
		if err := decodeStartOptions(obj, &req); err != nil {
			return nil, err
		}
	case ActionPoll, ActionCancel, ActionApprove, ActionReject:
		if req.Handle, err = stringField(obj, "handle", true, MaxHandleBytes); err != nil {
			return nil, err
		}
		if req.Action == ActionApprove {
			if req.Revise, err = stringField(obj, "revise", false, MaxReviseBytes); err != nil {
				return nil, err
			}
		}
	}
	return &req, nil
}

func decodeOutput(raw json.RawMessage) (*Output, error) {
	obj, err := strictObject(raw)
	if err != nil {
		return nil, err
	}
	var out Output
	for k, v := range obj {
		switch k {
		case "format":
			if err := unmarshalStrict(v, &out.Format); err != nil {
				return nil, invalid(CodeInvalidField, "output.format must be a string")
			}
		case "maxReportBytes":
			i, err := strictInt(v)
			if err != nil {
				return nil, invalid(CodeInvalidField, "output.maxReportBytes %s", err)
			}
			out.MaxReportBytes = i
		default:
			return nil, invalid(CodeUnsupportedConstraint, "unsupported output constraint %q; supported: format, maxReportBytes", k)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return &out, nil
}

// decodeStartOptions decodes a start's declared options strictly: each
// has one shape, and anything inside it that is not declared (a header's
// value given inline, say) is unknown_field.
func decodeStartOptions(obj map[string]json.RawMessage, req *Request) error {
	field := func(name string, v any) error {
		raw, ok := obj[name]
		if !ok {
			return nil
		}
		if err := unmarshalStrict(raw, v); err != nil {
			if strings.Contains(err.Error(), "unknown field") {
				return invalid(CodeUnknownField, "%s: %v", name, strings.TrimPrefix(err.Error(), "json: "))
			}
			return invalid(CodeInvalidField, "field %q does not have its declared shape (docs/research.md, \"The contract\")", name)
		}
		return nil
	}
	if err := field("plan", &req.Plan); err != nil {
		return err
	}
	if err := field("followUp", &req.FollowUp); err != nil {
		return err
	}
	if err := field("inputs", &req.Inputs); err != nil {
		return err
	}
	if err := field("keepUploads", &req.KeepUploads); err != nil {
		return err
	}
	if err := field("tools", &req.Tools); err != nil {
		return err
	}
	if err := field("visualization", &req.Visualization); err != nil {
		return err
	}
	if raw, ok := obj["maxTokens"]; ok {
		n, err := strictInt(raw)
		if err != nil || n < 1 || n > MaxTokenBudget {
			return invalid(CodeInvalidField, "maxTokens must be an integer from 1 to %d", int64(MaxTokenBudget))
		}
		req.MaxTokens = n
	}
	if _, ok := obj["followUp"]; ok {
		if req.FollowUp == nil || google.CheckHandle(req.FollowUp.Handle) != nil {
			return invalid(CodeInvalidField, "followUp.handle must be the handle of a finished job of this home")
		}
	}
	if _, ok := obj["visualization"]; ok && req.Visualization == "" {
		return invalid(CodeInvalidField, "visualization is empty; one of auto, off")
	}
	var specs []InputSpec
	for _, in := range req.Inputs {
		specs = append(specs, InputSpec(in))
	}
	_, inErr := checkInputList(AskInputs(specs...))
	for _, check := range []error{inErr, checkTools(req.Tools), checkVisualization(req.Visualization)} {
		if check != nil {
			return check
		}
	}
	return nil
}

// strictInt reads a JSON number that is an integer. json.Number also
// takes a string holding a number ("100"): the envelope's number is a
// JSON number, nothing else.
func strictInt(v json.RawMessage) (int64, error) {
	var n json.Number
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] == '"' {
		return 0, errors.New("must be a number, not a string")
	}
	if err := unmarshalStrict(v, &n); err != nil {
		return 0, errors.New("must be a number")
	}
	i, err := n.Int64()
	if err != nil {
		return 0, errors.New("must be an integer")
	}
	return i, nil
}

// Validate checks the output constraints against what the service supports.
func (o *Output) Validate() error {
	if o.Format != "" && o.Format != "markdown" {
		return invalid(CodeUnsupportedConstraint, "unsupported output format %q; only markdown is supported", o.Format)
	}
	if o.MaxReportBytes < 0 || o.MaxReportBytes > HardReportMax || (o.MaxReportBytes > 0 && o.MaxReportBytes < 64) {
		return invalid(CodeInvalidField, "maxReportBytes %d is out of range (64..%d)", o.MaxReportBytes, HardReportMax)
	}
	return nil
}

// strictObject parses data as exactly one JSON object with unique keys and
// nothing after it, returning the raw member values.
func strictObject(data []byte) (map[string]json.RawMessage, error) {
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, invalid(CodeInvalidShape, "expected a JSON object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, invalid(CodeInvalidJSON, "invalid JSON: %v", err)
	}
	return obj, nil
}

// checkJSON validates data as a single JSON value (strictjson: no
// duplicate keys at any depth, which Go would resolve silently to the last,
// valid UTF-8, bounded nesting, nothing after it) and maps a refusal to the
// contract's reasons.
func checkJSON(data []byte) error {
	err := strictjson.Check(data, maxDepth)
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case strictjson.InvalidUTF8:
		return invalid(CodeInvalidJSON, "the request is not valid UTF-8")
	case strictjson.DuplicateKey:
		return invalid(CodeDuplicateField, "duplicate field %q", e.Key)
	case strictjson.TooDeep:
		return invalid(CodeInvalidJSON, "JSON nested deeper than %d levels", maxDepth)
	case strictjson.Trailing:
		return invalid(CodeInvalidJSON, "unexpected data after the JSON value")
	}
	return invalid(CodeInvalidJSON, "invalid JSON: %v", e.Err)
}

const maxDepth = 32

func unmarshalStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func stringField(obj map[string]json.RawMessage, name string, required bool, max int) (string, error) {
	raw, ok := obj[name]
	if !ok {
		if required {
			return "", invalid(CodeMissingField, "the request has no %q", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(CodeInvalidField, "field %q must be a string", name)
	}
	if required && s == "" {
		return "", invalid(CodeInvalidField, "field %q is empty", name)
	}
	if len(s) > max {
		return "", invalid(CodeInvalidField, "field %q is %d bytes; the limit is %d", name, len(s), max)
	}
	if strings.ContainsRune(s, 0) {
		return "", invalid(CodeInvalidField, "field %q contains NUL", name)
	}
	return s, nil
}

// Describe is the value of a describe response. It is computed from
// configuration alone: no credential is loaded and no request is made.
type Describe describeOf[DescribeConstraints]

// DescribeV1 is a describe value in the seed's google.research.v1 shape:
// the service, its output constraints and asOf, and the versions served.
type DescribeV1 = describeOf[DescribeConstraintsV1]

// describeOf is a describe value of either version; only the constraints
// differ.
type describeOf[C any] struct {
	Service     string   `json:"service"`
	Provider    string   `json:"provider"`
	Managed     bool     `json:"managed"`
	Kind        string   `json:"kind"`
	Agent       string   `json:"agent"`
	Enabled     bool     `json:"enabled"`
	ProfileID   string   `json:"profileId,omitempty"`
	Constraints C        `json:"constraints"`
	Unsupported []string `json:"unsupportedConstraints"`
	Problems    []string `json:"problems,omitempty"`
	// Contracts lists every contract version served, so that a version 1
	// caller learns that version 2 exists.
	Contracts []ContractInfo `json:"contracts"`
}

// DescribeConstraintsV1 are the constraints of a version 1 start.
type DescribeConstraintsV1 struct {
	OutputFormats  []string `json:"outputFormats"`
	MaxReportBytes int64    `json:"maxReportBytes"`
	AsOf           bool     `json:"asOf"`
}

// ForVersion is the describe value of contract version v: version 1 in
// the seed's shape, version 2 whole (service google.research.v2).
func (d *Describe) ForVersion(v int) any {
	if v == ContractVersion2 {
		d2 := *d
		d2.Service = ServiceIDV2
		return &d2
	}
	return &DescribeV1{Service: ServiceID, Provider: d.Provider, Managed: d.Managed, Kind: d.Kind, Agent: d.Agent, Enabled: d.Enabled,
		ProfileID: d.ProfileID, Unsupported: d.Unsupported, Problems: d.Problems, Contracts: d.Contracts,
		Constraints: d.Constraints.DescribeConstraintsV1}
}

// DescribeConstraints lists the constraints a start request may carry.
type DescribeConstraints struct {
	// Version 1's, first (outputFormats, maxReportBytes, asOf).
	DescribeConstraintsV1
	// Plan: collaborative planning (plan-proposed, approve, reject).
	Plan bool `json:"plan"`
	// FollowUp: a start may continue a completed job (followUp).
	FollowUp bool `json:"followUp"`
	// Inputs are the document and image inputs a start may carry.
	Inputs InputConstraints `json:"inputs"`
	// Tools are the tools a start may declare.
	Tools []string `json:"tools"`
	// Visualization are the values of visualization; Figures bound the
	// images saved with a report.
	Visualization []string          `json:"visualization"`
	Figures       FigureConstraints `json:"figures"`
	// MaxTokens is the largest token budget a start may set (maxTokens).
	MaxTokens int64 `json:"maxTokens"`
}

// InputConstraints bound a start's inputs.
type InputConstraints struct {
	MimeTypes     []string `json:"mimeTypes"`
	MaxFiles      int      `json:"maxFiles"`
	MaxFileBytes  int64    `json:"maxFileBytes"`
	MaxTotalBytes int64    `json:"maxTotalBytes"`
	// The inline limits: over them a file is uploaded through the Files
	// API (docs/research.md, "Files larger than the inline limits").
	MaxInlineFileBytes  int64 `json:"maxInlineFileBytes"`
	MaxInlineTotalBytes int64 `json:"maxInlineTotalBytes"`
	// PageTypes and SheetTypes are the MIME types a page range or a sheet
	// applies to.
	PageTypes  []string `json:"pageTypes"`
	SheetTypes []string `json:"sheetTypes"`
	// PageLayers and SheetLayers are the content layers a paginated
	// document and a spreadsheet may name; Resolutions the media
	// resolutions an input may be read at.
	PageLayers  []string `json:"pageLayers"`
	SheetLayers []string `json:"sheetLayers"`
	Resolutions []string `json:"resolutions"`
}

// FigureConstraints bound the figures saved beside a report.
type FigureConstraints struct {
	MimeTypes     []string `json:"mimeTypes"`
	MaxCount      int      `json:"maxCount"`
	MaxBytes      int64    `json:"maxBytes"`
	MaxTotalBytes int64    `json:"maxTotalBytes"`
}

// errAsOf is returned for start requests carrying asOf: the Interactions API
// has no as-of-date control, so honouring it silently would be a lie.
func errAsOf() error {
	return errs.Usage(CodeUnsupportedConstraint, "asOf is not supported by the managed Google research service (it has no as-of-date control)").
		WithHint("remove --as-of / \"asOf\"; state the date in the question if it matters")
}
