package mcpstdio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"
)

// A client that closes our stdout while keeping its end of our stdin open,
// and sends nothing, is noticed without a write: the proxy stops the
// server and returns. (The 60 s bound only turns a hang into a failure.)
func TestRunProxyNoticesClosedStdout(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := inR.Close(); err != nil {
			t.Error(err)
		}
	}()
	defer func() { _ = inW.Close() }() // open until the end: no EOF for the relay
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := outW.Close(); err != nil {
			t.Error(err)
		}
	}()
	o := fakeOptions(t, "echo")
	spec := ProcessSpec{Command: o.Command, Args: o.Args, Env: o.Env, EOFGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond}
	res := make(chan error, 1)
	go func() {
		_, err := RunProxy(context.Background(), spec, ProxyOptions{ProtocolVersion: mcp.AutoProtocolVersion, ProbeTimeout: 30 * time.Second}, inR, outW)
		res <- err
	}()
	if err := outR.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("RunProxy: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the proxy did not notice that its stdout was closed")
	}
}

// A server that writes far more than a pipe holds before it reads its
// stdin, while the client writes far more than a pipe holds before it
// reads the answers: the relay must keep passing the server's output on
// while its write to the server waits, or neither side ever reads again.
// Each side's volume is several pipe capacities (64 KiB each).
func TestRunProxyRelaysWhileServerIsNotReading(t *testing.T) {
	// Then it reads on with its stdout open, or closes its stdout first
	// (the relay still passes the client's messages on until it stops).
	for _, tc := range []struct{ name, then, wantErr string }{
		{"stdout-open", `while read -r l; do :; done`, ""},
		{"stdout-closed", `exec cat >/dev/null`, "server closed its stdout"},
	} {
		t.Run(tc.name, func(t *testing.T) { relayWhileNotReading(t, tc.then, tc.wantErr) })
	}
}

func relayWhileNotReading(t *testing.T, then, wantErr string) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := inR.Close(); err != nil {
			t.Error(err)
		}
	}()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := outR.Close(); err != nil {
			t.Error(err)
		}
	}()
	const lines = 4000 // ~100 bytes each, both ways
	pad := strings.Repeat("x", 64)
	// The server: all its notifications first, then it reads everything.
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"%s"}}'; i=$((i+1)); done; %s`, lines, pad, then) //nolint:gocritic // sprintfQuotedString: JSON inside shell text
	spec := ProcessSpec{Command: "/bin/sh", Args: []string{"-c", script}, EOFGrace: 5 * time.Second, TermGrace: 200 * time.Millisecond}
	res := make(chan error, 1)
	go func() {
		_, err := RunProxy(context.Background(), spec, ProxyOptions{ProtocolVersion: "2025-11-25"}, inR, outW)
		res <- errors.Join(err, outW.Close())
	}()
	// The client writes all its messages before it reads anything.
	wrote := make(chan error, 1)
	go func() {
		msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"pad":"` + pad + `"}}` + "\n")
		for range lines {
			if _, err := inW.Write(msg); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- inW.Close()
	}()
	got := make(chan int, 1)
	go func() {
		n := 0
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			n++
		}
		got <- n
	}()
	deadline := time.After(60 * time.Second) // a hang guard, not a timing assertion
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("writing to the proxy: %v", err)
		}
	case <-deadline:
		t.Fatal("the client's writes never completed: the relay stopped passing the server's output on")
	}
	select {
	case err := <-res:
		if (err == nil) != (wantErr == "") || (err != nil && !strings.Contains(err.Error(), wantErr)) {
			t.Fatalf("RunProxy: %v, want %q", err, wantErr)
		}
	case <-deadline:
		t.Fatal("the proxy did not end after the client's EOF")
	}
	if n := <-got; n != lines {
		t.Fatalf("the client read %d of the server's %d lines", n, lines)
	}
}
