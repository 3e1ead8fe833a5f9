package json5

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseJSON5(t *testing.T) {
	good := map[string]any{
		`{}`: map[string]any{},
		`{a: 1, 'b': "two", "c": [true, false, null,],}`:   map[string]any{"a": 1.0, "b": "two", "c": []any{true, false, nil}},
		"// comment\n{/* inline */ id: 'x' // trailing\n}": map[string]any{"id": "x"},
		`[0x1F, .5, 5., +1, -2e3, 1E-2]`:                   []any{31.0, 0.5, 5.0, 1.0, -2000.0, 0.01},
		`'it\'s \x41\u00e9\n\
next'`: "it's Aé\nnext",
		`"\uD83D\uDE00"`:   "😀",
		"\ufeff{$id_1: 1}": map[string]any{"$id_1": 1.0},
		`"\a\/"`:           "a/",
	}
	for in, want := range good {
		got, err := Parse([]byte(in))
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %#v, want %#v", in, got, want)
		}
	}
	if v, _ := Parse([]byte(`[Infinity, -Infinity, NaN]`)); v == nil || !math.IsInf(v.([]any)[0].(float64), 1) || !math.IsNaN(v.([]any)[2].(float64)) {
		t.Errorf("Infinity/NaN: %v", v)
	}
	bad := []string{``, `{`, `{a:1,,}`, `[1,,2]`, `{a:1 b:2}`, `{a:1, a:2}`, `"unterminated`, "'line\nbreak'",
		`01`, `0x`, `1e`, `{1: 2}`, `/* open`, `tru`, `{a:1} x`, `"\1"`, `"\u12"`, `1abc`, "\xff",
		strings.Repeat("[", 300) + strings.Repeat("]", 300)}
	for _, in := range bad {
		if v, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) accepted: %#v", in, v)
		}
	}
	// Errors carry a position.
	_, err := Parse([]byte("{\n  a: 1,\n  a: 2\n}"))
	var je *Error
	if !errors.As(err, &je) || je.Line != 3 {
		t.Errorf("duplicate key position: %v", err)
	}
}

// Plain JSON documents decode exactly as encoding/json decodes them.
func TestParseJSON5MatchesJSON(t *testing.T) {
	for _, in := range []string{`{"a":[1,2.5,-3e2,"x\"y\\z\u0041"],"b":{"c":null,"d":true}}`, `"\t"`, `[]`, `0`, `-0.5`} {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got, err := Parse([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, %v; want %#v", in, got, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{id: 'x', agentSkillsDir: "skills",}`, `[1, 0x2, .3, +4, Infinity]`, `"\u00e9\x41\
"`, `// c
{/* d */ a: [null, true]}`, `{"a":{"b":{"c":[]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Parse(b)
		if err != nil {
			if je := (*Error)(nil); !errors.As(err, &je) {
				t.Fatalf("untyped error %T", err)
			}
			return
		}
		// Whatever was accepted as plain JSON must agree with encoding/json.
		var std any
		if json.Unmarshal(b, &std) == nil && !reflect.DeepEqual(v, std) && !hasNaN(v) {
			t.Fatalf("JSON5 %#v differs from JSON %#v", v, std)
		}
	})
}

func hasNaN(v any) bool {
	switch t := v.(type) {
	case float64:
		return math.IsNaN(t)
	case []any:
		for _, e := range t {
			if hasNaN(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range t {
			if hasNaN(e) {
				return true
			}
		}
	}
	return false
}

func TestDecode(t *testing.T) {
	var m struct {
		ID   string   `json:"id"`
		Deps []string `json:"deps"`
	}
	if err := Decode([]byte(`{id: 'p', deps: ["a", 'b',],}`), &m); err != nil || m.ID != "p" || len(m.Deps) != 2 {
		t.Fatalf("%+v %v", m, err)
	}
	if err := Decode([]byte(`{id: NaN}`), &m); err == nil {
		t.Fatal("NaN decoded")
	}
}
