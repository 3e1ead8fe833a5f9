package mcphttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/mcp"
)

// The x-mcp-header rules (docs/mcp.md, "Mcp-Param headers"): each invalid
// schema names its fault; valid ones give their bindings in path order.
func TestParseToolHeaders(t *testing.T) {
	for _, c := range []struct {
		schema  string
		invalid string // a substring of the reason; "" for a valid schema
		names   string // the bindings' header names, comma-separated
	}{
		{`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"}}}`, "", "B,N,Region"},
		{`{"type":"object","properties":{"outer":{"type":"object","properties":{"inner":{"type":"string","x-mcp-header":"Inner"}}}}}`, "", "Inner"},
		{`{"type":"object","properties":{"q":{"$ref":"#/$defs/q"}},"$defs":{"q":{"type":"string"}}}`, "", ""},
		{`true`, "", ""},
		{``, "", ""},
		{`{"properties":{"x-mcp-header":{"type":"string"}}}`, "", ""}, // a property named so is no annotation
		{`{"properties":{"v":{"type":"string","x-mcp-header":""}}}`, "is empty", ""},
		{`{"properties":{"v":{"type":"string","x-mcp-header":7}}}`, "not a string", ""},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`, "not an HTTP header name", ""},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"Region:Primary"}}}`, "not an HTTP header name", ""},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"Région"}}}`, "not an HTTP header name", ""},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"Region\t1"}}}`, "not an HTTP header name", ""},
		{`{"properties":{"v":{"type":"object","x-mcp-header":"V"}}}`, "only string, integer and boolean", ""},
		{`{"properties":{"v":{"type":"array","x-mcp-header":"V"}}}`, "only string, integer and boolean", ""},
		{`{"properties":{"v":{"type":"null","x-mcp-header":"V"}}}`, "only string, integer and boolean", ""},
		{`{"properties":{"v":{"type":"number","x-mcp-header":"V"}}}`, "only string, integer and boolean", ""},
		{`{"properties":{"v":{"x-mcp-header":"V"}}}`, "no type", ""},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}}`, "also the header of property", ""},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, "without regard to case", ""},
		{`{"x-mcp-header":"Root","type":"object"}`, "the schema's root", ""},
		{`{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, "reached through \"properties\"", ""},
		{`{"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "reached through \"properties\"", ""},
		{`{"$defs":{"d":{"type":"string","x-mcp-header":"D"}}}`, "reached through \"properties\"", ""},
		{`{"if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, "reached through \"properties\"", ""},
		{`{"additionalProperties":{"type":"string","x-mcp-header":"A"}}`, "reached through \"properties\"", ""},
		{`{"properties":{"a":{"type":"object","patternProperties":{"^x":{"type":"string","x-mcp-header":"A"}}}}}`, "reached through \"properties\"", ""},
		{strings.Repeat(`{"properties":{"a":`, 70) + `{"type":"string"}` + strings.Repeat(`}}`, 70), "nested deeper", ""},
	} {
		th := parseToolHeaders(json.RawMessage(c.schema))
		if c.invalid == "" {
			if th.invalid != "" {
				t.Errorf("%s: invalid (%s), want valid", c.schema, th.invalid)
				continue
			}
			var names []string
			for _, b := range th.bindings {
				names = append(names, b.name)
			}
			if got := strings.Join(names, ","); got != c.names {
				t.Errorf("%s: bindings %q, want %q", c.schema, got, c.names)
			}
			continue
		}
		if !strings.Contains(th.invalid, c.invalid) {
			t.Errorf("%s: reason %q, want it to say %q", c.schema, th.invalid, c.invalid)
		}
	}
}

