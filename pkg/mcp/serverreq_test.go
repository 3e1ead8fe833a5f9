package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sep1034Form = `{"message":"m","requestedSchema":{"type":"object","properties":{
 "name":{"type":"string","default":"Ada"},"age":{"type":"integer","default":36},
 "score":{"type":"number","default":9.5},"tier":{"type":"string","enum":["free","pro"],"default":"pro"},
 "verified":{"type":"boolean","default":true},"tags":{"type":"array","items":{"enum":["a","b"]},"default":["a"]}}}}`

func TestElicitPolicies(t *testing.T) {
	answers, err := ParseElicitationAnswers([]byte(`{"name":"Grace","confirmed":true,"tier":"free"}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, policy, params, want string
		answers                    map[string]json.RawMessage
	}{
		{"decline by default", "", sep1034Form, `{"action":"decline"}`, nil},
		{"defaults", ElicitDefaults, sep1034Form, `{"action":"accept","content":{"name":"Ada","age":36,"score":9.5,"tier":"pro","verified":true,"tags":["a"]}}`, nil},
		{"answers then defaults", ElicitAnswers, sep1034Form, `{"action":"accept","content":{"name":"Grace","age":36,"score":9.5,"tier":"free","verified":true,"tags":["a"]}}`, answers},
		{"a field without default", ElicitDefaults, `{"message":"m","requestedSchema":{"type":"object","properties":{"confirmed":{"type":"boolean"}}}}`, `{"action":"decline"}`, nil},
		{"answered field without default", ElicitAnswers, `{"message":"m","requestedSchema":{"type":"object","properties":{"confirmed":{"type":"boolean"}}}}`, `{"action":"accept","content":{"confirmed":true}}`, answers},
		{"default off its enum", ElicitDefaults, `{"message":"m","requestedSchema":{"type":"object","properties":{"t":{"type":"string","enum":["x"],"default":"y"}}}}`, `{"action":"decline"}`, nil},
		{"default of the wrong type", ElicitDefaults, `{"message":"m","requestedSchema":{"type":"object","properties":{"n":{"type":"integer","default":1.5}}}}`, `{"action":"decline"}`, nil},
		{"object field", ElicitDefaults, `{"message":"m","requestedSchema":{"type":"object","properties":{"o":{"type":"object","default":{}}}}}`, `{"action":"decline"}`, nil},
		{"url mode", ElicitDefaults, `{"mode":"url","message":"m","url":"https://x.example","elicitationId":"1"}`, `{"action":"decline"}`, nil},
		{"no fields", ElicitDefaults, `{"message":"m","requestedSchema":{"type":"object"}}`, `{"action":"accept","content":{}}`, nil},
		{"oneOf titled enum", ElicitDefaults, `{"message":"m","requestedSchema":{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"r","title":"Red"}],"default":"r"}}}}`, `{"action":"accept","content":{"c":"r"}}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var notes []ServerRequestNote
			p := ServerRequests{Elicitation: c.policy, Answers: c.answers, OnRequest: func(n ServerRequestNote) { notes = append(notes, n) }}
			res, rpc := p.Answer("elicitation/create", json.RawMessage(c.params), "request")
			if rpc != nil {
				t.Fatalf("error %v", rpc)
			}
			if string(res) != c.want {
				t.Fatalf("got  %s\nwant %s", res, c.want)
			}
			if len(notes) != 1 || notes[0].Outcome == "" {
				t.Fatalf("notes %+v", notes)
			}
			if strings.Contains(c.want, "decline") && notes[0].Reason == "" {
				t.Fatalf("a decline says why: %+v", notes[0])
			}
		})
	}
}

func TestElicitRefusals(t *testing.T) {
	p := ServerRequests{Elicitation: ElicitDefaults}
	for _, params := range []string{`[]`, `{}`, `{"message":"m"}`, `{"message":"m","requestedSchema":{"type":"string"}}`,
		`{"message":"m","requestedSchema":{"type":"object","properties":[]}}`,
		`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{},"a":{}}}}`,
		`{"message":"m","requestedSchema":{"type":"object","properties":{"a":3}}}`} {
		if res, rpc := p.Answer("elicitation/create", json.RawMessage(params), "request"); rpc == nil || rpc.Code != RPCInvalidParams {
			t.Errorf("%s: got %s %v, want -32602", params, res, rpc)
		}
	}
}

