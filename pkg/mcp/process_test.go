package mcp

import (
	"os"
	"os/exec"
	"testing"
)

func TestSurvivesClosedStdout(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first write
	cmd := exec.Command(self)
	cmd.Env = []string{"CLAWKIT_MCPFAKE=sigpipe"}
	cmd.Stdout = w
	err = cmd.Run()
	w.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 42 {
		t.Fatalf("want exit 42 (EPIPE seen), got %v", err)
	}
}
