package mcpfake

import (
	"encoding/json"
	"strings"
	"time"
)

// The asks and mrtr modes: servers that ask their client for input, the
// legacy way (a request of the server's own: elicitation/create,
// roots/list, sampling/createMessage) and the 2026-07-28 way (an
// input_required result, SEP-2322). docs/mcp.md, "Server requests", says
// what clawkit answers.

// defaultsForm is the elicitation the elicit tool sends without
// arguments.params: every field optional and with a default (SEP-1034).
var defaultsForm = map[string]any{
	"message": "Confirm the defaults",
	"requestedSchema": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "default": "Ada"},
			"age":      map[string]any{"type": "integer", "default": 36},
			"score":    map[string]any{"type": "number", "default": 9.5},
			"tier":     map[string]any{"type": "string", "enum": []string{"free", "pro"}, "default": "pro"},
			"verified": map[string]any{"type": "boolean", "default": true},
		},
	},
}

// asks runs a tool of the asks mode: it sends its request to the client,
// waits for the answer and returns the answer line as the tool's text.
func (s *server) asks(m msg) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Params json.RawMessage `json:"params"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	var method string
	var params any
	switch p.Name {
	case "elicit":
		method, params = "elicitation/create", defaultsForm
		if len(p.Arguments.Params) > 0 {
			params = p.Arguments.Params
		}
	case "roots":
		method, params = "roots/list", map[string]any{}
	case "sample":
		method, params = "sampling/createMessage", map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "What is 2+2?"}}},
			"maxTokens": 10,
		}
	case "caps":
		s.result(m.ID, text(string(s.caps)))
		return
	default:
		s.rpcError(m.ID, -32602, "unknown tool: "+p.Name)
		return
	}
	s.send(map[string]any{"jsonrpc": "2.0", "id": "ask-1", "method": method, "params": params})
	answer := "no answer"
	select {
	case a := <-s.answers:
		answer = string(a)
	case <-time.After(30 * time.Second):
	}
	s.result(m.ID, text(answer))
}

// MRTRAnswer is the result of a tools/call of the mrtr mode (over stdio
// and HTTP); rounds counts the retries of the exchange in progress. Tools:
//
//   - ask {inputRequests, requestState?, rounds?}: input_required with
//     those until it has been retried rounds times (default 1), then a
//     complete result whose text is the JSON {"inputResponses","requestState"?,
//     "rounds"} the last retry carried (requestState as sent, byte for byte);
//   - forever {inputRequests}: input_required every time;
//   - raw {result}: result as given (a malformed input_required, say);
//   - plain: a complete result without resultType.
func MRTRAnswer(rounds *int, params json.RawMessage) any {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			InputRequests json.RawMessage `json:"inputRequests"`
			RequestState  json.RawMessage `json:"requestState"`
			Rounds        int             `json:"rounds"`
			Result        json.RawMessage `json:"result"`
		} `json:"arguments"`
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   json.RawMessage `json:"requestState"`
	}
	_ = json.Unmarshal(params, &p)
	a := p.Arguments
	ask := func() any {
		r := map[string]any{"resultType": "input_required"}
		if len(a.InputRequests) > 0 {
			r["inputRequests"] = a.InputRequests
		}
		if len(a.RequestState) > 0 {
			r["requestState"] = a.RequestState
		}
		return r
	}
	switch p.Name {
	case "ask":
		if p.InputResponses == nil && p.RequestState == nil {
			*rounds = 0
			return ask()
		}
		*rounds++
		if *rounds < max(a.Rounds, 1) {
			return ask()
		}
		got := map[string]any{"inputResponses": p.InputResponses, "rounds": *rounds}
		if p.RequestState != nil {
			got["requestState"] = p.RequestState
		}
		b, _ := json.Marshal(got)
		return map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": string(b)}}}
	case "forever":
		return ask()
	case "raw":
		return a.Result
	case "plain":
		s := "no input asked"
		if p.InputResponses != nil || p.RequestState != nil {
			s = "retried: " + strings.TrimSpace(string(p.InputResponses))
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "unknown tool: " + p.Name}}}
}
