package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcphttp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// MCPCmd is `clawkit mcp …` (docs/mcp.md).
type MCPCmd struct {
	Call    MCPCallCmd    `cmd:"" help:"Start a server, send one request, print its result, stop the server's whole process tree."`
	Session MCPSessionCmd `cmd:"" help:"Send JSON lines of {method,params} from stdin over one connection; print one result line each."`
	Proxy   MCPProxyCmd   `cmd:"" help:"Relay stdio between an MCP client and a server (-- CMD…) or a service socket (--connect unix:PATH)."`
	Login   MCPLoginCmd   `cmd:"" help:"Log in to a remote MCP server with OAuth (browser, pasted redirect, or client credentials); tokens go to an oauth auth profile."`
	Logout  MCPLogoutCmd  `cmd:"" help:"Remove the OAuth profile of a remote MCP server."`
}

// MCPServerFlags are the limits and environment of a spawned server.
type MCPServerFlags struct {
	Env             []string      `help:"Set NAME=VALUE in the server's environment (repeatable). Nothing else is inherited." placeholder:"NAME=VALUE" sep:"none"`
	EnvPass         []string      `help:"Pass clawkit's own NAME to the server (repeatable)." placeholder:"NAME" sep:"none"`
	StopGrace       time.Duration `help:"On stop: wait this long after EOF before SIGTERM, and again before SIGKILL of the process group." default:"2s"`
	MaxFrameBytes   int           `help:"Largest message in either direction, its newline included (default 16777216 = 16 MiB)." default:"16777216" placeholder:"BYTES"`
	ProtocolVersion string        `help:"MCP protocol version: auto (probe server/discover for 2026-07-28, else the legacy handshake accepting 2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05), or one exact version the server must speak." default:"auto"`
	ProbeTimeout    time.Duration `help:"With --protocol-version auto: how long to wait for an answer to server/discover once the server has read it, before the legacy handshake." default:"3s"`
	StartupTimeout  time.Duration `help:"Budget for spawn plus the initialize handshake." default:"10s"`
	RequestTimeout  time.Duration `help:"Per-request timeout; when it fires the whole connection is retired." default:"60s"`
	MaxPending      int           `help:"Most requests in flight at once; more are rejected." default:"64"`
	Notifications   bool          `help:"Print server notifications (progress, logging) on stderr."`
	Dir             string        `help:"Working directory of the server (default: clawkit's)." placeholder:"DIR" type:"existingdir"`
	ServerStderr    bool          `help:"Copy the server's stderr to ours as it is written (its last 32 KiB are always kept for error messages)."`
	MCPRequestFlags
	MCPHTTPFlags
}

// MCPRequestFlags say how the server's own requests are answered, with
// no user at hand (docs/mcp.md, "Server requests").
type MCPRequestFlags struct {
	Elicitation        string   `help:"Answer a server's elicitation/create without asking anyone: decline (the default), defaults (accept with every field's schema default; decline when a field has none) or answers (each field from --elicitation-answers, else its default)." placeholder:"POLICY"`
	ElicitationAnswers string   `help:"A JSON file of field names and values to accept elicitations with (implies --elicitation answers)." placeholder:"FILE"`
	Root               []string `help:"A directory to answer roots/list with, as a file:// URI (repeatable; none: an empty list)." placeholder:"DIR" sep:"none"`
	MaxInputRounds     int      `help:"Most retries of one request that the server answers with input_required (2026-07-28); then the request fails." default:"8" placeholder:"N"`
}

