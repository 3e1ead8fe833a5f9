// Package testscript runs clawkit's end-to-end scripts (*.txtar in this
// folder). Each script drives the real binary, as a user would from a shell.
//
// A script has two kinds of extra commands. Script commands run inside
// the test: waits, JSON fields, database queries, stand-ins for shell
// idioms (scriptCmds, cmds*_test.go), and a capability's generators and
// inspectors of test files (its kit's cmds). Helper programs run as
// processes of their own (exec NAME), kept where a real process is the
// point: it is killed, signalled, holds a lock, serves MCP over its stdio,
// is run by clawkit as a hook, races other processes, or builds something
// for scripts/bench-scale.sh. Each capability lists its helper programs,
// script commands, conditions and setups in a scriptKit beside its scripts
// (NAME_helpers_test.go); kits() names them all, with no init.
//
// Update golden files with CLAWKIT_UPDATE_GOLDEN=1 go test ./testscript.
package testscript

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/cli"
)

// scriptKit is what one capability adds to the scripts: helper programs
// (exec NAME), script commands (NAME, run in the test process: a path
// argument is resolved with ts.MkAbs, as the test's working folder is not
// the script's), [conditions] and setups run for every script after the
// default environment is set.
type scriptKit struct {
	programs   map[string]func()
	cmds       map[string]scriptCmd
	conditions map[string]func() (bool, error)
	setups     []func(env *testscript.Env) error
}

// kits are every capability's scriptKit.
func kits() []scriptKit {
	return []scriptKit{
		peersKit(),
		coreKit(),
		gatewayKit(),
		raceKit(),
		artifactsKit(),
		crabboxKit(),
		mcpKit(),
		mcpSDKServerKit(),
		mcpProxyStatelessKit(),
		oauthKit(),
		researchKit(),
		pgKit(),
		skillKit(),
		skillStreamKit(),
		releaseKit(),
	}
}

// scriptCmd is a script command (testscript Params.Cmds).
type scriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

// merged is all kits in one, with scriptCmds among the commands: a name
// two kits (or a kit and clawkit or scriptCmds) both claim is a mistake,
// reported rather than one silently winning.
func merged() (scriptKit, error) {
	all := scriptKit{
		programs: map[string]func(){
			"clawkit": func() { os.Exit(cli.MainObserved(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, recordErrorCode)) },
		},
		cmds:       map[string]scriptCmd{},
		conditions: map[string]func() (bool, error){},
	}
	for name, f := range scriptCmds {
		all.cmds[name] = f
	}
	for _, k := range kits() {
		for name, f := range k.programs {
			if _, dup := all.programs[name]; dup {
				return all, fmt.Errorf("helper program %q is registered twice", name)
			}
			all.programs[name] = f
		}
		for name, f := range k.cmds {
			if _, dup := all.cmds[name]; dup {
				return all, fmt.Errorf("script command %q is registered twice", name)
			}
			all.cmds[name] = f
		}
		for name, f := range k.conditions {
			if _, dup := all.conditions[name]; dup {
				return all, fmt.Errorf("condition %q is registered twice", name)
			}
			all.conditions[name] = f
		}
		all.setups = append(all.setups, k.setups...)
	}
	for name := range all.cmds {
		if _, dup := all.programs[name]; dup {
			return all, fmt.Errorf("%q is both a helper program and a script command", name)
		}
	}
	return all, nil
}

func TestMain(m *testing.M) {
	all, err := merged()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	testscript.Main(m, all.programs)
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
	all, err := merged()
	if err != nil {
		t.Fatal(err)
	}
	codes := filepath.Join(t.TempDir(), "error-codes")
	// After every script: each code a clawkit run failed with exited as
	// docs/errors.md says (errortable_test.go).
	t.Cleanup(func() { checkObservedCodes(t, codes) })
	testscript.Run(t, testscript.Params{
		Dir:                 ".",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                all.cmds,
		UpdateScripts:       os.Getenv("CLAWKIT_UPDATE_GOLDEN") == "1",
		Setup: func(env *testscript.Env) error {
			// A private home per script; scripts that need another pass --home.
			env.Setenv("CLAWKIT_HOME", filepath.Join(env.WorkDir, ".clawkit"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "userhome"))
			env.Setenv("REPO", repoRoot())
			env.Setenv("PEERS", peersDir())
			env.Setenv(envErrorCodes, codes)
			if p, err := exec.LookPath("node"); err == nil {
				env.Setenv("NODE", p)
			}
			for _, s := range all.setups {
				if err := s(env); err != nil {
					return err
				}
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if f, ok := all.conditions[cond]; ok {
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

func peersKit() scriptKit {
	return scriptKit{
		conditions: map[string]func() (bool, error){
			"openclaw":          peerCondition("openclaw/package.json"),
			"server-everything": peerCondition("@modelcontextprotocol/server-everything/package.json"),
			"node": func() (bool, error) {
				_, err := exec.LookPath("node")
				return err == nil, nil
			},
		},
	}
}
