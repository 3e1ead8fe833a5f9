// Command suiteclient is the adapter between the MCP conformance suite and
// clawkit's HTTP client: the suite runs it as the --command of each client
// scenario (the scenario server's URL as the last argument, the scenario in
// MCP_CONFORMANCE_SCENARIO, extra context as JSON in
// MCP_CONFORMANCE_CONTEXT), and it drives one `clawkit mcp session --url`
// through the steps that scenario asks a client to take, deciding each next
// request from the answers before it, as a user's script would.
//
// It never speaks MCP itself: everything on the wire is clawkit's. The
// clawkit binary is $CLAWKIT (default: clawkit on PATH). What each scenario
// expects and how the suite runs is in docs/conformance.md, "MCP
// conformance suite".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "suiteclient: usage: suiteclient [clawkit flags…] SERVER_URL (MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	extra := os.Args[1 : len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &sctx); err != nil {
			fmt.Fprintf(os.Stderr, "suiteclient: MCP_CONFORMANCE_CONTEXT: %v\n", err)
			os.Exit(2)
		}
	}
	steps, ok := scenarios[scenario]
	if !ok && strings.HasPrefix(scenario, "auth/") {
		steps, ok = authSteps, true
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "suiteclient: unknown scenario %q\n", scenario)
		os.Exit(2)
	}
	bin := os.Getenv("CLAWKIT")
	if bin == "" {
		bin = "clawkit"
	}
	args := append([]string{"mcp", "session", "--request-timeout", "20s"}, scenarioFlags[scenario]...)
	s, err := open(bin, append(append(args, extra...), "--url", url))
	if err != nil {
		fmt.Fprintf(os.Stderr, "suiteclient: %v\n", err)
		os.Exit(2)
	}
	stepErr := steps(s, sctx)
	closeErr := s.close()
	switch {
	case stepErr != nil:
		fmt.Fprintf(os.Stderr, "suiteclient: %s: %v\n", scenario, stepErr)
		os.Exit(1)
	case closeErr != nil && !s.answeredErr:
		// The session's own exit status: 1 only says some request was
		// answered with an error, which the steps judged already.
		fmt.Fprintf(os.Stderr, "suiteclient: %s: clawkit: %v\n", scenario, closeErr)
		os.Exit(1)
	}
}

// session is one running `clawkit mcp session`: a request line in, one
// answer line out.
type session struct {
	cmd         *exec.Cmd
	in          io.WriteCloser
	out         *bufio.Scanner
	answeredErr bool // some request was answered with a JSON-RPC error
}

type answer struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func open(bin string, args []string) (*session, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &session{cmd: cmd, in: in, out: sc}, nil
}

// call sends one request and waits for its answer line; a JSON-RPC error
// answer is returned as an error, a session that ended before answering too.
func (s *session) call(method string, params any) (json.RawMessage, error) {
	line, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("%s: the session ended: %w", method, err)
	}
	if !s.out.Scan() {
		return nil, fmt.Errorf("%s: the session ended before answering", method)
	}
	var a answer
	if err := json.Unmarshal(s.out.Bytes(), &a); err != nil {
		return nil, fmt.Errorf("%s: answer line: %w", method, err)
	}
	if !a.OK {
		s.answeredErr = true
		if a.Error != nil {
			return nil, fmt.Errorf("%s: error %d: %s", method, a.Error.Code, a.Error.Message)
		}
		return nil, fmt.Errorf("%s: answered with an error", method)
	}
	return a.Result, nil
}

func (s *session) close() error {
	_ = s.in.Close()
	for s.out.Scan() { // nothing is expected; drain so clawkit never blocks
	}
	return s.cmd.Wait()
}

type stepsFunc func(s *session, sctx map[string]any) error

// scenarioFlags are the flags a user would give clawkit for a scenario:
// a server that asks for a form of defaults gets them accepted
// (docs/mcp.md, "Server requests"; every other server request is
// answered by clawkit's defaults).
var scenarioFlags = map[string][]string{
	"elicitation-sep1034-client-defaults": {"--elicitation", "defaults"},
}

// tool is the part of a tools/list entry the steps use; the input schema
// stays the bytes the server sent.
type tool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func listTools(s *session) ([]tool, error) {
	raw, err := s.call("tools/list", map[string]any{})
	if err != nil {
		return nil, err
	}
	var r struct {
		Tools []tool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("tools/list result: %w", err)
	}
	return r.Tools, nil
}