// requests builds the policy; notes go to stderr.
func (f *MCPRequestFlags) requests(out *Output) (mcp.ServerRequests, error) {
	var r mcp.ServerRequests
	if err := positive("--max-input-rounds", int64(f.MaxInputRounds)); err != nil {
		return r, err
	}
	r.MaxInputRounds = f.MaxInputRounds
	switch f.Elicitation {
	case "", mcp.ElicitDecline, mcp.ElicitDefaults, mcp.ElicitAnswers:
	default:
		return r, errs.Usage(CodeUsage, "--elicitation %q: expected decline, defaults or answers", f.Elicitation).
			WithHint("decline answers no; defaults accepts with the schema's defaults; answers takes values from --elicitation-answers FILE")
	}
	r.Elicitation = f.Elicitation
	switch {
	case f.ElicitationAnswers != "" && f.Elicitation != "" && f.Elicitation != mcp.ElicitAnswers:
		return r, errs.Usage(CodeUsage, "--elicitation-answers goes with --elicitation answers, not %s", f.Elicitation).
			WithHint("drop --elicitation (the file implies answers); fields missing from the file take their schema default")
	case f.ElicitationAnswers != "":
		a, err := mcp.LoadElicitationAnswers(f.ElicitationAnswers)
		if err != nil {
			return r, err
		}
		r.Elicitation, r.Answers = mcp.ElicitAnswers, a
	case f.Elicitation == mcp.ElicitAnswers:
		return r, errs.Usage(CodeUsage, "--elicitation answers needs --elicitation-answers FILE").
			WithHint(`give a JSON file of field names and values, e.g. {"name":"Ada","confirmed":true}`)
	case f.Elicitation == "":
		r.Elicitation = mcp.ElicitDecline
	}
	roots, err := mcp.RootsFromDirs(f.Root)
	if err != nil {
		return r, err
	}
	r.Roots = roots
	r.OnRequest = func(n mcp.ServerRequestNote) {
		what := "server request"
		if n.Via == "input_required" {
			what = "input request"
		}
		line := what + ": " + n.Method
		if n.Message != "" {
			line += " " + strconv.Quote(n.Message)
		}
		line += ": " + n.Outcome
		if n.Reason != "" {
			line += " (" + n.Reason + ")"
		}
		out.Warnf("%s", line) // escaped there: the message and names are the server's
	}
	return r, nil
}

// MCPHTTPFlags connect call and session to a remote server (docs/mcp.md,
// "Over HTTP").
type MCPHTTPFlags struct {
	URL              string        `name:"url" help:"Connect to a remote server over HTTP instead of starting one (Streamable HTTP, or the legacy HTTP+SSE transport)." placeholder:"URL"`
	Transport        string        `help:"With --url: auto (Streamable HTTP, else the legacy HTTP+SSE after the spec's probe), streamable, or sse." default:"auto" enum:"auto,streamable,sse"`
	Header           []string      `help:"With --url: send header NAME with the value of auth profile PROFILE (kind header, or bearer: 'Bearer TOKEN'); repeatable. Values are never taken from the command line." placeholder:"NAME=@PROFILE" sep:"none"`
	OAuth            string        `name:"oauth" help:"With --url: send the token of this OAuth profile (default: the profile 'mcp login' stored for the URL, if any)." placeholder:"PROFILE"`
	ConnectTimeout   time.Duration `help:"With --url: bound of a connection's TCP and TLS setup." default:"10s"`
	HeaderTimeout    time.Duration `help:"With --url: how long to wait for a response's headers." default:"60s"`
	IdleTimeout      time.Duration `help:"With --url: longest silence of a response stream." default:"60s"`
	MaxResponseBytes int64         `help:"With --url: most bytes the server may send over the whole connection (default 1073741824 = 1 GiB)." default:"1073741824" placeholder:"BYTES"`
	MaxLineBytes     int           `help:"With --url: longest SSE line (default: --max-frame-bytes + 64)." placeholder:"BYTES"`
}

