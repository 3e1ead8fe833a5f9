package testscript

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// scriptCmds are the scripts' own commands (testscript Params.Cmds) that
// belong to no one capability (a capability's are in its kit's cmds): they
// run inside the test, so a script needs no shell for them.
var scriptCmds = map[string]scriptCmd{
	"exits":      cmdExits,
	"json":       cmdJSON,
	"json-lines": cmdJSONLines,
	"await-file": cmdAwaitFile,
	"jobid":      cmdJobID,
	"tarlist":    cmdTarList,
	"grep-tree":  cmdGrepTree,
	"nest":       cmdNest,

	// cmds_shell_test.go: stand-ins for shell idioms.
	"setenv-file":    cmdSetenvFile,
	"setenv-quoted":  cmdSetenvQuoted,
	"glob":           cmdGlob,
	"append":         cmdAppend,
	"repeat":         cmdRepeat,
	"events-chained": cmdEventsChained,

	// cmds_await_test.go: waits for what a background process does.
	"await-line":               cmdAwaitLine,
	"await-gateway-exit":       cmdAwaitGatewayExit,
	"await-research-state":     cmdAwaitResearchState,
	"await-research-state-any": cmdAwaitResearchStateAny,
	"fakegoogle-await":         cmdFakeGoogleAwait,
	"fakegoogle-finish":        cmdFakeGoogleFinish,
	"skill-await":              cmdSkillAwait,
	"skill-await-disk":         cmdSkillAwaitDisk,

	// cmds_pg_test.go: the script's PostgreSQL database ($PGURL).
	"pg-query":         cmdPGQuery,
	"await-pg-count":   cmdAwaitPGCount,
	"await-lease-gone": cmdAwaitLeaseGone,
}

// exits N PROGRAM ARGS...: runs PROGRAM (as exec does, with the stdin set
// by `stdin`) and fails unless it exits with status N. Its stdout and
// stderr are kept for the next stdout/stderr checks. This is what
// `exec sh -c 'PROGRAM ARGS; echo rc=$?'` + `stdout rc=N` said with a
// shell.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: exits N PROGRAM [ARGS...] (no negation: name the status)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits N PROGRAM [ARGS...]")
	}
	want := intArg(ts, "exits", "exit status", args[0], 0)
	err := ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// json FILE PATH: prints the value at the dotted PATH of the JSON
// document in FILE (a string as is, anything else as JSON), for the next
// stdout check. json -env VAR FILE PATH sets $VAR to it instead, where a
// script would otherwise need $(jsonget …) in a shell.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	env := ""
	if len(args) == 4 && args[0] == "-env" {
		env, args = args[1], args[2:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: json [-env VAR] FILE PATH")
	}
	var b strings.Builder
	if err := jsonGet(&b, []byte(ts.ReadFile(args[0])), args[1]); err != nil {
		ts.Fatalf("json: %v", err)
	}
	if env != "" {
		ts.Setenv(env, strings.TrimSuffix(b.String(), "\n"))
		return
	}
	if _, err := fmt.Fprint(ts.Stdout(), b.String()); err != nil {
		ts.Fatalf("%v", err)
	}
}

// json-lines FILE: fails unless every line of FILE is one JSON object (a
// log jq reads line by line), and FILE holds at least one.
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: json-lines FILE")
	}
	text := ts.ReadFile(args[0])
	if text == "" {
		ts.Fatalf("json-lines: %s is empty", args[0])
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			ts.Fatalf("json-lines: %s line %d is not a JSON object (%v): %q", args[0], i+1, err, line)
		}
	}
}

// jsonGet is the json command's work.
func jsonGet(w io.Writer, doc []byte, path string) error {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return err
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return fmt.Errorf("no index %s", k)
			}
			v = x[i]
		default:
			return fmt.Errorf("no key %s", k)
		}
	}
	if s, ok := v.(string); ok {
		_, err := fmt.Fprintln(w, s)
		return err
	}
	out, _ := json.Marshal(v)
	_, err := fmt.Fprintln(w, string(out))
	return err
}

// await-file PATH [TIMEOUT]: waits until PATH exists (default 10s), for
// what a background command creates.
func cmdAwaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: await-file PATH [TIMEOUT]")
	}
	limit := 10 * time.Second
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			ts.Fatalf("await-file: %v", err)
		}
		limit = d
	}
	awaitWithin(ts, limit, 20*time.Millisecond, func() (bool, string) {
		_, err := os.Stat(ts.MkAbs(args[0]))
		return err == nil, fmt.Sprintf("await-file: %s did not appear", args[0])
	})
}

// jobid [-env VAR] FILE: prints the "job" field of a clawkit --json
// document in FILE (research start, step, ...), for the next stdout check
// or cp; with -env it also sets $VAR to it, so a later command can name the
// job without $(cat …) in a shell. It fails when the document names no job.
func cmdJobID(ts *testscript.TestScript, neg bool, args []string) {
	env := ""
	if len(args) == 3 && args[0] == "-env" {
		env, args = args[1], args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jobid [-env VAR] FILE")
	}
	var v struct {
		Job string `json:"job"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v); err != nil || v.Job == "" {
		ts.Fatalf("jobid: no job in %s", args[0])
	}
	if env != "" {
		ts.Setenv(env, v.Job)
	}
	if _, err := fmt.Fprint(ts.Stdout(), v.Job); err != nil {
		ts.Fatalf("%v", err)
	}
}

// tarlist FILE.tgz: prints the gzip header (mtime zero or not, OS, name)
// on a first line, then one line per entry: "TYPE MODE UID/GID
// "UNAME"/"GNAME" mtime=UNIX SIZE PATH". It reads the archive with the
// standard library only, never pkg/artifacts, so what the artifacts
// scripts check is computed independently of the code under test.
func cmdTarList(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tarlist FILE.tgz")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("tarlist: %v", err)
	}
	defer fsx.CloseRead(f)
	zr, err := gzip.NewReader(f)
	if err != nil {
		ts.Fatalf("tarlist: %v", err)
	}
	w := ts.Stdout()
	// compress/gzip reports a zero header mtime as the zero Time.
	if _, err := fmt.Fprintf(w, "gzip zero-mtime=%v os=%d name=%q\n", zr.ModTime.IsZero(), zr.OS, zr.Name); err != nil {
		ts.Fatalf("%v", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			ts.Fatalf("tarlist: %v", err)
		}
		if _, err := fmt.Fprintf(w, "%c %04o %d/%d %q/%q mtime=%d %d %s\n", h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), h.Size, h.Name); err != nil {
			ts.Fatalf("%v", err)
		}
	}
}

// die ends a helper program with a message on stderr (exit 1).
func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// intArg is a command's integer argument s (what it counts: a count, a
// size, a pid), at least min; anything else stops the script.
func intArg(ts *testscript.TestScript, cmd, what, s string, min int) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < min {
		ts.Fatalf("%s: %q is not a %s (an integer of at least %d)", cmd, s, what, min)
	}
	return n
}
