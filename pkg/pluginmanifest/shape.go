package pluginmanifest

import (
	"fmt"
	"slices"
	"strings"
)

// The plugin shapes OpenClaw's `plugins inspect` reports (docs/skills.md,
// "plugins inspect"): by the capability types a plugin registers, then,
// with none, by whether it registers only hooks.
const (
	ShapePlainCapability  = "plain-capability"  // exactly one capability type
	ShapeHybridCapability = "hybrid-capability" // more than one
	ShapeHookOnly         = "hook-only"         // hooks only: no capability, tool, command, service or route
	ShapeNonCapability    = "non-capability"    // tools, commands, services or routes, no capability
	ShapeUnknown          = "unknown"           // the manifest is not enough: the plugin must run
)

// Capability is one capability type the manifest declares, with its ids.
type Capability struct {
	Kind string   `json:"kind"`
	IDs  []string `json:"ids"`
}

// capabilityKeys maps each capability type OpenClaw counts to where a
// manifest declares it: a top-level list or a "contracts" key (the same
// sources OpenClaw's registry snapshot reads before any plugin runs).
var capabilityKeys = []struct{ kind, key string }{
	{"cli-backend", "cliBackends"},
	{"text-inference", "providers"},
	{"decision", "contracts.decisionProviders"},
	{"embedding", "contracts.embeddingProviders"},
	{"speech", "contracts.speechProviders"},
	{"realtime-transcription", "contracts.realtimeTranscriptionProviders"},
	{"realtime-voice", "contracts.realtimeVoiceProviders"},
	{"media-understanding", "contracts.mediaUnderstandingProviders"},
	{"transcript-source", "contracts.transcriptSourceProviders"},
	{"document-extractors", "contracts.documentExtractors"},
	{"image-generation", "contracts.imageGenerationProviders"},
	{"video-generation", "contracts.videoGenerationProviders"},
	{"music-generation", "contracts.musicGenerationProviders"},
	{"web-content-extractors", "contracts.webContentExtractors"},
	{"web-fetch", "contracts.webFetchProviders"},
	{"web-search", "contracts.webSearchProviders"},
	{"migration-provider", "contracts.migrationProviders"},
	{"worker-provider", "contracts.workerProviders"},
	{"channel", "channels"},
}

// Capabilities are the capability types the manifest declares (each with
// at least one id), in OpenClaw's order. A "context-engine" kind counts as
// one: such a plugin owns a context engine. Capabilities registered only
// at run time (agent harnesses, session catalogs, gateway discovery) are
// not in a manifest.
func (m *Manifest) Capabilities() []Capability {
	var out []Capability
	for _, c := range capabilityKeys {
		var ids []string
		switch c.key {
		case "cliBackends":
			ids = m.CLIBackends
		case "providers":
			ids = m.Providers
		case "channels":
			ids = m.Channels
		default:
			ids = m.Contracts[strings.TrimPrefix(c.key, "contracts.")]
		}
		if len(ids) > 0 {
			ids = slices.Clone(ids)
			slices.Sort(ids)
			out = append(out, Capability{Kind: c.kind, IDs: slices.Compact(ids)})
		}
	}
	if slices.Contains(m.Kinds, "context-engine") {
		out = append(out, Capability{Kind: "context-engine", IDs: []string{m.ID}})
	}
	return out
}

// Shape derives the plugin's shape from its manifest where that is enough,
// else ShapeUnknown with the reason:
//   - two or more capability types declared: hybrid-capability (what a
//     plugin registers when it runs only adds to them);
//   - one: plain-capability;
//   - none, but tools or command aliases declared: non-capability (a
//     hook-only plugin has neither);
//   - none and neither: unknown, since hook-only and non-capability differ
//     only by what the plugin registers when it runs (hooks against
//     commands, services, HTTP routes), which no manifest declares.
func (m *Manifest) Shape() (shape, reason string) {
	switch caps := m.Capabilities(); {
	case len(caps) > 1:
		return ShapeHybridCapability, ""
	case len(caps) == 1:
		return ShapePlainCapability, ""
	}
	if len(m.Contracts["tools"]) > 0 || len(m.CommandAliases) > 0 {
		return ShapeNonCapability, ""
	}
	return ShapeUnknown, fmt.Sprintf("the manifest declares no capability, tool or command: whether %s is hook-only or non-capability depends on what it registers when it runs (hooks, or commands, services, routes); 'openclaw plugins inspect %s' loads it and tells", m.ID, m.ID)
}