func TestOtherServerRequests(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a b%")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	roots, err := RootsFromDirs([]string{sub, sub + "/", dir})
	if err != nil {
		t.Fatal(err)
	}
	p := ServerRequests{Roots: roots}
	res, _ := p.Answer("roots/list", nil, "request")
	want := `{"roots":[{"uri":"file://` + dir + `/a%20b%25","name":"a b%"},{"uri":"file://` + dir + `","name":"` + filepath.Base(dir) + `"}]}`
	if string(res) != want {
		t.Fatalf("roots:\n got %s\nwant %s", res, want)
	}
	var empty ServerRequests
	if res, _ := empty.Answer("roots/list", nil, "request"); string(res) != `{"roots":[]}` {
		t.Fatalf("no roots: %s", res)
	}
	if _, rpc := empty.Answer("sampling/createMessage", nil, "request"); rpc == nil || rpc.Code != RPCMethodNotFound || !strings.Contains(rpc.Message, "sampling") {
		t.Fatalf("sampling: %v", rpc)
	}
	if got := string(empty.Capabilities()); got != `{}` {
		t.Fatalf("caps %s", got)
	}
	full := ServerRequests{Elicitation: ElicitDefaults, Roots: roots}
	if got := string(full.Capabilities()); got != `{"elicitation":{"form":{}},"roots":{}}` {
		t.Fatalf("caps %s", got)
	}
	if _, err := RootsFromDirs([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("a missing root is refused")
	}
	f := filepath.Join(dir, "file")
	_ = os.WriteFile(f, nil, 0o644)
	if _, err := RootsFromDirs([]string{f}); err == nil {
		t.Fatal("a file is not a root")
	}
}

func TestParseElicitationAnswers(t *testing.T) {
	for _, bad := range []string{``, `[]`, `"x"`, `{"a":{}}`, `{"a":null}`, `{"a":[1]}`, `{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{`} {
		if _, err := ParseElicitationAnswers([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	a, err := ParseElicitationAnswers([]byte("{\"a\": [ \"x\" ,\n \"y\"], \"b\": 1e2}"))
	if err != nil || string(a["a"]) != `["x","y"]` || string(a["b"]) != `1e2` {
		t.Fatalf("%v %q", err, a)
	}
}

func TestParseInputRequired(t *testing.T) {
	for _, complete := range []string{`{}`, `{"content":[]}`, `{"resultType":"complete"}`, `{"resultType":5}`, `{"resultType":"task"}`, `[]`, `x`} {
		if ir, err := ParseInputRequired([]byte(complete)); ir != nil || err != nil {
			t.Errorf("%s: %v %v", complete, ir, err)
		}
	}
	for _, bad := range []string{
		`{"resultType":"input_required"}`,
		`{"resultType":"input_required","inputRequests":{}}`,
		`{"resultType":"input_required","requestState":5}`,
		`{"resultType":"input_required","inputRequests":[]}`,
		`{"resultType":"input_required","inputRequests":{"a":{}}}`,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"x","params":[]}}}`,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"x"},"a":{"method":"y"}}}`,
		`{"resultType":"input_required","resultType":"input_required","requestState":"s"}`,
	} {
		if _, err := ParseInputRequired([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	ir, err := ParseInputRequired([]byte(`{"resultType":"input_required","inputRequests":{"b":{"method":"roots/list"},"a":{"method":"elicitation/create","params":{"x":1}}},"requestState":"s\u00e9<"}`))
	if err != nil || len(ir.Requests) != 2 || ir.Requests[0].Key != "b" || string(ir.Requests[1].Params) != `{"x":1}` || string(ir.State) != `"s\u00e9<"` {
		t.Fatalf("%v %+v", err, ir)
	}
}

// fakeConn answers each request from a list, recording what it got.
type fakeConn struct {
	answers []string
	got     []string
}

func (f *fakeConn) RequestTimeout(_ context.Context, method string, params json.RawMessage, _ time.Duration) (json.RawMessage, error) {
	f.got = append(f.got, method+" "+string(params))
	a := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	return json.RawMessage(a), nil
}

func TestRequestResolved(t *testing.T) {
	ask := `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"},"e":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"x":{"type":"string","default":"d"}}}}}},"requestState":"st\u00e9"}`
	c := &fakeConn{answers: []string{ask, `{"content":[]}`}}
	p := &ServerRequests{Elicitation: ElicitDefaults}
	res, err := RequestResolved(context.Background(), c, p, "tools/call", json.RawMessage(`{"name":"t","requestState":"old","inputResponses":{}}`), 0)
	if err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("%s %v", res, err)
	}
	want := `tools/call {"name":"t","inputResponses":{"r":{"roots":[]},"e":{"action":"accept","content":{"x":"d"}}},"requestState":"st\u00e9"}`
	if len(c.got) != 2 || c.got[1] != want {
		t.Fatalf("retry:\n got %q\nwant %q", c.got, want)
	}

	// Sampling cannot be answered: one request, an error listing it all.
	c = &fakeConn{answers: []string{`{"resultType":"input_required","inputRequests":{"q":{"method":"sampling/createMessage"},"n":{"method":"elicitation/create","params":{"message":"Your name?"}}}}`}}
	_, err = RequestResolved(context.Background(), c, p, "tools/call", nil, 0)
	var me *Error
	if !asErr(err, &me) || me.Code != CodeInputRequiredUnanswered || !strings.Contains(me.Message, `"q": sampling/createMessage`) || !strings.Contains(me.Message, `"n": elicitation/create "Your name?"`) || len(c.got) != 1 {
		t.Fatalf("%v %q", err, c.got)
	}

	// A server that never stops asking is stopped after the bound.
	c = &fakeConn{answers: []string{`{"resultType":"input_required","requestState":"again"}`}}
	_, err = RequestResolved(context.Background(), c, &ServerRequests{MaxInputRounds: 3}, "prompts/get", nil, 0)
	if !asErr(err, &me) || me.Code != CodeInputRequiredRounds || len(c.got) != 4 {
		t.Fatalf("%v %d requests", err, len(c.got))
	}
}

func asErr(err error, me **Error) bool { return errors.As(err, me) }

func FuzzElicitation(f *testing.F) {
	f.Add([]byte(sep1034Form), []byte(`{"name":"x"}`))
	f.Add([]byte(`{"mode":"url"}`), []byte(`{}`))
	f.Add([]byte(`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"x"}]},"default":["x"]}}}}`), []byte(`{"a":["x"]}`))
	f.Fuzz(func(t *testing.T, params, answers []byte) {
		a, err := ParseElicitationAnswers(answers)
		if err == nil {
			for k, v := range a {
				if !json.Valid(v) || bytes.ContainsAny(v, "\n\r") {
					t.Fatalf("answer %q: %q", k, v)
				}
			}
		}
		for _, policy := range []string{ElicitDecline, ElicitDefaults, ElicitAnswers} {
			p := ServerRequests{Elicitation: policy, Answers: a}
			res, rpc := p.Answer("elicitation/create", params, "request")
			if rpc != nil {
				continue
			}
			if !json.Valid(res) || bytes.ContainsAny(res, "\n\r") {
				t.Fatalf("%s: answer %q", policy, res)
			}
			if policy == ElicitDecline && string(res) != `{"action":"decline"}` {
				t.Fatalf("decline policy accepted: %s", res)
			}
			var c struct{ ID json.RawMessage }
			line := (&Core{Opts: Options{Requests: p}}).AnswerServerRequest(json.RawMessage(`1`), "elicitation/create", params)
			if json.Unmarshal(line, &c) != nil {
				t.Fatalf("answer line %q", line)
			}
		}
	})
}

func FuzzInputRequired(f *testing.F) {
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`), []byte(`{"name":"t"}`))
	f.Add([]byte(`{"resultType":"input_required","requestState":"\u003c"}`), []byte(`null`))
	f.Add([]byte(`{"resultType":"complete"}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, result, params []byte) {
		ir, err := ParseInputRequired(result)
		if err != nil || ir == nil {
			return
		}
		if len(ir.Requests) == 0 && ir.State == nil {
			t.Fatal("input_required with nothing to answer")
		}
		if len(ir.Requests) > MaxInputRequests {
			t.Fatal("over the bound")
		}
		if FirstByte(params) != '{' || !json.Valid(params) {
			return
		}
		responses := make([][]byte, len(ir.Requests))
		for i := range responses {
			responses[i] = []byte(`{}`)
		}
		b, rerr := retryParams(params, ir, responses)
		if rerr != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("retry params %q", b)
		}
		var got struct {
			RequestState json.RawMessage `json:"requestState"`
		}
		_ = json.Unmarshal(b, &got)
		if ir.State != nil && !bytes.Equal(got.RequestState, ir.State) {
			t.Fatalf("state %q echoed as %q", ir.State, got.RequestState)
		}
	})
}