// httpOptions builds the HTTP side of the options; nil without --url.
func (f *MCPServerFlags) httpOptions(env *Env, command []string) (*mcphttp.Options, error) {
	h := f.MCPHTTPFlags
	if h.URL == "" {
		if len(h.Header) > 0 || h.Transport != "auto" {
			return nil, errs.Usage(CodeUsage, "--header and --transport apply to --url only")
		}
		if h.OAuth != "" {
			return nil, errs.Usage(CodeUsage, "--oauth applies to --url only")
		}
		return nil, nil
	}
	if len(command) > 0 || len(f.Env) > 0 || len(f.EnvPass) > 0 || f.Dir != "" || f.ServerStderr {
		return nil, errs.Usage(CodeUsage, "--url connects to a running server: a server command, --env, --env-pass, --dir and --server-stderr do not apply").
			WithHint("use either --url URL or -- CMD…")
	}
	if _, err := mcphttp.ParseURL(h.URL); err != nil {
		return nil, mcp.Coded(err)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"--connect-timeout", int64(h.ConnectTimeout)}, {"--header-timeout", int64(h.HeaderTimeout)}, {"--idle-timeout", int64(h.IdleTimeout)}, {"--max-response-bytes", h.MaxResponseBytes}} {
		if err := positive(c.name, c.v); err != nil {
			return nil, err
		}
	}
	if h.MaxLineBytes < 0 {
		return nil, errs.Usage(CodeUsage, "--max-line-bytes must be positive")
	}
	o := &mcphttp.Options{URL: h.URL, Transport: h.Transport, ConnectTimeout: h.ConnectTimeout,
		HeaderTimeout: h.HeaderTimeout, IdleTimeout: h.IdleTimeout, MaxResponseBytes: h.MaxResponseBytes,
		MaxLineBytes: h.MaxLineBytes, Header: http.Header{}}
	home, err := env.HomeDir()
	if err != nil {
		return nil, err
	}
	ownAuthorization := false
	for _, spec := range h.Header {
		if name, _, err := mcphttp.ParseHeaderSpec(spec); err == nil && strings.EqualFold(name, "Authorization") {
			ownAuthorization = true
		}
	}
	if a, err := oauthAuthorizer(env, home.Dir, h.URL, h.OAuth, ownAuthorization); err != nil {
		return nil, err
	} else if a != nil {
		o.Auth = a
	}
	if len(h.Header) == 0 {
		return o, nil
	}
	store, err := auth.Load(home.Dir)
	if err != nil {
		return nil, err
	}
	for _, spec := range h.Header {
		name, id, err := mcphttp.ParseHeaderSpec(spec)
		if err != nil {
			return nil, mcp.Coded(err)
		}
		v, err := store.Header(id)
		if err != nil {
			return nil, err
		}
		o.Header.Add(name, v)
	}
	return o, nil
}

// mcpTarget is what call and session connect to: the options common to
// both transports and the transport's dialer (a server to start, or a
// URL).
type mcpTarget struct {
	opts mcp.Options
	dial mcp.Dialer
	url  string // with --url
}

func (f *MCPServerFlags) options(env *Env, command []string, out *Output) (mcpTarget, error) {
	var o mcpTarget
	command = serverCommand(command)
	hopts, err := f.httpOptions(env, command)
	if err != nil {
		return o, err
	}
	if hopts != nil {
		command = []string{"(http)"}
	}
	if len(command) == 0 || command[0] == "" {
		return o, errs.Usage(CodeUsage, "no server command given").WithHint("put the server command after --, e.g. clawkit mcp call --method tools/list -- node server.js")
	}
	if err := positive("--max-frame-bytes", int64(f.MaxFrameBytes)); err != nil {
		return o, err
	}
	if f.MaxFrameBytes < 2 {
		return o, errs.Usage(errs.CodeInvalidLimit, "--max-frame-bytes must be at least 2").WithHint("the limit counts the message and its newline")
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"--max-pending", int64(f.MaxPending)}, {"--startup-timeout", int64(f.StartupTimeout)}, {"--request-timeout", int64(f.RequestTimeout)}, {"--stop-grace", int64(f.StopGrace)}, {"--probe-timeout", int64(f.ProbeTimeout)}} {
		if err := positive(c.name, c.v); err != nil {
			return o, err
		}
	}
	if f.ProtocolVersion == "" {
		return o, errs.Usage(CodeUsage, "--protocol-version must not be empty")
	}
	senv, err := mcp.BuildEnv(f.Env, f.EnvPass, os.LookupEnv)
	if err != nil {
		return o, err
	}
	reqs, err := f.requests(out)
	if err != nil {
		return o, err
	}
	o.opts = mcp.Options{
		Requests:           reqs,
		ClientInfo:         mcp.Implementation{Name: "clawkit", Version: ReadBuildInfo().Version},
		ProtocolVersion:    f.ProtocolVersion,
		ProbeTimeout:       f.ProbeTimeout,
		StartupTimeout:     f.StartupTimeout,
		RequestTimeout:     f.RequestTimeout,
		MaxPendingRequests: f.MaxPending,
		MaxFrameBytes:      f.MaxFrameBytes,
	}
	if hopts != nil {
		hopts.Warn = func(msg string) { out.Warnf("%s", msg) }
		o.dial, o.url = mcphttp.Dialer(*hopts), hopts.URL
	} else {
		spec := mcpstdio.ProcessSpec{
			Command: command[0], Args: command[1:], Env: senv, Dir: f.Dir,
			EOFGrace: f.StopGrace, TermGrace: f.StopGrace,
			// clawkit runs nothing but this one server: it may own every
			// orphan of the server's tree (setsid descendants included).
			Subreaper: true,
		}
		if f.ServerStderr {
			spec.StderrTee = out.Stderr
		}
		o.dial = mcpstdio.Dialer(spec)
	}
	if f.Notifications {
		o.opts.OnNotification = func(method string, params json.RawMessage) {
			// Both come from the server: the method is escaped like any
			// text from outside, the params stay JSON (docs/mcp.md).
			// Diagnostics, best effort.
			_, _ = fmt.Fprintf(out.Stderr, "clawkit: notification: %s %s\n", termsafe.Text(method), safeJSON(params))
		}
	}
	return o, nil
}

