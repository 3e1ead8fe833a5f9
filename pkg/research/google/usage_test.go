package google_test

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "google.golang.org/genai/interactions/models/interactions"

	"github.com/clawkit/clawkit/pkg/research/google"
)

var usageSeeds = []string{
	`{"total_input_tokens":120,"total_output_tokens":3400,"total_tokens":3520}`,
	`{"total_tokens":10,"total_thought_tokens":3,"total_tool_use_tokens":2,"total_cached_tokens":1,"grounding_tool_count":[{"type":"google_search","count":4},{"type":"retrieval","count":1}]}`,
	`{"total_tokens":"10"}`,
	`{"total_tokens":-1,"total_input_tokens":1.5}`,
	`{"TOTAL_TOKENS":5}`,
	`{"grounding_tool_count":[{"count":2},{"type":"x"},null,3]}`,
	`{"total_tokens":9223372036854775808}`,
	`[]`, `null`, `{}`,
}

// sdkCount is what the SDK read for a count, as clawkit reads it: absent
// unless it is a count in range.
func sdkCount(p *int) int64 {
	if p == nil || *p < 0 || int64(*p) > google.MaxUsageCount {
		return 0
	}
	return int64(*p)
}

// compareUsageWithSDK: wherever the SDK's Usage reads a body, clawkit's
// normalised usage has the same counts (clawkit also reads bodies the
// SDK refuses, leniently; the fuzz target holds the rest to the SDK).
func compareUsageWithSDK(t *testing.T, body string) {
	t.Helper()
	ours, ok := google.ParseUsage(json.RawMessage(body))
	var u sdk.Usage
	if err := json.Unmarshal([]byte(body), &u); err != nil {
		return
	}
	if !ok {
		// The SDK reads null as an empty usage; so does clawkit (absent).
		if !reflect.DeepEqual(ours, google.Usage{}) {
			t.Fatalf("%s: not ok but %+v", body, ours)
		}
		return
	}
	want := google.Usage{Total: sdkCount(u.TotalTokens), Input: sdkCount(u.TotalInputTokens), Output: sdkCount(u.TotalOutputTokens),
		Thought: sdkCount(u.TotalThoughtTokens), ToolUse: sdkCount(u.TotalToolUseTokens), Cached: sdkCount(u.TotalCachedTokens)}
	got := ours
	got.GroundingToolCalls, got.GroundingByTool = 0, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nclawkit %+v\nSDK     %+v", body, got, want)
	}
	var calls int64
	for i, g := range u.GroundingToolCount {
		if i == 64 {
			break
		}
		calls += sdkCount(g.Count)
	}
	if calls != ours.GroundingToolCalls {
		t.Fatalf("%s: grounding calls clawkit %d, SDK %d", body, ours.GroundingToolCalls, calls)
	}
}

func TestUsageIsTheSDKs(t *testing.T) {
	for _, s := range usageSeeds {
		compareUsageWithSDK(t, s)
	}
	u, ok := google.ParseUsage(json.RawMessage(usageSeeds[1]))
	if !ok || u.Total != 10 || u.Thought != 3 || u.ToolUse != 2 || u.Cached != 1 || u.GroundingToolCalls != 5 || u.GroundingByTool["google_search"] != 4 {
		t.Fatalf("%+v", u)
	}
	if u, _ := google.ParseUsage(json.RawMessage(`{"total_tokens":"10","total_input_tokens":7}`)); u.Total != 0 || u.Input != 7 || u.Tokens() != 7 {
		t.Fatalf("a count of the wrong type is absent, the rest kept: %+v", u)
	}
	if sum := u.Add(u); sum.GroundingByTool["google_search"] != 8 || sum.Total != 20 {
		t.Fatalf("Add: %+v", sum)
	}
}

func FuzzUsageMatchesSDK(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		u, _ := google.ParseUsage(json.RawMessage(body))
		if u.Total < 0 || u.Tokens() < 0 || u.GroundingToolCalls < 0 || len(u.GroundingByTool) > 64 {
			t.Fatalf("%s: %+v", body, u)
		}
		compareUsageWithSDK(t, body)
	})
}
