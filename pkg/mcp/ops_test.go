package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

func TestParseSessionLine(t *testing.T) {
	good := map[string]string{
		`{"method":"ping"}`:                        "ping|",
		`{"method":"tools/call","params":{"a":1}}`: `tools/call|{"a":1}`,
		`{"method":"x","params":[1,2]}`:            "x|[1,2]",
		`{"method":"x","params":null}`:             "x|",
		` {"method":"x"} `:                         "x|", //nolint:gocritic // mapKey: the spaces are the case
	}
	for in, want := range good {
		sl, err := parseSessionLine([]byte(in), 1)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := sl.Method + "|" + string(sl.Params); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{`{}`, `{"method":""}`, `{"method":"x","params":1}`, `{"method":"x","params":"s"}`,
		`{"method":"x","id":1}`, `{"method":"x"}{"method":"y"}`, `[{"method":"x"}]`, `nope`, `{"method":1}`} {
		if _, err := parseSessionLine([]byte(in), 3); errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), "line 3") {
			t.Errorf("%s: err %v", in, err)
		}
	}
}

func FuzzSessionLine(f *testing.F) {
	for _, s := range []string{`{"method":"ping"}`, `{"method":"a","params":{"x":[1,{}]}}`, `{"method":"a","params":7}`, `{"x":1}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		sl, err := parseSessionLine(line, 1)
		if err != nil {
			if errs.KindOf(err) != errs.KindUsage {
				t.Fatalf("non-usage error %v", err)
			}
			return
		}
		if sl.Method == "" {
			t.Fatal("accepted an empty method")
		}
		if len(sl.Params) > 0 {
			if c := firstByte(sl.Params); c != '{' && c != '[' {
				t.Fatalf("accepted params %q", sl.Params)
			}
			// What we accept must make a valid request line.
			b := appendRequest(nil, 1, sl.Method, sl.Params)
			var buf bytes.Buffer
			if err := json.Compact(&buf, b[:len(b)-1]); err != nil {
				t.Fatalf("request line is not JSON: %v", err)
			}
		}
	})
}

func TestRelayForwardsCompleteLinesVerbatim(t *testing.T) {
	in := "a\r\n\n{\"x\":1}\npartial"
	var out bytes.Buffer
	if err := Relay(&out, strings.NewReader(in), 16); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a\r\n\n{\"x\":1}\n" {
		t.Fatalf("relayed %q", out.String())
	}
	out.Reset()
	err := Relay(&out, strings.NewReader("ok\n0123456789abcdef\nnever\n"), 16)
	if !isFrameErr(err) || !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err %v", err)
	}
	if out.String() != "ok\n" {
		t.Fatalf("relayed %q before the oversized line", out.String())
	}
}

func TestParseConnect(t *testing.T) {
	if p, err := ParseConnect("unix:/tmp/s.sock"); err != nil || p != "/tmp/s.sock" {
		t.Fatal(p, err)
	}
	for _, bad := range []string{"", "unix:", "/tmp/s.sock", "tcp:1.2.3.4:5"} {
		if _, err := ParseConnect(bad); errs.KindOf(err) != errs.KindUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestCallReportsServerExitBeforeHandshake(t *testing.T) {
	o := fakeOptions(t, "no-such-mode")
	_, err := Call(context.Background(), o, "ping", nil)
	// Ending before the handshake is definitive (exit 1), not "retry later".
	if errs.KindOf(err) != errs.KindFailed || errs.CodeOf(err) != "server_exited" {
		t.Fatalf("err %v (%s)", err, errs.CodeOf(err))
	}
	if !strings.Contains(err.Error(), `unknown mode "no-such-mode"`) {
		t.Fatalf("the stderr tail is missing: %v", err)
	}
}
