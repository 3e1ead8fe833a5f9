package ops

import (
	"reflect"
	"testing"

	"github.com/clawkit/clawkit/pkg/owner"
)

// handle is what TestHandles reads of an owner.Handle.
type handle interface {
	OpName() string
	Types() (params, result reflect.Type)
}

// allHandles lists every handle of handles.go.
var allHandles = []handle{
	SessionCreate, SessionShow, SessionList, SessionReset, SessionRevoke, SessionRefreshing, SessionActivate,
	AuthAdd, AuthList, AuthRemove, OAuthSave, OAuthRenew, OAuthLogout, ConfigSet, ConfigUnset, StateBackup, StateStatus,
	ResearchStart, ResearchPoll, ResearchWait, ResearchCancel, ResearchApprove, ResearchReject, ResearchList, ResearchShow, ResearchDescribe, ResearchRecover, ResearchRPC,
	SkillRoot, SkillList, SkillFiles, SkillRead, SkillEvents, SkillWrite, SkillRemove, SkillInstall, SkillBundle, SkillWatch,
}

// Every registered operation has exactly one handle, and each handle's P
// and R are its operation's: a call through a handle can never hand an
// operation parameters of another type or expect another result.
func TestHandles(t *testing.T) {
	reg := Registry()
	seen := map[string]bool{}
	for _, h := range allHandles {
		name := owner.VersionedName(h.OpName())
		if seen[name] {
			t.Errorf("two handles name %s", name)
		}
		seen[name] = true
		m, ok := reg.LookupWire(name)
		if !ok {
			t.Errorf("handle %s names no registered operation", name)
			continue
		}
		p, r := h.Types()
		if p != m.Params || r != m.Result {
			t.Errorf("handle %s is [%v, %v]; the operation is [%v, %v]", name, p, r, m.Params, m.Result)
		}
	}
	for _, name := range reg.Names() {
		if !seen[name] {
			t.Errorf("operation %s has no handle: add one to pkg/ops/handles.go (and to allHandles)", name)
		}
	}
}