// serverCommand drops the "--" that kong's passthrough keeps.
func serverCommand(args []string) []string {
	if len(args) > 0 && args[0] == "--" {
		return args[1:]
	}
	return args
}

func positive(name string, v int64) error {
	if v <= 0 {
		return errs.Usage(CodeUsage, "%s must be positive", name)
	}
	return nil
}

func warnCleanup(out *Output, cr *mcp.CleanupResult) {
	if cr != nil && cr.Session != nil && cr.Session.Deleted {
		return // an HTTP session the server confirmed ended: an ordinary close
	}
	if cr != nil {
		out.Warnf("%s", mcp.FormatCleanup(cr))
	}
}

// MCPCallCmd is `clawkit mcp call`.
type MCPCallCmd struct {
	MCPServerFlags
	Method  string   `help:"JSON-RPC method to call (e.g. tools/list, tools/call)." required:""`
	Params  string   `help:"Params as a JSON object or array." placeholder:"JSON"`
	Command []string `arg:"" optional:"" passthrough:"" name:"command" help:"Server command and arguments (after --); none with --url."`
}

// Run runs `clawkit mcp call`.
func (c *MCPCallCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	t, err := c.options(env, c.Command, out)
	if err != nil {
		return err
	}
	var params json.RawMessage
	if c.Params != "" {
		if !json.Valid([]byte(c.Params)) {
			return errs.Usage(errs.CodeInvalidParams, "--params is not valid JSON").WithHint(`give a JSON object, e.g. --params '{"name":"echo","arguments":{"message":"hi"}}'`)
		}
		if b := firstNonSpace(c.Params); b != '{' && b != '[' {
			return errs.Usage(errs.CodeInvalidParams, "--params must be a JSON object or array")
		}
		params = json.RawMessage(c.Params)
	}
	rep, err := mcp.Call(ctx, t.dial, t.opts, c.Method, params)
	if rep != nil && !out.JSON {
		warnCleanup(out, rep.CleanupResult)
	}
	if err != nil {
		if rep != nil && rep.Result != nil && !out.JSON {
			printIndented(&Printer{w: out.Stdout}, rep.Result) // the call's error, returned below, is what counts
		}
		if rep != nil {
			return mcpJSONFailure(out, err, rep.Result, rep.CleanupResult)
		}
		return err
	}
	doc := struct {
		OK bool `json:"ok"`
		*mcp.CallReport
	}{true, rep}
	return out.Result(doc, func(w *Printer) { printIndented(w, rep.Result) })
}

// mcpJSONFailure prints, with --json, a failed call's one document: the
// error's fields plus the cleanupResult (and a result that arrived before
// the cleanup failed), which stderr shows without --json. It returns the
// error marked as reported; without --json, or with nothing to add, err.
func mcpJSONFailure(out *Output, err error, result json.RawMessage, cr *mcp.CleanupResult) error {
	if !out.JSON || (cr == nil && result == nil) {
		return err
	}
	doc := struct {
		jsonError
		Result        json.RawMessage    `json:"result,omitempty"`
		CleanupResult *mcp.CleanupResult `json:"cleanupResult,omitempty"`
	}{jsonErrorOf(err), result, cr}
	_ = out.PrintJSON(doc)
	return &reportedError{err}
}

func firstNonSpace(s string) byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return s[i]
	}
	return 0
}

