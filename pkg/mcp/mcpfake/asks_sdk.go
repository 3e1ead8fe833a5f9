//lint:file-ignore SA1019 roots and sampling are deprecated by 2026-07-28 (SEP-2577), and still what legacy servers send: the fake sends them to test clawkit's answers

package mcpfake

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// asksSDKServer is the go-sdk server of mode gosdk-asks: its tools ask
// the client and return what it answered, as JSON text (an error's text
// when the SDK or the client refused).
func asksSDKServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcpfake-gosdk-asks", Version: "1.8.0"}, nil)
	reply := func(v any, err error) (*sdk.CallToolResult, any, error) {
		if err != nil {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "refused: " + err.Error()}}}, nil, nil
		}
		b, _ := json.Marshal(v)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
	}
	type elicitIn struct {
		Params json.RawMessage `json:"params,omitempty"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "elicit", Description: "asks the client to fill a form"}, func(ctx context.Context, req *sdk.CallToolRequest, in elicitIn) (*sdk.CallToolResult, any, error) {
		raw := in.Params
		if len(raw) == 0 {
			raw, _ = json.Marshal(defaultsForm)
		}
		var p sdk.ElicitParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return reply(nil, err)
		}
		return reply(req.Session.Elicit(ctx, &p))
	})
	sdk.AddTool(s, &sdk.Tool{Name: "roots", Description: "asks the client for its roots"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		//nolint:staticcheck // deprecated by 2026-07-28, still what a legacy server sends (the file's lint:file-ignore)
		return reply(req.Session.ListRoots(ctx, nil))
	})
	sdk.AddTool(s, &sdk.Tool{Name: "sample", Description: "asks the client's model"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		//nolint:staticcheck // as above
		return reply(req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "What is 2+2?"}}}}))
	})
	return s
}