func TestParamHeaderValues(t *testing.T) {
	th := parseToolHeaders(json.RawMessage(`{"properties":{"s":{"type":"string","x-mcp-header":"S"},"i":{"type":"integer","x-mcp-header":"I"},"b":{"type":"boolean","x-mcp-header":"B"},"o":{"type":"object","properties":{"in":{"type":"string","x-mcp-header":"In"}}}}}`))
	for _, c := range []struct {
		args, want string
	}{
		{`{"s":"us-west1","i":42,"b":false,"o":{"in":"x"}}`, "Mcp-Param-B: false|Mcp-Param-I: 42|Mcp-Param-In: x|Mcp-Param-S: us-west1"},
		{`{"s":null,"i":null}`, ""},
		{`{}`, ""},
		{`{"s":""}`, "Mcp-Param-S: "},
		{`{"s":"us west 1"}`, "Mcp-Param-S: us west 1"},
		{`{"s":" padded "}`, "Mcp-Param-S: =?base64?" + base64.StdEncoding.EncodeToString([]byte(" padded ")) + "?="},
		{`{"s":"Hello, 世界"}`, "Mcp-Param-S: =?base64?" + base64.StdEncoding.EncodeToString([]byte("Hello, 世界")) + "?="},
		{`{"s":"line1\r\nline2"}`, "Mcp-Param-S: =?base64?" + base64.StdEncoding.EncodeToString([]byte("line1\r\nline2")) + "?="},
		{`{"s":"\tx"}`, "Mcp-Param-S: =?base64?" + base64.StdEncoding.EncodeToString([]byte("\tx")) + "?="},
		{`{"s":"=?base64?abc?="}`, "Mcp-Param-S: =?base64?" + base64.StdEncoding.EncodeToString([]byte("=?base64?abc?=")) + "?="},
		{`{"o":"not an object"}`, ""},
	} {
		hdr, err := th.headers("t", json.RawMessage(c.args))
		if err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		var got []string
		for _, h := range hdr {
			got = append(got, h[0]+": "+h[1])
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s: %q, want %q", c.args, g, c.want)
		}
	}
	if _, err := th.headers("t", json.RawMessage(`{"s":{"a":1}}`)); err == nil || !strings.Contains(err.Error(), `argument "s" of tool "t" is an object or array`) {
		t.Errorf("an object argument: %v", err)
	}
}

// A tools/list result keeps every valid tool byte for byte and loses the
// invalid ones; a result without invalid tools is returned as is.
func TestFilterTools(t *testing.T) {
	valid := `{"name":"a","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"q":{"$ref":"#/$defs/q"}},"$defs":{"q":{"type":"string"}}}}`
	bad := `{"name":"b","inputSchema":{"properties":{"v":{"type":"object","x-mcp-header":"V"}}}}`
	res := json.RawMessage(`{"tools":[` + valid + `],"nextCursor":"2"}`)
	out, tools, dropped := filterTools(res)
	if string(out) != string(res) || len(dropped) != 0 || len(tools) != 1 {
		t.Fatalf("all valid: %s %v %v", out, tools, dropped)
	}
	out, tools, dropped = filterTools(json.RawMessage(`{"tools":[` + valid + `,` + bad + `],"nextCursor":"2"}`))
	if want := `{"nextCursor":"2","tools":[` + valid + `]}`; string(out) != want {
		t.Fatalf("filtered: %s\nwant %s", out, want)
	}
	if len(dropped) != 1 || !strings.HasPrefix(dropped[0], `tool "b": property "v"`) || tools["b"].invalid == "" {
		t.Fatalf("dropped %v", dropped)
	}
}

