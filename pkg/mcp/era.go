package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Protocol eras (docs/mcp.md).
//
// MCP 2026-07-28 removed the initialize handshake: every request is
// stateless and names its protocol version and the client's capabilities
// (and, optionally, the client) in params._meta; a server answers
// server/discover with the versions it speaks, its capabilities and its
// identity, and refuses a version it does not speak with error -32022
// {supported, requested}. The legacy revisions open with initialize
// {protocolVersion, capabilities, clientInfo} and notifications/initialized,
// and a server may answer an older revision than the one asked for.
const (
	// ModernProtocolVersion is the stateless revision clawkit speaks.
	ModernProtocolVersion = "2026-07-28"
	// AutoProtocolVersion asks Start to negotiate (see Options.ProtocolVersion).
	AutoProtocolVersion = "auto"

	EraModern = "2026-07-28"
	EraLegacy = "legacy"

	// DefaultProbeTimeout bounds the server/discover probe of the auto mode,
	// counted from the moment the server has read the probe (so a server
	// that is slow to start is not taken for a legacy one).
	DefaultProbeTimeout = 3 * time.Second

	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"

	codeUnsupportedProtocolVersion = -32022
)

// LegacyProtocolVersions are the initialize-handshake revisions clawkit
// speaks, newest first.
var LegacyProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// IsModernVersion reports whether v is a stateless (2026-07-28 or later)
// revision. Revisions are dates, so they compare as strings.
func IsModernVersion(v string) bool { return v >= ModernProtocolVersion }

// Negotiated is the protocol a connection speaks.
type Negotiated struct {
	// Era is EraModern (stateless, server/discover) or EraLegacy
	// (initialize handshake).
	Era     string `json:"era"`
	Version string `json:"version"`
	// Probe says how the auto mode decided, empty for an explicit version:
	// "discover" (the server answered server/discover), "discover-error"
	// (it answered with an error), "discover-timeout" (no answer in time).
	Probe string `json:"probe,omitempty"`
	// SupportedVersions is what the server listed in server/discover.
	SupportedVersions []string `json:"supportedVersions,omitempty"`
}

// eraState is what a connection learns in its opening, whatever carries
// it (stdio or HTTP).
type eraState struct {
	initResult json.RawMessage
	serverInfo Implementation
	negotiated Negotiated
	// meta is the _meta member stateless requests carry; nil in the
	// legacy era. metaVersion is the version it names (the HTTP
	// transport's MCP-Protocol-Version header before the answer).
	meta        []byte
	metaVersion string
}

// Carrier is what the opening needs from a transport: a request with
// its own deadline and timeout error, a notification, and the auto mode's
// server/discover probe (answered is false when no answer came within the
// probe bound).
type Carrier struct {
	Do     func(ctx context.Context, id int64, method string, params json.RawMessage, timeout time.Duration, onTimeout func() *Error) (json.RawMessage, *Error)
	Notify func(method string, params json.RawMessage) error
	Probe  func(ctx context.Context, deadline time.Time) (res json.RawMessage, err *Error, answered bool)
}

// Handshake runs the opening of the connection for Opts.ProtocolVersion
// over t: exact for an explicit version, negotiated for "auto". On
// failure the caller retires the connection.
func (c *Core) Handshake(ctx context.Context, deadline time.Time, t Carrier) *Error {
	v := c.Opts.ProtocolVersion
	switch {
	case v == AutoProtocolVersion:
		e := c.discover(t, ctx, deadline, ModernProtocolVersion, true)
		if e == nil {
			return nil
		}
		if e.Code != CodeProbeDeclined {
			return e
		}
		return c.initialize(t, ctx, deadline, LegacyProtocolVersions[0], LegacyProtocolVersions)
	case IsModernVersion(v):
		return c.discover(t, ctx, deadline, v, false)
	default:
		return c.initialize(t, ctx, deadline, v, []string{v})
	}
}

// ResetEra forgets what a failed opening learned (before a transport
// runs the opening again).
func (c *Core) ResetEra() { c.era = eraState{} }

// MetaVersion is the version the stateless requests' _meta names ("" in
// the legacy era).
func (c *Core) MetaVersion() string { return c.era.metaVersion }

// HasMeta reports whether requests carry the stateless era's _meta.
func (c *Core) HasMeta() bool { return c.era.meta != nil }

// WithMeta adds the connection's _meta to params (an object, or none).
func (c *Core) WithMeta(params json.RawMessage) json.RawMessage { return c.era.withMeta(params) }

