package testscript

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
)

func init() {
	// mcpfake MODE [ARG]: the well-behaved and hostile servers.
	helperCommands["mcpfake"] = mcpfake.Main
	helperCommands["mcpgone"] = mcpGone
	helperCommands["mcpwaitfile"] = mcpWaitFile
	helperCommands["mcpsdkclient"] = mcpSDKClient
	helperCommands["mcpfeed"] = mcpFeed
}

// mcpFeed FILE: a client that writes FILE to stdout and then keeps its
// side open, writing an empty line every 50 ms until the reader goes away
// (or 60 s pass): "still connected" without a fixed sleep.
func mcpFeed() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := os.Stdout.Write(b); err != nil {
		os.Exit(0)
	}
	for range 1200 {
		time.Sleep(50 * time.Millisecond)
		if _, err := os.Stdout.Write([]byte("\n")); err != nil {
			os.Exit(0)
		}
	}
}

// mcpGone FILE...: each FILE holds pids (the first is also the process
// group); exit 1 naming every one that is still alive (zombies count as
// gone: they hold nothing but a pid).
func mcpGone() {
	var alive []string
	for _, f := range os.Args[1:] {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			fmt.Fprintf(os.Stderr, "%s: no pids\n", f)
			os.Exit(2)
		}
		for i, s := range fields {
			pid, err := strconv.Atoi(s)
			if err != nil || pid <= 1 {
				fmt.Fprintf(os.Stderr, "%s: bad pid %q\n", f, s)
				os.Exit(2)
			}
			if i == 1 { // the process group id
				if mcp.GroupAlive(pid) {
					alive = append(alive, "pgid "+s)
				}
				continue
			}
			if pidAlive(pid) {
				alive = append(alive, "pid "+s)
			}
		}
	}
	if len(alive) > 0 {
		fmt.Fprintf(os.Stderr, "still alive: %s\n", strings.Join(alive, ", "))
		os.Exit(1)
	}
	fmt.Println("all gone")
}

func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return !(i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X'))
}

// mcpWaitFile PATH: wait up to 20 s for PATH to exist (a background
// service's socket).
func mcpWaitFile() {
	for range 2000 {
		if _, err := os.Stat(os.Args[1]); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "%s did not appear\n", os.Args[1])
	os.Exit(1)
}

// mcpSDKClient [-echo MSG] -- CMD ARGS…: the official Go SDK as a real
// client on the other side of `clawkit mcp proxy`: connect over stdio,
// list tools, call echo, close.
func mcpSDKClient() {
	fs := flag.NewFlagSet("mcpsdkclient", flag.ExitOnError)
	msg := fs.String("echo", "hello", "message for the echo tool")
	_ = fs.Parse(os.Args[1:])
	args := fs.Args()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpsdkclient [-echo MSG] -- CMD ARGS…")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "mcpsdkclient", Version: "1.0.0"}, nil)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	fmt.Printf("server: %s\n", cs.InitializeResult().ServerInfo.Name)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools/list:", err)
		os.Exit(1)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	fmt.Printf("tools: %s\n", strings.Join(names, " "))
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": *msg}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools/call:", err)
		os.Exit(1)
	}
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			fmt.Printf("echo: %s\n", t.Text)
		}
	}
	if err := cs.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		os.Exit(1)
	}
	fmt.Println("closed")
}
