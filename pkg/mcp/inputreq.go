package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// input_required results (MCP 2026-07-28, SEP-2322; docs/mcp.md, "Server
// requests"). Instead of sending its client requests of its own, a
// server may answer a request with
//
//	{"resultType":"input_required",
//	 "inputRequests":{KEY:{"method":M,"params":P},…},
//	 "requestState":"…"}
//
// and the client retries the original request (a new JSON-RPC id) with
// "inputResponses":{KEY:RESULT,…} and the requestState echoed exactly, or
// without one when none came. A result without resultType is complete.

const (
	// DefaultMaxInputRounds bounds the retries of one request: a server
	// that keeps asking is stopped, never followed forever.
	DefaultMaxInputRounds = 8
	// MaxInputRequests bounds the input requests of one result.
	MaxInputRequests = 32
)

// InputRequired is a decoded input_required result.
type InputRequired struct {
	// Requests are the embedded requests in the order the server sent
	// them.
	Requests []InputRequest
	// State is the requestState token exactly as sent (a JSON string),
	// nil when the result has none.
	State json.RawMessage
}

// InputRequest is one embedded request of an input_required result.
type InputRequest struct {
	Key    string
	Method string
	Params json.RawMessage
}

// ParseInputRequired reads a result: nil, nil when it is not
// input_required (no resultType, "complete", or any other value); the
// decoded result when it is; an error when it is input_required but
// malformed. It never panics on any input.
func ParseInputRequired(result []byte) (*InputRequired, error) {
	if FirstByte(result) != '{' || !json.Valid(result) {
		return nil, nil // not an object: never input_required
	}
	var rt, reqs, state json.RawMessage
	dup := ""
	_ = TopLevelMembers(result, func(k string, v []byte) error {
		var dst *json.RawMessage
		switch k {
		case "resultType":
			dst = &rt
		case "inputRequests":
			dst = &reqs
		case "requestState":
			dst = &state
		default:
			return nil
		}
		if *dst != nil && dup == "" {
			dup = k
		}
		*dst = v
		return nil
	})
	if t, ok := JSONString(rt); !ok || t != "input_required" {
		return nil, nil
	}
	if dup != "" {
		return nil, invalidInputRequired("member %q appears twice", dup)
	}
	ir := &InputRequired{}
	switch c := FirstByte(state); {
	case state == nil || c == 'n':
	case c == '"':
		ir.State = append(json.RawMessage(nil), state...)
	default:
		return nil, invalidInputRequired("requestState must be a string")
	}
	switch c := FirstByte(reqs); {
	case reqs == nil || c == 'n':
	case c == '{':
		seen := map[string]bool{}
		err := TopLevelMembers(reqs, func(k string, v []byte) error {
			if seen[k] {
				return invalidInputRequired("inputRequests names %q twice", clipText(k))
			}
			seen[k] = true
			if len(ir.Requests) == MaxInputRequests {
				return invalidInputRequired("more than %d input requests", MaxInputRequests)
			}
			if FirstByte(v) != '{' {
				return invalidInputRequired("input request %q is not an object", clipText(k))
			}
			var r struct {
				Method json.RawMessage `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(v, &r) != nil {
				return invalidInputRequired("input request %q is not an object", clipText(k))
			}
			m, ok := JSONString(r.Method)
			if !ok || m == "" {
				return invalidInputRequired("input request %q has no method", clipText(k))
			}
			if p := FirstByte(r.Params); p != 0 && p != '{' && p != 'n' {
				return invalidInputRequired("input request %q: params must be an object", clipText(k))
			}
			if FirstByte(r.Params) == 'n' {
				r.Params = nil
			}
			ir.Requests = append(ir.Requests, InputRequest{Key: k, Method: m, Params: r.Params})
			return nil
		})
		if err != nil {
			return nil, err
		}
	default:
		return nil, invalidInputRequired("inputRequests must be an object")
	}
	if len(ir.Requests) == 0 && ir.State == nil {
		return nil, invalidInputRequired("it carries neither inputRequests nor requestState")
	}
	return ir, nil
}

func invalidInputRequired(format string, args ...any) *Error {
	return ProtocolErr(CodeInvalidInputRequired, "malformed input_required result from the server: "+format, args...)
}

// Requester is what RequestResolved needs of a connection.
type Requester interface {
	RequestTimeout(ctx context.Context, method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, error)
}

// RequestResolved sends one request and, while the server answers it
// with input_required, answers the embedded requests by p and retries
// it with their responses and the request state: at most
// p.MaxInputRounds retries. When an embedded request cannot be answered
// (sampling, a method clawkit does not know, an invalid request) it
// stops with an error that lists what the server asked for.
func RequestResolved(ctx context.Context, c Requester, p *ServerRequests, method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	rounds := p.MaxInputRounds
	if rounds <= 0 {
		rounds = DefaultMaxInputRounds
	}
	cur := params
	for round := 0; ; round++ {
		res, err := c.RequestTimeout(ctx, method, cur, timeout)
		if err != nil {
			return res, err
		}
		ir, perr := ParseInputRequired(res)
		if perr != nil {
			return nil, perr
		}
		if ir == nil {
			return res, nil
		}
		if round == rounds {
			return nil, ProtocolErr(CodeInputRequiredRounds, "%s still needs input after %d rounds of answers; the server asked for %s", method, rounds, describeInputRequests(ir, nil)).
				withHint("the server keeps asking; raise --max-input-rounds if it needs more rounds, or check what it asks for")
		}
		responses := make([][]byte, len(ir.Requests))
		why := map[string]string{}
		for i, r := range ir.Requests {
			res, rpc := p.Answer(r.Method, r.Params, "input_required")
			switch {
			case rpc != nil && rpc.Code == RPCMethodNotFound && r.Method != "sampling/createMessage":
				why[r.Key] = "a request clawkit does not answer"
			case rpc != nil:
				why[r.Key] = rpc.Message
			default:
				responses[i] = res
			}
		}
		if len(why) > 0 {
			return nil, ProtocolErr(CodeInputRequiredUnanswered, "%s needs input clawkit cannot give; the server asked for %s", method, describeInputRequests(ir, why)).
				withHint("clawkit answers elicitation (--elicitation, --elicitation-answers) and roots/list (--root) without a user; it offers no sampling")
		}
		next, rerr := retryParams(params, ir, responses)
		if rerr != nil {
			return nil, rerr
		}
		cur = next
	}
}

func (e *Error) withHint(h string) *Error { e.Hint = h; return e }

// describeInputRequests lists what the server asked for, each with why
// it was not answered when it was not: `"q": sampling/createMessage
// (…), "name": elicitation/create "What is your name?"`.
func describeInputRequests(ir *InputRequired, why map[string]string) string {
	var parts []string
	for i, r := range ir.Requests {
		if i == 8 {
			parts = append(parts, strconv.Itoa(len(ir.Requests)-8)+" more")
			break
		}
		s := strconv.Quote(clipText(r.Key)) + ": " + clipText(r.Method)
		if r.Method == "elicitation/create" {
			var m struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(r.Params, &m)
			if m.Message != "" {
				s += " " + strconv.Quote(clipText(m.Message))
			}
		}
		if w, ok := why[r.Key]; ok {
			s += " (" + w + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "nothing but its request state"
	}
	return strings.Join(parts, ", ")
}

// retryParams is the original request's params with inputResponses and
// requestState (exactly as sent; absent when none came) in place of any
// the caller gave. The other members are copied as they were.
func retryParams(orig json.RawMessage, ir *InputRequired, responses [][]byte) (json.RawMessage, error) {
	switch FirstByte(orig) {
	case 0, 'n':
		orig = json.RawMessage(`{}`)
	case '{':
	default:
		return nil, ProtocolErr(CodeInputRequiredUnanswered, "the server asked for input, but the request's params are an array, which cannot carry inputResponses")
	}
	b := []byte{'{'}
	sep := func() {
		if len(b) > 1 {
			b = append(b, ',')
		}
	}
	_ = TopLevelMembersRaw(orig, func(k, v []byte) error {
		if string(k) == "inputResponses" || string(k) == "requestState" {
			return nil
		}
		sep()
		b = AppendJSONString(b, string(k))
		b = append(b, ':')
		b = append(b, v...)
		return nil
	})
	if len(ir.Requests) > 0 {
		sep()
		b = append(b, `"inputResponses":{`...)
		for i, r := range ir.Requests {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, r.Key)
			b = append(b, ':')
			b = append(b, responses[i]...)
		}
		b = append(b, '}')
	}
	if ir.State != nil {
		sep()
		b = append(b, `"requestState":`...)
		b = append(b, ir.State...)
	}
	return append(b, '}'), nil
}
