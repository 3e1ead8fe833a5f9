package mcphttp

// Mcp-Param headers (MCP 2026-07-28, Streamable HTTP, "Custom headers
// from tool parameters"; docs/mcp.md, "Mcp-Param headers"): a tool's
// inputSchema may mark a property with "x-mcp-header": NAME, and a client
// calling the tool over HTTP repeats that argument's value in the header
// Mcp-Param-NAME, so that intermediaries can route on it without reading
// the body. The annotations are data from the server: a tool whose
// annotations break the spec's rules is never called.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/clawkit/clawkit/pkg/mcp"
)

const (
	xMCPHeader        = "x-mcp-header"
	paramHeaderPrefix = "Mcp-Param-"
	// maxSchemaDepth bounds how deep a schema is walked; deeper is
	// refused rather than half-checked.
	maxSchemaDepth = 64
	// rpcHeaderMismatch is the 2026-07-28 error a server answers when the
	// Mcp-Param headers disagree with the body.
	rpcHeaderMismatch = -32020
)

// headerBinding is one annotated property: its path from the arguments
// object, the header name it asks for and its JSON Schema type.
type headerBinding struct {
	path []string
	name string
	typ  string
}

// toolHeaders is what a tool's inputSchema says about Mcp-Param headers:
// its bindings, or why its annotations are invalid.
type toolHeaders struct {
	bindings []headerBinding
	invalid  string
}

