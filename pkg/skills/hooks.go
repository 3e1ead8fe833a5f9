package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// HookTimeout bounds each hook command (docs/skills.md).
var HookTimeout = 30 * time.Second

// hookOutputTail is how much of a hook's stderr a result keeps.
const hookOutputTail = 2048

// Event is the skill_changed event, exactly the fields of docs/skills.md.
type Event struct {
	Source   string              `json:"source"`
	PluginID string              `json:"pluginId"`
	AgentID  string              `json:"agentId"`
	Skill    string              `json:"skill"`
	Before   *skilllint.Revision `json:"before"`
	After    *skilllint.Revision `json:"after"`
}

// HookResult is the outcome of one hook command.
type HookResult struct {
	Argv       []string `json:"argv"`
	OK         bool     `json:"ok"`
	ExitCode   int      `json:"exitCode"`
	Error      string   `json:"error,omitempty"`
	Stderr     string   `json:"stderr,omitempty"`
	DurationMs int64    `json:"durationMs"`
}

// LoadHooks reads config hooks.skill_changed: a list of argv arrays (each a
// non-empty list of strings). Anything else is invalid_config, reported
// before a commit so that a commit never goes out without its event.
func LoadHooks(home string) ([][]string, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	return hooksFrom(cfg)
}

// hooksFrom reads hooks.skill_changed from a given config (an operation's
// config snapshot).
func hooksFrom(cfg *config.Config) ([][]string, error) {
	raw, ok := cfg.Get("hooks.skill_changed")
	if !ok || raw == nil {
		return nil, nil
	}
	bad := errs.Failed(errs.CodeInvalidConfig, "config hooks.skill_changed must be a list of commands, each a list of strings (argv, run without a shell)").
		WithHint(`e.g. clawkit config set hooks.skill_changed '[["/usr/local/bin/reindex","--skills"]]'`)
	list, ok := raw.([]any)
	if !ok {
		return nil, bad
	}
	var out [][]string
	for _, item := range list {
		argvAny, ok := item.([]any)
		if !ok || len(argvAny) == 0 {
			return nil, bad
		}
		argv := make([]string, 0, len(argvAny))
		for _, a := range argvAny {
			s, ok := a.(string)
			if !ok || (len(argv) == 0 && s == "") {
				return nil, bad
			}
			argv = append(argv, s)
		}
		out = append(out, argv)
	}
	return out, nil
}

// RunHook runs one hook with the event JSON on stdin, without a shell, in
// its own process group (killed whole on timeout), bounded by HookTimeout.
func RunHook(ctx context.Context, argv []string, event []byte) HookResult {
	res := HookResult{Argv: argv, ExitCode: -1}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, HookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(event)
	var stderr tailBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		return nil
	}
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	res.DurationMs = time.Since(start).Milliseconds()
	res.Stderr = stderr.String()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case err == nil:
		res.OK = true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Error = fmt.Sprintf("timed out after %s", HookTimeout)
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.Error = fmt.Sprintf("exited with %s", ee.String())
		} else {
			res.Error = err.Error()
		}
	}
	return res
}

// tailBuffer keeps the last hookOutputTail bytes written.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > hookOutputTail {
		t.b = append(t.b[:0:0], t.b[len(t.b)-hookOutputTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