func printIndented(w *Printer, raw json.RawMessage) {
	// json.Indent keeps the server's key order.
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		fmt.Fprintf(w, "%s\n", safeJSON(raw))
		return
	}
	fmt.Fprintf(w, "%s\n", safeJSON(b.Bytes()))
}

// safeJSON makes a server's JSON safe for a terminal and keeps it JSON:
// a valid message holds no raw control byte, but its strings may hold
// C1 controls (U+009B is a CSI), bidirectional overrides and other
// invisible formatting runes as UTF-8; each becomes its \uXXXX escape
// (the same string to a JSON reader). Invalid UTF-8 becomes \ufffd.
func safeJSON(b []byte) []byte {
	if termsafe.Safe(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, string(b))) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == '\n' || r == '\t' || r == ' ':
			out = append(out, b[i])
		case r == utf8.RuneError && n == 1, !termsafe.Safe(string(r)):
			if r == utf8.RuneError && n == 1 {
				r = utf8.RuneError
			}
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// MCPSessionCmd is `clawkit mcp session`.
type MCPSessionCmd struct {
	MCPServerFlags
	Command []string `arg:"" optional:"" passthrough:"" name:"command" help:"Server command and arguments (after --); none with --url."`
}

// Run runs `clawkit mcp session`.
func (c *MCPSessionCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	t, err := c.options(env, c.Command, out)
	if err != nil {
		return err
	}
	// The first diagnostic line says whom we talk to, and how.
	t.opts.OnConnected = func(s mcp.Implementation, n mcp.Negotiated) {
		line := connectedLine(s, n)
		if t.url != "" {
			line += " over HTTP at " + redact.URL(t.url)
		}
		out.Warnf("%s", line)
	}
	var results []mcp.SessionResult
	emit := func(r mcp.SessionResult) error {
		if out.JSON {
			results = append(results, r)
			return nil
		}
		var b bytes.Buffer
		_ = writeJSON(&b, r, "", "")
		if _, err := out.Stdout.Write(safeJSON(b.Bytes())); err != nil {
			return errs.Failed(CodeStdoutFailed, "cannot write the result: %v", err)
		}
		return nil
	}
	rep, err := mcp.Session(ctx, t.dial, t.opts, env.Stdin, emit)
	if rep != nil && !out.JSON {
		warnCleanup(out, rep.CleanupResult)
	}
	if results == nil {
		results = []mcp.SessionResult{}
	}
	if err != nil {
		if rep != nil && out.JSON {
			// The lines that were answered are part of the failure's
			// document: a script keeps every result it got.
			_ = out.PrintJSON(struct {
				jsonError
				Results []mcp.SessionResult `json:"results"`
				*mcp.SessionReport
			}{jsonErrorOf(err), results, rep})
			return &reportedError{err}
		}
		return err
	}
	return out.Result(struct {
		OK      bool                `json:"ok"`
		Results []mcp.SessionResult `json:"results"`
		*mcp.SessionReport
	}{true, results, rep}, nil)
}

// connectedLine describes the server and the negotiated protocol.
func connectedLine(s mcp.Implementation, n mcp.Negotiated) string {
	who := s.Name
	if who == "" {
		who = "the server"
	}
	if s.Version != "" {
		who += " " + s.Version
	}
	how := "legacy initialize handshake"
	if n.Era == mcp.EraModern {
		how = "stateless, server/discover"
	}
	if n.Probe != "" {
		how += ", auto: " + n.Probe
	}
	return fmt.Sprintf("connected to %s: protocol %s (%s)", who, n.Version, how)
}

