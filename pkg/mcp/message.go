package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
)

// MaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER (2^53−1): the
// largest id every JSON-RPC peer can represent exactly.
const MaxSafeInteger = 1<<53 - 1

// MsgKind is what a decoded line turned out to be.
type MsgKind int

const (
	KindResponse MsgKind = iota + 1
	KindRequest
	KindNotification
)

// Message is one decoded JSON-RPC 2.0 message from the server.
type Message struct {
	Kind   MsgKind         // what the line turned out to be
	ID     int64           // responses: the validated numeric id
	RawID  json.RawMessage // requests: the server's id, echoed back as is
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

// ParseMessage decodes and validates one line from a server. It never
// panics on any input; every rejection is a *Error of ClassProtocol. The
// message does not alias line.
//
// Member names are matched exactly (encoding/json would also take "ID" or
// "Result"), and a repeated member is refused rather than letting the last
// one win: a message must mean one thing.
//
// Text must be valid UTF-8 (encoding/json would quietly turn bad bytes into
// U+FFFD, passing on something the server never said), and a response's
// result must be an object: every MCP result is one.
func ParseMessage(line []byte) (*Message, error) {
	m, err := DecodeMessage(line)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// DecodeMessage is ParseMessage returning the message by value: the
// client's reader parses every line, and the message need not outlive it.
func DecodeMessage(line []byte) (Message, error) {
	if !utf8.Valid(line) {
		return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: invalid UTF-8")
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v) // only to name the syntax error
		return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: %s", ShortErr(err))
	}
	// The values below are sub-slices of line, which callers (the reader)
	// reuse for the next read: one copy makes them the message's own.
	line = bytes.Clone(line)
	var jsonrpc, id, method, params, result, rpcErr json.RawMessage
	err := TopLevelMembersRaw(line, func(key, val []byte) error {
		var dst *json.RawMessage
		switch string(key) {
		case "jsonrpc":
			dst = &jsonrpc
		case "id":
			dst = &id
		case "method":
			dst = &method
		case "params":
			dst = &params
		case "result":
			dst = &result
		case "error":
			dst = &rpcErr
		default:
			return nil // other members are tolerated and ignored
		}
		if *dst != nil {
			return ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: member %q appears twice", key)
		}
		*dst = val
		return nil
	})
	if err != nil {
		return Message{}, err
	}
	if v, ok := JSONString(jsonrpc); !ok || v != "2.0" {
		return Message{}, ProtocolErr(errs.CodeMalformedMessage, `malformed message from server: "jsonrpc" must be "2.0"`)
	}
	present := func(r json.RawMessage) bool { return r != nil }
	if present(method) {
		name, ok := JSONString(method)
		if !ok {
			return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: method must be a string")
		}
		m := Message{Method: name, Params: params}
		if m.Method == "" {
			return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: empty method")
		}
		if present(result) || present(rpcErr) {
			return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: a request must not carry result or error")
		}
		if !present(id) {
			m.Kind = KindNotification
			return m, nil
		}
		switch c := id[0]; {
		case c == '"' || c == '-' || (c >= '0' && c <= '9'):
			m.Kind, m.RawID = KindRequest, id
			return m, nil
		default:
			return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed request from server: id must be a string or a number")
		}
	}
	if present(result) == present(rpcErr) {
		return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed response from server: exactly one of result and error is required")
	}
	n, ok := SafeIntegerID(id)
	if !ok {
		return Message{}, ProtocolErr(errs.CodeInvalidResponseID, "invalid response id %s: responses must carry a safe integer id", Clip(id, 64))
	}
	if present(result) && result[0] != '{' {
		return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed response %d from server: result must be an object, got %s", n, Clip(result, 32))
	}
	m := Message{Kind: KindResponse, ID: n, Result: result}
	if present(rpcErr) {
		var re RPCError
		if rpcErr[0] != '{' || json.Unmarshal(rpcErr, &re) != nil {
			return Message{}, ProtocolErr(errs.CodeMalformedMessage, "malformed error object in response %d", n)
		}
		m.Error = &re
	}
	return m, nil
}

// JSONString decodes a JSON string value as encoding/json does (invalid
// UTF-8 becomes U+FFFD); the common case, plain valid UTF-8 without
// escapes, costs no allocation beyond the string itself.
func JSONString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// TopLevelMembers calls visit with the name and the raw value of each
// member of the JSON object b, in order. b must already be valid JSON
// (json.Valid), which is what lets the value scanner stay this small.
func TopLevelMembers(b []byte, visit func(key string, val []byte) error) error {
	return TopLevelMembersRaw(b, func(key, val []byte) error { return visit(string(key), val) })
}

// TopLevelMembersRaw is TopLevelMembers with the name as bytes: a
// sub-slice of b unless it has escapes (then a decoded copy), valid only
// during the call. The readers' per-message lookups compare names without
// allocating a string for each.
func TopLevelMembersRaw(b []byte, visit func(key, val []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: not a JSON object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for i < len(b) {
		// b[i] is the '"' opening a member name.
		end := skipString(b, i)
		key := memberName(b[i:end])
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // the ':'
		vend := skipValue(b, i)
		if err := visit(key, b[i:vend]); err != nil {
			return err
		}
		i = skipSpace(b, vend)
		if i >= len(b) || b[i] == '}' {
			return nil
		}
		i = skipSpace(b, i+1) // the ','
	}
	return nil
}

// memberName is a member name's text: the bytes between the quotes when
// they are plain valid UTF-8, else the decoded name (as JSONString
// decodes it: escapes resolved, invalid bytes as U+FFFD).
func memberName(raw []byte) []byte {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return raw[1 : len(raw)-1]
	}
	s, _ := JSONString(raw)
	return []byte(s)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default: // number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j
	}
}

// SafeIntegerID accepts a JSON number whose value is an integer of
// magnitude ≤ 2^53−1. 1.0 and 1e3 are integers to a JavaScript peer, so
// they pass; 1.5, strings and null do not.
func SafeIntegerID(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return 0, false
		}
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) || f > MaxSafeInteger || f < -MaxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

func FirstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func Clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func ShortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// AppendRequest appends one request line (with its LF) to b. Building the
// bytes by hand keeps the hot path free of reflection; method is encoded
// with encoding/json so any string is escaped correctly.
func AppendRequest(b []byte, id int64, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = AppendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

func AppendNotification(b []byte, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = AppendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

func AppendJSONString(b []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			simple = false
			break
		}
	}
	if simple {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s)
	return append(b, enc...)
}

// FrameMembers returns a frame's top-level id, method and params (nil when
// absent), without decoding the rest: the relay hooks look at nothing else.
func FrameMembers(line []byte) (id, method, params json.RawMessage) {
	_ = TopLevelMembersRaw(line, func(k, v []byte) error {
		switch string(k) {
		case "id":
			id = v
		case "method":
			method = v
		case "params":
			params = v
		}
		return nil
	})
	return id, method, params
}
