package owner

import (
	"context"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// The offline executor hands the parameter and result values over as they
// are: nothing goes through JSON (a field JSON would drop arrives), and a
// parameter Check refuses never reaches Run.
func TestOfflineCallPassesValues(t *testing.T) {
	type params struct {
		N     int  `json:"n"`
		Local *int `json:"-"`
	}
	type result struct {
		Local *int `json:"-"`
	}
	ran := 0
	reg := NewRegistry()
	Register(reg, Op[params, result]{Name: "t.values", Write: true,
		Check: func(p params) (params, error) {
			if p.N < 0 {
				return p, errs.Usage("negative", "n is negative")
			}
			p.N *= 10 // normalised: Run sees what Check returned
			return p, nil
		},
		Run: func(ctx context.Context, env *OpEnv, p params) (result, error) {
			ran++
			if p.N != 10 {
				return result{}, errs.Usage("not_normalised", "Run saw n=%d, not Check's 10", p.N)
			}
			return result{Local: p.Local}, nil
		}})
	h := shortHome(t)
	r := &Router{Home: h, Registry: reg, LockTimeout: time.Second}
	x := 7
	h1 := Handle[params, result]{Name: "t.values"}
	out, err := h1.Call(context.Background(), r, params{N: 1, Local: &x})
	if err != nil {
		t.Fatal(err)
	}
	if out.Local != &x {
		t.Fatalf("the values crossed as JSON: %+v", out)
	}
	if _, err := h1.Call(context.Background(), r, params{N: -1}); errs.CodeOf(err) != "negative" || ran != 1 {
		t.Fatalf("check: %v (ran %d)", err, ran)
	}
	// Parameters of another type are refused before anything is done:
	// there is no JSON fallback in this process.
	wrong := Handle[map[string]any, result]{Name: "t.values"}
	if _, err := wrong.Call(context.Background(), r, map[string]any{"n": 1}); errs.CodeOf(err) != errs.CodeInvalidParams || ran != 1 {
		t.Fatalf("mistyped params: %v (ran %d)", err, ran)
	}
}
