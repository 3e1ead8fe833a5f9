package pluginmanifest

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	m, err := Parse([]byte(`// plugin
{ id: 'notes', agentSkillsDir: 'skills', }`))
	if err != nil || m.ID != "notes" || m.AgentSkillsDir != "skills" {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = Parse([]byte(`{"id": "x"}`))
	if err != nil || m.AgentSkillsDir != "" {
		t.Fatalf("%+v %v", m, err)
	}
	// A bundled plugin's manifest as OpenClaw's releases ship it.
	m, err = Parse([]byte(`{"id": "memory-core", "name": "Memory", "version": "2026.9.5", "configSchema": {}}`))
	if err != nil || m.ID != "memory-core" || m.Name != "Memory" || m.Version != "2026.9.5" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, in := range []string{`{}`, `{"id": ""}`, `{"id": 1}`, `[]`, `{"id":"x","agentSkillsDir":"../up"}`,
		`{"id":"x","agentSkillsDir":"/abs"}`, `{"id":"x","agentSkillsDir":3}`,
		`{"id":"a/b"}`, `{"id":".."}`, `{"id":" x"}`, `{"id":"x\u202e"}`, `{"id":"x","name":1}`, `{"id":"x","version":[]}`, `{"id":"x",}` + strings.Repeat(" ", MaxBytes)} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%.40q) accepted", in)
		}
	}
}

// kind and contracts: read when of the documented shape, otherwise noted
// as problems and never fatal.
func TestParseKindsContracts(t *testing.T) {
	m, err := Parse([]byte(`{id: 'mem', kind: ['memory', 'context-engine'], contracts: {tools: ['recall'], embeddingProviders: []}}`))
	if err != nil || !reflect.DeepEqual(m.Kinds, []string{"memory", "context-engine"}) ||
		!reflect.DeepEqual(m.Contracts, map[string][]string{"tools": {"recall"}, "embeddingProviders": {}}) || len(m.Problems) != 0 {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = Parse([]byte(`{id: 'one', kind: 'memory'}`))
	if err != nil || !reflect.DeepEqual(m.Kinds, []string{"memory"}) || m.Contracts != nil {
		t.Fatalf("%+v %v", m, err)
	}
	for in, want := range map[string]string{
		`{id: 'x', kind: 3}`:                         `"kind" is not a string or a list of strings`,
		`{id: 'x', kind: ['a', 1]}`:                  `"kind" holds a value that is not a string`,
		`{id: 'x', contracts: []}`:                   `"contracts" is not an object`,
		`{id: 'x', contracts: {tools: {a: 1}}}`:      `"contracts.tools" is not a string or a list of strings`,
		`{id: 'x', contracts: {tools: ['a', null]}}`: `"contracts.tools" holds a value that is not a string`,
	} {
		m, err := Parse([]byte(in))
		if err != nil || len(m.Problems) != 1 || m.Problems[0] != want {
			t.Errorf("%s: %+v %v; want problem %s", in, m, err, want)
		}
	}
}

// FuzzParse: any bytes either give a manifest with an id or an
// error; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{id: 'x', agentSkillsDir: "skills",}`, `{"id":"x"}`, `[]`, `{id: 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err == nil && !ValidID(m.ID) {
			t.Fatalf("manifest with id %q accepted", m.ID)
		}
	})
}

func TestValidID(t *testing.T) {
	for _, ok := range []string{"notes", "memory-core", "My.Plugin", "a_b", "x1"} {
		if !ValidID(ok) {
			t.Errorf("ValidID(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a\x00", " a", "a\t", "a\u200b", "a\u2215b"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestShape(t *testing.T) {
	for _, tc := range []struct {
		manifest, shape string
		caps            int
	}{
		{`{id: "a", providers: ["x"], contracts: {speechProviders: ["s"]}}`, ShapeHybridCapability, 2},
		{`{id: "a", cliBackends: ["c"], setup: {cliBackends: ["d"]}}`, ShapePlainCapability, 1},
		{`{id: "a", channels: ["matrix"], contracts: {tools: ["t"]}}`, ShapePlainCapability, 1},
		{`{id: "a", kind: "context-engine", contracts: {webSearchProviders: ["w"]}}`, ShapeHybridCapability, 2},
		{`{id: "a", contracts: {tools: ["t"], speechProviders: []}}`, ShapeNonCapability, 0},
		{`{id: "a", commandAliases: [{name: "x"}]}`, ShapeNonCapability, 0},
		{`{id: "a", kind: "memory"}`, ShapeUnknown, 0},
		{`{id: "a"}`, ShapeUnknown, 0},
	} {
		m, err := Parse([]byte(tc.manifest))
		if err != nil {
			t.Fatalf("%s: %v", tc.manifest, err)
		}
		shape, reason := m.Shape()
		if shape != tc.shape || len(m.Capabilities()) != tc.caps || (shape == ShapeUnknown) != (reason != "") {
			t.Errorf("%s: shape %q (%q), %d capabilities; want %q, %d", tc.manifest, shape, reason, len(m.Capabilities()), tc.shape, tc.caps)
		}
	}
}