// MCPProxyCmd is `clawkit mcp proxy`.
type MCPProxyCmd struct {
	Env           []string      `help:"Set NAME=VALUE in the server's environment (repeatable). Nothing else is inherited." placeholder:"NAME=VALUE" sep:"none"`
	EnvPass       []string      `help:"Pass clawkit's own NAME to the server (repeatable)." placeholder:"NAME" sep:"none"`
	StopGrace     time.Duration `help:"On stop: wait this long after EOF before SIGTERM, and again before SIGKILL of the process group." default:"2s"`
	MaxFrameBytes int           `help:"Largest message in either direction, its newline included (default 16777216 = 16 MiB)." default:"16777216" placeholder:"BYTES"`
	MaxPending    int           `help:"Most requests of a 2026-07-28 client in flight through the relay; one more is answered with an error, not forwarded (legacy traffic is relayed as is)." default:"64"`
	Dir           string        `help:"Working directory of the server (default: clawkit's)." placeholder:"DIR" type:"existingdir"`
	Connect       string        `help:"Relay to a service already listening on this socket instead of starting a server; it is never stopped." placeholder:"unix:PATH"`
	// The proxy's own probe (docs/mcp.md "Protocol eras").
	ProtocolVersion string        `help:"auto: ask the server server/discover before relaying and report the era it speaks (2026-07-28, or legacy); a 2026-07-28-era version: the server must list it, else fail before relaying; a legacy version: no probe, the client's initialize negotiates." default:"auto"`
	ProbeTimeout    time.Duration `help:"With --protocol-version auto: how long to wait for the answer to server/discover once the server has read it; then relay as legacy." default:"3s"`
	StartupTimeout  time.Duration `help:"Bound of the whole probe, spawn included (auto: then relay as legacy)." default:"10s"`
	MCPListenFlags
	Command []string `arg:"" optional:"" passthrough:"" name:"command" help:"Server command and arguments (after --)."`
}

// MCPListenFlags serve the server over HTTP (docs/mcp.md, "mcp proxy
// --listen").
type MCPListenFlags struct {
	Listen         string        `help:"Serve the server over Streamable HTTP on this address (e.g. 127.0.0.1:8080; port 0: any free port), one server process tree per MCP session." placeholder:"HOST:PORT"`
	NoAuth         bool          `name:"no-auth" help:"With --listen on a loopback address only: serve without the bearer token."`
	AllowOrigin    []string      `help:"With --listen: also accept requests whose Origin is this (repeatable); the proxy's own loopback origins are always accepted, any other is refused." placeholder:"ORIGIN" sep:"none"`
	MaxSessions    int           `help:"With --listen: most MCP sessions (server processes) at once; one more closes the longest-idle session (never one with a request in flight), or is refused with 503 when all are busy." default:"16"`
	IdleTimeout    time.Duration `help:"With --listen: end a session with no request in flight and none new for this long (an open GET stream does not keep it)." default:"10m"`
	RequestTimeout time.Duration `help:"With --listen: longest wait for the server's answer to one request; then the client gets a timeout error (-32001)." default:"60s"`
	MaxBodyBytes   int64         `help:"With --listen: largest request body (default: --max-frame-bytes)." placeholder:"BYTES"`
	MaxHeaderBytes int           `help:"With --listen: largest request header block." default:"16384" placeholder:"BYTES"`
	Rate           float64       `help:"With --listen: requests per second a session may make (a token bucket of --burst); more get 429." default:"100"`
	Burst          int           `help:"With --listen: the rate limit's burst." default:"200"`
	SSE            bool          `name:"sse" help:"With --listen: also serve the legacy HTTP+SSE transport of 2024-11-05 (GET /sse, POST /message)."`
	ReadyFile      string        `help:"With --listen: once listening, write 'URL TOKENFILE' to this file (TOKENFILE - with --no-auth; with --sse a third field, the legacy stream's URL), for scripts." placeholder:"PATH"`
}

