package owner

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// readCallRegistry has one operation taking fuzzParams.
func readCallRegistry() *Registry {
	reg := NewRegistry()
	Register(reg, Op[fuzzParams, fuzzParams]{Name: "t.p", Run: func(ctx context.Context, env *OpEnv, p fuzzParams) (fuzzParams, error) {
		return p, nil
	}})
	return reg
}

// The router's request is one encoding with the method first and the
// params last, and ReadCall gives back the same envelope and params: the
// gateway decodes them in the same pass.
func TestReadCallRoundTrip(t *testing.T) {
	reg := readCallRegistry()
	m, _ := reg.Lookup("t.p")
	p := fuzzParams{A: "x", N: 2, L: []string{"a"}, M: map[string]string{"k": "v"}}
	req := CallRequest{Method: m.Name, ExpectedOwnerID: "o", Scopes: []string{ScopeAdmin}, Env: map[string]string{"E": "1"}, Params: p}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(body, []byte(`{"method":`)) || !bytes.Contains(body, []byte(`,"params":{`)) || !bytes.HasSuffix(body, []byte(`}}`)) {
		t.Fatalf("method not first or params not last: %s", body)
	}
	got, gm, gp, perr, err := ReadCall(bytes.NewReader(body), reg.LookupWire)
	if err != nil || perr != nil || gm.Name != m.Name {
		t.Fatalf("ReadCall: %v %v %q", err, perr, gm.Name)
	}
	req.Params = nil
	if !reflect.DeepEqual(got, req) || !reflect.DeepEqual(gp, p) {
		t.Fatalf("got %+v %+v, want %+v %+v", got, gp, req, p)
	}
}

// Any order, missing params, unknown envelope fields, an unknown method,
// strict params and malformed bodies.
func TestReadCallCases(t *testing.T) {
	reg := readCallRegistry()
	for _, c := range []struct {
		body                  string
		method                string // "" when unknown
		params                *fuzzParams
		paramsCode, envelopeE string
	}{
		{body: `{"params":{"a":"x"},"method":"t.p.v1","expectedOwnerId":"o"}`, method: "t.p.v1", params: &fuzzParams{A: "x"}},
		{body: `{"method":"t.p.v1"}`, method: "t.p.v1", params: &fuzzParams{}},
		{body: `{"method":"t.p.v1","params":null}`, method: "t.p.v1", params: &fuzzParams{}},
		{body: `{"method":"t.p.v1","extra":[1,{"x":2}],"params":{"n":3}}`, method: "t.p.v1", params: &fuzzParams{N: 3}},
		{body: `{"method":"t.p.v1","params":{"x":1}}`, method: "t.p.v1", paramsCode: "invalid_params"},
		{body: `{"params":{"x":1},"method":"t.p.v1"}`, method: "t.p.v1", paramsCode: "invalid_params"},
		{body: `{"method":"t.p.v1","params":{"a":1}}`, method: "t.p.v1", paramsCode: "invalid_params"},
		{body: `{"method":"t.p.v9","params":{"x":1}}`},
		{body: `{"method":"t.p"}`},
		{body: `[]`, envelopeE: "not a JSON object"},
		{body: ``, envelopeE: "EOF"},
		{body: `{"method":"t.p.v1"`, envelopeE: "EOF"},
		{body: `{"method":1}`, envelopeE: "cannot unmarshal"},
	} {
		_, m, p, perr, err := ReadCall(strings.NewReader(c.body), reg.LookupWire)
		switch {
		case c.envelopeE != "":
			if err == nil || !strings.Contains(err.Error(), c.envelopeE) {
				t.Errorf("%s: envelope error %v, want %q", c.body, err, c.envelopeE)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		if m.Name != c.method {
			t.Errorf("%s: method %q, want %q", c.body, m.Name, c.method)
		}
		if c.paramsCode != "" {
			if e := errs.As(perr); e == nil || string(e.Code) != c.paramsCode || e.Kind != errs.KindUsage {
				t.Errorf("%s: params refusal %v, want %s", c.body, perr, c.paramsCode)
			}
			continue
		}
		if perr != nil {
			t.Errorf("%s: %v", c.body, perr)
			continue
		}
		if c.params != nil && !reflect.DeepEqual(p, *c.params) {
			t.Errorf("%s: params %+v, want %+v", c.body, p, *c.params)
		}
	}
}

// ReadCall reads every call a gateway receives: untrusted bytes. It never
// panics; a params refusal is invalid_params only; params it accepts are
// what DecodeParams accepts of the same bytes.
func FuzzReadCall(f *testing.F) {
	for _, s := range []string{`{"method":"t.p.v1","params":{"a":"x"}}`, `{"params":{"n":1},"method":"t.p.v1"}`, `{"method":"t.p.v1","params":{"x":1}}`,
		`{"method":"t.p.v2"}`, `{}`, `[]`, ``, `{"method":"t.p.v1","params":{"p":{"p":{}}}} trailing`, `{"scopes":["a"],"env":{"k":"v"},"method":"t.p.v1"}`} {
		f.Add([]byte(s))
	}
	reg := readCallRegistry()
	f.Fuzz(func(t *testing.T, b []byte) {
		_, m, p, perr, err := ReadCall(bytes.NewReader(b), reg.LookupWire)
		if err != nil || m.Name == "" {
			return
		}
		if perr != nil {
			if e := errs.As(perr); e == nil || e.Code != errs.CodeInvalidParams || e.Kind != errs.KindUsage {
				t.Fatalf("refusal %v is not invalid_params", perr)
			}
			return
		}
		if _, ok := p.(fuzzParams); !ok {
			t.Fatalf("params %T, want fuzzParams", p)
		}
	})
}
