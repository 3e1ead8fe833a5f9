package mcphttp

// The byte-level JSON edits and the SEP-2243 header checks of the proxy's
// 2026-07-28 service (docs/mcp.md, "The proxy's eras"). Every input here is
// untrusted: a client's body and headers, a server's lines and tool
// schemas. FuzzStatelessJSON and FuzzParamHeaders cover them.

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/clawkit/clawkit/pkg/mcp"
)

const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
	metaLogLevel        = "io.modelcontextprotocol/logLevel"

	// JSON-RPC codes of 2026-07-28 that carry an HTTP status.
	codeInvalidParams        = -32602
	codeHeaderMismatch       = -32020
	codeMissingCapability    = -32021
	codeUnsupportedVersion   = -32022
	maxParamBindingsPerTool  = 64
	base64Open, base64Close  = "=?base64?", "?="
	maxSafeInt, minSafeInt   = 1<<53 - 1, -(1<<53 - 1)
	headerProtocolVersion    = "Mcp-Protocol-Version"
	headerMethod, headerName = "Mcp-Method", "Mcp-Name"
)

// getMember is the raw value of member key of the JSON object obj (the
// last one when the name repeats, as encoding/json reads it); nil when obj
// is not an object or has no such member. obj must be valid JSON.
func getMember(obj []byte, key string) []byte {
	if mcp.FirstByte(obj) != '{' {
		return nil
	}
	var out []byte
	_ = mcp.TopLevelMembersRaw(obj, func(k, v []byte) error {
		if string(k) == key {
			out = v
		}
		return nil
	})
	return out
}

// getPath follows keys through nested objects.
func getPath(obj []byte, keys ...string) []byte {
	for _, k := range keys {
		obj = getMember(obj, k)
		if obj == nil {
			return nil
		}
	}
	return obj
}

// setMember is obj with every member named key given the value val, or
// with key:val appended when it has none. obj must be a valid JSON object;
// anything else comes back unchanged.
func setMember(obj []byte, key string, val []byte) []byte {
	if mcp.FirstByte(obj) != '{' {
		return obj
	}
	b := make([]byte, 0, len(obj)+len(val)+len(key)+4)
	b = append(b, '{')
	n, found := 0, false
	_ = mcp.TopLevelMembersRaw(obj, func(k, v []byte) error {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = mcp.AppendJSONString(b, string(k))
		b = append(b, ':')
		if string(k) == key {
			b = append(b, val...)
			found = true
		} else {
			b = append(b, v...)
		}
		return nil
	})
	if !found {
		if n > 0 {
			b = append(b, ',')
		}
		b = mcp.AppendJSONString(b, key)
		b = append(b, ':')
		b = append(b, val...)
	}
	return append(b, '}')
}

// setPath sets the member at the end of keys, through nested objects that
// must all exist: a path that is missing leaves obj unchanged.
func setPath(obj []byte, val []byte, keys ...string) []byte {
	if len(keys) == 1 {
		if getMember(obj, keys[0]) == nil {
			return obj
		}
		return setMember(obj, keys[0], val)
	}
	inner := getMember(obj, keys[0])
	if inner == nil {
		return obj
	}
	return setMember(obj, keys[0], setPath(inner, val, keys[1:]...))
}

// jsonStringValue is a JSON string's text; ok false for any other value.
func jsonStringValue(raw []byte) (string, bool) {
	if mcp.FirstByte(raw) != '"' {
		return "", false
	}
	return mcp.JSONString(raw)
}

// errorCode is the code of a JSON-RPC error answer; ok false when msg is
// not one.
func errorCode(msg []byte) (int64, bool) {
	e := getMember(msg, "error")
	if e == nil {
		return 0, false
	}
	c := getMember(e, "code")
	if c == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(c), 10, 64)
	return n, err == nil
}