// Run runs `clawkit mcp proxy`.
func (c *MCPProxyCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	if c.MaxFrameBytes < 2 {
		return errs.Usage(errs.CodeInvalidLimit, "--max-frame-bytes must be at least 2").WithHint("the limit counts the message and its newline")
	}
	if c.StopGrace <= 0 {
		return errs.Usage(CodeUsage, "--stop-grace must be positive")
	}
	for _, p := range []struct {
		name string
		v    int64
	}{{"--max-pending", int64(c.MaxPending)}, {"--probe-timeout", int64(c.ProbeTimeout)}, {"--startup-timeout", int64(c.StartupTimeout)}} {
		if err := positive(p.name, p.v); err != nil {
			return err
		}
	}
	if c.ProtocolVersion == "" {
		return errs.Usage(CodeUsage, "--protocol-version must not be empty")
	}
	c.Command = serverCommand(c.Command)
	if c.Listen != "" {
		return c.runListen(ctx, env, out)
	}
	if c.NoAuth || len(c.AllowOrigin) > 0 || c.SSE || c.ReadyFile != "" {
		return errs.Usage(CodeUsage, "--no-auth, --allow-origin, --sse and --ready-file apply to --listen only")
	}
	if c.Connect != "" {
		if len(c.Command) > 0 || len(c.Env) > 0 || len(c.EnvPass) > 0 || c.Dir != "" {
			return errs.Usage(CodeUsage, "--connect relays to a running service: a server command, --env, --env-pass and --dir do not apply").
				WithHint("use either --connect unix:PATH or -- CMD…")
		}
		path, err := mcpstdio.ParseConnect(c.Connect)
		if err != nil {
			return err
		}
		return mcpstdio.RunConnect(ctx, path, c.MaxFrameBytes, env.Stdin, out.Stdout)
	}
	if len(c.Command) == 0 || c.Command[0] == "" {
		return errs.Usage(CodeUsage, "no server command given").WithHint("use clawkit mcp proxy -- CMD… or --connect unix:PATH")
	}
	menv, err := mcp.BuildEnv(c.Env, c.EnvPass, os.LookupEnv)
	if err != nil {
		return err
	}
	spec := mcpstdio.ProcessSpec{
		Command: c.Command[0], Args: c.Command[1:], Env: menv, Dir: c.Dir,
		StderrTee: out.Stderr, Subreaper: true,
		EOFGrace: c.StopGrace, TermGrace: c.StopGrace,
	}
	po := mcpstdio.ProxyOptions{
		MaxFrame: c.MaxFrameBytes, MaxPending: c.MaxPending,
		ProtocolVersion: c.ProtocolVersion, ProbeTimeout: c.ProbeTimeout, StartupTimeout: c.StartupTimeout,
		ClientInfo: mcp.Implementation{Name: "clawkit-proxy", Version: ReadBuildInfo().Version},
		// stdout is the relay: the outcome goes to stderr, as one JSON
		// line with --json.
		OnConnected: func(s mcp.Implementation, n mcp.Negotiated) {
			if out.JSON {
				b, _ := json.Marshal(struct {
					Event    string              `json:"event"`
					Server   *mcp.Implementation `json:"server,omitempty"`
					Protocol mcp.Negotiated      `json:"protocol"`
				}{"proxy_connected", nonEmptyImpl(s), n})
				_, _ = fmt.Fprintf(out.Stderr, "%s\n", b) // diagnostics, best effort
				return
			}
			out.Warnf("proxy: %s", proxyConnectedLine(s, n))
		},
	}
	rep, err := mcpstdio.RunProxy(ctx, spec, po, env.Stdin, out.Stdout)
	if rep != nil {
		warnCleanup(out, rep.CleanupResult)
	}
	return err
}

func nonEmptyImpl(s mcp.Implementation) *mcp.Implementation {
	if s == (mcp.Implementation{}) {
		return nil
	}
	return &s
}

// proxyConnectedLine says what the proxy's probe found. For the legacy
// era it names no revision: the client's own initialize picks it.
func proxyConnectedLine(s mcp.Implementation, n mcp.Negotiated) string {
	if n.Era == mcp.EraModern {
		return connectedLine(s, n) + "; relaying the 2026-07-28 era"
	}
	how := "legacy era"
	switch {
	case n.Probe != "":
		how += " (auto: " + n.Probe + ")"
	case n.Version != "":
		how += " (--protocol-version " + n.Version + ", not probed)"
	}
	return how + "; relaying as is, the client's initialize negotiates the revision"
}

