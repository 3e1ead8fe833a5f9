// Package testscript runs clawkit's end-to-end scripts (*.txtar in this
// folder). Each script drives the real binary, as a user would from a shell.
//
// Helper commands (fake servers, archive builders, ...) register themselves
// in helperCommands from their own *_test.go file's init, so each capability
// keeps its helpers beside its scripts.
//
// Update golden files with CLAWKIT_UPDATE_GOLDEN=1 go test ./testscript.
package testscript

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/cli"
)

// helperCommands are extra programs scripts can exec; add to it from init.
var helperCommands = map[string]func(){}

// conditions are extra [name] conditions; add to it from init.
var conditions = map[string]func() (bool, error){}

// setups run for every script, after the default environment is set.
var setups []func(env *testscript.Env) error

func TestMain(m *testing.M) {
	cmds := map[string]func(){
		"clawkit": func() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	}
	for name, f := range helperCommands {
		cmds[name] = f
	}
	testscript.Main(m, cmds)
}

// repoRoot is the module root (this file lives one folder below it).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// PeersDir is where .ci/run installs the real npm peers (git-ignored).
// peersDir is the peers' real folder: a worktree may link peers/node_modules
// to another checkout's, and OpenClaw's own producer refuses a package root
// reached through a link (its realpath check on each worker file).
func peersDir() string {
	p := filepath.Join(repoRoot(), "peers", "node_modules")
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 ".",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                scriptCmds,
		UpdateScripts:       os.Getenv("CLAWKIT_UPDATE_GOLDEN") == "1",
		Setup: func(env *testscript.Env) error {
			// A private home per script; scripts that need another pass --home.
			env.Setenv("CLAWKIT_HOME", filepath.Join(env.WorkDir, ".clawkit"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "userhome"))
			env.Setenv("REPO", repoRoot())
			env.Setenv("PEERS", peersDir())
			if p, err := exec.LookPath("node"); err == nil {
				env.Setenv("NODE", p)
			}
			for _, s := range setups {
				if err := s(env); err != nil {
					return err
				}
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if f, ok := conditions[cond]; ok {
				return f()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// peerCondition reports whether an npm peer is installed. In CI a missing
// peer is an error, not a skip: .ci/run must have installed it.
func peerCondition(rel string) func() (bool, error) {
	return func() (bool, error) {
		_, err := os.Stat(filepath.Join(peersDir(), filepath.FromSlash(rel)))
		if err == nil {
			return true, nil
		}
		if os.Getenv("CI") != "" {
			return false, fmt.Errorf("npm peer %s is missing under peers/node_modules; .ci/run installs it", rel)
		}
		return false, nil
	}
}

func init() {
	conditions["openclaw"] = peerCondition("openclaw/package.json")
	conditions["server-everything"] = peerCondition("@modelcontextprotocol/server-everything/package.json")
	conditions["node"] = func() (bool, error) {
		_, err := exec.LookPath("node")
		return err == nil, nil
	}
	_ = strings.TrimSpace
}
