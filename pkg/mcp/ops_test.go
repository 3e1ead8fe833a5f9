package mcp

import (
	"bytes"
	"encoding/json"
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
			if c := FirstByte(sl.Params); c != '{' && c != '[' {
				t.Fatalf("accepted params %q", sl.Params)
			}
			// What we accept must make a valid request line.
			b := AppendRequest(nil, 1, sl.Method, sl.Params)
			var buf bytes.Buffer
			if err := json.Compact(&buf, b[:len(b)-1]); err != nil {
				t.Fatalf("request line is not JSON: %v", err)
			}
		}
	})
}
