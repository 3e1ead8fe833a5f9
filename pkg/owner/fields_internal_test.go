package owner

import (
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// A routed call's error keeps the fields naming what it is about (job,
// path, resource), so its --json error document matches a local run's.
func TestDecodeReplyKeepsFields(t *testing.T) {
	for name, body := range map[string]string{
		"accepted": `{"ok":false,"error":{"code":"plan_proposed","message":"m","kind":5,"mutationAccepted":true,"jobId":"rj_x","path":"p","resource":"plugin:q"}}`,
		"refused":  `{"ok":false,"error":{"code":"plan_proposed","message":"m","kind":5,"mutationAccepted":false,"jobId":"rj_x","path":"p","resource":"plugin:q"}}`,
		"unknown":  `{"ok":false,"error":{"code":"receipt_not_recorded","message":"m","kind":4,"jobId":"rj_x","path":"p","resource":"plugin:q"}}`,
	} {
		err := decodeReply("research.wait.v1", 200, []byte(body), &CallReply{})
		e := errs.As(err)
		if e == nil || e.JobID != "rj_x" || e.Path != "p" || e.Resource != "plugin:q" {
			t.Errorf("%s: decoded %#v; want the fields kept", name, e)
		}
	}
}
