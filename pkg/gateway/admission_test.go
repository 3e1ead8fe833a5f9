package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/ops"
	"github.com/clawkit/clawkit/pkg/owner"
)

// Issue 15 item 2 with the real operations: a skill write on a home where
// the plugin is not installed is refused by the operation's Admit, which
// the gateway runs between Check and Run as the offline executor does
// before its lock: before any effect (the default session is not created),
// so mutationAccepted:false, every time. The client keeps the operation's
// own kind (refused, exit 3). A duplicate session create is refused by its
// read, before the write.
func TestRealOpsMutationAccepted(t *testing.T) {
	_, rec, done := startGateway(t, ops.Registry())
	defer func() {
		if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	params := json.RawMessage(`{"pluginId":"notes","skill":"pdf","file":"SKILL.md","content":"LS0tCm5hbWU6IHBkZgpkZXNjcmlwdGlvbjogRmlsbCBQREYgZm9ybXMuCi0tLQo="}`)
	req := owner.CallRequest{Method: "skill.write.v1", Params: params, ExpectedOwnerID: rec.OwnerID}
	accepted := func(rep owner.CallReply) string {
		if rep.Error == nil {
			t.Fatalf("no error: %+v", rep)
		}
		if rep.Error.MutationAccepted == nil {
			return "absent"
		}
		if *rep.Error.MutationAccepted {
			return "true"
		}
		return "false"
	}
	for i := range 2 {
		rep := rawCall(t, rec.Socket, req)
		if rep.Error.Code != "plugin_unavailable" || accepted(rep) != "false" {
			t.Fatalf("call %d: refusal before any effect: %+v (mutationAccepted %s), want mutationAccepted:false", i+1, rep.Error, accepted(rep))
		}
	}
	// Admit refused before Run: the default session was not created.
	show := owner.CallRequest{Method: "session.show.v1", Params: json.RawMessage(`{"agentId":"main","sessionKey":"cli"}`), ExpectedOwnerID: rec.OwnerID}
	if rep := rawCall(t, rec.Socket, show); rep.Error == nil || rep.Error.Code != "session_not_found" {
		t.Fatalf("session after a refused write: %+v (want session_not_found)", rep)
	}
	// The routed client keeps the error's own kind either way.
	_, err := owner.NewClient(rec.Socket).Call(context.Background(), req)
	if errs.KindOf(err) != errs.KindRefused || errs.CodeOf(err) != "plugin_unavailable" {
		t.Fatalf("client: %v (kind %v)", err, errs.KindOf(err))
	}

	create := owner.CallRequest{Method: "session.create.v1", Params: json.RawMessage(`{"agentId":"main","sessionKey":"s1"}`), ExpectedOwnerID: rec.OwnerID}
	if rep := rawCall(t, rec.Socket, create); !rep.OK {
		t.Fatalf("create: %+v", rep.Error)
	}
	if rep := rawCall(t, rec.Socket, create); rep.Error == nil || rep.Error.Code != "session_exists" || accepted(rep) != "false" {
		t.Fatalf("duplicate create: %+v", rep.Error)
	}
}
