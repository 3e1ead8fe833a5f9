package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// MaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER (2^53−1): the
// largest id every JSON-RPC peer can represent exactly.
const MaxSafeInteger = 1<<53 - 1

// msgKind is what a decoded line turned out to be.
type msgKind int

const (
	kindResponse msgKind = iota + 1
	kindRequest
	kindNotification
)

// Message is one decoded JSON-RPC 2.0 message from the server.
type Message struct {
	kind   msgKind
	ID     int64           // responses: the validated numeric id
	RawID  json.RawMessage // requests: the server's id, echoed back as is
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

type wireMessage struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// ParseMessage decodes and validates one line from a server. It never
// panics on any input; every rejection is a *Error of ClassProtocol.
func ParseMessage(line []byte) (*Message, error) {
	var w wireMessage
	if err := json.Unmarshal(line, &w); err != nil {
		return nil, protocolErr("malformed_message", "malformed message from server: %s", shortErr(err))
	}
	if w.JSONRPC == nil || *w.JSONRPC != "2.0" {
		return nil, protocolErr("malformed_message", `malformed message from server: "jsonrpc" must be "2.0"`)
	}
	present := func(r json.RawMessage) bool { return r != nil }
	if w.Method != nil {
		m := &Message{Method: *w.Method, Params: w.Params}
		if m.Method == "" {
			return nil, protocolErr("malformed_message", "malformed message from server: empty method")
		}
		if present(w.Result) || present(w.Error) {
			return nil, protocolErr("malformed_message", "malformed message from server: a request must not carry result or error")
		}
		if !present(w.ID) {
			m.kind = kindNotification
			return m, nil
		}
		switch c := firstByte(w.ID); {
		case c == '"' || c == '-' || (c >= '0' && c <= '9'):
			m.kind, m.RawID = kindRequest, w.ID
			return m, nil
		default:
			return nil, protocolErr("malformed_message", "malformed request from server: id must be a string or a number")
		}
	}
	if present(w.Result) == present(w.Error) {
		return nil, protocolErr("malformed_message", "malformed response from server: exactly one of result and error is required")
	}
	id, ok := safeIntegerID(w.ID)
	if !ok {
		return nil, protocolErr("invalid_response_id", "invalid response id %s: responses must carry a safe integer id", clip(w.ID, 64))
	}
	m := &Message{kind: kindResponse, ID: id, Result: w.Result}
	if present(w.Error) {
		var re RPCError
		if err := json.Unmarshal(w.Error, &re); err != nil || firstByte(w.Error) != '{' {
			return nil, protocolErr("malformed_message", "malformed error object in response %d", id)
		}
		m.Error = &re
	}
	return m, nil
}

// safeIntegerID accepts a JSON number whose value is an integer of
// magnitude ≤ 2^53−1. 1.0 and 1e3 are integers to a JavaScript peer, so
// they pass; 1.5, strings and null do not.
func safeIntegerID(raw json.RawMessage) (int64, bool) {
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

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// appendRequest appends one request line (with its LF) to b. Building the
// bytes by hand keeps the hot path free of reflection; method is encoded
// with encoding/json so any string is escaped correctly.
func appendRequest(b []byte, id int64, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

func appendNotification(b []byte, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

func appendJSONString(b []byte, s string) []byte {
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
