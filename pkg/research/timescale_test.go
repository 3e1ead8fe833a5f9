package research

import (
	"testing"
	"time"
)

// The test-only time scale is honoured only against a loopback endpoint, so
// a stray environment variable can never make clawkit poll the real
// provider a thousand times faster.
func TestTimeScaleOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		base string
		want time.Duration
	}{
		{"http://127.0.0.1:8080/v1beta", DefaultBudgets.FastInterval / 1000},
		{"http://localhost:1/v1beta", DefaultBudgets.FastInterval / 1000},
		{"http://[::1]:1/v1beta", DefaultBudgets.FastInterval / 1000},
		{"", DefaultBudgets.FastInterval},
		{"https://generativelanguage.googleapis.com/v1beta", DefaultBudgets.FastInterval},
		{"http://10.0.0.1/v1beta", DefaultBudgets.FastInterval},
	} {
		env := map[string]string{EnvTimeScale: "1000", EnvBaseURL: tc.base}
		s := &Service{Getenv: func(k string) string { return env[k] }}
		if got := s.budgets().FastInterval; got != tc.want {
			t.Errorf("base %q: fast interval %v, want %v", tc.base, got, tc.want)
		}
	}
}
