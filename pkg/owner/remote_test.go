package owner

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// FuzzDecodeReply: whatever a gateway answers, the client either returns a
// result for ok:true or a classified error; an error keeps a definitive
// kind only when the reply says mutationAccepted explicitly (false: refused
// before any effect; true: the operation's own classification after an
// effect began), otherwise it is outcome-unknown (exit 4). Never a panic.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"result":{"a":1}}`,
		`{"ok":false,"error":{"code":"x","message":"m","kind":3,"mutationAccepted":false}}`,
		`{"ok":false,"error":{"code":"x","message":"m","kind":1}}`,
		`{"ok":false,"error":{"code":"x","message":"m","kind":9,"mutationAccepted":false}}`,
		`{"ok":false}`, `<html>`, ``, `null`, `{"ok":false,"error":{"mutationAccepted":true,"kind":5}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got CallReply
		err := decodeReply("t.m", 200, data, &got)
		res := got.Result
		var rep CallReply
		jsonErr := json.Unmarshal(data, &rep)
		if err == nil {
			if jsonErr != nil || !rep.OK {
				t.Fatalf("accepted a reply that is not ok:true: %q", data)
			}
			if !bytes.Equal(res, rep.Result) {
				t.Fatalf("result %q, want %q", res, rep.Result)
			}
			return
		}
		k := errs.KindOf(err)
		if k < errs.KindFailed || k > errs.KindUnavailable {
			t.Fatalf("kind %d out of range", k)
		}
		explicit := jsonErr == nil && rep.Error != nil && rep.Error.MutationAccepted != nil
		if !explicit && k != errs.KindUnknown {
			t.Fatalf("reply %q without mutationAccepted classified as %v", data, k)
		}
		if explicit && *rep.Error.MutationAccepted && k != errs.KindUnknown && errs.Kind(rep.Error.Kind) != k {
			t.Fatalf("reply %q after an effect reclassified as %v", data, k)
		}
	})
}
