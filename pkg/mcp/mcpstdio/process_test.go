package mcpstdio

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
	if err := r.Close(); err != nil { // the reader is gone before the first write
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = []string{"CLAWKIT_MCPFAKE=sigpipe"}
	cmd.Stdout = w
	err = cmd.Run()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 42 {
		t.Fatalf("want exit 42 (EPIPE seen), got %v", err)
	}
}
