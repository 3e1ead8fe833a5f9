package mcpstdio

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"

	"github.com/clawkit/clawkit/pkg/mcp"
)

// The proxy's own probe (docs/mcp.md "Protocol eras"). Before it relays
// anything from the client, a proxy in auto mode asks the server
// server/discover itself, with an id no client uses, and swallows the
// answer; so it knows the era the server speaks before the first client
// message reaches it, and says so on stderr. A 2026-07-28 server is then
// relayed with the pending bound of 2026-07-28 requests; any other outcome is
// the legacy relay, unchanged. The probe is bounded like the client's:
// ProbeTimeout from the moment the server has read it, and never past
// StartupTimeout. A late answer is still swallowed when it comes.

// ProxyOptions are RunProxy's limits and protocol choice.
type ProxyOptions struct {
	// MaxFrame is the largest message in either direction, its LF
	// included; 0 means DefaultMaxFrameBytes.
	MaxFrame int
	// MaxPending bounds a 2026-07-28 client's requests in flight (see
	// pendingBound); 0 means DefaultMaxPendingRequests.
	MaxPending int
	// ProtocolVersion is "auto" (probe server/discover), a 2026-07-28-era
	// version the server must list in server/discover (else RunProxy
	// fails before relaying), or a legacy version: no probe, the client's
	// own initialize negotiates. Empty means no probe (a plain relay).
	ProtocolVersion string
	// ProbeTimeout bounds the wait for the probe's answer once the server
	// has read it; 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// StartupTimeout bounds the whole probe; 0 means DefaultStartupTimeout.
	// In auto mode running out of it is a legacy outcome, not a failure
	// (a slow server is then relayed as before).
	StartupTimeout time.Duration
	// ClientInfo is sent in the probe's _meta.
	ClientInfo mcp.Implementation
	// OnConnected is told the outcome before the relay starts (not called
	// for an empty ProtocolVersion).
	OnConnected func(server mcp.Implementation, n mcp.Negotiated)
}

// proxyProbe intercepts the answer to the proxy's server/discover on the
// server → client relay.
type proxyProbe struct {
	id       []byte // the JSON id, a string no client is expected to use
	watching atomic.Bool
	answer   chan []byte // the answering line, once
}

func newProxyProbe() *proxyProbe {
	var r [8]byte
	_, _ = rand.Read(r[:])
	p := &proxyProbe{id: []byte(`"clawkit-proxy-discover-` + hex.EncodeToString(r[:]) + `"`), answer: make(chan []byte, 1)}
	p.watching.Store(true)
	return p
}

// serverLine says whether a server line goes on to the client: the probe's
// answer does not. Once answered the check is one atomic load.
func (p *proxyProbe) serverLine(line []byte) bool {
	if !p.watching.Load() || !bytes.Contains(line, p.id) {
		return true
	}
	id, method, _ := mcp.FrameMembers(line)
	if method != nil || !bytes.Equal(id, p.id) {
		return true
	}
	p.watching.Store(false)
	select {
	case p.answer <- bytes.Clone(line):
	default:
	}
	return false
}

// run sends the probe and waits for its outcome. It returns ok=false when
// the relay should not wait for an outcome any longer (the server ended,
// the client went away, ctx ended); the caller's relay loop then reports
// that as it always does. An explicit 2026-07-28-era version the server
// does not speak is an error.
func (p *proxyProbe) run(ctx context.Context, proc *Process, o ProxyOptions, stop <-chan struct{}) (mcp.Implementation, mcp.Negotiated, *mcp.Error, bool) {
	var none mcp.Implementation
	v := o.ProtocolVersion
	probe := v == mcp.AutoProtocolVersion
	if probe {
		v = mcp.ModernProtocolVersion
	}
	meta := mcp.BuildMeta(v, nil, o.ClientInfo)
	req := make([]byte, 0, 256)
	req = append(req, `{"jsonrpc":"2.0","id":`...)
	req = append(req, p.id...)
	req = append(req, `,"method":"server/discover","params":{`...)
	req = append(req, meta...)
	req = append(req, "}}\n"...)
	if _, err := proc.Stdin().Write(req); err != nil {
		p.watching.Store(false)
		return none, mcp.Negotiated{}, nil, false // the server is ending; the relay reports it
	}
	startup := time.NewTimer(o.StartupTimeout)
	defer startup.Stop()
	consumed := time.NewTicker(2 * time.Millisecond)
	defer consumed.Stop()
	var bound <-chan time.Time
	timedOut := func() (mcp.Implementation, mcp.Negotiated, *mcp.Error, bool) {
		// Still watching: a late answer is swallowed when it comes.
		if !probe {
			return none, mcp.Negotiated{}, mcp.Unavailable(errs.CodeInitializeTimeout, "server/discover timed out after %dms", o.StartupTimeout.Milliseconds()), true
		}
		return none, mcp.Negotiated{Era: mcp.EraLegacy, Probe: "discover-timeout"}, nil, true
	}
	for {
		select {
		case line := <-p.answer:
			return mcp.DiscoverOutcome(line, v, probe)
		case <-consumed.C:
			if pipeEmpty(proc.Stdin()) {
				consumed.Stop()
				t := time.NewTimer(o.ProbeTimeout)
				defer t.Stop() //nolint:gocritic // deferInLoop: at most once per call (consumed fires once)
				bound = t.C
			}
		case <-bound:
			return timedOut()
		case <-startup.C:
			return timedOut()
		case <-proc.Exited():
			return none, mcp.Negotiated{}, nil, false
		case <-stop:
			return none, mcp.Negotiated{}, nil, false
		case <-ctx.Done():
			return none, mcp.Negotiated{}, nil, false
		}
	}
}
