package mcp

import (
	"encoding/json"
	"testing"
)

func TestWithMeta(t *testing.T) {
	c := &eraState{meta: BuildMeta("2026-07-28", json.RawMessage(`{ }`), Implementation{Name: "t", Version: "1"})}
	cases := map[string]string{
		``:             `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}`,
		`null`:         `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}`,
		`{}`:           `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}`,
		`{"name":"x"}`: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}},"name":"x"}`,
		`{"_meta":{"progressToken":1,"io.modelcontextprotocol/clientInfo":{"name":"mine"}}}`: `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mine"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1}}`,
		`[1,2]`: `[1,2]`,
	}
	for in, want := range cases {
		if got := string(c.withMeta(json.RawMessage(in))); got != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
	if got := string((&eraState{}).withMeta(json.RawMessage(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("legacy era changed params: %s", got)
	}
}

// FuzzWithMeta: any JSON object given as params stays one valid JSON
// object carrying our protocol version (or the caller's own).
func FuzzWithMeta(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"_meta":{}}`, `{"_meta":null}`, ` { "x" : [ ] } `, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}`} {
		f.Add([]byte(s))
	}
	c := &eraState{meta: BuildMeta("2026-07-28", nil, Implementation{})}
	f.Fuzz(func(t *testing.T, in []byte) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(in, &obj) != nil || obj == nil {
			return
		}
		out := c.withMeta(in)
		var got struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if !json.Valid(out) || json.Unmarshal(out, &got) != nil || got.Meta["io.modelcontextprotocol/protocolVersion"] == nil {
			t.Fatalf("%s → %s", in, out)
		}
	})
}
