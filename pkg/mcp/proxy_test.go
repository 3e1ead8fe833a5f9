package mcp

import (
	"context"
	"os"
	"testing"
	"time"
)

// A client that closes our stdout while keeping its end of our stdin open,
// and sends nothing, is noticed without a write: the proxy stops the
// server and returns. (The 60 s bound only turns a hang into a failure.)
func TestRunProxyNoticesClosedStdout(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close() // open until the end: no EOF for the relay
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outW.Close()
	o := fakeOptions(t, "echo")
	spec := ProcessSpec{Command: o.Command, Args: o.Args, Env: o.Env, EOFGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond}
	res := make(chan error, 1)
	go func() {
		_, err := RunProxy(context.Background(), spec, ProxyOptions{ProtocolVersion: AutoProtocolVersion, ProbeTimeout: 30 * time.Second}, inR, outW)
		res <- err
	}()
	outR.Close()
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("RunProxy: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the proxy did not notice that its stdout was closed")
	}
}
