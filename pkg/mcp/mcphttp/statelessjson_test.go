package mcphttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
)

func TestSetMemberAndPath(t *testing.T) {
	for _, c := range []struct{ in, key, val, want string }{
		{`{"jsonrpc":"2.0","id":"a","method":"m"}`, "id", `7`, `{"jsonrpc":"2.0","id":7,"method":"m"}`},
		{`{}`, "id", `7`, `{"id":7}`},
		{`{"id":1,"id":2}`, "id", `3`, `{"id":3,"id":3}`},
		{` { "a" : [1, {"id":1}] , "id" : null } `, "id", `"x"`, `{"a":[1, {"id":1}],"id":"x"}`},
	} {
		if got := string(setMember([]byte(c.in), c.key, []byte(c.val))); got != c.want {
			t.Errorf("setMember(%s, %s, %s) = %s, want %s", c.in, c.key, c.val, got, c.want)
		}
	}
	in := []byte(`{"params":{"_meta":{"progressToken":"mine","x":1}},"id":1}`)
	out := setPath(in, []byte(`42`), "params", "_meta", "progressToken")
	if got := string(getPath(out, "params", "_meta", "progressToken")); got != "42" {
		t.Errorf("setPath: %s", out)
	}
	// A path that is missing leaves the message as it was.
	if got := setPath(in, []byte(`1`), "params", "nothing", "here"); !bytes.Equal(got, in) {
		t.Errorf("setPath on a missing path changed %s into %s", in, got)
	}
}

func TestModernErrorStatus(t *testing.T) {
	for msg, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                  200,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`:        404,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}`:        400,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"x"}}`:        400,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x"}}`:        400,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal"}}`: 200,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"-32601"}}`:                    200,
	} {
		if got := modernErrorStatus([]byte(msg)); got != want {
			t.Errorf("modernErrorStatus(%s) = %d, want %d", msg, got, want)
		}
	}
}

func TestParamHeaders(t *testing.T) {
	b := paramBindings([]byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"on":{"type":"boolean","x-mcp-header":"On"},"deep":{"type":"object","properties":{"k":{"type":"string","x-mcp-header":"Deep-K"}}}}}`))
	if len(b) != 4 {
		t.Fatalf("bindings: %+v (want region, n, on, deep.k)", b)
	}
	// The client's rules: one invalid annotation (a header name with a
	// space) makes the tool's annotations invalid, and the proxy binds
	// nothing for it (the server judges the call).
	if bad := paramBindings([]byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"bad":{"type":"string","x-mcp-header":"no spaces"}}}`)); len(bad) != 0 {
		t.Fatalf("bindings of a tool with an invalid annotation: %+v", bad)
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	ok := hdr("Mcp-Param-Region", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("é u"))+"?=", "Mcp-Param-N", "42", "Mcp-Param-On", "true", "Mcp-Param-Deep-K", "v")
	if why := checkParamHeaders(ok, []byte(`{"arguments":{"region":"é u","n":42.0,"on":true,"deep":{"k":"v"}}}`), b); why != "" {
		t.Errorf("matching headers refused: %s", why)
	}
	for _, c := range []struct {
		h    http.Header
		args string
	}{
		{hdr("Mcp-Param-Region", "eu"), `{"arguments":{"region":"us"}}`},
		{hdr(), `{"arguments":{"region":"us"}}`},
		{hdr("Mcp-Param-Region", "=?base64?ZXU?="), `{"arguments":{"region":"eu"}}`},
		{hdr("Mcp-Param-N", "42"), `{"arguments":{}}`},
		{hdr("Mcp-Param-N", "4.5"), `{"arguments":{"n":4.5}}`},
		{hdr("Mcp-Param-On", "True"), `{"arguments":{"on":true}}`},
		{hdr("Mcp-Param-Region", "x"), `{"arguments":{"region":{"not":"primitive"}}}`},
	} {
		if why := checkParamHeaders(c.h, []byte(c.args), b); why == "" {
			t.Errorf("headers %v with %s accepted", c.h, c.args)
		}
	}
	// The wrapper's halves alone are the value itself.
	for _, v := range []string{"ZXU=", "=?base64?ZXU=", "ZXU=?="} {
		if got, ok := decodeParamHeader(v); !ok || got != v {
			t.Errorf("decodeParamHeader(%q) = %q, %v", v, got, ok)
		}
	}
}

// FuzzStatelessJSON: the proxy's edits of untrusted JSON (a client's body,
// a server's line) never panic and always yield valid JSON with the value
// set where it was asked.
func FuzzStatelessJSON(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"m","params":{"_meta":{"progressToken":1}}}`), "id", []byte(`12`))
	f.Add([]byte(`{"a":"\u0069d","i\u0064":1}`), "id", []byte(`"x"`))
	f.Add([]byte(` [1,2] `), "id", []byte(`null`))
	f.Add([]byte(`{"id":{"id":{"id":[]}}}`), "id", []byte(`{}`))
	f.Fuzz(func(t *testing.T, obj []byte, key string, val []byte) {
		if !json.Valid(obj) || !json.Valid(val) {
			return
		}
		_ = getPath(obj, "params", "_meta", key)
		_, _ = errorCode(obj)
		_ = modernErrorStatus(obj)
		out := setMember(obj, key, val)
		if !json.Valid(out) {
			t.Fatalf("setMember(%q, %q, %q) = %q: not JSON", obj, key, val, out)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) == nil && m != nil {
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			var want, have any
			_ = json.Unmarshal(val, &want)
			if _, ok := got[key]; ok {
				_ = json.Unmarshal(got[key], &have)
			}
			wb, _ := json.Marshal(want)
			hb, _ := json.Marshal(have)
			if key == string([]rune(key)) && !bytes.Equal(wb, hb) {
				t.Fatalf("setMember(%q, %q, %q) = %q: the member holds %s", obj, key, val, out, hb)
			}
		}
		p := setPath(obj, val, "params", "_meta", key)
		if !json.Valid(p) {
			t.Fatalf("setPath: %q not JSON", p)
		}
	})
}

// FuzzParamHeaders: a server's tool schema and a client's headers and
// arguments, all untrusted, never panic the SEP-2243 checks; the encoding
// of any value decodes back to it.
func FuzzParamHeaders(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`), []byte(`{"arguments":{"region":"eu"}}`), "=?base64?ZXU=?=")
	f.Add([]byte(`{"properties":{"a":{"properties":{"b":{"x-mcp-header":"B"}}}}}`), []byte(`{"arguments":{"a":{"b":9007199254740993}}}`), "9007199254740993")
	f.Add([]byte(`{"properties":{"x":{"x-mcp-header":7}}}`), []byte(`{"arguments":[]}`), "")
	f.Fuzz(func(t *testing.T, schema, params []byte, value string) {
		b := paramBindings(schema)
		if len(b) > maxParamBindingsPerTool {
			t.Fatalf("%d bindings", len(b))
		}
		if json.Valid(params) {
			h := http.Header{}
			for _, x := range b {
				h.Set(paramHeaderPrefix+x.name, value)
			}
			_ = checkParamHeaders(h, params, b)
		}
		_, _ = decodeParamHeader(value)
		enc := base64Open + base64.StdEncoding.EncodeToString([]byte(value)) + base64Close
		if got, ok := decodeParamHeader(enc); !ok || got != value {
			t.Fatalf("decode(encode(%q)) = %q, %v", value, got, ok)
		}
	})
}
