package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

func TestInspectPlugin(t *testing.T) {
	home := t.TempDir()
	put := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(filepath.Join(home, "plugins", "notes", "openclaw.plugin.json"), `{"id":"notes","agentSkillsDir":"skills"}`)
	put(filepath.Join(home, "ext", "mem", "openclaw.plugin.json"), `{id:'mem', kind:'memory', contracts:{tools:['b','a']}}`)
	put(filepath.Join(home, "plugins", "bad", "openclaw.plugin.json"), `{id:`)
	put(filepath.Join(home, "config.json"), `{"plugins":{"entries":{"mem":{"path":"ext/mem","enabled":false},"notes":{"enabled":"yes"}}}}`)

	n, err := InspectPlugin(home, "notes")
	if err != nil || n.Entry != EntryHomeFolder || !n.ConfigEntry || n.Status != PluginEnabled || n.AgentSkillsDir != "skills" ||
		len(n.Warnings) != 1 || len(n.Kinds) != 0 || len(n.Contracts) != 0 {
		t.Fatalf("notes: %+v %v", n, err)
	}
	m, err := InspectPlugin(home, "mem")
	if err != nil || m.Entry != EntryConfigPath || m.Dir != filepath.Join(home, "ext", "mem") || m.Status != PluginDisabled || m.Enabled ||
		!reflect.DeepEqual(m.Kinds, []string{"memory"}) || !reflect.DeepEqual(m.Contracts, map[string][]string{"tools": {"a", "b"}}) {
		t.Fatalf("mem: %+v %v", m, err)
	}
	b, err := InspectPlugin(home, "bad")
	if err != nil || b.Status != PluginError || b.Problem == "" {
		t.Fatalf("bad: %+v %v", b, err)
	}
	if _, err := InspectPlugin(home, "nope"); errs.CodeOf(err) != errs.CodeNotFound {
		t.Fatalf("nope: %v", err)
	}
	if _, err := InspectPlugin(home, "a/b"); errs.CodeOf(err) != CodeInvalidPluginId {
		t.Fatalf("a/b: %v", err)
	}
	// Inspecting reads only: a home that does not exist stays so.
	fresh := filepath.Join(t.TempDir(), "fresh")
	if _, err := InspectPlugin(fresh, "notes"); errs.CodeOf(err) != errs.CodeNotFound {
		t.Fatalf("fresh: %v", err)
	}
	if _, err := os.Lstat(fresh); err == nil {
		t.Fatal("inspect created the home")
	}
}