// initialize runs the legacy handshake asking for v and accepting any
// version in accept.
func (c *Core) initialize(t Carrier, ctx context.Context, deadline time.Time, v string, accept []string) *Error {
	st, o := &c.era, &c.Opts
	params, _ := json.Marshal(struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      Implementation  `json:"clientInfo"`
	}{v, o.Capabilities, o.ClientInfo})
	timeoutMsg := func() *Error {
		return Unavailable(errs.CodeInitializeTimeout, "initialize timed out after %dms", o.StartupTimeout.Milliseconds())
	}
	res, rerr := t.Do(ctx, c.TakeID(), "initialize", params, time.Until(deadline), timeoutMsg)
	if rerr != nil {
		if rerr.RPC != nil {
			// HTTPStatus stays: a 400 over HTTP is also the spec's sign of a
			// server without Streamable HTTP (the transport's fallback).
			return &Error{Class: ClassProtocol, Code: CodeHandshakeFailed, Message: "the server refused initialize: " + rerr.RPC.Message, RPC: rerr.RPC, HTTPStatus: rerr.HTTPStatus}
		}
		return rerr.WithDelivered(false) // initialize has no effect worth protecting
	}
	var ir struct {
		ProtocolVersion *string        `json:"protocolVersion"`
		ServerInfo      Implementation `json:"serverInfo"`
	}
	if err := json.Unmarshal(res, &ir); err != nil || ir.ProtocolVersion == nil {
		return ProtocolErr(CodeHandshakeFailed, "the server's initialize result has no protocolVersion")
	}
	if !slices.Contains(accept, *ir.ProtocolVersion) {
		if len(accept) == 1 {
			return ProtocolErr(CodeProtocolVersionMismatch, "server answered protocol version %q; requested %q", *ir.ProtocolVersion, v)
		}
		return ProtocolErr(CodeProtocolVersionMismatch, "server answered protocol version %q; clawkit speaks %s", *ir.ProtocolVersion, strings.Join(accept, ", "))
	}
	st.initResult, st.serverInfo = res, ir.ServerInfo
	st.negotiated.Era, st.negotiated.Version = EraLegacy, *ir.ProtocolVersion
	if err := t.Notify("notifications/initialized", nil); err != nil {
		var me *Error
		if errors.As(err, &me) { // Notify returns *Error only
			return me
		}
		return ProtocolErr(errs.CodeMalformedMessage, "%v", err)
	}
	return nil
}

// discover opens a stateless connection: server/discover with the _meta
// of version v; the server must list v. As the auto mode's probe, an
// error answer or no answer within the probe bound declines (the caller
// falls back to the legacy handshake) instead of failing.
func (c *Core) discover(t Carrier, ctx context.Context, deadline time.Time, v string, probe bool) *Error {
	st, o := &c.era, &c.Opts
	st.meta, st.metaVersion = BuildMeta(v, o.Capabilities, o.ClientInfo), v
	decline := func(how string) *Error {
		st.meta, st.metaVersion = nil, ""
		st.negotiated.Probe = how
		return &Error{Class: ClassUnavailable, Code: CodeProbeDeclined, Message: "server/discover: " + how}
	}
	timeoutMsg := func() *Error {
		return Unavailable(errs.CodeInitializeTimeout, "server/discover timed out after %dms", o.StartupTimeout.Milliseconds())
	}
	var res json.RawMessage
	var rerr *Error
	for attempt := 0; ; attempt++ {
		if probe {
			var answered bool
			res, rerr, answered = t.Probe(ctx, deadline)
			if !answered {
				return decline("discover-timeout")
			}
		} else {
			res, rerr = t.Do(ctx, c.TakeID(), "server/discover", st.withMeta(nil), time.Until(deadline), timeoutMsg)
		}
		// A -32022 that lists the very version asked for: the client
		// retries once with a version from the list (SEP-2575), which
		// for clawkit is that one.
		if attempt > 0 || rerr == nil || rerr.RPC == nil || rerr.RPC.Code != codeUnsupportedProtocolVersion || !slices.Contains(unsupportedList(rerr.RPC), v) {
			break
		}
	}
	if rerr != nil {
		if rerr.RPC == nil {
			return rerr.WithDelivered(false)
		}
		if rerr.RPC.Code == codeUnsupportedProtocolVersion {
			var d struct {
				Supported []string `json:"supported"`
			}
			_ = json.Unmarshal(rerr.RPC.Data, &d)
			if probe && !slices.Contains(d.Supported, ModernProtocolVersion) {
				return decline("discover-error")
			}
			return &Error{Class: ClassProtocol, Code: CodeProtocolVersionUnsupported, RPC: rerr.RPC,
				Message: "the server does not speak protocol version " + quote(v) + "; it speaks " + listOrUnknown(d.Supported)}
		}
		if probe {
			return decline("discover-error")
		}
		return &Error{Class: ClassProtocol, Code: CodeHandshakeFailed, RPC: rerr.RPC,
			Message: "the server refused server/discover (" + rerr.RPC.Message + "): it does not speak the stateless protocol " + quote(v)}
	}
	var dr struct {
		SupportedVersions []string `json:"supportedVersions"`
		Meta              map[string]json.RawMessage
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(res, &raw)
	_ = json.Unmarshal(res, &dr)
	_ = json.Unmarshal(raw["_meta"], &dr.Meta)
	if !slices.Contains(dr.SupportedVersions, v) {
		if probe {
			return decline("discover-error")
		}
		return ProtocolErr(CodeProtocolVersionMismatch, "the server speaks %s; requested %q", listOrUnknown(dr.SupportedVersions), v)
	}
	_ = json.Unmarshal(dr.Meta[metaServerInfo], &st.serverInfo)
	st.initResult = res
	st.negotiated = Negotiated{Era: EraModern, Version: v, SupportedVersions: dr.SupportedVersions}
	if probe {
		st.negotiated.Probe = "discover"
	}
	return nil
}

// unsupportedList is the "supported" list of a -32022 error's data.
func unsupportedList(rpc *RPCError) []string {
	var d struct {
		Supported []string `json:"supported"`
	}
	_ = json.Unmarshal(rpc.Data, &d)
	return d.Supported
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func listOrUnknown(vs []string) string {
	if len(vs) == 0 {
		return "no version it names"
	}
	return strings.Join(vs, ", ")
}

// BuildMeta is the _meta member every stateless request carries.
func BuildMeta(v string, caps json.RawMessage, info Implementation) []byte {
	var b bytes.Buffer
	b.WriteString(`"_meta":{"` + MetaProtocolVersion + `":`)
	b.WriteString(quote(v))
	b.WriteString(`,"` + metaClientCapabilities + `":`)
	var cb bytes.Buffer
	if json.Compact(&cb, caps) != nil || cb.Len() == 0 {
		cb.Reset()
		cb.WriteString("{}")
	}
	b.Write(cb.Bytes())
	if info.Name != "" {
		ib, _ := json.Marshal(info)
		b.WriteString(`,"` + metaClientInfo + `":`)
		b.Write(ib)
	}
	b.WriteString("}")
	return b.Bytes()
}

// withMeta adds the connection's _meta to params (an object, or none).
// Keys the caller already put in params._meta win over ours.
func (c *eraState) withMeta(params json.RawMessage) json.RawMessage {
	if c.meta == nil {
		return params
	}
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return append(append([]byte{'{'}, c.meta...), '}')
	}
	if p[0] != '{' {
		return params // an array cannot carry _meta; sent as given
	}
	if !bytes.Contains(p, []byte(`"_meta"`)) {
		rest := bytes.TrimSpace(p[1:])
		out := append([]byte{'{'}, c.meta...)
		if rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...)
	}
	// The caller sent _meta of its own: merge, its keys first.
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil {
		return params // invalid: writeRequest reports it
	}
	var theirs, ours map[string]json.RawMessage
	_ = json.Unmarshal(obj["_meta"], &theirs)
	_ = json.Unmarshal(append(append([]byte{'{'}, c.meta...), '}'), &struct {
		M *map[string]json.RawMessage `json:"_meta"`
	}{&ours})
	for k, v := range theirs {
		ours[k] = v
	}
	obj["_meta"], _ = json.Marshal(ours)
	b, _ := json.Marshal(obj)
	return b
}

