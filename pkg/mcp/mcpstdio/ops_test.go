package mcpstdio

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/mcp"
)

func TestRelayForwardsCompleteLinesVerbatim(t *testing.T) {
	in := "a\r\n\n{\"x\":1}\npartial"
	var out bytes.Buffer
	if err := Relay(&out, strings.NewReader(in), 16); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a\r\n\n{\"x\":1}\n" {
		t.Fatalf("relayed %q", out.String())
	}
	out.Reset()
	err := Relay(&out, strings.NewReader("ok\n0123456789abcdef\nnever\n"), 16)
	if !isFrameErr(err) || !errors.Is(err, mcp.ErrFrameTooLarge) {
		t.Fatalf("err %v", err)
	}
	if out.String() != "ok\n" {
		t.Fatalf("relayed %q before the oversized line", out.String())
	}
}

func TestParseConnect(t *testing.T) {
	if p, err := ParseConnect("unix:/tmp/s.sock"); err != nil || p != "/tmp/s.sock" {
		t.Fatal(p, err)
	}
	for _, bad := range []string{"", "unix:", "/tmp/s.sock", "tcp:1.2.3.4:5"} {
		if _, err := ParseConnect(bad); errs.KindOf(err) != errs.KindUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestCallReportsServerExitBeforeHandshake(t *testing.T) {
	o := fakeOptions(t, "no-such-mode")
	_, err := callOpts(context.Background(), o, "ping", nil)
	// Ending before the handshake is definitive (exit 1), not "retry later".
	if errs.KindOf(err) != errs.KindFailed || errs.CodeOf(err) != "server_exited" {
		t.Fatalf("err %v (%s)", err, errs.CodeOf(err))
	}
	// The tail travels as lines of their own (errs.Fields.StderrTail), not
	// folded into the message.
	e := errs.As(err)
	if e == nil || !strings.Contains(strings.Join(e.StderrTail, "\n"), `unknown mode "no-such-mode"`) {
		t.Fatalf("the stderr tail is missing: %v %#v", err, e)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("the message holds a newline: %q", err.Error())
	}
}
