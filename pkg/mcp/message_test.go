package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestParseMessage(t *testing.T) {
	ok := []struct {
		line string
		kind MsgKind
		id   int64
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, KindResponse, 1},
		{`{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"x"}}`, KindResponse, -3},
		{`{"jsonrpc":"2.0","id":9007199254740991,"result":{"a":1}}`, KindResponse, 9007199254740991},
		{`{"jsonrpc":"2.0","id":1.0,"result":{}}`, KindResponse, 1},
		{`{"jsonrpc":"2.0","id":1e3,"result":{}}`, KindResponse, 1000},
		{`{"jsonrpc":"2.0","id":4,"result":{"text":"héllo ✓ 🦀"}}`, KindResponse, 4},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, KindNotification, 0},
		{`{"jsonrpc":"2.0","id":"abc","method":"ping"}`, KindRequest, 0},
		{`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}`, KindRequest, 0},
		{" { \"jsonrpc\" : \"2.0\" ,\n \"id\" : 5 , \"result\" : { \"k\": [ 1 , {\"a\":\"}\\\"]\"} ] } , \"extra\": null } ", KindResponse, 5},
		{`{"jsonrpc":"2\u002e0","id":2,"result":{"x":1},"jsonrpc2":1}`, KindResponse, 2},
		{`{"jsonrpc":"2.0","method":"a\/b","params":{"x":"\""}}`, KindNotification, 0},
	}
	for _, c := range ok {
		m, err := ParseMessage([]byte(c.line))
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if m.Kind != c.kind || (c.kind == KindResponse && m.ID != c.id) {
			t.Errorf("%s: kind %v id %d", c.line, m.Kind, m.ID)
		}
	}
	bad := []struct{ line, code string }{
		{`not json`, "malformed_message"},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, "malformed_message"},
		{`{"id":1,"result":{}}`, "malformed_message"},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"error":"boom"}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","id":"1","result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","id":9007199254740992,"result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","id":-9007199254740992,"result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","id":1e300,"result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, "malformed_message"},
		{`{"jsonrpc":"2.0","method":""}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"id":2}`, "malformed_message"},
		{`{"JSONRPC":"2.0","id":1,"result":{}}`, "malformed_message"},
		{`{"jsonrpc":"2.0","ID":1,"result":{}}`, "invalid_response_id"},
		{`{"jsonrpc":"2.0","method":7}`, "malformed_message"},
		{`"just a string"`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"result":{}} trailing`, "malformed_message"},
		// Every MCP result is an object.
		{`{"jsonrpc":"2.0","id":1,"result":null}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"result":1}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"result":"x"}`, "malformed_message"},
		{`{"jsonrpc":"2.0","id":1,"result":[]}`, "malformed_message"},
		// Invalid UTF-8 is refused, not turned into U+FFFD.
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}", "malformed_message"},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"t\":\"\xc3\"}}", "malformed_message"},
	}
	for _, c := range bad {
		_, err := ParseMessage([]byte(c.line))
		var me *Error
		if !errors.As(err, &me) || me.Class != ClassProtocol || string(me.Code) != c.code {
			t.Errorf("%s: err = %v, want protocol %s", c.line, err, c.code)
		}
	}
}

func TestAppendRequestIsOneValidLine(t *testing.T) {
	b := AppendRequest(nil, 42, "tools/\"call\"\n<&>", json.RawMessage(`{"a":1}`))
	if b[len(b)-1] != '\n' {
		t.Fatal("no LF")
	}
	for _, c := range b[:len(b)-1] {
		if c == '\n' {
			t.Fatal("LF inside the message")
		}
	}
	var v struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int64           `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.JSONRPC != "2.0" || v.ID != 42 || v.Method != "tools/\"call\"\n<&>" || string(v.Params) != `{"a":1}` {
		t.Fatalf("%+v", v)
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"n","params":[1]}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":1,"message":""}}`,
		`{"JSONRPC":"2.0","ID":1,"RESULT":1}`,
		`garbage`, ``, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ParseMessage(line)
		if err == nil && !utf8.Valid(line) {
			t.Fatal("invalid UTF-8 accepted")
		}
		if err != nil {
			var me *Error
			if !errors.As(err, &me) || me.Class != ClassProtocol {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		switch m.Kind {
		case KindResponse:
			if m.ID > MaxSafeInteger || m.ID < -MaxSafeInteger {
				t.Fatalf("unsafe id %d accepted", m.ID)
			}
			if (m.Result == nil) == (m.Error == nil) {
				t.Fatal("response without exactly one of result and error")
			}
			if m.Result != nil && m.Result[0] != '{' {
				t.Fatalf("non-object result %q accepted", m.Result)
			}
		case KindRequest:
			if len(m.RawID) == 0 || m.Method == "" {
				t.Fatal("request without id or method")
			}
			// Our answer must be valid JSON when the id is echoed back.
			ans := append(append([]byte(`{"jsonrpc":"2.0","id":`), m.RawID...), `,"result":{}}`...)
			if !json.Valid(ans) {
				t.Fatalf("echoed id %q makes invalid JSON", m.RawID)
			}
		case KindNotification:
			if m.Method == "" {
				t.Fatal("notification without method")
			}
		default:
			t.Fatalf("unknown kind %v", m.Kind)
		}
	})
}

// FuzzTopLevelMembers checks the member scanner against encoding/json on
// every valid JSON object without repeated names.
func FuzzTopLevelMembers(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x\"}","c":[{"d":"]"}],"e":null,"f":true,"g":-1.5e3}`,
		` { "k" : { } , "\u0041" : [ ] } `,
		`{}`, `{"":""}`, `{"a\\":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		if !json.Valid(b) || json.Unmarshal(b, &want) != nil || want == nil {
			return // not an object (null also decodes into a map)
		}
		got := map[string][]byte{}
		dup := false
		err := TopLevelMembers(b, func(k string, v []byte) error {
			if _, ok := got[k]; ok {
				dup = true
			}
			got[k] = v
			return nil
		})
		if err != nil {
			t.Fatalf("valid object refused: %v", err)
		}
		if dup {
			return // encoding/json keeps the last; ParseMessage refuses
		}
		if len(got) != len(want) {
			t.Fatalf("members %d, want %d", len(got), len(want))
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				t.Fatalf("member %q missing", k)
			}
			var cg, cw bytes.Buffer
			if json.Compact(&cg, g) != nil || json.Compact(&cw, w) != nil || cg.String() != cw.String() {
				t.Fatalf("member %q = %q, want %q", k, g, w)
			}
		}
	})
}

func TestParseMessageDoesNotAliasItsInput(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"k":"v"}}`)
	m, err := ParseMessage(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x'
	}
	if string(m.Result) != `{"k":"v"}` {
		t.Fatalf("result changed with the input buffer: %q", m.Result)
	}
}
