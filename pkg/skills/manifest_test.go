package skills

import (
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(`// plugin
{ id: 'notes', agentSkillsDir: 'skills', }`))
	if err != nil || m.ID != "notes" || m.AgentSkillsDir != "skills" {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = ParseManifest([]byte(`{"id": "x"}`))
	if err != nil || m.AgentSkillsDir != "" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, in := range []string{`{}`, `{"id": ""}`, `{"id": 1}`, `[]`, `{"id":"x","agentSkillsDir":"../up"}`,
		`{"id":"x","agentSkillsDir":"/abs"}`, `{"id":"x","agentSkillsDir":3}`, `{"id":"x",}` + strings.Repeat(" ", MaxManifestBytes)} {
		if _, err := ParseManifest([]byte(in)); err == nil {
			t.Errorf("ParseManifest(%.40q) accepted", in)
		}
	}
}

// FuzzParseManifest: any bytes either give a manifest with an id or an
// error; never a panic.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{`{id: 'x', agentSkillsDir: "skills",}`, `{"id":"x"}`, `[]`, `{id: 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err == nil && m.ID == "" {
			t.Fatal("manifest without id accepted")
		}
	})
}
