package mcpstdio

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/clawkit/clawkit/pkg/mcp"
)

// FuzzMetaVersion checks the pending bound's scan for params._meta's protocol
// version against decoding params with encoding/json.
func FuzzMetaVersion(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":{}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}`,
		`{"_meta":null}`, `{"_meta":[1]}`, `[]`, `"x"`, `{}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return // the relay only looks at valid lines
		}
		var want string
		wantOK := false
		var p map[string]json.RawMessage
		if bytes.TrimSpace(params)[0] == '{' && json.Unmarshal(params, &p) == nil {
			var meta map[string]json.RawMessage
			if m := p["_meta"]; len(m) > 0 && m[0] == '{' && json.Unmarshal(m, &meta) == nil {
				if v := meta[mcp.MetaProtocolVersion]; len(v) > 0 && v[0] == '"' {
					wantOK = json.Unmarshal(v, &want) == nil
				}
			}
		}
		got, ok := metaVersion(params)
		if ok != wantOK || got != want {
			t.Fatalf("metaVersion(%q) = %q, %v; want %q, %v", params, got, ok, want, wantOK)
		}
	})
}
