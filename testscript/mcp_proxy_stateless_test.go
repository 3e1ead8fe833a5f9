package testscript

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// The proxy's 2026-07-28 era (docs/mcp.md, "The proxy's eras"):
// mcp_proxy_stateless.txtar.
func mcpProxyStatelessKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){"mcpsdkheaders": mcpSDKHeaders},
		cmds:     map[string]scriptCmd{"mcp-post": cmdMCPPost},
	}
}

// mcpSDKHeaders: a Go SDK server over stdio (it speaks 2026-07-28 and the
// legacy revisions) with one tool whose argument region is mirrored in
// the header Mcp-Param-Region (x-mcp-header), one that logs and reports
// progress, and one that asks the client for its roots (a server request).
func mcpSDKHeaders() {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcpsdkheaders", Version: "1.8.0"}, nil)
	s.AddTool(&sdk.Tool{Name: "where", Description: "says its region",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer"}}}`)},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct {
				Region string `json:"region"`
			}
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "region=" + in.Region}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "busy", Description: "reports progress, then answers", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if tok := r.Params.GetProgressToken(); tok != nil {
				_ = r.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "mcpsdkheaders:", err)
		os.Exit(1)
	}
}

// mcp-post [-h 'Name: value']… URL BODY: one POST as a 2026-07-28 client
// sends it (JSON, accepting JSON and SSE, plus the given headers), and
// prints "status N" and then the answer: a JSON body as it came, an SSE
// stream's data lines one a line.
func cmdMCPPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mcp-post")
	}
	var headers [][2]string
	for len(args) > 2 && args[0] == "-h" {
		k, v, ok := strings.Cut(args[1], ":")
		if !ok {
			ts.Fatalf("mcp-post: -h wants 'Name: value', got %q", args[1])
		}
		headers = append(headers, [2]string{strings.TrimSpace(k), strings.TrimPrefix(v, " ")})
		args = args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: mcp-post [-h 'Name: value']… URL BODY")
	}
	req, err := http.NewRequest(http.MethodPost, args[0], strings.NewReader(args[1]))
	ts.Check(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range headers {
		req.Header[h[0]] = append(req.Header[h[0]], h[1]) // as given: the case of the name kept
	}
	cl := &http.Client{Timeout: 2 * time.Minute}
	resp, err := cl.Do(req)
	ts.Check(err)
	defer fsx.CloseRead(resp.Body)
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	ts.Check(err)
	out := ts.Stdout()
	_, _ = fmt.Fprintf(out, "status %d\n", resp.StatusCode)
	if resp.Header.Get("Mcp-Session-Id") != "" {
		_, _ = fmt.Fprintln(out, "session-id set")
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				_, _ = fmt.Fprintln(out, d)
			}
		}
		return
	}
	_, _ = fmt.Fprintln(out, strings.TrimSpace(string(body)))
}
