package owner

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

type fuzzParams struct {
	A string            `json:"a"`
	N int64             `json:"n"`
	L []string          `json:"l"`
	M map[string]string `json:"m"`
	P *fuzzParams       `json:"p"`
}

// DecodeParams reads the parameters of every call a gateway receives:
// untrusted bytes. Whatever they are, it never panics, refuses with
// invalid_params (exit 2) only, and what it accepts survives a round trip.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"x","n":1}`, `{"a":1}`, `{"x":1}`, `{"a":"x"} {}`, `null`, ``, `[`, `{"p":{"p":{"a":"deep"}}}`, `{"l":["a",null],"m":{"k":"v"}}`, `{"l":[],"m":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeParams[fuzzParams](b)
		if err != nil {
			if e := errs.As(err); e == nil || e.Code != errs.CodeInvalidParams || e.Kind != errs.KindUsage {
				t.Fatalf("refusal %v is not invalid_params", err)
			}
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := DecodeParams[fuzzParams](again)
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip: %+v -> %s -> %+v (%v)", p, again, q, err)
		}
	})
}
