package strictjson

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		kind Kind // 0 = accepted
	}{
		{`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":1}]}`, 0},
		{`{"a":"x","b":"a"}`, 0},
		{`{"a":["a","a"],"b":"b"}`, 0},
		{` 7 `, 0},
		{`{"a":1,"a":2}`, DuplicateKey},
		{`{"x":{"k":1,"k":1}}`, DuplicateKey},
		{`[{"k":[],"k":{}}]`, DuplicateKey},
		{`{"a":{"b":1},"a":3}`, DuplicateKey},
		{"{\"a\":\"\xff\"}", InvalidUTF8},
		{`{"a":1}{"a":1}`, Trailing},
		{`{"a":`, Syntax},
		{``, Syntax},
		{strings.Repeat("[", 6) + strings.Repeat("]", 6), TooDeep},
	} {
		err := Check([]byte(tc.doc), 4)
		var e *Error
		switch {
		case tc.kind == 0 && err != nil:
			t.Errorf("%q: %v, want accepted", tc.doc, err)
		case tc.kind != 0 && (!errors.As(err, &e) || e.Kind != tc.kind):
			t.Errorf("%q: %v, want kind %d", tc.doc, err, tc.kind)
		}
	}
}

// FuzzCheck: Check never panics, and whatever it accepts encoding/json
// accepts too.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[[[]]]`, "{\"a\":\"\xff\"}", `{"a":1} x`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Check(b, 32) == nil && !jsonValid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
	})
}
