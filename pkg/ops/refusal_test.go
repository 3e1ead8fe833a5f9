package ops

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/skills"
)

// refused holds, for every write operation, inputs it refuses. A new
// write operation must add its own here: TestRefusedWritesCreateNothing
// fails for one that has none.
var refused = map[string][]any{
	core.OpSessionCreate.Name:     {core.SessionParams{AgentID: "main", SessionKey: "bad name!"}, core.SessionParams{AgentID: "bad agent!", SessionKey: "cli"}},
	core.OpSessionReset.Name:      {core.SessionParams{AgentID: "main", SessionKey: "bad name!"}},
	core.OpSessionRevoke.Name:     {core.SessionParams{AgentID: "main", SessionKey: "bad name!"}},
	core.OpSessionRefreshing.Name: {core.SessionParams{AgentID: "main", SessionKey: "bad name!"}},
	core.OpSessionActivate.Name:   {core.SessionParams{AgentID: "main", SessionKey: "bad name!"}},
	core.OpAuthAdd.Name: {
		core.AuthAddParams{ID: "x", Provider: "nope", Kind: "api-key", Secret: "s"},
		core.AuthAddParams{ID: "x", Provider: "google", Kind: "nope", Secret: "s"},
		core.AuthAddParams{ID: "x", Provider: "google", Kind: "api-key", Secret: " "},
		core.AuthAddParams{ID: "x", Provider: "postgres", Kind: "api-key", Secret: "s"},
		core.AuthAddParams{ID: "x", Provider: "mcp", Kind: "api-key", Secret: "s"},
		core.AuthAddParams{ID: "x", Provider: "google", Kind: "header", Secret: "s"},
	},
	core.OpAuthRemove.Name: {core.AuthRemoveParams{ID: "nope"}, core.AuthRemoveParams{}},
	core.OpOAuthSave.Name: {
		core.OAuthSaveParams{ID: "bad id"},
		core.OAuthSaveParams{ID: "x", Profile: auth.Profile{Provider: "mcp", Kind: "oauth", Secret: "tok"}},
		core.OAuthSaveParams{ID: "x", Profile: auth.Profile{Provider: "google", Kind: "oauth", Secret: "tok", OAuth: &auth.OAuth{Server: "s", Issuer: "i", Resource: "r"}}},
	},
	core.OpOAuthRenew.Name:  {core.OAuthRenewParams{ID: "nope", Stale: "0123456789abcdef"}, core.OAuthRenewParams{ID: "x", Stale: "tok"}},
	core.OpOAuthLogout.Name: {core.OAuthLogoutParams{ID: "nope"}, core.OAuthLogoutParams{Server: "https://mcp.example/mcp"}, core.OAuthLogoutParams{}},
	core.OpConfigSet.Name:   {core.ConfigParams{Path: "a..b", Value: json.RawMessage(`1`)}, core.ConfigParams{Path: "a.b"}},
	core.OpConfigUnset.Name: {core.ConfigParams{Path: ""}},
	core.OpStateBackup.Name: {core.BackupParams{Path: "relative.db"}, core.BackupParams{Path: "/nonexistent-clawkit-dir/b.db"}},

	research.OpStart.Name: {
		research.StartParams{Question: ""},
		research.StartParams{Question: "q", OutputFormat: "nope"},
		research.StartParams{Question: "q"}, // research is not enabled
		research.StartParams{Question: "q", Caller: research.Caller{SessionKey: "bad key!"}},
		research.StartParams{Question: "q", Inputs: research.AskInputs(research.InputSpec{Path: "relative.pdf"})},
		research.StartParams{Question: "q", Inputs: research.AskInputs(research.InputSpec{Path: "/a.pdf", Pages: "2-1"})},
		research.StartParams{Question: "q", Visualization: "always"},
		research.StartParams{Question: "q", FollowUp: &research.JobRef{Job: "nope"}},
		research.StartParams{Question: "q", Tools: &research.Tools{MCPServers: []research.MCPServer{{Name: "m", URL: "https://x?key=secret"}}}},
	},
	research.OpApprove.Name: {research.ApproveParams{JobParams: research.JobParams{Job: "nope"}}, research.ApproveParams{}},
	research.OpReject.Name:  {research.JobParams{Job: "nope"}, research.JobParams{}},
	research.OpPoll.Name:    {research.JobParams{Job: "nope"}, research.JobParams{}},
	research.OpWait.Name:    {research.WaitParams{JobParams: research.JobParams{Job: "nope"}}},
	research.OpCancel.Name:  {research.JobParams{Job: "nope"}},
	research.OpRecover.Name: {json.RawMessage(`{"surprise":1}`)},
	research.OpRPC.Name: {
		json.RawMessage(`{"request":{"version":1,"action":"start","question":"q"},"sessionKey":"cli","agentId":"main"}`),
		json.RawMessage(`{"request":{"version":1,"action":"poll","handle":"../x"},"sessionKey":"cli","agentId":"main"}`),
	},

	skills.OpWrite.Name: {
		skillWrite("a/b"), skillWrite("nope"), skillWrite(""),
		skills.WriteParams{FileParams: skills.FileParams{Target: skills.Target{PluginID: "p"}, Skill: "Bad Name", File: "SKILL.md"}},
		skills.WriteParams{FileParams: skills.FileParams{Target: skills.Target{PluginID: "p"}, Skill: "good", File: "../x"}},
	},
	skills.OpRemove.Name: {
		skills.FileParams{Target: skills.Target{PluginID: "nope"}, Skill: "good"},
		skills.FileParams{Target: skills.Target{PluginID: "a/b"}, Skill: "good"},
		skills.FileParams{Target: skills.Target{PluginID: "nope"}, Skill: "good", File: "SKILL.md"},
	},
	skills.OpInstall.Name: {
		skills.InstallParams{Target: skills.Target{PluginID: "nope"}, Skill: "good", Files: []skills.SourceFile{{Path: "SKILL.md", Content: []byte(goodSkill)}}},
		skills.InstallParams{Target: skills.Target{PluginID: "a/b"}, Skill: "good"},
	},
}

