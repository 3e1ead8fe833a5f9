package artifacts

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseJSON5Accepts(t *testing.T) {
	src := `// leading comment
	{
	  unquoted: 'single \'quoted\'',
	  "double": "line\
continued",
	  /* block */ trailing: [1, 2, 3,],
	  hex: 0x1F, neg: -.5, pos: +2., exp: 1e3,
	  nested: { $id_1: null, ok: true, no: false, },
	  esc: "\x41\u00e9\uD83D\uDE00\0",
	}
	`
	v, err := ParseJSON5([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"unquoted": "single 'quoted'",
		"double":   "linecontinued",
		"trailing": []any{1.0, 2.0, 3.0},
		"hex":      31.0, "neg": -0.5, "pos": 2.0, "exp": 1000.0,
		"nested": map[string]any{"$id_1": nil, "ok": true, "no": false},
		"esc":    "Aé😀\x00",
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
}

func TestParseJSON5Rejects(t *testing.T) {
	for _, src := range []string{
		``, `{`, `[1,,2]`, `{a:1 b:2}`, `{a}`, `"unterminated`, `/* open`,
		`Infinity`, `-Infinity`, `NaN`, `{a: NaN}`, `01`, `"\1"`, `{} {}`, `'a
b'`, `tru`, `{"a":1,}x`, `.`, `+`, `0x`, `"\u12"`,
		strings.Repeat("[", maxJSON5Depth+2) + strings.Repeat("]", maxJSON5Depth+2),
	} {
		if v, err := ParseJSON5([]byte(src)); err == nil {
			t.Errorf("%q accepted as %#v", src, v)
		}
	}
}

// FuzzParseJSON5: never panics; every valid JSON document parses to what
// encoding/json decodes (JSON is a subset of JSON5); whatever is accepted
// re-encodes as JSON.
func FuzzParseJSON5(f *testing.F) {
	for _, s := range []string{`{a:1}`, `[1,2,]`, `{"x":"y"}`, `// c
	{id:'p', n: 0x10}`, `"\u00e9"`, `-0.5e-3`, `null`, `{"a":{"b":[true,false,null]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseJSON5(b)
		if json.Valid(b) {
			var want any
			if json.Unmarshal(b, &want) == nil {
				if err != nil {
					// JSON numbers too large for float64 are rejected by
					// both; anything else valid must parse.
					if !strings.Contains(err.Error(), "bad number") {
						t.Fatalf("valid JSON %q rejected: %v", b, err)
					}
					return
				}
				if !reflect.DeepEqual(v, want) {
					t.Fatalf("%q: got %#v want %#v", b, v, want)
				}
			}
		}
		if err == nil {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("accepted value does not encode: %v", err)
			}
		}
	})
}