// runListen is mcp proxy --listen: the server behind an HTTP front.
func (c *MCPProxyCmd) runListen(ctx context.Context, env *Env, out *Output) error {
	if c.Connect != "" {
		return errs.Usage(CodeUsage, "--listen starts a server per session: --connect does not apply").WithHint("use --listen ADDR -- CMD…")
	}
	if len(c.Command) == 0 || c.Command[0] == "" {
		return errs.Usage(CodeUsage, "no server command given").WithHint("use clawkit mcp proxy --listen 127.0.0.1:8080 -- CMD…")
	}
	if err := mcphttp.CheckListen(c.Listen, c.NoAuth); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		v    int64
	}{{"--max-sessions", int64(c.MaxSessions)}, {"--idle-timeout", int64(c.IdleTimeout)}, {"--request-timeout", int64(c.RequestTimeout)}, {"--max-header-bytes", int64(c.MaxHeaderBytes)}, {"--burst", int64(c.Burst)}} {
		if err := positive(p.name, p.v); err != nil {
			return err
		}
	}
	if c.Rate <= 0 || c.MaxBodyBytes < 0 {
		return errs.Usage(CodeUsage, "--rate and --max-body-bytes must be positive")
	}
	menv, err := mcp.BuildEnv(c.Env, c.EnvPass, os.LookupEnv)
	if err != nil {
		return err
	}
	o := mcphttp.ListenOptions{
		Addr: c.Listen, NoAuth: c.NoAuth, AllowOrigins: c.AllowOrigin, MaxSessions: c.MaxSessions,
		IdleTimeout: c.IdleTimeout, MaxBodyBytes: c.MaxBodyBytes, MaxHeaderBytes: c.MaxHeaderBytes,
		RatePerSecond: c.Rate, RateBurst: c.Burst, MaxFrame: c.MaxFrameBytes, MaxPending: c.MaxPending,
		RequestTimeout: c.RequestTimeout, LegacySSE: c.SSE,
		OnEvent: func(format string, args ...any) { out.Warnf("proxy: "+format, args...) },
	}
	var tokenFile string
	var listenErr error
	if !c.NoAuth {
		o.Token = mcphttp.NewToken()
	}
	o.OnListening = func(url string) {
		if !c.NoAuth {
			h, err := env.HomeDir()
			if err == nil {
				err = h.Ensure()
			}
			if err == nil {
				tokenFile, err = mcphttp.WriteTokenFile(h.Dir, url, o.Token)
			}
			if err != nil {
				// No token file, no service: the run ends here (below),
				// and nothing says that no token is needed.
				listenErr = err
				return
			}
		}
		switch {
		case out.JSON:
			b, _ := json.Marshal(struct {
				Event     string `json:"event"`
				URL       string `json:"url"`
				TokenFile string `json:"tokenFile,omitempty"`
			}{"proxy_listening", url, tokenFile})
			// Best effort: the proxy serves whether or not this line
			// reaches stdout (as the gateway's serving line).
			_, _ = fmt.Fprintf(out.Stdout, "%s\n", b)
		case tokenFile != "":
			out.Warnf("proxy: listening on %s; the bearer token is in %s", url, tokenFile)
		default:
			out.Warnf("proxy: listening on %s without authentication (--no-auth, loopback only)", url)
		}
		if c.ReadyFile != "" {
			// URL, the token file ("-" without one), and with --sse the
			// legacy stream's URL.
			line := url + " " + cmp.Or(tokenFile, "-")
			if c.SSE {
				line += " " + strings.TrimSuffix(url, "/mcp") + "/sse"
			}
			_ = fsx.WriteFile(c.ReadyFile, []byte(line+"\n"), 0o644)
		}
	}
	spec := mcpstdio.ProcessSpec{
		Command: c.Command[0], Args: c.Command[1:], Env: menv, Dir: c.Dir,
		StderrTee: out.Stderr, Subreaper: true,
		EOFGrace: c.StopGrace, TermGrace: c.StopGrace,
	}
	// A failure to publish the token ends the run before any session.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inner := o.OnListening
	o.OnListening = func(url string) {
		inner(url)
		if listenErr != nil {
			cancel()
		}
	}
	rep, err := mcphttp.ServeHTTP(lctx, spec, o)
	if tokenFile != "" {
		// The token is good for this run only.
		_ = os.Remove(tokenFile)
	}
	if listenErr != nil {
		return listenErr
	}
	if err != nil {
		return mcp.Coded(err)
	}
	if out.JSON {
		b, _ := json.Marshal(struct {
			Event string `json:"event"`
			*mcphttp.ListenReport
		}{"proxy_stopped", rep})
		if _, err := fmt.Fprintf(out.Stdout, "%s\n", b); err != nil {
			return errs.Failed(errs.CodeWriteFailed, "cannot write the proxy's last event: %v", err)
		}
	} else {
		out.Warnf("proxy: stopped after %d sessions (%d refused at --max-sessions); every server process is gone", rep.Sessions, rep.Refused)
	}
	return nil
}