func findTool(tools []tool, name string) (tool, error) {
	for _, t := range tools {
		if t.Name == name {
			return t, nil
		}
	}
	return tool{}, fmt.Errorf("tool %q not listed", name)
}

func callTool(s *session, name string, args any) (json.RawMessage, error) {
	return s.call("tools/call", map[string]any{"name": name, "arguments": args})
}

// listThenCall lists the tools, finds NAME and calls it with ARGS.
func listThenCall(name string, args map[string]any) stepsFunc {
	return func(s *session, _ map[string]any) error {
		tools, err := listTools(s)
		if err != nil {
			return err
		}
		if _, err := findTool(tools, name); err != nil {
			return err
		}
		_, err = callTool(s, name, args)
		return err
	}
}

var authSteps = listThenCall("test-tool", map[string]any{})

var scenarios = map[string]stepsFunc{
	// The handshake and one request.
	"initialize": func(s *session, _ map[string]any) error {
		_, err := listTools(s)
		return err
	},
	"tools_call":                          listThenCall("add_numbers", map[string]any{"a": 5, "b": 3}),
	"elicitation-sep1034-client-defaults": listThenCall("test_client_elicitation_defaults", map[string]any{}),
	"sse-retry":                           listThenCall("test_reconnection", map[string]any{}),
	// The handshake alone: the scenario judges what the client sends.
	"request-metadata": func(*session, map[string]any) error { return nil },
	// Listing must not fetch a $ref'd URL.
	"json-schema-ref-no-deref": func(s *session, _ map[string]any) error {
		_, _ = listTools(s)
		return nil
	},
	// The focal tool's schema, as the client kept it, echoed back.
	"json-schema-2020-12-preservation": func(s *session, _ map[string]any) error {
		tools, err := listTools(s)
		if err != nil {
			return err
		}
		t, err := findTool(tools, "json_schema_2020_12_tool")
		if err != nil {
			return err
		}
		_, err = callTool(s, "json_schema_echo", map[string]any{"schema": t.InputSchema})
		return err
	},
	// Tools that answer with input_required results; some are meant to be
	// refused by the client, so an error is not the scenario's failure.
	"sep-2322-client-request-state": func(s *session, _ map[string]any) error {
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if _, err := callTool(s, name, map[string]any{}); err != nil {
				fmt.Fprintf(os.Stderr, "suiteclient: %s: %v\n", name, err)
			}
		}
		return nil
	},
	// One request of each kind that names something, so the server sees
	// the standard headers on each.
	"http-standard-headers": func(s *session, _ map[string]any) error {
		if tools, err := listTools(s); err == nil && len(tools) > 0 {
			_, _ = callTool(s, tools[0].Name, map[string]any{})
		}
		if raw, err := s.call("resources/list", map[string]any{}); err == nil {
			var r struct {
				Resources []struct {
					URI string `json:"uri"`
				} `json:"resources"`
			}
			if json.Unmarshal(raw, &r) == nil && len(r.Resources) > 0 {
				_, _ = s.call("resources/read", map[string]any{"uri": r.Resources[0].URI})
			}
		}
		if raw, err := s.call("prompts/list", map[string]any{}); err == nil {
			var r struct {
				Prompts []struct {
					Name string `json:"name"`
				} `json:"prompts"`
			}
			if json.Unmarshal(raw, &r) == nil && len(r.Prompts) > 0 {
				_, _ = s.call("prompts/get", map[string]any{"name": r.Prompts[0].Name, "arguments": map[string]any{}})
			}
		}
		return nil
	},
	// The calls the scenario names in its context, after a listing (the
	// tools' header annotations come from it).
	"http-custom-headers": func(s *session, sctx map[string]any) error {
		if _, err := listTools(s); err != nil {
			return err
		}
		calls, _ := sctx["toolCalls"].([]any)
		for _, c := range calls {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			args, _ := m["arguments"].(map[string]any)
			if args == nil {
				args = map[string]any{}
			}
			if _, err := callTool(s, name, args); err != nil {
				fmt.Fprintf(os.Stderr, "suiteclient: %s: %v\n", name, err)
			}
		}
		return nil
	},
	// Every listed tool called; a client must refuse the ones whose header
	// annotations are invalid, so a refusal is not the scenario's failure.
	"http-invalid-tool-headers": func(s *session, _ map[string]any) error {
		tools, err := listTools(s)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if _, err := callTool(s, t.Name, map[string]any{"region": "us-west1"}); err != nil {
				fmt.Fprintf(os.Stderr, "suiteclient: %s: %v\n", t.Name, err)
			}
		}
		return nil
	},
}
