// Package pluginmanifest is clawkit's one reader of a plugin's
// openclaw.plugin.json (docs/skills.md): pkg/skills reads it to find a
// plugin's skills folder, pkg/artifacts to list a release's bundled plugins.
// It is a leaf (it imports only pkg/fsx, pkg/json5 and the linter's rune
// rule), so both can use it without a cycle.
package pluginmanifest

import (
	"fmt"
	"strings"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/json5"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// File is a plugin's manifest inside its folder.
const File = "openclaw.plugin.json"

// MaxBytes bounds a manifest read (docs/skills.md).
const MaxBytes = 256 << 10

// Manifest is the part of openclaw.plugin.json clawkit reads.
type Manifest struct {
	ID             string
	Name           string // "" when absent
	Version        string // "" when absent
	AgentSkillsDir string // "" when the plugin does not author skills
	// Kinds are the exclusive plugin kinds the manifest declares ("kind":
	// a string or a list, e.g. "memory", "context-engine"); empty when
	// absent.
	Kinds []string
	// Contracts is the manifest's static capability-ownership snapshot
	// ("contracts": each key a list of ids, e.g. tools, speechProviders),
	// keys sorted by the caller. Only `plugins inspect` shows it; the
	// rest of clawkit acts on none of it.
	Contracts map[string][]string
	// Providers, Channels and CLIBackends are the manifest's top-level
	// "providers" (text inference), "channels" and "cliBackends" (with
	// "setup.cliBackends") ids; CommandAliases the names of its
	// "commandAliases". Only the shape (Shape) reads them.
	Providers, Channels, CLIBackends, CommandAliases []string
	// Problems are parts of "kind" and "contracts" that are not of the
	// documented shape: reported by `plugins inspect`, never fatal (they
	// are OpenClaw's business, and a skill command must not fail on them).
	Problems []string
}

// ValidID is the one plugin id rule, for a manifest's "id" and for an id
// given on the command line (--plugin). OpenClaw itself takes any string
// that is not blank after trimming, but clawkit uses the id as a folder
// name (<home>/plugins/<id>/), a config key (plugins.entries.<id>) and an
// entry of the artifacts manifest, so it must also be one plain name: not
// "." or "..", no '/', '\' or NUL, no surrounding white space (OpenClaw
// would trim it and mean another id), and no control, bidi, zero-width or
// look-alike characters (skilllint.SuspiciousRune), which would make the id
// read differently than it resolves.
func ValidID(id string) bool {
	return id != "" && id != "." && id != ".." && id == strings.TrimSpace(id) &&
		!strings.ContainsAny(id, "/\\\x00") && skilllint.SuspiciousRune(id) == 0
}

// Parse decodes a manifest (JSON5, untrusted bytes). id is required and
// must satisfy ValidID; name and version, when present, must be strings;
// agentSkillsDir, when present, must be a relative folder path
// (fsx.CheckRel: no "..", no absolute, no backslash, no empty segments).
// Other keys are OpenClaw's business and are not read.
func Parse(data []byte) (*Manifest, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("the manifest is %d bytes; the limit is %d", len(data), MaxBytes)
	}
	v, err := json5.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON5: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the manifest must be an object")
	}
	id, ok := obj["id"].(string)
	if !ok || strings.TrimSpace(id) == "" {
		return nil, fmt.Errorf("the manifest has no string \"id\"")
	}
	if !ValidID(id) {
		return nil, fmt.Errorf("the manifest's id %q is not a plain name", id)
	}
	m := &Manifest{ID: id}
	for key, dst := range map[string]*string{"name": &m.Name, "version": &m.Version} {
		if raw, present := obj[key]; present && raw != nil {
			s, ok := raw.(string)
			if !ok {
				return nil, fmt.Errorf("%q must be a string", key)
			}
			*dst = s
		}
	}
	if raw, present := obj["agentSkillsDir"]; present && raw != nil {
		dir, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("\"agentSkillsDir\" must be a string")
		}
		if err := fsx.CheckRel(dir); err != nil {
			return nil, fmt.Errorf("\"agentSkillsDir\" must be a relative folder name: %w", err)
		}
		m.AgentSkillsDir = dir
	}
	m.Kinds = stringList(obj["kind"], "kind", &m.Problems)
	if raw, present := obj["contracts"]; present && raw != nil {
		cs, ok := raw.(map[string]any)
		if !ok {
			m.Problems = append(m.Problems, "\"contracts\" is not an object")
		} else {
			m.Contracts = map[string][]string{}
			for k, v := range cs {
				if l := stringList(v, "contracts."+k, &m.Problems); l != nil {
					m.Contracts[k] = l
				}
			}
		}
	}
	m.Providers = stringList(obj["providers"], "providers", &m.Problems)
	m.Channels = stringList(obj["channels"], "channels", &m.Problems)
	m.CLIBackends = stringList(obj["cliBackends"], "cliBackends", &m.Problems)
	if setup, ok := obj["setup"].(map[string]any); ok {
		m.CLIBackends = append(m.CLIBackends, stringList(setup["cliBackends"], "setup.cliBackends", &m.Problems)...)
	}
	if aliases, ok := obj["commandAliases"].([]any); ok {
		for _, a := range aliases {
			if o, ok := a.(map[string]any); ok {
				if name, ok := o["name"].(string); ok {
					m.CommandAliases = append(m.CommandAliases, name)
				}
			}
		}
	}
	return m, nil
}

// stringList reads a string or a list of strings; anything else is noted
// in problems and read as nothing.
func stringList(v any, key string, problems *[]string) []string {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%q holds a value that is not a string", key))
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	*problems = append(*problems, fmt.Sprintf("%q is not a string or a list of strings", key))
	return nil
}
