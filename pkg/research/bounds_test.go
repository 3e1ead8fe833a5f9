package research

import (
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// A wait timeout under 1ms would be 0 ms, "the job's own budget": refused;
// 0 stays the budget. A negative one stays negative, even below a
// millisecond, and the operation's Check refuses it (invalid_timeout).
func TestWaitTimeoutMs(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, time.Millisecond: 1, 1500 * time.Microsecond: 1, 30 * time.Second: 30000,
		-time.Nanosecond: -1, -1500 * time.Microsecond: -1, -time.Second: -1000} {
		if got, err := WaitTimeoutMs(d); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", d, got, err, want)
		}
	}
	for _, d := range []time.Duration{time.Nanosecond, 999 * time.Microsecond} {
		if _, err := WaitTimeoutMs(d); errs.CodeOf(err) != errs.CodeInvalidTimeout {
			t.Errorf("%s: %v, want invalid_timeout", d, err)
		}
	}
	for _, d := range []time.Duration{-time.Nanosecond, -time.Second} {
		ms, err := WaitTimeoutMs(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checkWait(WaitParams{JobParams: JobParams{Job: "rj_aaaaaaaaaaaaaaaa"}, TimeoutMs: ms}); errs.CodeOf(err) != errs.CodeInvalidTimeout {
			t.Errorf("wait %s: %v, want invalid_timeout", d, err)
		}
		if _, err := CheckStart(StartParams{Question: "q", Wait: &StartWait{TimeoutMs: ms}}); errs.CodeOf(err) != errs.CodeInvalidTimeout {
			t.Errorf("start --wait %s: %v, want invalid_timeout", d, err)
		}
	}
}

// An idempotency key prints as itself: no control, space, formatting or
// bidirectional character, no invalid byte.
func TestValidIdempotencyKey(t *testing.T) {
	for _, ok := range []string{"k1", "nightly-2026-01-01", "ключ", "東京"} {
		if !validIdempotencyKey(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a\tb", "abc\u202edef", "a\u200db", "a\u00a0b", "a\xffb", "a\ufffdb", "a\u2066b", "\ufeffa"} {
		if validIdempotencyKey(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The envelope's numbers are JSON numbers: a string holding one is
// refused (json.Number alone would take it).
func TestEnvelopeNumberNotString(t *testing.T) {
	for _, in := range []string{
		`{"request":{"version":1,"action":"start","question":"q","output":{"maxReportBytes":"100000"}},"sessionKey":"cli","agentId":"main"}`,
		`{"request":{"version":1,"action":"start","question":"q","output":{"maxReportBytes":" 100000"}},"sessionKey":"cli","agentId":"main"}`,
	} {
		if _, err := DecodeRPC([]byte(in)); errs.CodeOf(err) != "invalid_field" {
			t.Errorf("%s: %v, want invalid_field", in, err)
		}
	}
	if _, err := DecodeRPC([]byte(`{"request":{"version":1,"action":"start","question":"q","output":{"maxReportBytes":100000}},"sessionKey":"cli","agentId":"main"}`)); err != nil {
		t.Fatal(err)
	}
}
