package google

import (
	"encoding/json"
	"sort"
	"strconv"
)

// Usage is an interaction's token use, normalised from the SDKs' Usage
// (total_tokens, total_input_tokens, total_output_tokens,
// total_thought_tokens, total_tool_use_tokens, total_cached_tokens,
// grounding_tool_count[]); docs/research.md, "Tokens and cost".
// A count the provider did not report is 0.
type Usage struct {
	Total   int64 `json:"totalTokens"`
	Input   int64 `json:"inputTokens"`
	Output  int64 `json:"outputTokens"`
	Thought int64 `json:"thoughtTokens"`
	ToolUse int64 `json:"toolUseTokens"`
	Cached  int64 `json:"cachedTokens"`
	// GroundingToolCalls is the sum of grounding_tool_count[].count;
	// GroundingByTool the same by the entry's type (google_search,
	// google_maps, retrieval, or what the provider names).
	GroundingToolCalls int64            `json:"groundingToolCalls"`
	GroundingByTool    map[string]int64 `json:"groundingByTool,omitempty"`
}

// MaxUsageCount bounds one reported count: a larger or negative number
// is not a count and is read as absent, so sums never overflow.
const MaxUsageCount = 1 << 50

// maxGroundingEntries bounds the grounding entries read (and the map).
const maxGroundingEntries = 64

// ParseUsage reads an interaction's (or a stream event's) usage object by
// the SDKs' exact member names. It never fails a poll: a member of the
// wrong type, a negative, fractional or oversized count is read as absent
// (the SDKs would refuse the whole body; a report matters more than its
// accounting). ok is false when raw is absent, null or not an object.
func ParseUsage(raw json.RawMessage) (u Usage, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return u, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return u, false
	}
	for name, dst := range map[string]*int64{"total_tokens": &u.Total, "total_input_tokens": &u.Input,
		"total_output_tokens": &u.Output, "total_thought_tokens": &u.Thought, "total_tool_use_tokens": &u.ToolUse,
		"total_cached_tokens": &u.Cached} {
		*dst, _ = count(m[name])
	}
	var entries []json.RawMessage
	if json.Unmarshal(m["grounding_tool_count"], &entries) == nil {
		for i, e := range entries {
			if i == maxGroundingEntries {
				break
			}
			var em map[string]json.RawMessage
			if json.Unmarshal(e, &em) != nil || em == nil {
				continue
			}
			n, okN := count(em["count"])
			var typ string
			if !okN || json.Unmarshal(em["type"], &typ) != nil || len(typ) > 64 {
				typ = ""
			}
			if !okN {
				continue
			}
			u.GroundingToolCalls += n
			if typ != "" {
				if u.GroundingByTool == nil {
					u.GroundingByTool = map[string]int64{}
				}
				u.GroundingByTool[typ] += n
			}
		}
	}
	return u, true
}

// count reads a JSON integer in 0..MaxUsageCount.
func count(v json.RawMessage) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 || n > MaxUsageCount {
		return 0, false
	}
	return n, true
}

// Add returns u plus v, field by field.
func (u Usage) Add(v Usage) Usage {
	out := Usage{Total: u.Total + v.Total, Input: u.Input + v.Input, Output: u.Output + v.Output, Thought: u.Thought + v.Thought,
		ToolUse: u.ToolUse + v.ToolUse, Cached: u.Cached + v.Cached, GroundingToolCalls: u.GroundingToolCalls + v.GroundingToolCalls}
	for _, m := range []map[string]int64{u.GroundingByTool, v.GroundingByTool} {
		for k, n := range m {
			if out.GroundingByTool == nil {
				out.GroundingByTool = map[string]int64{}
			}
			out.GroundingByTool[k] += n
		}
	}
	return out
}

// Tokens is the count a token budget is held to: total_tokens when the
// provider reports it, else the sum of the parts it does report (input,
// output, thought and tool-use; cached tokens are part of the input).
func (u Usage) Tokens() int64 {
	if u.Total > 0 {
		return u.Total
	}
	return u.Input + u.Output + u.Thought + u.ToolUse
}

// GroundingTools lists the grounding tool names in order (for output).
func (u Usage) GroundingTools() []string {
	out := make([]string, 0, len(u.GroundingByTool))
	for k := range u.GroundingByTool {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