// DiscoverOutcome reads a whole answer line to server/discover for
// version v, as the clients' opening does (the proxy's own probe, which
// reads the line itself).
func DiscoverOutcome(line []byte, v string, probe bool) (Implementation, Negotiated, *Error, bool) {
	var none Implementation
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	_ = json.Unmarshal(line, &m)
	if m.Error != nil {
		var d struct {
			Supported []string `json:"supported"`
		}
		_ = json.Unmarshal(m.Error.Data, &d)
		switch {
		case probe:
			return none, Negotiated{Era: EraLegacy, Probe: "discover-error", SupportedVersions: d.Supported}, nil, true
		case m.Error.Code == codeUnsupportedProtocolVersion:
			return none, Negotiated{}, &Error{Class: ClassProtocol, Code: CodeProtocolVersionUnsupported, RPC: m.Error,
				Message: "the server does not speak protocol version " + quote(v) + "; it speaks " + listOrUnknown(d.Supported)}, true
		default:
			return none, Negotiated{}, &Error{Class: ClassProtocol, Code: CodeHandshakeFailed, RPC: m.Error,
				Message: "the server refused server/discover (" + m.Error.Message + "): it does not speak the stateless protocol " + quote(v)}, true
		}
	}
	var dr struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m.Result, &dr)
	if !slices.Contains(dr.SupportedVersions, v) {
		if probe {
			return none, Negotiated{Era: EraLegacy, Probe: "discover-error", SupportedVersions: dr.SupportedVersions}, nil, true
		}
		return none, Negotiated{}, ProtocolErr(CodeProtocolVersionMismatch, "the server speaks %s; requested %q", listOrUnknown(dr.SupportedVersions), v), true
	}
	var info Implementation
	_ = json.Unmarshal(dr.Meta[metaServerInfo], &info)
	n := Negotiated{Era: EraModern, Version: v, SupportedVersions: dr.SupportedVersions}
	if probe {
		n.Probe = "discover"
	}
	return info, n, nil, true
}
