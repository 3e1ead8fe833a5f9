package research

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
)

// The operations decode their parameters as strictly on the gateway side
// as the CLI does: a lenient envelope never reaches the provider.
func TestOperationsDecodeStrictly(t *testing.T) {
	f := newFixture(t)
	r := owner.NewRegistry()
	f.svc.Register(r)
	invoke := func(method, params string) (json.RawMessage, error) {
		t.Helper()
		m, ok := r.Lookup(method)
		if !ok {
			t.Fatalf("no method %s", method)
		}
		return m.Serve(context.Background(), f.env(), json.RawMessage(params))
	}
	for _, tc := range []struct{ params, reason string }{
		{`{"request":{"version":3,"action":"start","question":"q"},"sessionKey":"cli","agentId":"main"}`, "unsupported_version"},
		{`{"request":{"version":1,"action":"start","question":"q","extra":1},"sessionKey":"cli","agentId":"main"}`, "unknown_field"},
		{`{"request":{"version":1,"action":"start","question":"q"},"sessionKey":"cli","agentId":"main","x":1}`, "unknown_field"},
		{`{"request":{"version":1,"action":"start","question":"q"},"agentId":"main"}`, "missing_field"},
		{`{"request":{"version":1,"action":"start","question":"q","question":"r"},"sessionKey":"cli","agentId":"main"}`, "duplicate_key"},
	} {
		out, err := invoke(OpRPC.Name, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		var resp Response
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.OK || resp.State != "invalid" {
			t.Errorf("%s: %+v, want invalid", tc.params, resp)
		} else if tc.reason != "duplicate_key" && resp.Reason != tc.reason {
			t.Errorf("%s: reason %s, want %s", tc.params, resp.Reason, tc.reason)
		}
	}
	_, err := invoke(OpStart.Name, `{"question":"q","surprise":true}`)
	wantCode(t, err, errs.KindUsage, "invalid_params")
	_, err = invoke(OpPoll.Name, `{"job":"rj_aaaaaaaaaaaaaaaa"} {}`)
	wantCode(t, err, errs.KindUsage, "invalid_params")
	if n := len(f.fake.Requests()); n != 0 {
		t.Fatalf("%d HTTP requests for refused envelopes", n)
	}
	// The strict path still accepts a well-formed envelope.
	out, err := invoke(OpRPC.Name, `{"request":{"version":1,"action":"start","question":"fake:never q"},"sessionKey":"cli","agentId":"main"}`)
	if err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.Unmarshal(out, &resp); err != nil || !resp.OK {
		t.Fatalf("%s", out)
	}
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("creates %d", n)
	}
}
