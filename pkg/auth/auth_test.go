package auth

import (
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// A credential is refused whole, never cut: too long, not UTF-8, a NUL or
// another control character; the message never quotes it.
func TestCheckSecret(t *testing.T) {
	for _, ok := range []string{"AIzaSyA-0123456789_abcdefghijklmnopqrstu", strings.Repeat("k", MaxSecretBytes), "ya29.a0AfH6SM~token/with+chars="} {
		if err := CheckNew("g", ok); err != nil {
			t.Errorf("%.20q: %v", ok, err)
		}
	}
	for _, bad := range []string{strings.Repeat("k", MaxSecretBytes+1), "AIza\x00SECRETTAIL", "AIza\nSECRETTAIL", "AIza\x1b[2JSECRETTAIL", "AIza\xffSECRETTAIL", "AIza\ufffdSECRETTAIL", "AIza\u0085SECRETTAIL"} {
		err := CheckNew("g", bad)
		if e := errs.As(err); e == nil || e.Code != "invalid_secret" || e.Kind != errs.KindUsage {
			t.Errorf("%.20q: %v, want invalid_secret", bad, err)
			continue
		}
		if strings.Contains(err.Error()+errs.As(err).Hint, "SECRETTAIL") {
			t.Errorf("the refusal quotes the secret: %v", err)
		}
	}
}