const goodSkill = "---\nname: good\ndescription: A skill that is fine.\n---\nBody.\n"

func skillWrite(plugin string) skills.WriteParams {
	return skills.WriteParams{FileParams: skills.FileParams{Target: skills.Target{PluginID: plugin}, Skill: "good", File: "SKILL.md"}, Content: []byte(goodSkill)}
}

// reads holds an input for each read-only operation (refused or not:
// either way it creates nothing).
var reads = map[string]any{
	core.OpSessionShow.Name:  core.SessionParams{AgentID: "main", SessionKey: "cli"},
	core.OpSessionList.Name:  core.SessionParams{},
	core.OpAuthList.Name:     core.None{},
	core.OpStateStatus.Name:  core.None{},
	research.OpList.Name:     research.ListParams{},
	research.OpShow.Name:     research.JobParams{Job: "rj_aaaaaaaaaaaaaaaa"},
	research.OpDescribe.Name: research.DescribeParams{},
	skills.OpRoot.Name:       skills.Target{PluginID: "nope"},
	skills.OpList.Name:       skills.Target{PluginID: "nope"},
	skills.OpFiles.Name:      skills.FilesParams{Target: skills.Target{PluginID: "nope"}, Skill: "good"},
	skills.OpRead.Name:       skills.FileParams{Target: skills.Target{PluginID: "nope"}, Skill: "good", File: "SKILL.md"},
	skills.OpEvents.Name:     skills.EventsParams{Target: skills.Target{PluginID: "nope"}},
	skills.OpBundle.Name:     skills.BundleParams{Target: skills.Target{PluginID: "nope"}, Skill: "good"},
	skills.OpWatch.Name:      skills.Target{PluginID: "nope"},
}

// A write refused with any error, and every read, leaves a fresh home
// uncreated and an empty home empty: no home folder, no owner lock, no
// database, no config — docs/architecture.md's "a refused call creates
// nothing", checked for every registered operation.
func TestRefusedWritesCreateNothing(t *testing.T) {
	reg := Registry()
	refusedWire, readsWire := map[string][]any{}, map[string]any{}
	for k, v := range refused {
		refusedWire[owner.VersionedName(k)] = v
	}
	for k, v := range reads {
		readsWire[owner.VersionedName(k)] = v
	}
	for _, name := range reg.Names() {
		m, _ := reg.LookupWire(name)
		var inputs []any
		if m.Write {
			inputs = refusedWire[name]
			if len(inputs) == 0 {
				t.Errorf("write operation %s has no refused input in the table 'refused' (pkg/ops/refusal_test.go): add one", name)
				continue
			}
		} else {
			in, ok := readsWire[name]
			if !ok {
				t.Errorf("read-only operation %s has no input in the table 'reads' (pkg/ops/refusal_test.go): add one", name)
				continue
			}
			inputs = []any{in}
		}
		for i, in := range inputs {
			for _, empty := range []bool{false, true} {
				parent := t.TempDir()
				home := filepath.Join(parent, "home")
				if empty {
					if err := os.Mkdir(home, 0o700); err != nil {
						t.Fatal(err)
					}
				}
				r := &owner.Router{Home: owner.Home{Dir: home}, Registry: reg, LockTimeout: time.Second}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := r.Route(ctx, name, in, &owner.CallReply{})
				cancel()
				if m.Write && name != research.OpRPC.Name && err == nil {
					t.Errorf("%s #%d (empty home %v): accepted %+v", name, i, empty, in)
				}
				if m.Write && name == research.OpRPC.Name && err == nil {
					if env, ok := res.(research.Response); !ok || env.OK {
						t.Errorf("%s #%d: envelope accepted: %v", name, i, res)
					}
				}
				if got := tree(t, parent); len(got) != 0 && !(empty && len(got) == 1 && got[0] == "home") {
					t.Errorf("%s #%d (empty home %v, %v): created %v", name, i, empty, err, got)
				}
			}
		}
	}
}

// tree lists every path under dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