// modernErrorStatus is the HTTP status of an answer under 2026-07-28
// (SEP-2575): 404 for an unknown method, 400 for the errors that say the
// request itself is wrong, 200 for everything else.
func modernErrorStatus(msg []byte) int {
	code, ok := errorCode(msg)
	if !ok {
		return http.StatusOK
	}
	switch code {
	case mcp.RPCMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// paramBindings is the proxy's reading of a tool's x-mcp-header
// annotations: the client's own (parseToolHeaders, docs/mcp.md "Mcp-Param
// headers"), so the proxy holds a call to exactly what clawkit's client
// sends; at most maxParamBindingsPerTool. A tool whose annotations are
// invalid binds nothing here: the server still sees the call and judges it.
func paramBindings(schema []byte) []headerBinding {
	th := parseToolHeaders(schema)
	if th.invalid != "" {
		return nil
	}
	return th.bindings[:min(len(th.bindings), maxParamBindingsPerTool)]
}

// decodeParamHeader undoes SEP-2243's value encoding: =?base64?…?= wraps
// standard Base64 (padding required); anything else is the value itself.
func decodeParamHeader(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, base64Open); ok {
		if inner, ok = strings.CutSuffix(inner, base64Close); ok {
			b, err := base64.StdEncoding.Strict().DecodeString(inner)
			if err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return v, true
}

// headerMatchesArg compares a decoded header with the argument's JSON
// value: a string exactly, a boolean as true/false, an integer (within
// JavaScript's safe range) numerically. Other values never match.
func headerMatchesArg(h string, arg []byte) bool {
	switch mcp.FirstByte(arg) {
	case '"':
		s, ok := mcp.JSONString(arg)
		return ok && s == h
	case 't', 'f':
		return string(arg) == h
	}
	f, err := strconv.ParseFloat(string(arg), 64)
	if err != nil || f != math.Trunc(f) || f > maxSafeInt || f < minSafeInt {
		return false
	}
	hf, err := strconv.ParseFloat(h, 64)
	if err != nil || math.IsNaN(hf) || math.IsInf(hf, 0) {
		return false
	}
	return hf == f
}

// checkParamHeaders checks a tools/call's Mcp-Param-* headers against the
// tool's bindings: a header for each argument given (not null), none for
// an argument absent; "" when they agree, else what is wrong.
func checkParamHeaders(h http.Header, params []byte, bindings []headerBinding) string {
	args := getMember(params, "arguments")
	for _, b := range bindings {
		name := paramHeaderPrefix + b.name
		hv, present := h[http.CanonicalHeaderKey(name)]
		arg := getPath(args, b.path...)
		dotted := strings.Join(b.path, ".")
		if arg == nil || string(arg) == "null" {
			if present && len(hv) > 0 && hv[0] != "" {
				return fmt.Sprintf("header mismatch: %s is set but the argument %q is absent", name, dotted)
			}
			continue
		}
		if !present || len(hv) == 0 || hv[0] == "" {
			return fmt.Sprintf("header mismatch: %s is missing for the argument %q", name, dotted)
		}
		dec, ok := decodeParamHeader(hv[0])
		if !ok {
			return fmt.Sprintf("header mismatch: %s is not valid Base64", name)
		}
		if !headerMatchesArg(dec, arg) {
			return fmt.Sprintf("header mismatch: %s does not match the argument %q", name, dotted)
		}
	}
	return ""
}

// nameOf is the Mcp-Name a request must carry: params.name of tools/call
// and prompts/get, params.uri of resources/read; ok false for others.
func nameOf(method string, params []byte) (string, bool) {
	var key string
	switch method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	default:
		return "", false
	}
	s, _ := jsonStringValue(getMember(params, key))
	return s, true
}

// checkStandardHeaders checks Mcp-Method and Mcp-Name against the body
// (values are case-sensitive; Go's server has already trimmed the
// whitespace around them). "" when they agree.
func checkStandardHeaders(h http.Header, method string, params []byte) string {
	hm := strings.Trim(h.Get(headerMethod), " \t")
	switch {
	case hm == "":
		return "the Mcp-Method header is required"
	case hm != method:
		return fmt.Sprintf("header mismatch: Mcp-Method %q does not match the body's method %q", hm, method)
	}
	if want, ok := nameOf(method, params); ok {
		hn := strings.Trim(h.Get(headerName), " \t")
		switch {
		case hn == "":
			return fmt.Sprintf("the Mcp-Name header is required for %s", method)
		case hn != want:
			return fmt.Sprintf("header mismatch: Mcp-Name %q does not match the body's %q", hn, want)
		}
	}
	return ""
}
