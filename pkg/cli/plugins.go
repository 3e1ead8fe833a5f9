package cli

import (
	"fmt"
	"strings"

	"github.com/clawkit/clawkit/pkg/skills"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// PluginsCmd is `clawkit plugins …` (docs/skills.md, "plugins inspect").
type PluginsCmd struct {
	Inspect PluginsInspectCmd `cmd:"" help:"Show a registered plugin: id, entry, kinds, shape and capabilities, contracts, agentSkillsDir, enabled state."`
}

// PluginsInspectCmd is stateless: it reads the home's config and the
// plugin's manifest, takes no lock and creates nothing.
type PluginsInspectCmd struct {
	ID string `arg:"" name:"id" help:"Plugin id (plugins.entries.<id> in config, or <home>/plugins/<id>/)."`
}

// Run runs `clawkit plugins inspect`.
func (c *PluginsInspectCmd) Run(env *Env) error {
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	info, err := skills.InspectPlugin(h.Dir, c.ID)
	if err != nil {
		return err
	}
	for _, w := range info.Warnings {
		env.Out.Warnf("warning: %s", w)
	}
	// Every value below comes from the config or the manifest: escaped.
	return env.Out.Result(info, func(w *Printer) {
		t := termsafe.Text
		line := func(k, v string) { fmt.Fprintf(w, "%-15s %s\n", k+":", v) }
		line("id", t(info.ID))
		line("status", info.Status)
		if info.Problem != "" {
			line("problem", t(info.Problem))
		}
		entry := info.Entry
		if info.ConfigEntry && info.Entry == skills.EntryHomeFolder {
			entry += " (config plugins.entries." + info.ID + " sets no path)"
		}
		line("entry", t(entry))
		line("dir", t(info.Dir))
		line("enabled", fmt.Sprint(info.Enabled))
		if info.Name != "" {
			line("name", t(info.Name))
		}
		if info.Version != "" {
			line("version", t(info.Version))
		}
		kinds := "(none)"
		if len(info.Kinds) > 0 {
			kinds = t(strings.Join(info.Kinds, ", "))
		}
		line("kinds", kinds)
		shape := info.Shape
		if info.ShapeReason != "" {
			shape += " (" + t(info.ShapeReason) + ")"
		}
		line("shape", shape)
		if len(info.Capabilities) > 0 {
			caps := make([]string, 0, len(info.Capabilities))
			for _, c := range info.Capabilities {
				caps = append(caps, c.Kind+" "+strings.Join(c.IDs, ", "))
			}
			line("capabilities", t(strings.Join(caps, "; ")))
		}
		skillsDir := "(none: the plugin authors no skills)"
		if info.AgentSkillsDir != "" {
			skillsDir = t(info.AgentSkillsDir)
		}
		line("agentSkillsDir", skillsDir)
		if len(info.Contracts) == 0 {
			line("contracts", "(none)")
			return
		}
		fmt.Fprintln(w, "contracts:")
		for _, k := range info.ContractKeys() {
			ids := info.Contracts[k]
			v := "(empty)"
			if len(ids) > 0 {
				v = strings.Join(ids, ", ")
			}
			fmt.Fprintf(w, "  %s: %s\n", t(k), t(v))
		}
	})
}