// Keywords whose values are schemas that no properties chain reaches: an
// x-mcp-header under them is invalid (the spec's static reachability).
var (
	subschemaKeys    = []string{"items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames", "contains", "not", "if", "then", "else", "contentSchema"}
	subschemaArrays  = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	subschemaMaps    = []string{"patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	headerValueTypes = map[string]bool{"string": true, "integer": true, "boolean": true}
)

// parseToolHeaders reads the x-mcp-header annotations of a tool's
// inputSchema, as sent (a $ref is never followed). A schema that is not
// an object has none.
func parseToolHeaders(schema json.RawMessage) toolHeaders {
	w := headerWalk{seen: map[string]string{}}
	w.walk(schema, true, nil, 0)
	if w.invalid != "" {
		return toolHeaders{invalid: w.invalid}
	}
	return toolHeaders{bindings: w.bindings}
}

type headerWalk struct {
	bindings []headerBinding
	seen     map[string]string // lower-cased header name -> its property
	invalid  string
}

func (w *headerWalk) fail(format string, args ...any) {
	if w.invalid == "" {
		w.invalid = fmt.Sprintf(format, args...)
	}
}

// walk checks one schema object; reachable says whether a chain of
// properties keywords from the root leads to it, path is that chain.
func (w *headerWalk) walk(raw json.RawMessage, reachable bool, path []string, depth int) {
	if w.invalid != "" || mcp.FirstByte(raw) != '{' {
		return
	}
	if depth > maxSchemaDepth {
		w.fail("the schema is nested deeper than %d levels", maxSchemaDepth)
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return
	}
	if v, ok := obj[xMCPHeader]; ok {
		w.binding(obj, v, reachable, path)
	}
	if props := obj["properties"]; mcp.FirstByte(props) == '{' {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(props, &m)
		for _, k := range sortedKeys(m) {
			w.walk(m[k], reachable, append(path[:len(path):len(path)], k), depth+1)
		}
	}
	for _, k := range subschemaKeys {
		w.walk(obj[k], false, path, depth+1)
	}
	for _, k := range subschemaArrays {
		if mcp.FirstByte(obj[k]) == '[' {
			var a []json.RawMessage
			_ = json.Unmarshal(obj[k], &a)
			for _, s := range a {
				w.walk(s, false, path, depth+1)
			}
		}
	}
	for _, k := range subschemaMaps {
		if mcp.FirstByte(obj[k]) == '{' {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(obj[k], &m)
			for _, name := range sortedKeys(m) {
				w.walk(m[name], false, path, depth+1)
			}
		}
	}
}

// binding checks one annotation against the spec's rules: on a property
// reached through properties alone, a non-empty RFC 9110 token, unique
// without regard to case, on a string, integer or boolean property.
func (w *headerWalk) binding(obj map[string]json.RawMessage, v json.RawMessage, reachable bool, path []string) {
	where := "the schema's root"
	if len(path) > 0 {
		where = "property " + quoteClip(strings.Join(path, "."))
	}
	if !reachable || len(path) == 0 {
		w.fail("%s: x-mcp-header is allowed only on a property reached through \"properties\"", where)
		return
	}
	var name string
	if json.Unmarshal(v, &name) != nil {
		w.fail("%s: x-mcp-header is not a string", where)
		return
	}
	switch {
	case name == "":
		w.fail("%s: x-mcp-header is empty", where)
		return
	case !validToken(name):
		w.fail("%s: x-mcp-header %s is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", where, quoteClip(name))
		return
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	if !headerValueTypes[typ] {
		t := "no type"
		if len(obj["type"]) > 0 {
			t = "type " + mcp.Clip(bytes.TrimSpace(obj["type"]), 80) // JSON as sent
		}
		w.fail("%s: x-mcp-header %s is on a property of %s; only string, integer and boolean may be mirrored", where, quoteClip(name), t)
		return
	}
	key := strings.ToLower(name)
	if other, dup := w.seen[key]; dup {
		w.fail("%s: x-mcp-header %s is also the header of property %s (names are compared without regard to case)", where, quoteClip(name), quoteClip(other))
		return
	}
	w.seen[key] = strings.Join(path, ".")
	w.bindings = append(w.bindings, headerBinding{path: append([]string(nil), path...), name: name, typ: typ})
}

// headers are the Mcp-Param headers of one call with these arguments, in
// the order of the bindings: an argument absent or null has none.
func (th toolHeaders) headers(tool string, args json.RawMessage) ([][2]string, error) {
	var out [][2]string
	for _, b := range th.bindings {
		v, ok := lookupPath(args, b.path)
		if !ok {
			continue
		}
		var s string
		switch mcp.FirstByte(v) {
		case 'n':
			continue
		case '"':
			if json.Unmarshal(v, &s) != nil {
				continue
			}
		case 't', 'f':
			s = string(bytes.TrimSpace(v))
		case '{', '[':
			return nil, fmt.Errorf("argument %s of tool %s is an object or array, but its schema mirrors it in header %s%s, which takes a string, integer or boolean",
				quoteClip(strings.Join(b.path, ".")), quoteClip(tool), paramHeaderPrefix, b.name)
		default:
			s = string(bytes.TrimSpace(v)) // a number, as the caller wrote it
		}
		out = append(out, [2]string{paramHeaderPrefix + b.name, paramValue(s)})
	}
	return out, nil
}

// lookupPath is the value at path in the arguments object.
func lookupPath(args json.RawMessage, path []string) (json.RawMessage, bool) {
	cur := args
	for _, k := range path {
		if mcp.FirstByte(cur) != '{' {
			return nil, false
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		v, ok := m[k]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// paramValue is s as an Mcp-Param header value: as is when it is printable
// ASCII without a blank at either end (the empty string included), else
// the =?base64?…?= form of its UTF-8 bytes (also for a plain value that
// looks like that form).
func paramValue(s string) string {
	plain := !(strings.HasPrefix(s, base64Open) && strings.HasSuffix(s, base64Close)) &&
		!strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ")
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return base64Open + base64.StdEncoding.EncodeToString([]byte(s)) + base64Close
}

func sortedKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// quoteClip quotes text from the server for a message, clipped.
func quoteClip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// listedTool is the part of a tools/list entry the annotations need.
type listedTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// filterTools reads a tools/list result: every tool's header annotations,
// and the result without the tools whose annotations are invalid (the
// others kept byte for byte). The result is returned as is when every
// tool is valid.
func filterTools(res json.RawMessage) (out json.RawMessage, tools map[string]toolHeaders, dropped []string) {
	var top map[string]json.RawMessage
	if json.Unmarshal(res, &top) != nil || mcp.FirstByte(top["tools"]) != '[' {
		return res, nil, nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(top["tools"], &raw) != nil {
		return res, nil, nil
	}
	tools = make(map[string]toolHeaders, len(raw))
	kept := raw[:0:0]
	for _, r := range raw {
		var t listedTool
		if json.Unmarshal(r, &t) != nil {
			kept = append(kept, r)
			continue
		}
		th := parseToolHeaders(t.InputSchema)
		tools[t.Name] = th
		if th.invalid != "" {
			dropped = append(dropped, fmt.Sprintf("tool %s: %s", quoteClip(t.Name), th.invalid))
			continue
		}
		kept = append(kept, r)
	}
	if len(dropped) == 0 {
		return res, tools, nil
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return res, tools, dropped
	}
	top["tools"] = b
	if out, err = json.Marshal(top); err != nil {
		return res, tools, dropped
	}
	return out, tools, dropped
}
