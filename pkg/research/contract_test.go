package research

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

func TestDecodeRPCAccepts(t *testing.T) {
	cases := map[string]Request{
		`{"request":{"version":1,"action":"describe"},"sessionKey":"cli","agentId":"main"}`: {Version: 1, Action: "describe"},
		`{"request":{"version":1,"action":"start","question":"Why?","output":{"format":"markdown","maxReportBytes":4096}},"sessionKey":"cli","agentId":"main"}`: {
			Version: 1, Action: "start", Question: "Why?", Output: &Output{Format: "markdown", MaxReportBytes: 4096}},
		`{"request":{"version":1,"action":"poll","handle":"v1_abc","service":"google.research.v1"},"sessionKey":"s","agentId":"a"}`: {
			Version: 1, Action: "poll", Handle: "v1_abc", Service: ServiceID},
		`{"agentId":"a","sessionKey":"s","request":{"action":"cancel","version":1,"handle":"h"}}`: {Version: 1, Action: "cancel", Handle: "h"},
	}
	for in, want := range cases {
		rpc, err := DecodeRPC([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, _ := json.Marshal(rpc.Request)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("%s: got %s want %s", in, got, exp)
		}
	}
}

func TestDecodeRPCRejects(t *testing.T) {
	cases := map[string]errs.Code{
		``:               "invalid_json",
		`[]`:             "invalid_shape",
		`{"request":{}}`: "missing_field",
		`{"request":{"version":1,"action":"describe"},"sessionKey":"s"}`:                                                           "missing_field",
		`{"request":{"version":1,"action":"describe"},"sessionKey":"s","agentId":"a","extra":1}`:                                   "unknown_field",
		`{"request":{"version":3,"action":"describe"},"sessionKey":"s","agentId":"a"}`:                                             "unsupported_version",
		`{"request":{"version":1.0,"action":"describe"},"sessionKey":"s","agentId":"a"}`:                                           "unsupported_version",
		`{"request":{"version":"1","action":"describe"},"sessionKey":"s","agentId":"a"}`:                                           "unsupported_version",
		`{"request":{"version":1,"action":"search"},"sessionKey":"s","agentId":"a"}`:                                               "unsupported_action",
		`{"request":{"version":1,"action":"describe","service":"google.search.v1"},"sessionKey":"s","agentId":"a"}`:                "unsupported_service",
		`{"request":{"version":1,"action":"describe","question":"q"},"sessionKey":"s","agentId":"a"}`:                              "unknown_field",
		`{"request":{"version":1,"action":"poll"},"sessionKey":"s","agentId":"a"}`:                                                 "missing_field",
		`{"request":{"version":1,"action":"start","question":"  "},"sessionKey":"s","agentId":"a"}`:                                "invalid_question",
		`{"request":{"version":1,"action":"start","question":"q","output":{"format":"pdf"}},"sessionKey":"s","agentId":"a"}`:       "unsupported_constraint",
		`{"request":{"version":1,"action":"start","question":"q","output":{"language":"de"}},"sessionKey":"s","agentId":"a"}`:      "unsupported_constraint",
		`{"request":{"version":1,"action":"start","question":"q","output":{"maxReportBytes":1.5}},"sessionKey":"s","agentId":"a"}`: "invalid_field",
		`{"request":{"version":1,"action":"describe","action":"start"},"sessionKey":"s","agentId":"a"}`:                            "duplicate_field",
		`{"request":{"version":1,"action":"describe"},"sessionKey":"s","agentId":"a"} {}`:                                          "invalid_json",
		`{"request":{"version":1,"action":"poll","handle":7},"sessionKey":"s","agentId":"a"}`:                                      "invalid_field",
	}
	for in, code := range cases {
		_, err := DecodeRPC([]byte(in))
		if err == nil {
			t.Errorf("%s: accepted", in)
			continue
		}
		if errs.KindOf(err) != errs.KindUsage || errs.CodeOf(err) != code {
			t.Errorf("%s: got %s/%s (%v), want usage/%s", in, errs.KindOf(err), errs.CodeOf(err), err, code)
		}
		r := ErrorResponse(err)
		if r.OK || r.Version != 1 || r.State != "invalid" || r.Reason != string(code) {
			t.Errorf("%s: envelope %+v", in, r)
		}
	}
}

func TestDecodeRPCDeepNesting(t *testing.T) {
	in := `{"request":{"version":1,"action":"describe"},"sessionKey":"s","agentId":"a","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	if _, err := DecodeRPC([]byte(in)); err == nil {
		t.Fatal("deep nesting accepted")
	}
}

func TestErrorResponseRetryAfterOnlyForTemporary(t *testing.T) {
	r := ErrorResponse(errs.Unavailable("provider_busy", "busy").WithRetryAfter(7000))
	if r.State != "unavailable" || r.RetryAfterMs != 7000 {
		t.Fatalf("%+v", r)
	}
	r = ErrorResponse(errs.Refused("foreign_owner", "no").WithRetryAfter(7000))
	if r.RetryAfterMs != 0 || r.State != "refused" {
		t.Fatalf("%+v", r)
	}
	r = ErrorResponse(&JobStateError{State: StateNotSent, Err: errs.Failed("not_sent", "x")})
	if r.State != StateNotSent || r.Reason != "not_sent" {
		t.Fatalf("%+v", r)
	}
}

// FuzzDecodeRPC: the decoder never panics, accepts only version-1 requests
// with a known action, and whatever it accepts re-encodes to an envelope it
// accepts again with the same meaning.
func FuzzDecodeRPC(f *testing.F) {
	for _, s := range []string{
		`{"request":{"version":1,"action":"describe"},"sessionKey":"cli","agentId":"main"}`,
		`{"request":{"version":1,"action":"start","question":"Why is the sky blue?","output":{"format":"markdown","maxReportBytes":100000},"asOf":"2026-01-01"},"sessionKey":"cli","agentId":"main"}`,
		`{"request":{"version":1,"action":"poll","handle":"v1_x"},"sessionKey":"cli","agentId":"main"}`,
		`{"request":{"version":1,"action":"cancel","handle":"v1_x","service":"google.research.v1"},"sessionKey":"cli","agentId":"main"}`,
		`{"request":{"version":1,"action":"describe","action":"x"}}`,
		`{"request":{"version":1e0,"action":"describe"},"sessionKey":"\u0000","agentId":"main"}`,
		"{\"request\":{\"version\":1,\"action\":\"start\",\"question\":\"\xff\"}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rpc, err := DecodeRPC(data)
		if err != nil {
			if errs.KindOf(err) != errs.KindUsage {
				t.Fatalf("non-usage error %v", err)
			}
			return
		}
		if rpc.Request.Version != 1 {
			t.Fatalf("accepted version %d", rpc.Request.Version)
		}
		switch rpc.Request.Action {
		case ActionDescribe, ActionStart, ActionPoll, ActionCancel, ActionApprove, ActionReject:
		default:
			t.Fatalf("accepted action %q", rpc.Request.Action)
		}
		if rpc.SessionKey == "" || rpc.AgentID == "" {
			t.Fatal("accepted empty identity")
		}
		again, err := json.Marshal(rpc)
		if err != nil {
			t.Fatal(err)
		}
		rpc2, err := DecodeRPC(again)
		if err != nil {
			t.Fatalf("re-encoded envelope rejected: %v\n%s", err, again)
		}
		a, _ := json.Marshal(rpc2)
		if string(a) != string(again) {
			t.Fatalf("round trip changed:\n%s\n%s", again, a)
		}
	})
}