// Over HTTP with a 2026-07-28 server: the implicit listing, the headers,
// the refusal of an invalid tool and the -32020 path.
func TestHTTPClientParamHeaders(t *testing.T) {
	u := serveFake(t, "modern-headers")
	var warned []string
	c, err := Start(context.Background(), Options{URL: u, Warn: func(m string) { warned = append(warned, m) }}, mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.Stop() }()
	if n := c.Negotiated(); n.Era != mcp.EraModern {
		t.Fatalf("negotiated %+v", n)
	}
	res, err := c.Request(context.Background(), "tools/call", callTool("route", map[string]any{"region": "eu", "priority": 3}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `route got [Mcp-Param-Priority: 3; Mcp-Param-Region: eu]`) {
		t.Fatalf("result %s", res)
	}
	if len(warned) != 0 {
		t.Fatalf("a listing of clawkit's own warned: %v", warned)
	}
	_, err = c.Request(context.Background(), "tools/call", callTool("bad", map[string]any{"data": map[string]any{}}))
	if me := mcpErr(t, err); me.Code != CodeInvalidToolHeaders || me.Delivered {
		t.Fatalf("invalid tool: %+v", me)
	}
	res, err = c.Request(context.Background(), "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res), `"bad"`) || !strings.Contains(string(res), `"plain"`) || len(warned) != 1 {
		t.Fatalf("tools/list %s, warned %v", res, warned)
	}

	m, err := Start(context.Background(), Options{URL: serveFake(t, "modern-mismatch")}, mcp.Options{ProtocolVersion: mcp.ModernProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = m.Stop() }()
	_, err = m.Request(context.Background(), "tools/call", callTool("route", map[string]any{"region": "eu"}))
	if me := mcpErr(t, err); me.Code != CodeHeaderMismatch || me.RPC == nil || me.RPC.Code != rpcHeaderMismatch || !strings.Contains(me.Message, "tools/list asked 2 times") {
		t.Fatalf("mismatch: %+v", me)
	}
}

// FuzzToolHeaders: any schema is either valid, with bindings that are
// tokens unique without regard to case, or invalid with a reason; the
// headers of any arguments are safe header values.
func FuzzToolHeaders(f *testing.F) {
	f.Add(`{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}`, `{"a":"x"}`)
	f.Add(`{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"integer","x-mcp-header":"a"}}}`, `{"a":" y","b":1}`)
	f.Add(`{"anyOf":[{"x-mcp-header":"Z"}],"properties":{"o":{"type":"object","properties":{"i":{"type":"boolean","x-mcp-header":"I"}}}}}`, `{"o":{"i":true}}`)
	f.Add(`[1,2]`, `null`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		th := parseToolHeaders(json.RawMessage(schema))
		if th.invalid != "" {
			if len(th.bindings) != 0 {
				t.Fatal("an invalid schema with bindings")
			}
			return
		}
		seen := map[string]bool{}
		for _, b := range th.bindings {
			k := strings.ToLower(b.name)
			if !validToken(b.name) || seen[k] || len(b.path) == 0 || !headerValueTypes[b.typ] {
				t.Fatalf("binding %+v", b)
			}
			seen[k] = true
		}
		hdr, err := th.headers("t", json.RawMessage(args))
		if err != nil {
			return
		}
		for _, h := range hdr {
			if !validToken(h[0]) || !validHeaderValue(h[1]) || strings.ContainsAny(h[1], "\t\r\n") || strings.TrimSpace(h[1]) != h[1] {
				t.Fatalf("header %q: %q", h[0], h[1])
			}
			if dec, ok := strings.CutPrefix(h[1], "=?base64?"); ok {
				if _, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(dec, "?=")); err != nil {
					t.Fatalf("header %q: %q is not base64", h[0], h[1])
				}
			}
		}
	})
}

// FuzzFilterTools: a tools/list result is returned unchanged unless a
// tool is dropped, and then as valid JSON without that tool; a 400 body is
// a JSON-RPC error only when it says so.
func FuzzFilterTools(f *testing.F) {
	f.Add(`{"tools":[{"name":"a","inputSchema":{"properties":{"v":{"type":"object","x-mcp-header":"V"}}}},{"name":"b"}],"nextCursor":"x"}`)
	f.Add(`{"tools":[{"name":"a","inputSchema":{"$ref":"#/x"}}]}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"m"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, _, dropped := filterTools(json.RawMessage(in))
		if len(dropped) == 0 {
			if string(out) != in {
				t.Fatalf("changed without a drop: %s", out)
			}
		} else if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %s", out)
		}
		if rpc := rpcErrorBody([]byte(in)); rpc != nil && rpc.Code == 0 {
			t.Fatal("an error without a code")
		}
	})
}
