package testscript

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func mcpSDKServerKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"mcpsdkserver": mcpSDKServer,
		},
	}
}

// mcpSDKServer [-versions V,V…]: a real MCP server built from the official
// Go SDK, over stdio: tools echo and add, a prompt greet, a resource
// mem://hello. The SDK speaks 2026-07-28 (server/discover, stateless
// requests) and the legacy revisions; -versions narrows what it speaks
// (e.g. 2026-07-28 alone: a server of the new era only).
func mcpSDKServer() {
	fs := flag.NewFlagSet("mcpsdkserver", flag.ExitOnError)
	versions := fs.String("versions", "", "comma-separated protocol versions to speak (default: all the SDK speaks)")
	_ = fs.Parse(os.Args[1:])
	opts := &sdk.ServerOptions{}
	if *versions != "" {
		opts.SupportedProtocolVersions = strings.Split(*versions, ",")
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcpsdkserver", Version: "1.8.0"}, opts)
	type echoIn struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "echoes its message"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "adds a and b"}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "greet", Description: "a greeting"}, func(_ context.Context, _ *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "Hello from the Go SDK"}}}}, nil
	})
	s.AddResource(&sdk.Resource{URI: "mem://hello", Name: "hello", MIMEType: "text/plain"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "hello resource"}}}, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "mcpsdkserver:", err)
		os.Exit(1)
	}
}
