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
		Check: func(p params) error {
			if p.N < 0 {
				return errs.Usage("negative", "n is negative")
			}
			return nil
		},
		Run: func(ctx context.Context, env *OpEnv, p params) (result, error) {
			ran++
			return result{Local: p.Local}, nil
		}})
	h := shortHome(t)
	r := &Router{Home: h, Registry: reg, LockTimeout: time.Second}
	x := 7
	var out result
	if err := r.Call(context.Background(), "t.values", params{N: 1, Local: &x}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Local != &x {
		t.Fatalf("the values crossed as JSON: %+v", out)
	}
	if err := r.Call(context.Background(), "t.values", params{N: -1}, &out); errs.CodeOf(err) != "negative" || ran != 1 {
		t.Fatalf("check: %v (ran %d)", err, ran)
	}
	// Anything else with the same JSON form is decoded strictly.
	if err := r.Call(context.Background(), "t.values", map[string]any{"n": 1, "x": 1}, nil); errs.CodeOf(err) != CodeInvalidParams {
		t.Fatalf("unknown field: %v", err)
	}
}
